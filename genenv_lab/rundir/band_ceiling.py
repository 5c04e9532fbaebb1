"""Why a run's in-band fraction is what it is: measured, expected from where the simulator put its tasks, and the
ceiling had it put them all at the best difficulty.

    python -m genenv_lab.rundir.band_ceiling RUN_DIR [--feature level]

For each epoch, the agent's success probability at each value of a difficulty feature (``level`` for ``times``) is
estimated by pooling the p̂ of that epoch's valid tasks with that value. Then:

- ``measured``: the epoch's in-band fraction (as in ``epochs.jsonl``);
- ``expected``: the mean over the epoch's tasks of P(p̂ in band | their difficulty's success probability), i.e.
  what the band filter keeps given where the simulator's tasks sit (G's binomial noise included);
- ``best``: the same probability at the epoch's best difficulty value: the ceiling if every task had been written
  there (for G = 8 and the band [3/8, 5/8] at most 0.71, at p = α);
- ``near_alpha``: the share of the epoch's tasks at difficulties whose success probability is within 0.2 of α;
- ``spread``: the standard deviation of the feature over the epoch's tasks.

``measured`` ≈ ``expected`` ≪ ``best`` says the simulator spreads its tasks too widely (or sits at the wrong
difficulty); ``best`` itself low says G's noise caps the fraction. Pooling by feature value is an estimate (tasks of
one value may differ in difficulty); it is written by hand because it is specific to this loop's run directory.
The pure part, :func:`band_ceiling`, takes a table and does no I/O.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

import pandas as pd

from genenv_lab.core.curriculum import in_band_probability

COLUMNS = ("epoch", "n", "measured", "expected", "best", "near_alpha", "spread")


def _feature(features: Any, name: str) -> float:
    if isinstance(features, str):
        try:
            features = json.loads(features)
        except json.JSONDecodeError:
            return math.nan
    value = features.get(name) if isinstance(features, dict) else None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan


def band_ceiling(tasks: pd.DataFrame, *, num_generations: int, alpha: float, k_min: float,
                 feature: str = "level") -> pd.DataFrame:
    """Per epoch: measured, expected and best in-band fractions (see the module docstring).

    ``tasks``: rows of the ``tasks`` table (``epoch``, ``valid``, ``p_hat``, ``in_band``, ``features``); rows that are
    rejected, unmeasured or lack the feature are left out."""
    frame = pd.DataFrame({"epoch": tasks["epoch"], "p_hat": pd.to_numeric(tasks["p_hat"], errors="coerce"),
                          "in_band": tasks["in_band"].astype(bool),
                          "x": [_feature(f, feature) for f in tasks["features"]]})
    frame = frame[tasks["valid"].astype(bool).to_numpy() & frame["p_hat"].notna() & frame["x"].notna()]
    rows = []
    for epoch, part in frame.groupby("epoch", sort=True):
        p_at = part.groupby("x")["p_hat"].mean().clip(0.0, 1.0)
        keep = {x: in_band_probability(p, num_generations, alpha, k_min) for x, p in p_at.items()}
        rows.append({"epoch": int(epoch), "n": len(part), "measured": part["in_band"].mean(),
                     "expected": part["x"].map(keep).mean(), "best": max(keep.values()),
                     "near_alpha": part["x"].map(lambda x, p_at=p_at: abs(p_at[x] - alpha) <= 0.2).mean(),
                     "spread": part["x"].std(ddof=0)})
    return pd.DataFrame(rows, columns=list(COLUMNS))


def run_band_ceiling(run_dir: str | Path, feature: str = "level") -> pd.DataFrame:
    """:func:`band_ceiling` of a run directory, with the run's own G, α and k_min (from ``config.json``)."""
    from genenv_lab.rundir.layout import CONFIG
    from genenv_lab.rundir.read import read_config, read_table

    run_dir = Path(run_dir)
    tasks = read_table(run_dir, "tasks")
    if not (run_dir / CONFIG).is_file() or not len(tasks):
        raise FileNotFoundError(f"{run_dir} is not a run directory with epochs (no {CONFIG} or no tasks table)")
    cfg = read_config(run_dir)
    return band_ceiling(tasks, num_generations=cfg.agent.num_generations,
                        alpha=cfg.curriculum.alpha, k_min=cfg.curriculum.k_min, feature=feature)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Measured, expected and best in-band fraction per epoch of a run.")
    parser.add_argument("run_dir")
    parser.add_argument("--feature", default="level", help="difficulty feature of the tasks (default: level)")
    args = parser.parse_args(argv)
    table = run_band_ceiling(args.run_dir, args.feature)
    print(table.round(2).to_string(index=False))
    half = table[table["epoch"] > table["epoch"].max() / 2]
    if len(half):
        print("second half: " + ", ".join(f"{c} {half[c].mean():.2f}" for c in COLUMNS[2:]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
