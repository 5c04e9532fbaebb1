"""Choose a comparison's run length from training-side figures only (pre-registration 6,
docs/research/preregistration.md).

Reads the ``tasks/epoch_*.parquet`` files of long ``genenv`` runs (the simulator's tasks and the agent's p̂ on
them) and nothing measured on held-out items. For each candidate length E it prints, as a mean over the runs:

- ``level``: the mean level of the valid tasks over the last third of E (epochs ⌊2E/3⌋+1 … E), the issue's climb
  criterion (it must exceed ``--above``, the highest level in the seeds and the fixed set), and on how many runs
  it does;
- ``frontier``: the agent's training frontier in the window of the last ``--window`` epochs before E, the highest
  level whose tasks (at least 3 in the window) the agent solves with mean p̂ ≥ 0.5, and its rise over the window
  before that (``rise``): whether the agent is still learning at E;
- ``p̂ above``: the agent's mean p̂ on the window's tasks above ``--above`` (shown, not used by the rule: the
  simulator's tasks there get harder as it climbs).

The rule (written before the figures were read): E is the smallest candidate whose climb holds (mean > ``--above``
on the mean and on at least three quarters of the runs) and whose frontier ``rise`` is below ``--levelled`` levels;
if none, the largest candidate.

    python tools/run_length.py RUN_DIR [RUN_DIR ...] [--candidates 24 32 40 48] [--above 9]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from genenv_lab.core.dryrun import level_of
from genenv_lab.core.readings import LAST_THIRD, window_start
from genenv_lab.rundir.read import read_table


def valid_tasks(run: Path) -> pd.DataFrame:
    """The run's valid generated tasks with their epoch, level and p̂ (read by the run tables' one reader,
    :func:`genenv_lab.rundir.write.read_table`)."""
    tasks = read_table(run, "tasks")
    if tasks.empty:
        raise SystemExit(f"{run}: no tasks/epoch_*.parquet (is it a run directory?)")
    tasks = tasks[tasks["valid"].astype(bool) & tasks["p_hat"].notna()].copy()
    tasks["level"] = [level_of(f) if isinstance(f, dict) else None for f in tasks["features"]]
    return tasks.dropna(subset=["level"])


def figures(tasks: pd.DataFrame, length: int, above: float, window: int) -> dict:
    """One run's training-side figures at run length ``length``."""
    last_third = tasks[(tasks["epoch"] >= window_start(length, LAST_THIRD)) & (tasks["epoch"] <= length)]
    high = tasks[tasks["level"] > above]

    def in_window(frame: pd.DataFrame, lo: int, hi: int) -> pd.DataFrame:
        return frame[(frame["epoch"] > lo) & (frame["epoch"] <= hi)]

    def frontier(lo: int, hi: int) -> float:
        by_level = in_window(tasks, lo, hi).groupby("level")["p_hat"].agg(["mean", "size"])
        solved = by_level[(by_level["size"] >= 3) & (by_level["mean"] >= 0.5)]
        return float(solved.index.max()) if len(solved) else float("nan")

    now = frontier(length - window, length)
    high_now = in_window(high, length - window, length)["p_hat"]
    return {"level": float(last_third["level"].mean()), "frontier": now,
            "rise": now - frontier(length - 2 * window, length - window),
            "p_above": float(high_now.mean()) if len(high_now) else float("nan"), "epochs": int(tasks["epoch"].max())}


def meets_rule(frame: pd.DataFrame, above: float, levelled: float) -> bool:
    """Whether one candidate length's per-run figures meet the rule: the climb on the mean and on at least three
    quarters of the runs, and a frontier rise below ``levelled`` levels."""
    climbs = int((frame["level"] > above).sum())
    return bool(frame["level"].mean() > above and climbs >= 0.75 * len(frame) and frame["rise"].mean() < levelled)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--candidates", nargs="+", type=int, default=[24, 32, 40, 48])
    parser.add_argument("--above", type=float, default=9, help="highest level in the seeds and the fixed set")
    parser.add_argument("--window", type=int, default=8, help="epochs per frontier window")
    parser.add_argument("--levelled", type=float, default=1.0,
                        help="a frontier rise below this many levels counts as levelled off")
    args = parser.parse_args(argv)
    per_run = {run: valid_tasks(run) for run in args.runs}
    chosen = None
    print(f"{'E':>4} {'level':>7} {'runs >':>7} {'frontier':>9} {'rise':>7} {'p̂ above':>9}")
    for length in sorted(args.candidates):
        frame = pd.DataFrame([figures(t, length, args.above, args.window) for t in per_run.values()])
        if (frame["epochs"] < length).any():
            print(f"{length:>4}  (a run has fewer epochs)")
            continue
        climbs = int((frame["level"] > args.above).sum())
        print(f"{length:>4} {frame['level'].mean():>7.2f} {climbs:>4}/{len(frame):<2} {frame['frontier'].mean():>9.2f} "
              f"{frame['rise'].mean():>+7.2f} {frame['p_above'].mean():>9.3f}")
        if chosen is None and meets_rule(frame, args.above, args.levelled):
            chosen = length
    chosen = chosen or max(args.candidates)
    print(f"run length by the rule: {chosen} epochs")
    return chosen


if __name__ == "__main__":
    main()
