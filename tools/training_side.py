"""Print a run's training-side figures per epoch and nothing measured on held-out items, for choices made before
a pre-registration (docs/research/preregistration.md): p̂ and the in-band share on the simulator's tasks, p̂ on the
untrained simulator's tasks, the simulator's levels, the dry-run share and the informative groups. Left out on purpose:
``eval/*``, ``heldout/*`` and ``dry/frontier_*`` (the frontier is read from the held-out answers).

    python tools/training_side.py RUN_DIR [RUN_DIR ...] [--tasks-from EPOCH]

With ``--summary``, one line per run instead of its table (a pre-registration's training-side reading; the windows
are :mod:`genenv_lab.core.readings`'): p̂, the in-band and valid shares, the untrained simulator's supply from the
seeds (``reference/in_band_frac``) and the mean level of the simulator's tasks (``features/level``), averaged over
the last third of the epochs (27–40 of 40); the task entropy (``diversity/entropy``) averaged over the second half
(21–40); and the niches written by the last epoch with the most written one's share (``diversity/niches``,
``diversity/top_share``); then the mean over the runs.

With ``--tasks-from``, each run's table is followed by one line on its valid generated tasks from that epoch on:
how their p̂ spread (the shares at 0, strictly between, at 1, and in the band). Calibration needs tasks between 0
and 1: a world where the agent's rollouts of one task almost always agree has a mean p̂ that can sit at α while
no task is in band.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from genenv_lab.core.curriculum import in_band
from genenv_lab.core.readings import LAST, LAST_THIRD, SECOND_HALF, window_start
from genenv_lab.rundir.read import read_config, read_epochs, read_table

COLUMNS = (("p̂", "p_hat_mean", None), ("band", "in_band_frac", None), ("ref p̂", None, "reference/p_hat"),
           ("level", None, "features/level"), ("max", None, "levels/max"), ("dry", None, "dry/step_frac"),
           ("inform.", "frac_zero_std", None), ("rwr", None, "rwr/steps"))
HELD_OUT = ("eval/", "heldout/", "dry/frontier_")
assert not any(extra and extra.startswith(HELD_OUT) for _, _, extra in COLUMNS), "a column measured on held-out items"


def cell(record: dict, top: str | None, extra: str | None) -> str:
    value = record.get(top) if top else (record.get("extra") or {}).get(extra)
    if value is None:
        return "—"
    if top == "frac_zero_std":
        value = 1 - value
    return f"{value:.2f}"


def task_spread(run_dir: Path, first_epoch: int) -> dict[str, float]:
    """The shares of the run's measured valid generated tasks of epochs ≥ ``first_epoch`` whose p̂ is 0, strictly
    between 0 and 1, 1, and in the run's band, with their count and mean p̂."""
    tasks = read_table(run_dir, "tasks")
    p = tasks.loc[(tasks["epoch"] >= first_epoch) & tasks["valid"], "p_hat"].dropna()
    c = read_config(run_dir).curriculum
    n = max(len(p), 1)
    return {"n": len(p), "p̂": float(p.mean()) if len(p) else float("nan"), "at 0": float((p == 0).sum() / n),
            "between": float(((p > 0) & (p < 1)).sum() / n), "at 1": float((p == 1).sum() / n),
            "in band": sum(in_band(v, c.alpha, c.k_min) for v in p) / n}


SUMMARY = (("p̂", "p_hat_mean", LAST_THIRD), ("band", "in_band_frac", LAST_THIRD), ("valid", "valid_frac", LAST_THIRD),
           ("supply", "reference/in_band_frac", LAST_THIRD), ("level", "features/level", LAST_THIRD),
           ("entropy", "diversity/entropy", SECOND_HALF), ("niches", "diversity/niches", LAST),
           ("top", "diversity/top_share", LAST))


def summary(run_dir: Path) -> dict[str, float]:
    """The ``--summary`` figures of one run (NaN where it has no reading)."""
    records = read_epochs(run_dir)
    last = max((r["epoch"] for r in records), default=0)
    out = {}
    for name, key, span in SUMMARY:
        values = [(r.get(key) if key in r else (r.get("extra") or {}).get(key)) for r in records
                  if r["epoch"] >= window_start(last, span)]
        values = [float(v) for v in values if isinstance(v, (int, float)) and v == v]
        out[name] = sum(values) / len(values) if values else float("nan")
    return out


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python tools/training_side.py", description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", metavar="RUN_DIR")
    parser.add_argument("--tasks-from", type=int, metavar="EPOCH",
                        help="also print the per-task p̂ spread of the valid tasks of this epoch on")
    parser.add_argument("--summary", action="store_true", help="one line of late averages per run, then their mean")
    args = parser.parse_args(argv)
    if args.summary:
        rows = [(path, summary(Path(path))) for path in args.runs]
        width = max(len(str(p)) for p, _ in rows)
        print(f"{'run':<{width}} " + " ".join(f"{name:>7}" for name, _, _ in SUMMARY))
        for path, row in rows:
            print(f"{path:<{width}} " + " ".join(f"{row[n]:>7.3f}" for n, _, _ in SUMMARY))
        means = {n: sum(r[n] for _, r in rows) / len(rows) for n, _, _ in SUMMARY}
        print(f"{'mean':<{width}} " + " ".join(f"{means[n]:>7.3f}" for n, _, _ in SUMMARY))
        return
    first = args.tasks_from
    for path in args.runs:
        print(path)
        print("epoch " + " ".join(f"{name:>7}" for name, _, _ in COLUMNS))
        for r in read_epochs(Path(path)):
            print(f"{r['epoch']:>5} " + " ".join(f"{cell(r, top, extra):>7}" for _, top, extra in COLUMNS))
        if first is not None:
            spread = task_spread(Path(path), first)
            print(f"tasks of epochs {first}+: " + ", ".join(
                f"{k} {v}" if k == "n" else f"{k} {v:.2f}" for k, v in spread.items()))


if __name__ == "__main__":
    main(sys.argv[1:])
