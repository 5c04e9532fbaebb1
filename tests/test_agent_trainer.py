"""The agent's update is one update: both engines' GRPO settings agree on every field the method depends on; each
RL objective a user may choose runs on the tiny model; the reward function sees exactly G completions per task
(what p̂ is measured from), whatever the objective."""

from __future__ import annotations

import math
import types
from collections import Counter

import pytest
import torch

from genenv_lab.backends.agent_trainer import METHOD_FIELDS, grpo_settings
from genenv_lab.config import IMPORTANCE_SAMPLING_LEVELS, LOSS_TYPES, REWARD_SCALINGS, ConfigError, preset
from prefix_step_driver import reward, tiny_backend


def test_both_engines_build_the_same_grpo_settings(tmp_path):
    """The hf engine's trainer and the settings the Unsloth engine would pass (built from the same builder,
    without Unsloth installed) agree on every method field; the learning rate is constant, not decayed."""
    from trl import GRPOConfig

    from genenv_lab.backends.unsloth_engine import UnslothBackend

    backend, prompts = tiny_backend(shared=True, kl_beta=0.1, tasks=2)
    cfg = backend.cfg.replace(agent={"loss_type": "dr_grpo", "num_iterations": 2, "epsilon_high": 0.28,
                                     "scale_rewards": "batch", "mask_truncated_completions": True})
    backend.cfg = cfg
    trainer = backend.grpo_trainer(prompts, reward, str(tmp_path / "hf"))
    fake = types.SimpleNamespace(cfg=cfg, generator=None, next_trainer_seed=lambda: 0)
    unsloth = GRPOConfig(**UnslothBackend.grpo_kwargs(fake, str(tmp_path / "unsloth")))
    for name in METHOD_FIELDS:
        ours = trainer.beta if name == "beta" else getattr(trainer.args, name)  # hf sets beta after building
        assert ours == getattr(unsloth, name), name
    assert trainer.args.lr_scheduler_type == "constant" and trainer.args.num_iterations == 2
    assert trainer.args.epsilon_high == 0.28 and trainer.beta == 0.1
    # the hf engine's optimiser is the run's (Adam's moments carry across epochs); Unsloth's is fresh per update
    assert trainer.optimizer is backend.optimizer("agent")
    assert "fresh AdamW per update" in UnslothBackend.optimizer.__doc__


def test_settings_name_every_method_field():
    cfg = preset("tiny")
    settings = grpo_settings(cfg, output_dir="x", seed=0)
    assert set(METHOD_FIELDS) <= set(settings)
    assert settings["epsilon_high"] == settings["epsilon"]  # 0 means "the same as epsilon"
    with pytest.raises(ConfigError, match="loss_type"):
        cfg.replace(agent={"loss_type": "ppo"})
    with pytest.raises(ConfigError, match="num_iterations"):
        cfg.replace(agent={"num_iterations": 0})


OBJECTIVES = ([{"loss_type": t} for t in LOSS_TYPES]
              + [{"importance_sampling_level": v} for v in IMPORTANCE_SAMPLING_LEVELS if v != "token"]
              + [{"scale_rewards": v} for v in REWARD_SCALINGS if v != "group"]
              + [{"epsilon_high": 0.28}, {"num_iterations": 2}, {"mask_truncated_completions": True}])


@pytest.mark.parametrize("objective", OBJECTIVES, ids=lambda o: "-".join(f"{k}={v}" for k, v in o.items()))
def test_each_objective_trains_and_feeds_g_completions_per_task(objective):
    backend, prompts = tiny_backend(shared=True, kl_beta=0.0, tasks=2)
    backend.cfg = backend.cfg.replace(agent=objective)
    g = backend.cfg.agent.num_generations
    seen: Counter = Counter()

    def recording_reward(task_ids, texts):
        seen.update(task_ids)
        return reward(task_ids, texts)

    before = [p.detach().clone() for n, p in backend.model.named_parameters() if "lora" in n and ".agent." in n]
    update = backend.grpo_step(prompts, recording_reward)
    after = [p.detach() for n, p in backend.model.named_parameters() if "lora" in n and ".agent." in n]
    assert dict(seen) == {p.task_id: g for p in prompts}  # each rollout scored once: p̂ from exactly G
    assert math.isfinite(update.loss)
    assert any(not torch.equal(a, b) for a, b in zip(before, after)), "the agent adapter did not move"
