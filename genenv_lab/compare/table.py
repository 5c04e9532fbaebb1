"""The comparison table: the run directories read back into one row per (label, seed, epoch), its summary over
seeds, and each label's residence in its own band."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import pandas as pd

from genenv_lab.core import curriculum as cur
from genenv_lab.config import RunConfig
from genenv_lab.core.readings import heldout_key
from genenv_lab.core.metrics import (AGENT_REWARD_MEAN, CUMULATIVE_AGENT_ROLLOUTS, CUMULATIVE_AGENT_TOKENS,
    DIVERSITY_ENTROPY, DRY_FRONTIER_INFORMATIVE, DRY_STEP_FRAC, FEATURES_LEVEL, FRAC_ZERO_STD,
    IN_BAND_FRAC, LEVELS_MAX, N_AGENT_PROMPTS, P_HAT_MEAN, REFERENCE_FRONTIER_SHARE, REFERENCE_IN_BAND_FRAC,
    REFERENCE_P_HAT, VALID_FRAC, WALL_S)

COLUMNS = ("label", "variant", "seed", "epoch", "heldout", P_HAT_MEAN, IN_BAND_FRAC, REFERENCE_P_HAT, VALID_FRAC,
           AGENT_REWARD_MEAN, "tasks_consumed", CUMULATIVE_AGENT_ROLLOUTS, CUMULATIVE_AGENT_TOKENS, WALL_S,
           "informative_frac", "informative_groups", DRY_STEP_FRAC, DRY_FRONTIER_INFORMATIVE, FEATURES_LEVEL,
           LEVELS_MAX, REFERENCE_IN_BAND_FRAC, REFERENCE_FRONTIER_SHARE, DIVERSITY_ENTROPY)
"""The comparison table's columns: the run's coordinates (``label``, ``variant``, ``seed``, ``epoch``), the readings
compare computes (``heldout``, ``tasks_consumed``, ``informative_frac``, ``informative_groups``) and, every other
column, a key of the metric registry (:mod:`genenv_lab.core.metrics`) under its own name."""
METRICS = ("heldout", P_HAT_MEAN, REFERENCE_P_HAT, IN_BAND_FRAC, "tasks_consumed", CUMULATIVE_AGENT_ROLLOUTS,
           CUMULATIVE_AGENT_TOKENS, VALID_FRAC, "informative_frac", "informative_groups", DRY_STEP_FRAC,
           DRY_FRONTIER_INFORMATIVE, FEATURES_LEVEL, REFERENCE_IN_BAND_FRAC, REFERENCE_FRONTIER_SHARE,
           DIVERSITY_ENTROPY)
"""The columns of :data:`COLUMNS` that :func:`summarise` averages over seeds (numbers, read as floats)."""
RESIDENCE_COLUMNS = ("label", "seed", "alpha", "k_min", "epochs", "entered_at_epoch", "stayed", "epochs_in_band")
REACH_COLUMNS = ("label", "reference", "target_heldout", "baseline_epoch", "baseline_rollouts", "reached_at_epoch",
                 "reference_rollouts", "ratio", "verdict")
REFERENCE_VARIANT = "genenv"


def collect(out: str | Path) -> pd.DataFrame:
    """One row per (label, seed, epoch) from the run directories listed in ``manifest.json``; epoch 0 (the
    untrained agent's held-out score, from ``baseline.json``) where the run has it."""
    from genenv_lab.rundir.read import read_baseline, read_epochs, read_table

    out = Path(out)
    manifest = json.loads((out / "manifest.json").read_text())
    rows = []
    for entry, seed in itertools.product(manifest["entries"], manifest["seeds"]):
        run_dir = run_dir_for(out, entry["label"], seed)
        attempts = read_table(run_dir, "attempts")
        rows += table_rows(entry["label"], entry["config"]["loop"]["variant"], seed, read_epochs(run_dir),
                           tasks_consumed_by_epoch(attempts), read_baseline(run_dir),
                           attempt_rollouts_by_epoch(attempts))
    return pd.DataFrame(rows, columns=list(COLUMNS)).astype({m: float for m in METRICS})


def heldout_of(scores: Mapping) -> float | None:
    """The held-out score among a record's or baseline's keys (:func:`genenv_lab.core.readings.heldout_key` of
    those with a value), or None."""
    key = heldout_key(k for k, v in scores.items() if v is not None)
    return scores[key] if key else None


def table_rows(label: str, variant: str, seed: int, records: Sequence[Mapping], consumed: Mapping[int, int],
               baseline: Mapping | None = None, rollouts: Mapping[int, int] | None = None) -> list[dict]:
    """Rows of the comparison table for one run: epoch 0 from ``baseline`` (held-out score only, no training yet)
    when it has a score, then one row per epoch record (:data:`COLUMNS`: a registry key's column holds the record's
    value of that key). Agent rollouts and tokens come from the records' ``cumulative/*``; ``rollouts`` (cumulative
    attempts rows per epoch, :func:`attempt_rollouts_by_epoch`) stands in for a record written before those keys."""
    rows = []
    start = heldout_of(baseline or {})
    if start is not None:
        rows.append({"label": label, "variant": variant, "seed": seed, "epoch": 0, "heldout": start,
                     "tasks_consumed": 0, CUMULATIVE_AGENT_ROLLOUTS: 0, CUMULATIVE_AGENT_TOKENS: 0})
    for r in records:
        extra = r.extra
        done = extra.get(CUMULATIVE_AGENT_ROLLOUTS, (rollouts or {}).get(r.epoch))
        rows.append({"label": label, "variant": variant, "seed": seed, "epoch": r.epoch,
                     "heldout": heldout_of(extra), P_HAT_MEAN: r.get(P_HAT_MEAN),
                     IN_BAND_FRAC: r.get(IN_BAND_FRAC), REFERENCE_P_HAT: extra.get(REFERENCE_P_HAT),
                     VALID_FRAC: r.get(VALID_FRAC), AGENT_REWARD_MEAN: r.get(AGENT_REWARD_MEAN),
                     "tasks_consumed": consumed.get(r.epoch, 0), CUMULATIVE_AGENT_ROLLOUTS: done,
                     CUMULATIVE_AGENT_TOKENS: extra.get(CUMULATIVE_AGENT_TOKENS), WALL_S: r.get(WALL_S),
                     **dry_columns(r, extra), REFERENCE_IN_BAND_FRAC: extra.get(REFERENCE_IN_BAND_FRAC),
                     REFERENCE_FRONTIER_SHARE: extra.get(REFERENCE_FRONTIER_SHARE),
                     DIVERSITY_ENTROPY: extra.get(DIVERSITY_ENTROPY)})
    return rows


def dry_columns(record: Mapping, extra: Mapping) -> dict:
    """The dry-run instrument's columns of one record (:mod:`genenv_lab.core.dryrun`): the share of informative GRPO
    groups (1 − ``frac_zero_std``) and their number (that share × ``n_agent_prompts``, the epoch's GRPO groups: an
    arm that trains on few tasks runs dry by count even when its share is high), the share of optimiser steps
    without one (``dry/step_frac``), the informative groups at the held-out frontier (``dry/frontier_informative``),
    and the mean and highest level of the simulator's valid tasks (``features/level``, ``levels/max``), each of these
    four under its key; None where the record has no such key (a run written before it, a domain without levels)."""
    zero, groups = record.get(FRAC_ZERO_STD), record.get(N_AGENT_PROMPTS)
    share = None if not isinstance(zero, (int, float)) else 1.0 - zero
    return {"informative_frac": share,
            "informative_groups": share * groups if share is not None and isinstance(groups, (int, float)) else None,
            **{k: extra.get(k) for k in (DRY_STEP_FRAC, DRY_FRONTIER_INFORMATIVE, FEATURES_LEVEL, LEVELS_MAX)}}


def tasks_consumed_by_epoch(attempts: pd.DataFrame) -> dict[int, int]:
    """Cumulative number of distinct non-seed tasks in the agent's GRPO batches, per epoch."""
    if attempts.empty:
        return {}
    trained = attempts[attempts["source"] != "seed"]
    out, seen = {}, set()
    for epoch in sorted(attempts["epoch"].unique()):
        seen |= set(trained.loc[trained["epoch"] == epoch, "task_id"])
        out[int(epoch)] = len(seen)
    return out


def attempt_rollouts_by_epoch(attempts: pd.DataFrame) -> dict[int, int]:
    """Cumulative number of attempts rows (GRPO completions) per epoch: the agent rollouts of a run whose records
    predate ``cumulative/agent_rollouts`` (no variant screened then, so every training rollout is a row)."""
    if attempts.empty:
        return {}
    per_epoch = attempts.groupby("epoch").size().sort_index().cumsum()
    return {int(e): int(n) for e, n in per_epoch.items()}


def summarise(table: pd.DataFrame) -> pd.DataFrame:
    """Mean, standard deviation and count over seeds of every metric, per label and epoch (a table built without
    some of :data:`METRICS`, by hand or before the dry-run columns, is summarised over those it has)."""
    if table.empty:
        return pd.DataFrame()
    grouped = table.groupby(["label", "epoch"])[[m for m in METRICS if m in table]]
    summary = grouped.agg(["mean", "std", "count"])
    summary.columns = [f"{m}_{s}" for m, s in summary.columns]
    return summary.reset_index()



def bands_of(entries: Sequence[tuple[str, RunConfig]]) -> dict[str, tuple[float, float]]:
    """Label → (α, k_min) of each entry's curriculum: the band its residence is judged against."""
    return {label: (cfg.curriculum.alpha, cfg.curriculum.k_min) for label, cfg in entries}


def band_residence(table: pd.DataFrame, *, alpha: float = 0.5, k_min: float = 0.1,
                   labels: Iterable[str] | None = None,
                   bands: Mapping[str, tuple[float, float]] | None = None) -> pd.DataFrame:
    """Per label and seed: the first epoch whose p̂ on generated tasks enters [α−k_min, α+k_min], and whether it
    stays there for every later epoch. ``bands`` (label → (α, k_min)) judges each label against its own band
    (a sweep over α); labels it does not name use ``alpha`` and ``k_min``."""
    rows = []
    wanted = None if labels is None else set(labels)
    for (label, seed), part in table[table["epoch"] > 0].groupby(["label", "seed"], sort=False):
        if wanted is not None and label not in wanted:
            continue
        a, k = (bands or {}).get(label, (alpha, k_min))
        part = part.sort_values("epoch")
        inside = [cur.in_band(p, a, k) if p == p else False for p in part[P_HAT_MEAN]]
        first = next((e for e, ok in zip(part["epoch"], inside) if ok), None)
        stays = first is not None and all(inside[list(part["epoch"]).index(first):])
        rows.append({"label": label, "seed": seed, "alpha": a, "k_min": k, "epochs": len(part),
                     "entered_at_epoch": first, "stayed": stays,
                     "epochs_in_band": int(sum(inside))})
    return pd.DataFrame(rows, columns=list(RESIDENCE_COLUMNS))


def _safe_label(label: str) -> str:
    return "".join(c if c.isalnum() or c in "-_.=" else "_" for c in label)


def run_dir_for(out: Path, label: str, seed: int) -> Path:
    """Where a comparison keeps the run of ``label`` at ``seed``: ``<out>/runs/<label>-s<seed>``, the label made
    safe as a folder name."""
    return Path(out) / "runs" / f"{_safe_label(label)}-s{seed}"


def arm_of(label: str) -> str:
    """The variant part of a ``preset:variant`` label (the label itself when it has none)."""
    return str(label).split(":", 1)[1] if ":" in str(label) else str(label)
