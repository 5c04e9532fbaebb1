"""The trainer's side of the curriculum's tasks: :class:`EpochTasks`, the ``train_dataset`` a ``trl.GRPOTrainer``
reads the epoch in flight from, and the rollouts of that epoch a checkpoint carries."""

from __future__ import annotations

from typing import Any

from genenv_lab.coevolution.loop import EpochPlan


class EpochTasks:
    """The epoch in flight as the trainer sees it: :attr:`dataset` (one row per slot of the task batch, read as the
    current task when the data loader asks for it), the check that a GRPO group attempts one task, and the epoch's
    rollouts as a checkpoint holds them (:meth:`in_flight`, :meth:`restore`)."""

    def __init__(self, size: int, num_generations: int):
        from datasets import Dataset

        self.num_generations = num_generations
        self.plan: EpochPlan | None = None
        self.prompts: dict[str, str] = {}
        self._served: dict[int, int] = {}
        self._shared: dict[str, int] = {}
        """Per task, how many of its rollouts every process holds (:meth:`share`)."""
        self._shared_errors = 0
        """The reward log's ``score_errors`` that every process counts (:meth:`share`)."""
        self.dataset = Dataset.from_dict({"slot": list(range(size))})
        """The trainer's ``train_dataset``: one row per slot of the task batch, read as the current epoch's task
        (``prompt`` text, ``task_id``, ``question``, ``answer``, ``source``) when the data loader asks for it."""
        self.dataset.set_transform(self._rows)

    def serve(self, plan: EpochPlan | None, prompts: dict[str, str] | None = None) -> None:
        """Serve ``plan``'s batch (``prompts``: each task's rendered prompt), or nothing between epochs (None)."""
        self.plan, self.prompts, self._served, self._shared = plan, dict(prompts or {}), {}, {}
        self._shared_errors = 0

    def share(self, procs) -> None:
        """Every process's rollouts of the epoch in flight in every process's reward log (``procs``, the job's
        :class:`~genenv_lab.backends.distributed.Processes`; one process: nothing to do). Each process's reward
        functions record the rollouts of its own share of the trainer's batch; this gathers those recorded since the
        last share, in process order, so that p̂, the band and the RWR batch are computed from every rollout, the
        same on every process. A GRPO group's G rollouts lie on one process, so a task's rollouts keep their order."""
        if procs.world_size == 1 or self.plan is None:
            return
        rewards = self.plan.rewards
        new = [(t, c, r) for t in list(rewards.order) for c, r in rewards.records[t][self._shared.get(t, 0):]]
        shares = procs.gather([(procs.rank, new, rewards.score_errors - self._shared_errors)])
        others = [rollout for rank, rollouts, _ in shares if rank != procs.rank for rollout in rollouts]
        rewards.record([t for t, _, _ in others], [c for _, c, _ in others], [r for *_, r in others])
        # each process counted its own score errors (its scorer's, and rewards that were not numbers) once
        self._shared_errors += sum(errors for *_, errors in shares)
        rewards.score_errors = self._shared_errors
        self._shared = {t: len(recs) for t, recs in rewards.records.items()}

    def missing(self) -> list[str]:
        """The tasks of the epoch in flight that no rollout has attempted yet."""
        plan = self.plan
        return [b.task_id for b in plan.batch if not plan.rewards.records[b.task_id]] if plan else []

    def check_group(self, task_ids) -> None:
        """Refuse rollouts whose GRPO groups mix tasks, or that attempt tasks outside the epoch in flight."""
        g = self.num_generations
        ids = list(task_ids)
        for start in range(0, len(ids), g):
            if len(set(ids[start:start + g])) != 1:
                raise RuntimeError(f"a GRPO group's {g} rollouts attempt different tasks "
                                   f"({sorted(set(ids[start:start + g]))}): the trainer must sample the "
                                   "curriculum's dataset with TRL's RepeatSampler")
        unknown = set(ids) - set(self.plan.rewards.records)
        if unknown:
            raise RuntimeError(f"rollouts of tasks outside the curriculum's epoch {self.plan.state.epoch + 1}: "
                               f"{sorted(unknown)[:3]}")

    def in_flight(self) -> dict[str, Any]:
        """What a checkpoint holds of the epoch in flight: its prompts, each task's rollouts (completion, reward)
        in the order they came, and the rollouts no reward could be computed for."""
        rewards = self.plan.rewards if self.plan else None
        if rewards is None:
            return {"prompts": {}, "records": {}, "order": [], "score_errors": 0}
        return {"prompts": self.prompts, "order": list(rewards.order), "score_errors": rewards.score_errors,
                "records": {t: [[c, r] for c, r in rewards.records[t]] for t in rewards.order}}

    def restore(self, saved: dict[str, Any]) -> bool:
        """Record the rollouts a checkpoint holds (:meth:`in_flight`) when they are of the same tasks (True); else
        leave the epoch to go on with what is rolled out from here (False)."""
        if self.plan is None or saved.get("prompts") != self.prompts:
            return False
        rewards = self.plan.rewards
        for task_id in saved["order"]:
            pairs = saved["records"][task_id]
            rewards.record([task_id] * len(pairs), [c for c, _ in pairs], [r for _, r in pairs])
        rewards.score_errors = saved["score_errors"]
        self._shared = {t: len(recs) for t, recs in rewards.records.items()}  # every process restored the same
        self._shared_errors = rewards.score_errors
        return True

    def _rows(self, batch: dict[str, list]) -> dict[str, list]:
        """The dataset's transform: each requested slot as the epoch's task. Slot i serves the batch's i-th task;
        after a mid-epoch resume (the trainer's sampler then orders the slots anew) a slot whose task was already
        rolled out serves one that was not, so that every task is rolled out once per epoch."""
        if self.plan is None:
            raise RuntimeError("the curriculum's tasks are written when training begins: pass the curriculum in the "
                               "GRPOTrainer's callbacks and its dataset as train_dataset")
        tasks = [self.plan.batch[self._task_of(int(slot))] for slot in batch["slot"]]
        return {"prompt": [self.prompts[t.task_id] for t in tasks], "task_id": [t.task_id for t in tasks],
                "question": [t.spec.question for t in tasks], "answer": [t.spec.answer for t in tasks],
                "source": [t.source for t in tasks]}

    def _task_of(self, slot: int) -> int:
        if slot not in self._served:
            records, taken = self.plan.rewards.records, set(self._served.values())
            free = [i for i, b in enumerate(self.plan.batch) if i not in taken and not records[b.task_id]]
            self._served[slot] = slot if slot in free or not free else free[0]
        return self._served[slot]
