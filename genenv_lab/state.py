"""D_train across epochs: how an epoch's tasks extend the pool (:func:`next_pool`, by the variant's rules) and
how the loop state is rebuilt from a run directory on ``--resume`` (:func:`restore_state`, the same pool
:func:`next_pool` built, replayed epoch by epoch)."""

from __future__ import annotations

import math
from pathlib import Path

from . import curriculum as cur
from .config import RunConfig
from .runlog import read_table
from .types import LoopState, PoolTask, TaskSpec


def next_pool(pool: list[PoolTask], measured: list[PoolTask], new: list[PoolTask], cfg: RunConfig) -> list[PoolTask]:
    """D_train after an epoch: the old pool and the new valid tasks, or (``rank_trim`` variants) the epoch's
    measured tasks without the ends of their p̂ ranking (:func:`~genenv_lab.curriculum.trim_by_rank`)."""
    v = cfg.variant
    kept = cur.trim_by_rank(measured, lambda t: t.p_hat, v.rank_trim) if v.rank_trim else new
    return kept if v.pool_keeps_last_epoch else pool + kept


def restore_state(run_dir: Path, last_epoch: int, env_version: int, cfg: RunConfig) -> LoopState:
    """Rebuild the loop state from a run directory's committed epochs (the same pool :func:`aggregate` built)."""
    def pool_tasks(frame) -> list[PoolTask]:
        out = []
        for row in frame[frame["valid"]].itertuples() if len(frame) else []:
            spec = TaskSpec(question=row.question, answer=row.answer, text=row.text, features=dict(row.features))
            out.append(PoolTask(row.task_id, row.root_id, int(row.epoch), spec, float(row.p_hat)))
        return out

    tasks = read_table(run_dir, "tasks")
    tasks = tasks[tasks["epoch"] <= last_epoch] if len(tasks) else tasks
    pool: list[PoolTask] = []
    for epoch in range(1, last_epoch + 1):  # replayed epoch by epoch, as aggregate() built it
        new = pool_tasks(tasks[tasks["epoch"] == epoch]) if len(tasks) else []
        pool = next_pool(pool, [t for t in new if not math.isnan(t.p_hat)], new, cfg)
    return LoopState(epoch=last_epoch, env_version=env_version, pool=pool,
                     reference=pool_tasks(read_table(run_dir, "reference_tasks")))
