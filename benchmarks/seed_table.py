"""Per seed and paired by seed: what a comparison's arms ended at, and why (docs/research/curriculum_cpu.md,
six/sixteen seeds).

    python benchmarks/seed_table.py runs/cmp-count16          # a `genenv-lab compare --out` folder

Prints, per arm: the final held-out score of every seed and its mean ± std; the late readings of
:func:`genenv_lab.compare.late_averages` (in band over the second half, p̂ over the last third on the simulator's
and on the untrained simulator's tasks), mean over seeds; the share of GRPO groups with signal over the second half
(1 − ``frac_zero_std``: groups whose G rewards are not all equal); and, over the second half's valid generated
tasks (a fixed set's: the whole set), the most common value of each task feature with its share (on ``count``: the
start, the end and the steps). Then
:func:`genenv_lab.compare.paired_differences`: genenv's final score minus each baseline's, paired by seed.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import pandas as pd

from genenv_lab.compare import LATE_COLUMNS, collect, late_averages, paired_differences, run_dir_for, seed_finals
from genenv_lab.core.readings import SECOND_HALF, window_start
from genenv_lab.rundir.read import read_epochs, read_table


def second_half(run_dir: Path) -> tuple[float, dict[str, tuple[object, float]]]:
    """The run's share of GRPO groups with signal over the second half of its epochs, and the most common value of
    each feature of that half's valid tasks with its share (a fixed-set arm, which generates once: of its set)."""
    records = read_epochs(run_dir)
    last = max((r["epoch"] for r in records), default=0)
    start = window_start(last, SECOND_HALF)
    signal = statistics.mean(1 - r["frac_zero_std"] for r in records if r["epoch"] >= start)
    tasks = read_table(run_dir, "tasks")
    valid = tasks[tasks["valid"].astype(bool)] if len(tasks) else tasks
    if len(valid) and valid["epoch"].max() >= start:
        valid = valid[valid["epoch"] >= start]
    if not len(valid):
        return signal, {}
    features = pd.DataFrame(list(valid["features"]))
    common = {}
    for name in sorted(features.columns):
        counts = features[name].value_counts(normalize=True)
        common[name] = (counts.index[0], float(counts.iloc[0]))
    return signal, common


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("comparison", type=Path, help="a `genenv-lab compare --out` folder")
    args = ap.parse_args(argv)
    table = collect(args.comparison)
    late = late_averages(table)
    finals = seed_finals(table)
    for label, part in late.groupby("label", sort=False):
        seeds = list(part["seed"])
        scores = [finals.get((label, s)) for s in seeds]
        halves = [second_half(run_dir_for(args.comparison, label, s)) for s in seeds]
        print(f"{label}: final held-out {statistics.mean(scores):.3f} ± {statistics.stdev(scores):.3f} over "
              f"{len(seeds)} seeds" if len(seeds) > 1 else f"{label}: final held-out {scores[0]:.3f}")
        print("  per seed " + " ".join(f"{s}:{h:.2f}" for s, h in zip(seeds, scores)))
        print("  " + "; ".join(f"{c}: {part[c].mean():.2f}" for c in LATE_COLUMNS)
              + f"; groups with signal, second half: {statistics.mean(h[0] for h in halves):.2f}")
        for name in sorted({k for _, common in halves for k in common}):
            print(f"  most common {name} of the (second half's) tasks, per seed: "
                  + " ".join(f"{common[name][0]} ({common[name][1]:.0%})" for _, common in halves if name in common))
    print("\npaired by seed (genenv − baseline, final held-out score):")
    print(paired_differences(table).round(3).to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
