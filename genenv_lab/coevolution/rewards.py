"""The GRPO reward function of the agent's rollouts, which is also their record: one rollout pass serves both the
agent's update and p̂ (each completion is scored by the domain and kept per task id, so p̂, the attempts table and
GRPO's advantages come from the same rewards)."""

from __future__ import annotations

import math
from typing import Sequence

from genenv_lab.core import curriculum as cur
from genenv_lab.domains import Domain
from genenv_lab.core.dryrun import TrainedGroup
from genenv_lab.core.types import Attempt, BatchTask


class RewardLog:
    """The GRPO reward function: scores completions with the domain and records them per task id."""

    def __init__(self, domain: Domain, batch: Sequence[BatchTask]):
        self.domain = domain
        self.specs = {b.task_id: b.spec for b in batch}
        self.sources = {b.task_id: b.source for b in batch}
        self.prompts = {b.task_id: _render(domain.agent_messages(b.spec)) for b in batch}
        self.records: dict[str, list[tuple[str, float]]] = {t: [] for t in self.specs}
        self.score_errors = 0
        """Completions whose scorer raised (or returned a reward outside [0, 1]): scored 0, counted; and rollouts a
        user's reward functions gave no finite reward (:meth:`record`): left out of p̂, counted."""
        self.order: list[str] = []
        """Task ids in the order their first completion was scored: the order the trainer drew them in (TRL shuffles
        the batch; it asks for the rewards of one optimiser step's tasks at a time). Under N processes this
        process's share comes first and the others' after
        (:class:`~genenv_lab.backends.distributed.DataParallelBackend`)."""

    def __call__(self, task_ids: Sequence[str], completions: Sequence[str]) -> list[float]:
        rewards = []
        for task_id, completion in zip(task_ids, completions):
            reward, error = self.domain.safe_score(self.specs[task_id], completion)
            self.score_errors += bool(error)
            rewards.append(reward)
        self.record(task_ids, completions, rewards)
        return rewards

    def record(self, task_ids: Sequence[str], completions: Sequence[str], rewards: Sequence[float | None]) -> None:
        """Keep each completion's reward under its task id (rewards scored elsewhere: a TRL user's own reward
        functions, :class:`genenv_lab.trl.GenEnvCurriculum`). A reward that is not a finite number (NaN, ±inf,
        None: no reward was given) is kept as NaN and counted in :attr:`score_errors`; p̂ and every statistic
        leave it out (:meth:`rewards`)."""
        for task_id, completion, reward in zip(task_ids, completions, rewards):
            if not self.records[task_id]:
                self.order.append(task_id)
            value = math.nan if reward is None else float(reward)
            if not math.isfinite(value):
                self.score_errors += 1
                value = math.nan
            self.records[task_id].append((completion, value))

    def rewards(self, task_id: str) -> list[float]:
        """The task's rewards that were given (finite): what its p̂ and its GRPO statistics read."""
        return [r for _, r in self.records.get(task_id, []) if not math.isnan(r)]

    def groups(self) -> list[list[float]]:
        return [self.rewards(t) for t in self.records if self.records[t]]

    def trained_groups(self) -> list[TrainedGroup]:
        """Every task of the batch as its GRPO group (task features, G rewards), in the order they were trained
        (:attr:`order`): what the dry-run instrument reads (:func:`genenv_lab.core.dryrun.dry_metrics`)."""
        return [TrainedGroup(dict(self.specs[t].features), tuple(self.rewards(t))) for t in self.order]

    def attempts(self, epoch: int, threshold: float) -> list[Attempt]:
        out = []
        for task_id, recs in self.records.items():
            given = iter(cur.group_advantages(self.rewards(task_id)))
            adv = [math.nan if math.isnan(r) else next(given) for _, r in recs]
            for (completion, reward), a in zip(recs, adv):
                out.append(Attempt(task_id=task_id, epoch=epoch, source=self.sources[task_id],
                                   prompt=self.prompts[task_id], completion=completion, reward=reward,
                                   success=reward >= threshold, advantage=a))
        return out


def _render(messages: list[dict[str, str]]) -> str:
    """The non-system part of a prompt as readable text (the user turn, then any prefilled reply start)."""
    return "\n".join(m["content"] for m in messages if m["role"] != "system")
