"""The lines ``genenv-lab run`` ends with: what the run consumed and what its curriculum did, read back from the run
directory."""

from __future__ import annotations

import math
from pathlib import Path

from genenv_lab.core.metrics import (CUMULATIVE_AGENT_ROLLOUTS, CUMULATIVE_AGENT_TOKENS, CUMULATIVE_DISTINCT_QUESTIONS,
    CUMULATIVE_DISTINCT_TASKS, P_HAT_MEAN, REFERENCE_P_HAT, RWR_STEPS)
from genenv_lab.core.readings import heldout_key


def run_summary(out: Path, cfg) -> list[str]:
    """Where p̂ went: first and last epoch on the simulator's tasks, on the untrained simulator's tasks, and the
    held-out score from epoch 0, against the run's band."""
    from genenv_lab.rundir.write import fmt_num
    from genenv_lab.rundir.read import read_baseline, read_epochs  # pandas: only when a run has ended

    records = read_epochs(out)
    if not records:
        return []
    c = cfg.curriculum
    first, last = records[0], records[-1]
    fx, lx = first.extra, last.extra
    lines = [f"α = {c.alpha:.2f}, band [{c.alpha - c.k_min:.3f}, {c.alpha + c.k_min:.3f}]: p̂ on the simulator's "
             f"tasks {fmt_num(first.p_hat_mean, 2)} (epoch {first.epoch}) → {fmt_num(last.p_hat_mean, 2)} "
             f"(epoch {last.epoch}); in band {fmt_num(first.in_band_frac, 2)} → "
             f"{fmt_num(last.in_band_frac, 2)}"]
    if REFERENCE_P_HAT in lx:
        lines.append(f"p̂ of the same agent on the untrained simulator's tasks: "
                     f"{fmt_num(fx.get(REFERENCE_P_HAT), 2)} → {fmt_num(lx.get(REFERENCE_P_HAT), 2)}")
    key = heldout_key(k for k, v in lx.items() if v is not None)
    if key:
        base = (read_baseline(out) or {}).get(key)
        lines.append(f"held-out {key[5:]}: {fmt_num(base, 2)} (untrained agent) → {fmt_num(lx[key], 2)} "
                     f"(epoch {last['epoch']})")
    consumed = consumption_line(lx)
    if consumed:
        lines.append(consumed)
    lines.append(curriculum_verdict(records, c.alpha, c.k_min))
    return lines


def consumption_line(extra: dict) -> str:
    """What the agent's training consumed by the last record (its ``cumulative/*``), or "" for a run written
    before those keys.

    >>> consumption_line({"cumulative/agent_rollouts": 640, "cumulative/agent_tokens": None,
    ...                   "cumulative/distinct_tasks": 40, "cumulative/distinct_questions": 38})
    'consumed for training: 640 agent rollouts (tokens not counted), 40 distinct tasks (38 distinct questions)'
    """
    rollouts = extra.get(CUMULATIVE_AGENT_ROLLOUTS)
    if rollouts is None:
        return ""
    tokens = extra.get(CUMULATIVE_AGENT_TOKENS)
    tokens_text = "tokens not counted" if tokens is None else f"{tokens:,} completion tokens"
    return (f"consumed for training: {rollouts:,} agent rollouts ({tokens_text}), "
            f"{extra.get(CUMULATIVE_DISTINCT_TASKS, 0):,} distinct tasks "
            f"({extra.get(CUMULATIVE_DISTINCT_QUESTIONS, 0):,} distinct questions)")


def curriculum_verdict(records: list[dict], alpha: float, k_min: float) -> str:
    """One sentence on what happened: p̂ over the last third of the epochs against α and against epoch 1, and in
    how many epochs the simulator was updated (RWR ran on in-band tasks)."""
    from genenv_lab.core.curriculum import in_band

    from genenv_lab.core.readings import LAST_THIRD, window_start

    n = len(records)
    since = window_start(max((r["epoch"] for r in records), default=0), LAST_THIRD)
    late = [r[P_HAT_MEAN] for r in records if r["epoch"] >= since and r.get(P_HAT_MEAN) is not None
            and not math.isnan(r[P_HAT_MEAN])]
    start = records[0].get(P_HAT_MEAN)
    updated = sum(1 for r in records if (r.get(RWR_STEPS) or 0) > 0)
    rwr = f"The simulator was updated (RWR on in-band tasks) in {updated} of {n} epochs."
    if not late or start is None or math.isnan(start):
        return "No p̂ was measured on the simulator's tasks (no valid task). " + rwr
    mean_late = sum(late) / len(late)
    where = "inside" if in_band(mean_late, alpha, k_min) else "outside"
    moved = "toward" if abs(mean_late - alpha) < abs(start - alpha) else "away from"
    return (f"So p̂ moved {moved} α: {start:.2f} in epoch 1, {mean_late:.2f} on average over the last "
            f"{len(late)} epochs, {where} the band. " + rwr)
