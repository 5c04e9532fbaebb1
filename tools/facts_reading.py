"""The facts world's frontier, read from runs' tasks (training side only; docs/research/curriculum_cpu.md, "the facts
world"): per sum of a task's hardest fact (every task without a fact over ten as one class, ``<10``), its share of the
valid measured tasks from an epoch on (default each run's last third, :mod:`genenv_lab.core.readings`), their mean
p̂ and in-band share; then the share whose hardest fact sums to 13 or more, and p̂ on them. Pooled over the runs
given.

    python tools/facts_reading.py runs/facts1/genenv-s0 runs/facts1/genenv-s1 [--from EPOCH]

Written by hand: a pandas group-by over the run directory's tasks table.
"""

from __future__ import annotations

import argparse
import json
from typing import Sequence


def frontier(run_dirs: Sequence[str], first_epoch: int | None = None):
    """(table by the hardest fact's sum, share with a fact of 13 or more, mean p̂ on those) of the runs' valid
    measured tasks from ``first_epoch`` on (None: each run's last third)."""
    import pandas as pd

    from genenv_lab.core.readings import LAST_THIRD, window_start
    from genenv_lab.domains.facts import TEN
    from genenv_lab.rundir.read import read_table

    frames = []
    for run in run_dirs:
        tasks = read_table(run, "tasks")
        if tasks.empty:
            continue
        start = first_epoch if first_epoch is not None else window_start(int(tasks.epoch.max()), LAST_THIRD)
        tasks = tasks[(tasks.epoch >= start) & tasks.valid & tasks.p_hat.notna()]
        top = tasks.features.apply(lambda f: (f if isinstance(f, dict) else json.loads(f))["top_sum"])
        frames.append(tasks.assign(top=top.clip(lower=TEN - 1)))
    if not frames or not sum(map(len, frames)):
        raise SystemExit(f"no valid measured tasks in the epochs read of {list(run_dirs)}")
    tasks = pd.concat(frames)
    table = tasks.groupby("top").agg(share=("p_hat", "size"), p_hat=("p_hat", "mean"), in_band=("in_band", "mean"))
    table["share"] /= len(tasks)
    table.index = ["<10" if s < TEN else str(s) for s in table.index]
    hard = tasks[tasks.top >= 13]
    return table, len(hard) / len(tasks), float(hard.p_hat.mean()) if len(hard) else float("nan")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", help="run directories of the facts world")
    parser.add_argument("--from", dest="first", type=int, default=None,
                        help="first epoch read (default: each run's last third, 27 of 40)")
    args = parser.parse_args(argv)
    table, share, p_hat = frontier(args.runs, args.first)
    print(table.round(3).to_string())
    print(f"hardest fact 13 or more: {share:.3f} of the tasks, p̂ {p_hat:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
