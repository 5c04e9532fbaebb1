"""The agent's update is one update: one builder makes every engine's trainer and refuses a config class that changes a
method field; each
RL objective a user may choose runs on the tiny model; the reward function sees exactly G completions per task
(what p̂ is measured from), whatever the objective."""

from __future__ import annotations

import dataclasses
import math
from collections import Counter

import pytest
import torch

from genenv_lab.trainers.agent import TRAINERS, update_agent
from genenv_lab.trainers.grpo import METHOD_FIELDS, build_grpo_trainer, grpo_settings
from genenv_lab.backends.base import TrainerKit
from genenv_lab.backends.hf import grpo_dataset
from genenv_lab.backends.prefix import supports_shared_prefix
from genenv_lab.config import IMPORTANCE_SAMPLING_LEVELS, LOSS_TYPES, REWARD_SCALINGS, ConfigError, preset
from prefix_step_driver import reward, tiny_backend


def test_the_built_trainer_takes_the_configured_update(tmp_path):
    """The one builder (:func:`build_grpo_trainer`, what the ``grpo`` trainer builds with on every engine) gives TRL
    the method fields as configured, a constant learning rate, the run-long optimiser of the agent role, beta set
    after construction with no reference adapter copied (the anchor is the base with adapters disabled), and records
    what ran. The Unsloth engine's trainer is compared with this one in the Unsloth CPU tier
    (tests/test_unsloth_cpu.py)."""
    backend, prompts = tiny_backend(shared=True, kl_beta=0.1, tasks=2)
    cfg = backend.cfg.replace(agent={"loss_type": "dr_grpo", "num_iterations": 2, "epsilon_high": 0.28,
                                     "scale_rewards": "batch", "mask_truncated_completions": True})
    backend.cfg = cfg
    trainer = TRAINERS["grpo"].build(backend.trainer_kit(prompts, reward, str(tmp_path / "hf")))
    settings = grpo_settings(cfg, output_dir="x", seed=0)
    for name in METHOD_FIELDS:
        built = trainer.beta if name == "beta" else getattr(trainer.args, name)
        assert getattr(built, "value", built) == settings[name], name
    assert trainer.args.lr_scheduler_type == "constant" and trainer.args.num_iterations == 2
    assert trainer.args.epsilon_high == 0.28 and trainer.beta == 0.1 and trainer.args.beta == 0.0
    assert "ref" not in backend.model.peft_config and trainer.ref_model is None
    assert trainer.optimizer is backend.optimizer("agent")  # Adam's moments carry across epochs
    assert not trainer.args.bf16 and not trainer.args.fp16  # float32 weights on CPU: no mixed precision


def test_a_config_class_that_changes_a_method_field_is_refused(tmp_path):
    """An installed config class that rewrites (or lacks) a method field would silently run another update: the
    builder refuses it on every engine, naming the field."""
    from trl import GRPOConfig

    class Rewriting(GRPOConfig):
        def __post_init__(self):
            super().__post_init__()
            self.lr_scheduler_type = "linear"

    backend, prompts = tiny_backend(shared=True, kl_beta=0.0, tasks=2)
    trainer_cls, _ = backend.grpo_classes()
    kit = TrainerKit(cfg=backend.cfg, model=backend.model, tokenizer=backend.tokenizer,
                     dataset=grpo_dataset(backend, prompts), reward_fn=reward, optimizer=backend.optimizer("agent"),
                     output_dir=str(tmp_path), seed=0, trainer_cls=trainer_cls, config_cls=Rewriting, on_cuda=False)
    with pytest.raises(RuntimeError, match="lr_scheduler_type"):
        build_grpo_trainer(kit)
    with pytest.raises(ValueError, match="method fields"):
        build_grpo_trainer(dataclasses.replace(kit, config_cls=GRPOConfig, engine_args={"learning_rate": 1.0}))
    with pytest.raises(ValueError, match="method fields"):
        build_grpo_trainer(dataclasses.replace(kit, config_cls=GRPOConfig), trainer_args={"beta": 0.5})


def test_gradient_checkpointing_takes_full_rows_and_says_so():
    """A model with gradient checkpointing switched on (as Unsloth builds it, or after a TRL trainer with TRL's
    default wrapped it) keeps no cache in its forward: the update takes full rows, records why, and trains."""
    backend, prompts = tiny_backend(shared=True, kl_beta=0.0, tasks=2)
    backend.model.get_base_model().gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    backend.model.enable_input_require_grads()
    assert "gradient checkpointing" in supports_shared_prefix(backend.model.get_base_model())
    update = update_agent(backend, backend.cfg, prompts, reward)
    assert update.metrics["agent/prefix_path"] == "full-rows"
    assert update.metrics["agent/gradient_checkpointing"] is True
    assert math.isfinite(update.loss)


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
    update = update_agent(backend, backend.cfg, prompts, recording_reward)
    after = [p.detach() for n, p in backend.model.named_parameters() if "lora" in n and ".agent." in n]
    assert dict(seen) == {p.task_id: g for p in prompts}  # each rollout scored once: p̂ from exactly G
    assert math.isfinite(update.loss)
    assert any(not torch.equal(a, b) for a, b in zip(before, after)), "the agent adapter did not move"


def test_the_trainer_asks_for_one_optimiser_steps_tasks_at_a_time():
    """The dry-run instrument's batching rule (genenv_lab.core.dryrun.dry_step_frac): each optimiser step takes the G
    completions of ``prompts_per_step`` whole tasks, and TRL asks for their rewards in one call, so the tasks in the
    order their rewards were first asked for, cut every ``prompts_per_step``, are the steps."""
    backend, prompts = tiny_backend(shared=True, kl_beta=0.0, tasks=6)
    backend.cfg = backend.cfg.replace(agent={"prompts_per_step": 2})
    g = backend.cfg.agent.num_generations
    calls: list[list[str]] = []

    def recording_reward(task_ids, texts):
        calls.append(list(task_ids))
        return reward(task_ids, texts)

    update = update_agent(backend, backend.cfg, prompts, recording_reward)
    assert len(calls) == update.steps == 3
    assert all(sorted(Counter(c).values()) == [g, g] for c in calls)  # two whole groups a step
    order = list(dict.fromkeys(t for c in calls for t in c))
    assert [set(order[i:i + 2]) for i in range(0, 6, 2)] == [set(c) for c in calls]
