"""D_train across epochs: how an epoch's tasks extend the pool (:func:`next_pool`, by the variant's rules) and
how the loop state is rebuilt from a run directory on ``--resume`` (:func:`restore_state`, the same pool
:func:`next_pool` built, replayed epoch by epoch, the same :class:`~genenv_lab.core.efficiency.Consumption`, and the
held-out frontier of the latest evaluation)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Collection, Mapping

import pandas as pd

from genenv_lab.core import curriculum as cur
from genenv_lab.config import RunConfig
from genenv_lab.core.metrics import HELDOUT_FRONTIER_LEVEL, SCREEN_USED_UP
from genenv_lab.core.efficiency import KEYS, Consumption
from genenv_lab.core.niches import add_counts
from genenv_lab.domains import Domain
from genenv_lab.rundir.read import BASELINE_PREFIXES, read_baseline, read_epochs, read_table
from genenv_lab.core.types import EpochRecord, LoopState, PoolTask, TaskSpec

def next_pool(pool: list[PoolTask], measured: list[PoolTask], new: list[PoolTask], cfg: RunConfig,
              used_up: Collection[str] = ()) -> list[PoolTask]:
    """D_train after an epoch: the old pool and the new valid tasks, or (``rank_trim`` variants) the epoch's
    measured tasks without the ends of their p̂ ranking (:func:`~genenv_lab.core.curriculum.trim_by_rank`); less the
    tasks ``online_filter`` used up this epoch (``used_up``), so that no later epoch draws them again."""
    v = cfg.variant
    kept = cur.trim_by_rank(measured, lambda t: t.p_hat, v.rank_trim) if v.rank_trim else new
    out = kept if v.pool_keeps_last_epoch else pool + kept
    if used_up:
        gone = set(used_up)
        out = [t for t in out if t.task_id not in gone]
    return out


def restore_state(run_dir: Path, last_epoch: int, env_version: int, cfg: RunConfig, domain: Domain) -> LoopState:
    """Rebuild the loop state from a run directory's committed epochs (the same pool :func:`aggregate` built, what
    the agent has consumed so far, and the niche penalty's memory: every committed valid generation's niche)."""
    def pool_tasks(frame) -> list[PoolTask]:
        out = []
        for row in frame[frame["valid"]].itertuples() if len(frame) else []:
            spec = TaskSpec(question=row.question, answer=row.answer, text=row.text, features=dict(row.features))
            out.append(PoolTask(row.task_id, row.root_id, int(row.epoch), spec, float(row.p_hat)))
        return out

    tasks = read_table(run_dir, "tasks")
    tasks = tasks[tasks["epoch"] <= last_epoch] if len(tasks) else tasks
    records = {r.epoch: r for r in read_epochs(run_dir) if r.epoch <= last_epoch}
    pool: list[PoolTask] = []
    niches: dict[str, int] = {}
    for epoch in range(1, last_epoch + 1):  # replayed epoch by epoch, as aggregate() built it
        new = pool_tasks(tasks[tasks["epoch"] == epoch]) if len(tasks) else []
        niches = add_counts(niches, [domain.niche(t.spec) for t in new])
        pool = next_pool(pool, [t for t in new if not math.isnan(t.p_hat)], new, cfg,
                         used_up=_extra(records.get(epoch)).get(SCREEN_USED_UP) or ())
    attempts = read_table(run_dir, "attempts")
    attempts = attempts[attempts["epoch"] <= last_epoch] if len(attempts) else attempts
    return LoopState(epoch=last_epoch, env_version=env_version, pool=pool,
                     reference=pool_tasks(read_table(run_dir, "reference_tasks")),
                     consumed=restore_consumption(_extra(records.get(last_epoch)), attempts),
                     frontier=restore_frontier([_extra(records.get(e)) for e in range(1, last_epoch + 1)],
                                               read_baseline(run_dir, BASELINE_PREFIXES)),
                     niches=niches)


def restore_frontier(extras: list[Mapping], baseline: Mapping) -> float | None:
    """The held-out frontier the next epoch counts at: that of the latest committed evaluation (the last record with
    ``heldout/frontier_level``, else the untrained agent's in ``baseline.json``); None without one.

    >>> restore_frontier([{"heldout/frontier_level": 6.0}, {}], {"heldout/frontier_level": 4.0})
    6.0
    >>> restore_frontier([{}], {"heldout/frontier_level": 4.0}), restore_frontier([], {})
    (4.0, None)
    """
    found = next((x[HELDOUT_FRONTIER_LEVEL] for x in reversed(extras) if x.get(HELDOUT_FRONTIER_LEVEL) is not None),
                 baseline.get(HELDOUT_FRONTIER_LEVEL))
    return None if found is None else float(found)


def restore_consumption(last_extra: Mapping, attempts: pd.DataFrame) -> Consumption:
    """What the agent had consumed after the last committed epoch: rollouts and tokens from that epoch's record
    (``cumulative/*``), distinct tasks and questions from the attempts table (the GRPO batches' non-seed rows, as the
    loop counts them). A run written before these keys existed had no screening, so its rollouts are its attempts
    rows; its tokens were never counted (None)."""
    rollouts_key, tokens_key = KEYS[0], KEYS[1]
    trained = attempts[attempts["source"] != "seed"] if len(attempts) else attempts
    pairs = list(zip(trained["task_id"], trained["prompt"])) if len(trained) else []
    rollouts = last_extra.get(rollouts_key)
    tokens = last_extra.get(tokens_key)
    return Consumption(rollouts=int(rollouts) if rollouts is not None else len(attempts),
                       tokens=None if tokens is None else int(tokens),
                       task_ids=frozenset(t for t, _ in pairs), questions=frozenset(q for _, q in pairs))


def _extra(record: EpochRecord | None) -> Mapping:
    return record.extra if record is not None else {}
