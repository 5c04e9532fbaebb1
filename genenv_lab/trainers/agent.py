"""The agent's trainers by name, and Algorithm 1's "update the agent" (:func:`update_agent`).

The loop calls :func:`update_agent` once an epoch. It looks up the trainer the run configures (``agent.trainer``)
in :data:`TRAINERS` and asks the engine to take an update from it
(:meth:`~genenv_lab.backends.base.Backend.train_agent`). The engine lends the trainer what is its own (a
:class:`~genenv_lab.backends.base.TrainerKit`: the model with the agent adapter active, the run-long optimiser, its
trainer and config classes, its flags); the trainer builds the update, runs it and reports the figures (``grpo/*``
from the trainer's log, ``agent/*`` from :func:`~genenv_lab.trainers.grpo.trainer_record`;
:func:`~genenv_lab.trainers.grpo.run_grpo`). No engine knows a trainer by name, and no trainer knows an engine.
The simulator's update is the same seam: :func:`genenv_lab.trainers.env.update_env`.

- ``grpo`` (the default): TRL's GRPOTrainer as :func:`~genenv_lab.trainers.grpo.build_grpo_trainer` builds it,
  with the RL objective the configuration sets (``agent.loss_type``, ``importance_sampling_level``,
  ``scale_rewards``, ...).
- ``high_entropy``: the same trainer, with its policy loss restricted to the 20 % highest-entropy completion tokens
  of each batch (TRL's ``top_entropy_quantile = 0.2``; Wang et al. 2025, "Beyond the 80/20 Rule", arXiv
  2506.01939).

Why a table when TRL's objective switches are already configuration fields: the switches the project exposes
(``loss_type``, GSPO's ``importance_sampling_level = "sequence"``, ``scale_rewards``, clipping, μ) stay fields of
``agent``, because they combine freely and the run's ``config.json`` records each one. A trainer here is what is
not a combination of those fields: a setting the configuration does not name (``high_entropy``'s quantile,
:class:`TRLGRPO`'s ``args``), another trainer class, or a construction of its own (any object with a ``name`` and
``update(kit)``, e.g. one building TRL's RLOOTrainer from the same kit and running it with
:func:`~genenv_lab.trainers.grpo.run_grpo`). A trainer may not set a method field
(:data:`~genenv_lab.trainers.grpo.METHOD_FIELDS`): those come from the configuration, so a run's record
never contradicts what ran.

Adding a trainer touches this module (an entry of :data:`TRAINERS`) and the configuration's table of names
(``genenv_lab.config.schema.AGENT_TRAINERS``, which validates ``--agent.trainer``), nothing else.
``tests/test_agent_trainers.py`` holds the two tables equal and runs a real update with ``high_entropy``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from genenv_lab.backends.base import AgentPrompt, AgentTrainer, AgentUpdate, Backend, RewardFn, TrainerKit

DEFAULT_TRAINER = "grpo"


@dataclass(frozen=True)
class TRLGRPO:
    """An agent trainer on TRL's GRPOTrainer (the engine's class: TRL's or Unsloth's), built by
    :func:`~genenv_lab.trainers.grpo.build_grpo_trainer` with the configured settings and ``args``, and run by
    :func:`~genenv_lab.trainers.grpo.run_grpo`."""

    name: str
    args: Mapping[str, Any] = field(default_factory=dict)
    """GRPOConfig settings beyond the configured ones (none may be a method field); checked as built."""

    def build(self, kit: TrainerKit) -> Any:
        """The TRL trainer of one update (not run)."""
        from genenv_lab.trainers.grpo import build_grpo_trainer  # torch and TRL load when an update is built

        return build_grpo_trainer(kit, trainer_args=dict(self.args))

    def update(self, kit: TrainerKit) -> AgentUpdate:
        """The update built (:meth:`build`), run and its figures."""
        from genenv_lab.trainers.grpo import run_grpo

        return run_grpo(self.build(kit), kit)


TRAINERS: dict[str, AgentTrainer] = {t.name: t for t in (
    TRLGRPO(DEFAULT_TRAINER),
    TRLGRPO("high_entropy", {"top_entropy_quantile": 0.2}),
)}
"""The agent's trainers by name; ``agent.trainer`` chooses one (the configuration's ``AGENT_TRAINERS`` names them)."""


def trainer_named(name: str) -> AgentTrainer:
    """The trainer of :data:`TRAINERS` called ``name``."""
    try:
        return TRAINERS[name]
    except KeyError:
        raise ValueError(f"agent trainer {name!r} is not in genenv_lab.trainers.agent.TRAINERS "
                         f"({', '.join(TRAINERS)}): choose one of those, or add it there") from None


def update_agent(backend: Backend, cfg, prompts: Sequence[AgentPrompt], reward_fn: RewardFn) -> AgentUpdate:
    """Algorithm 1's "update the agent": one update of the agent adapter over ``prompts`` (G rollouts each, scored
    and recorded by ``reward_fn``) by the trainer ``cfg.agent.trainer`` names, taken by ``backend``."""
    return backend.train_agent(trainer_named(cfg.agent.trainer), prompts, reward_fn)
