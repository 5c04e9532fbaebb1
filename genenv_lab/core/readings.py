"""The late windows every reading of a run averages over, and which key is its held-out score, defined once. Pure:
no I/O.

A run's epochs 1..E (epoch 0, the untrained agent's baseline, is never in a window):

- the **last third**: the last ⌈E/3⌉ epochs, ⌊2E/3⌋ + 1 … E (27–40 of 40), where the pre-registrations read
  calibration (p̂, in band);
- the **second half**: ⌊E/2⌋ + 1 … E (21–40 of 40), where dry epochs, task entropy and the in-band share of
  ``compare``'s late table are read;
- the **last** epoch alone, where end-of-run counts (niches written) are read.

The lab's glance and story, ``compare``'s tables and verdict lines, and the research tools
(``tools/training_side.py``, ``tools/run_length.py``, ``benchmarks/seed_table.py``) take their windows from here, so
one figure reads the same wherever it is shown. E is each run's own last epoch (``by`` names the columns that tell runs
apart in a table of several).

Written by hand: the windows are this project's reading conventions.
"""

from __future__ import annotations

from typing import Iterable, Sequence

import pandas as pd

from genenv_lab.core.dryrun import RAN_DRY_STEP_FRAC, ran_dry
from genenv_lab.core.metrics import EVAL, EVAL_DOMAIN

LAST_THIRD, SECOND_HALF, LAST = "last third", "second half", "last"
SPANS = (LAST_THIRD, SECOND_HALF, LAST)


def window_start(last, span: str):
    """The first epoch of ``span`` in a run whose last epoch is ``last`` (a number, or a Series of them).

    >>> [window_start(40, s) for s in SPANS], [window_start(3, s) for s in SPANS], window_start(1, LAST_THIRD)
    ([27, 21, 40], [3, 2, 3], 1)
    """
    if span == LAST_THIRD:
        return (2 * last) // 3 + 1
    if span == SECOND_HALF:
        return last // 2 + 1
    if span == LAST:
        return last
    raise ValueError(f"span must be one of {SPANS}, not {span!r}")


def late_column(key: str, span: str) -> str:
    """The name of the column that holds the mean of column ``key`` (a key of the metric registry, or a reading of
    the comparison table) over the window ``span`` of :mod:`genenv_lab.core.readings`: the key, a comma, the window.
    Every late reading of a comparison (``compare``'s ``LATE_COLUMNS`` and ``DRY_COLUMNS``) and of the lab's glance
    is named by it.

    >>> late_column("in_band_frac", SECOND_HALF), late_column("reference/p_hat", LAST_THIRD)
    ('in_band_frac, second half', 'reference/p_hat, last third')
    """
    if span not in SPANS:
        raise ValueError(f"span must be one of {SPANS}, not {span!r}")
    return f"{key}, {span}"


def window(frame: pd.DataFrame, span: str, by: Sequence[str] = ()) -> pd.DataFrame:
    """The rows of ``frame`` (a column ``epoch``) inside ``span`` of their run; runs are told apart by the columns
    ``by`` (none: the frame is one run). Epoch 0 is left out.

    >>> f = pd.DataFrame({"run": ["a"] * 4 + ["b"] * 2, "epoch": [0, 1, 2, 3, 1, 2]})
    >>> window(f, SECOND_HALF, by=["run"]).to_dict("list")
    {'run': ['a', 'a', 'b'], 'epoch': [2, 3, 2]}
    """
    trained = frame[frame["epoch"] > 0]
    if trained.empty:
        return trained
    last = trained.groupby(list(by))["epoch"].transform("max") if by else int(trained["epoch"].max())
    return trained[trained["epoch"] >= window_start(last, span)]


def late_mean(frame: pd.DataFrame, column: str, span: str) -> float | None:
    """The mean of ``column`` over ``span`` of one run's frame, NaN and non-numbers left out; None without one.

    >>> late_mean(pd.DataFrame({"epoch": [0, 1, 2, 3], "p": [9.0, 0.2, None, 0.6]}), "p", LAST_THIRD)
    0.6
    """
    rows = window(frame, span)
    if column not in rows:
        return None
    values = pd.to_numeric(rows[column], errors="coerce").dropna()
    return float(values.mean()) if len(values) else None


def heldout_key(keys: Iterable[str]) -> str | None:
    """Which of a run's logged keys is *the* held-out score (those with a number; any order): ``eval/domain``, the
    domain's own held-out set, else the first benchmark's official metric by name (``eval/<benchmark>``, never a
    sub-score such as ``eval/<benchmark>_f1``), else None. The lab's story and glance, ``compare``'s table and the
    research scripts read the held-out score through it.

    >>> heldout_key(["eval/bfcl", "eval/domain"]), heldout_key(["eval/bfcl_f1", "eval/bfcl", "p_hat_mean"])
    ('eval/domain', 'eval/bfcl')
    >>> heldout_key(["heldout/frontier_level", "p_hat_mean"]) is None, heldout_key(["eval/qa_f1"]) is None
    (True, True)
    """
    names = sorted(str(k) for k in keys if str(k).startswith(EVAL) and not str(k).endswith("_f1"))
    return EVAL_DOMAIN if EVAL_DOMAIN in names else (names[0] if names else None)


def dry_epochs(step_fracs: Iterable, threshold: float = RAN_DRY_STEP_FRAC) -> tuple[int, int]:
    """Of some epochs' dry-run readings (``dry/step_frac``; NaN, None or a non-number where an epoch has none), how
    many *ran dry* (:func:`genenv_lab.core.dryrun.ran_dry` at ``threshold``) and how many have a reading: the lab's
    story and ``compare``'s dry-run table count a window's dry epochs through it.

    >>> dry_epochs([0.75, 0.25, None, float("nan"), "x", 1.0])
    (2, 3)
    """
    values = pd.to_numeric(pd.Series(list(step_fracs), dtype=object), errors="coerce")
    readings = [ran_dry(v, threshold) for v in values]
    known = [r for r in readings if r is not None]
    return sum(known), len(known)
