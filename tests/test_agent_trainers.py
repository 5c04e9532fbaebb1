"""The agent's trainers by name (genenv_lab/trainers/agent.py): the loop's one call, the configuration's table of
names, and a second trainer that is real: ``high_entropy`` runs TRL's GRPOTrainer with its loss on the 20 % highest-
entropy tokens, set by touching only the trainer module and the configuration's table."""

from __future__ import annotations

import math
from collections import Counter

import pytest
import torch

from genenv_lab.trainers.agent import DEFAULT_TRAINER, TRAINERS, TRLGRPO, trainer_named, update_agent
from genenv_lab.backends.base import AgentTrainer
from genenv_lab.config import AgentConfig, ConfigError, preset
from genenv_lab.config.schema import AGENT_TRAINERS
from genenv_lab.coevolution.session import run
from prefix_step_driver import reward, tiny_backend


def test_the_configurations_table_names_every_trainer_and_the_default_is_grpo():
    assert tuple(TRAINERS) == AGENT_TRAINERS
    assert AgentConfig().trainer == DEFAULT_TRAINER == "grpo"
    for name, trainer in TRAINERS.items():
        assert isinstance(trainer, AgentTrainer) and trainer.name == name
    with pytest.raises(ConfigError, match="trainer.*genenv_lab/trainers/agent.py"):
        preset("tiny").replace(agent={"trainer": "ppo"})
    with pytest.raises(ValueError, match="not in genenv_lab.trainers.agent.TRAINERS"):
        trainer_named("ppo")


def test_the_loop_takes_each_epochs_agent_update_from_the_configured_trainer(tiny_cfg, tmp_path, scripted_backend):
    cfg = tiny_cfg.replace(loop={"epochs": 2}, agent={"trainer": "high_entropy"})
    backend = scripted_backend(num_generations=cfg.agent.num_generations)
    list(run(cfg, tmp_path / "r", backend=backend, progress=False))
    assert backend.trainers == ["high_entropy", "high_entropy"]


def _agent_lora(backend) -> list[torch.Tensor]:
    return [p.detach().clone() for n, p in backend.model.named_parameters() if "lora" in n and ".agent." in n]


def test_the_high_entropy_trainer_reaches_trl_and_trains_the_agent(tmp_path):
    """A real update on the tiny model: the second trainer's setting is in TRL's built config and trainer, the
    method fields are the configured ones, every task gets G scored completions, the figures are finite and the
    update differs from the default trainer's from the same weights, seed and rollouts."""
    backend, prompts = tiny_backend(shared=True, kl_beta=0.0, tasks=2)
    backend.cfg = backend.cfg.replace(agent={"trainer": "high_entropy", "loss_type": "dr_grpo"})
    built = TRAINERS["high_entropy"].build(backend.trainer_kit(prompts, reward, str(tmp_path / "built")))
    assert built.args.top_entropy_quantile == 0.2 and built.top_entropy_quantile == 0.2
    assert built.args.loss_type == "dr_grpo"  # the configured objective is left as configured
    backend._grpo_calls = 0  # the same trainer seed as the default trainer's update below

    g = backend.cfg.agent.num_generations
    seen: Counter = Counter()

    def recording_reward(task_ids, texts):
        seen.update(task_ids)
        return reward(task_ids, texts)

    before = _agent_lora(backend)
    update = update_agent(backend, backend.cfg, prompts, recording_reward)
    moved = [a - b for a, b in zip(_agent_lora(backend), before)]
    assert dict(seen) == {p.task_id: g for p in prompts}
    assert math.isfinite(update.loss) and update.steps == 1
    assert all(math.isfinite(update.metrics[k]) for k in ("grpo/loss", "grpo/entropy", "grpo/grad_norm"))
    assert update.metrics["agent/trainer"] == "trl.GRPOTrainer"
    assert any(d.abs().sum() > 0 for d in moved), "the agent adapter did not move"

    default, prompts = tiny_backend(shared=True, kl_beta=0.0, tasks=2)
    default.cfg = default.cfg.replace(agent={"loss_type": "dr_grpo"})
    default._grpo_calls = 0
    start = _agent_lora(default)
    assert all(torch.equal(a, b) for a, b in zip(start, before))  # the same weights to start from
    update_agent(default, default.cfg, prompts, reward)
    moved_default = [a - b for a, b in zip(_agent_lora(default), start)]
    assert any(not torch.allclose(a, b) for a, b in zip(moved, moved_default)), \
        "the entropy mask left the update as the default trainer's"


def test_a_trainer_may_not_set_a_method_field(tmp_path):
    """A trainer's own settings come on top of the configured ones, never instead of them (the run's config.json
    would contradict what ran)."""
    backend, prompts = tiny_backend(shared=True, kl_beta=0.0, tasks=2)
    with pytest.raises(ValueError, match=r"a trainer's settings may not set method fields \['loss_type'\]"):
        TRLGRPO("renamed_dr_grpo", {"loss_type": "dr_grpo"}).build(backend.trainer_kit(prompts, reward, str(tmp_path)))
