"""What a comparison's table says, paired by seed: rollouts to reach each baseline, data efficiency, the epochs
that ran dry, final and late scores, per-seed differences and a committed study's rows (pure pandas)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import pandas as pd

from genenv_lab.core import curriculum as cur
from genenv_lab.core.dryrun import RAN_DRY_STEP_FRAC
from genenv_lab.core.efficiency import Point, common_range, normalised_auc, reach_text, rollouts_to_reach
from genenv_lab.core.paired import Paired, paired
from genenv_lab.compare.table import REACH_COLUMNS, REFERENCE_VARIANT, summarise
from genenv_lab.core.metrics import CUMULATIVE_AGENT_ROLLOUTS, DRY_STEP_FRAC, IN_BAND_FRAC, P_HAT_MEAN, REFERENCE_P_HAT
from genenv_lab.core.readings import LAST_THIRD, SECOND_HALF, dry_epochs, late_column, window


def rollouts_to_reach_table(table: pd.DataFrame, reference_variant: str = REFERENCE_VARIANT) -> pd.DataFrame:
    """For each baseline label, the agent rollouts the reference arm (the same preset's ``genenv`` label, the part
    of a label before its first ``:`` naming the preset) needs to reach the baseline's final held-out score, from
    the means over seeds per epoch (:func:`genenv_lab.core.efficiency.rollouts_to_reach`): ``ratio`` is the baseline's
    rollouts at its first epoch at its final score ÷ the reference's at its first epoch whose mean held-out score
    reaches it (above 1:
    genenv needed fewer; NaN: not reached; inf: the untrained agent's epoch 0 already scores it). Labels without a
    reference beside them (a sweep) give no row."""
    if table.empty or CUMULATIVE_AGENT_ROLLOUTS not in table:
        return pd.DataFrame(columns=list(REACH_COLUMNS))
    summary = summarise(table)
    variants = table.drop_duplicates("label").set_index("label")["variant"].to_dict()
    curves = {label: [Point(int(e), float(n), float(h)) for e, n, h in
                      zip(part["epoch"], part[f"{CUMULATIVE_AGENT_ROLLOUTS}_mean"], part["heldout_mean"])]
              for label, part in summary.groupby("label", sort=False)}
    rows = []
    for label, variant in variants.items():
        reference = f"{str(label).split(':', 1)[0]}:{reference_variant}"
        if variant == reference_variant or reference not in curves or label not in curves:
            continue
        reach = rollouts_to_reach(curves[reference], curves[label])
        if reach is None:
            continue
        rows.append({"label": label, "reference": reference, "target_heldout": reach.target,
                     "baseline_epoch": reach.baseline_epoch, "baseline_rollouts": reach.baseline_rollouts,
                     "reached_at_epoch": reach.epoch, "reference_rollouts": reach.rollouts, "ratio": reach.ratio,
                     "verdict": reach_text(reach, reference_variant)})
    return pd.DataFrame(rows, columns=list(REACH_COLUMNS))


EFFICIENCY_COLUMNS = ("label", "reference", "measure", "seeds", "baseline_mean", "reference_mean", "mean", "std",
                      "ci_low", "ci_high", "reached", "range_low", "range_high")
MEASURES = ("heldout_auc", "rollouts_to_reach")


def _run_curves(table: pd.DataFrame) -> dict[tuple[str, int], list[Point]]:
    """(label, seed) → that run's (epoch, cumulative agent rollouts, held-out score) points with both known."""
    done = CUMULATIVE_AGENT_ROLLOUTS
    scored = table[table["heldout"].notna() & table[done].notna()].sort_values("epoch", kind="stable")
    return {(str(label), int(seed)): [Point(int(e), float(n), float(h))
                                      for e, n, h in zip(part["epoch"], part[done], part["heldout"])]
            for (label, seed), part in scored.groupby(["label", "seed"], sort=False)}


def efficiency_table(table: pd.DataFrame, reference_variant: str = REFERENCE_VARIANT) -> pd.DataFrame:
    """Data efficiency per baseline label, paired by seed with the same preset's reference arm (genenv), two
    ``measure`` rows each:

    - ``heldout_auc``: the area under each run's held-out curve against its cumulative agent rollouts over the
      pair's common rollout range [``range_low``, ``range_high``] (the stretch every run of the two arms on the
      paired seeds covers: from 0, the untrained agent, to the smallest total any of them spent; an arm that spends
      fewer rollouts shortens its own pair's range, never another's), divided by that range
      (:func:`genenv_lab.core.efficiency.normalised_auc`): the mean held-out score along the way. ``baseline_mean`` and
      ``reference_mean`` are the two arms' means over the paired seeds, ``mean``/``std``/``ci_low``/``ci_high`` the
      paired difference reference − baseline (95 % t interval, :func:`genenv_lab.core.paired.paired`).
    - ``rollouts_to_reach``: per seed, the threshold is the baseline's own final held-out score on that seed; the
      baseline is charged its rollouts at its first epoch at that score, the reference its rollouts at its first
      epoch at or above it (:func:`genenv_lab.core.efficiency.rollouts_to_reach`, per seed instead of on the means).
      ``reached`` counts the seeds where the reference got there; the difference (reference − baseline, in
      rollouts: below 0, genenv needed fewer) and ``reference_mean`` are over those seeds only, ``baseline_mean``
      over all paired seeds.

    Labels without a reference beside them (a sweep), or without paired seeds, give no rows.

    >>> rows = [{"label": f"p:{v}", "variant": v, "seed": s, "epoch": e, "heldout": h,
    ...          "cumulative/agent_rollouts": 100 * e}
    ...         for v, per_seed in {"genenv": [[0.2, 0.5, 0.6], [0.2, 0.35, 0.6]],
    ...                             "static": [[0.2, 0.3, 0.5], [0.2, 0.3, 0.4]]}.items()
    ...         for s, curve in enumerate(per_seed) for e, h in enumerate(curve)]
    >>> from genenv_lab.compare.table import COLUMNS
    >>> out = efficiency_table(pd.DataFrame(rows, columns=list(COLUMNS))).set_index("measure")
    >>> out.loc["heldout_auc", ["baseline_mean", "reference_mean", "mean", "range_high"]].round(2).to_dict()
    {'baseline_mean': 0.31, 'reference_mean': 0.41, 'mean': 0.1, 'range_high': 200.0}
    >>> out.loc["rollouts_to_reach", ["baseline_mean", "reference_mean", "mean", "reached"]].to_dict()
    {'baseline_mean': 200.0, 'reference_mean': 150.0, 'mean': -50.0, 'reached': 2.0}
    """
    if table.empty or CUMULATIVE_AGENT_ROLLOUTS not in table:
        return pd.DataFrame(columns=list(EFFICIENCY_COLUMNS))
    curves = _run_curves(table)
    variants = table.drop_duplicates("label").set_index("label")["variant"].astype(str).to_dict()
    rows = []
    for label, variant in variants.items():
        preset_name = str(label).split(":", 1)[0]
        ref = f"{preset_name}:{reference_variant}"
        seeds = sorted(s for lab, s in curves if lab == label and (ref, s) in curves)
        if variant == reference_variant or ref not in variants or not seeds:
            continue
        span = common_range([(p.rollouts, p.score) for p in curves[(name, s)]] for name in (label, ref) for s in seeds)
        lo, hi = span if span else (math.nan, math.nan)
        auc = {name: [normalised_auc([(p.rollouts, p.score) for p in curves[(name, s)]], lo, hi) for s in seeds]
               for name in (label, ref)}
        rows.append(_efficiency_row(label, ref, "heldout_auc", auc[label], auc[ref], lo, hi))
        reaches = [rollouts_to_reach(curves[(ref, s)], curves[(label, s)]) for s in seeds]
        base = [r.baseline_rollouts for r in reaches if r is not None]
        mine = [r.rollouts if r is not None and r.reached else math.nan for r in reaches]
        rows.append(_efficiency_row(label, ref, "rollouts_to_reach", base, mine, lo, hi,
                                    diffs=[m - r.baseline_rollouts for m, r in zip(mine, reaches) if r is not None]))
    return pd.DataFrame(rows, columns=list(EFFICIENCY_COLUMNS))


def _efficiency_row(label: str, ref: str, measure: str, baseline: Sequence[float], reference: Sequence[float],
                    lo: float, hi: float, diffs: Sequence[float] | None = None) -> dict:
    """One row of :func:`efficiency_table`: the arms' means and the paired difference reference − baseline."""
    stats = paired([r - b for r, b in zip(reference, baseline)] if diffs is None else diffs)
    finite = [v for v in reference if math.isfinite(v)]
    return {"label": label, "reference": ref, "measure": measure, "seeds": len(baseline),
            "baseline_mean": cur.mean_or_nan(v for v in baseline if math.isfinite(v)),
            "reference_mean": cur.mean_or_nan(finite), "mean": stats.mean, "std": stats.std,
            "ci_low": stats.low, "ci_high": stats.high, "reached": len(finite), "range_low": lo, "range_high": hi}


DRY_COLUMNS = ("label", "variant", "seeds", "epochs", "dry_epochs", "dry_share", "informative_frac",
               "informative_groups", late_column(DRY_STEP_FRAC, SECOND_HALF))
"""The columns of :func:`dry_run_table` (``dry_run.csv``)."""


def dry_run_table(table: pd.DataFrame, threshold: float = RAN_DRY_STEP_FRAC) -> pd.DataFrame:
    """Per label, its runs' second halves (epoch > E // 2, E the run's last epoch, as :func:`late_averages`): the
    epochs with a dry-run reading (``epochs``), those that *ran dry* (``dry_epochs``: ``dry/step_frac`` ≥
    ``threshold``, :func:`genenv_lab.core.dryrun.ran_dry`) and their share, the mean share of informative groups, their
    mean number per epoch (``informative_groups``: what an arm that trains on few tasks lacks even when its share
    is high, as ``online_filter`` after its screening; NaN for a table built without the column) and the mean share
    of dry steps (``dry/step_frac, second half``, :func:`late_column`). Labels whose runs predate the instrument (no
    ``dry/step_frac``) give no row.

    >>> rows = [{"label": "p:static", "variant": "static", "seed": 0, "epoch": e, "dry/step_frac": d,
    ...          "informative_frac": 1 - d} for e, d in [(1, 0.0), (2, 0.25), (3, 0.5), (4, 1.0)]]
    >>> row = dry_run_table(pd.DataFrame(rows)).to_dict("records")[0]
    >>> row["dry_epochs"], row["dry/step_frac, second half"]   # epochs 3 and 4 of 3-4
    (2, 0.75)
    """
    if table.empty or DRY_STEP_FRAC not in table or "informative_frac" not in table:
        return pd.DataFrame(columns=list(DRY_COLUMNS))
    late = window(table, SECOND_HALF, by=["label", "seed"])
    rows = []
    for label, part in late.groupby("label", sort=False):
        dry, known = dry_epochs(part[DRY_STEP_FRAC], threshold)
        if not known:
            continue
        rows.append({"label": label, "variant": str(part["variant"].iloc[0]), "seeds": part["seed"].nunique(),
                     "epochs": known, "dry_epochs": dry, "dry_share": dry / known,
                     "informative_frac": float(pd.to_numeric(part["informative_frac"], errors="coerce").mean()),
                     "informative_groups": float(pd.to_numeric(part["informative_groups"], errors="coerce").mean())
                     if "informative_groups" in part else math.nan,
                     DRY_COLUMNS[-1]: float(pd.to_numeric(part[DRY_STEP_FRAC], errors="coerce").mean())})
    return pd.DataFrame(rows, columns=list(DRY_COLUMNS))


FIXED_SET_VARIANT = "static"
"""The baseline the verdict judges the curriculum against: the same tasks' fixed set, written once."""


@dataclass(frozen=True)
class FinalScore:
    """An arm's held-out score at its final epoch with one (its last epoch with a mean over seeds)."""

    epoch: int
    mean: float
    std: float
    """Standard deviation over seeds (NaN with one seed)."""
    seeds: int

    def text(self) -> str:
        return f"{self.mean:.3f}" if self.seeds < 2 else f"{self.mean:.3f} ± {self.std:.3f}"


def final_scores(table: pd.DataFrame) -> dict[str, FinalScore]:
    """Label → its held-out score at its last epoch with one, mean and std over the seeds that have it; labels
    without a held-out score are left out."""
    out: dict[str, FinalScore] = {}
    summary = summarise(table)
    if summary.empty:
        return out
    for label, part in summary.groupby("label", sort=False):
        part = part[part["heldout_mean"].notna()]
        if part.empty:
            continue
        last = part.loc[part["epoch"].idxmax()]
        out[str(label)] = FinalScore(int(last["epoch"]), float(last["heldout_mean"]), float(last["heldout_std"]),
                                     int(last["heldout_count"]))
    return out


LATE_COLUMNS = (late_column(IN_BAND_FRAC, SECOND_HALF), late_column(P_HAT_MEAN, LAST_THIRD),
                late_column(REFERENCE_P_HAT, LAST_THIRD))
"""The late readings of :func:`late_averages`, per run: the in-band share over the second half, mean p̂ over the
last third on the simulator's tasks and on the untrained simulator's (:func:`late_column` names each)."""


def late_averages(table: pd.DataFrame) -> pd.DataFrame:
    """Per run (``label``, ``seed``) the curriculum's late readings, steadier than one epoch's: the in-band share over
    the second half of its epochs (epoch > E // 2) and the mean p̂ over the last third (epoch > ⌊2E/3⌋), on
    the simulator's tasks and on the untrained simulator's; E is the run's last epoch.

    >>> rows = [{"label": "a", "seed": 0, "epoch": e, "in_band_frac": b, "p_hat_mean": p, "reference/p_hat": 0.9}
    ...         for e, b, p in [(0, None, None), (1, 0.0, 0.1), (2, 0.2, 0.3), (3, 0.4, 0.5), (4, 0.6, 0.7)]]
    >>> late_averages(pd.DataFrame(rows)).round(2).to_dict("records")[0]  # doctest: +NORMALIZE_WHITESPACE
    {'label': 'a', 'seed': 0, 'in_band_frac, second half': 0.5, 'p_hat_mean, last third': 0.6,
     'reference/p_hat, last third': 0.9}
    """
    keys = ["label", "seed"]
    half = window(table, SECOND_HALF, by=keys).groupby(keys)
    third = window(table, LAST_THIRD, by=keys).groupby(keys)
    return pd.DataFrame({LATE_COLUMNS[0]: half[IN_BAND_FRAC].mean(), LATE_COLUMNS[1]: third[P_HAT_MEAN].mean(),
                         LATE_COLUMNS[2]: third[REFERENCE_P_HAT].mean()}, columns=list(LATE_COLUMNS)).reset_index()


def seed_finals(table: pd.DataFrame) -> pd.Series:
    """Each run's held-out score at its last epoch with one, indexed by (``label``, ``seed``)."""
    scored = table[table["heldout"].notna()].sort_values("epoch", kind="stable")
    return scored.groupby(["label", "seed"])["heldout"].last()


PAIRED_COLUMNS = ("label", "reference", "seeds", "mean", "std", "stderr", "ci_low", "ci_high", "wins", "ties",
                  "losses")


def paired_differences(table: pd.DataFrame, reference_variant: str = REFERENCE_VARIANT,
                       tol: float = 1e-9) -> pd.DataFrame:
    """Per baseline label, the reference arm's (genenv's, same preset) held-out score at each run's last scored epoch
    minus the baseline's, paired by seed over the seeds both have: their number, mean, std, standard error
    (std / √seeds), the 95 % t interval of the mean (:func:`genenv_lab.core.paired.paired`; NaN on one seed) and the
    seeds the reference wins, ties (within ``tol``) and loses. Pairing removes what a seed
    does to every arm (the same untrained agent, the same counterfactual set), so it reads a small effect sooner
    than the two arms' spreads side by side.

    >>> rows = [{"label": f"p:{v}", "variant": v, "seed": s, "epoch": 1, "heldout": h}
    ...         for v, scores in {"genenv": [0.5, 0.6, 0.4], "static": [0.4, 0.6, 0.5]}.items()
    ...         for s, h in enumerate(scores)]
    >>> paired_differences(pd.DataFrame(rows)).round(3).to_dict("records")
    [{'label': 'p:static', 'reference': 'p:genenv', 'seeds': 3, 'mean': 0.0, 'std': 0.1, 'stderr': 0.058, \
'ci_low': -0.248, 'ci_high': 0.248, 'wins': 1, 'ties': 1, 'losses': 1}]
    """
    rows = []
    for label, part in seed_differences(table, reference_variant).groupby("label", sort=False):
        diff, ref = part["difference"], part["reference"].iloc[0]
        stats = paired(diff)
        rows.append({"label": label, "reference": ref, "seeds": stats.seeds, "mean": stats.mean, "std": stats.std,
                     "stderr": stats.stderr, "ci_low": stats.low, "ci_high": stats.high,
                     "wins": int((diff > tol).sum()),
                     "ties": int((diff.abs() <= tol).sum()), "losses": int((diff < -tol).sum())})
    return pd.DataFrame(rows, columns=list(PAIRED_COLUMNS))


SEED_DIFFERENCE_COLUMNS = ("label", "reference", "seed", "difference")


def seed_differences(table: pd.DataFrame, reference_variant: str = REFERENCE_VARIANT) -> pd.DataFrame:
    """The per-seed rows behind :func:`paired_differences`: for each baseline label and each seed both arms have,
    the reference arm's final held-out score minus the baseline's (``paired_by_seed.csv``; a committed study's copy
    is what ``compare --spread-from`` reads).

    >>> rows = [{"label": f"p:{v}", "variant": v, "seed": s, "epoch": 1, "heldout": h}
    ...         for v, scores in {"genenv": [0.5, 0.6], "static": [0.4, 0.6]}.items() for s, h in enumerate(scores)]
    >>> seed_differences(pd.DataFrame(rows)).round(3).to_dict("records")[0]
    {'label': 'p:static', 'reference': 'p:genenv', 'seed': 0, 'difference': 0.1}
    """
    finals = seed_finals(table)
    variants = table.drop_duplicates("label").set_index("label")["variant"].astype(str).to_dict()
    rows = []
    for label, variant in variants.items():
        ref = f"{str(label).split(':', 1)[0]}:{reference_variant}"
        if variant == reference_variant or ref not in variants or label not in finals or ref not in finals:
            continue
        for seed, diff in (finals[ref] - finals[label]).dropna().items():
            rows.append({"label": label, "reference": ref, "seed": int(seed), "difference": float(diff)})
    return pd.DataFrame(rows, columns=list(SEED_DIFFERENCE_COLUMNS))



def read_study(path: str | Path) -> pd.DataFrame:
    """A committed ``paired_by_seed.csv`` (bounded read: a regular file of at most 1 MB); ValueError naming what is
    wrong otherwise."""
    import io

    from genenv_lab.safe_io import MB, read_regular

    try:
        frame = pd.read_csv(io.BytesIO(read_regular(path, MB, "study file")))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path} cannot be read as a paired_by_seed.csv ({exc})") from None
    missing = set(SEED_DIFFERENCE_COLUMNS) - set(frame.columns)
    if missing:
        raise ValueError(f"{path} is not a paired_by_seed.csv: no column(s) {sorted(missing)}")
    frame["difference"] = pd.to_numeric(frame["difference"], errors="coerce")
    return frame.dropna(subset=["difference"])


def paired_row_text(row, seeds: int, digits: int = 3, unit: str = "") -> str:
    """A paired row (mean, std, 95 % interval) of :func:`efficiency_table`, as :class:`~genenv_lab.core.paired.Paired`
    writes it."""
    return Paired(seeds, float(row.mean), float(row.std), math.nan, float(row.ci_low), float(row.ci_high)).text(
        digits, unit)
