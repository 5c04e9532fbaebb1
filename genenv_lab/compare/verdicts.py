"""The sentences that end ``genenv-lab compare``: the verdict at a glance that the terminal shows (:func:`glance`: a
small table, one row per arm, and a sentence), the full verdict per preset that goes to ``verdict.txt``, and the
spread line beside a committed study."""

from __future__ import annotations

import math
import textwrap
from typing import Mapping, Sequence

import pandas as pd

from genenv_lab.core.dryrun import RAN_DRY_STEP_FRAC
from genenv_lab.compare.stats import (FIXED_SET_VARIANT, FinalScore, dry_run_table, efficiency_table, final_scores,
    late_averages, paired_row_text, rollouts_to_reach_table, seed_differences)
from genenv_lab.compare.table import REFERENCE_VARIANT, arm_of
from genenv_lab.core.metrics import (CUMULATIVE_AGENT_ROLLOUTS, DIVERSITY_ENTROPY, P_HAT_MEAN,
    REFERENCE_FRONTIER_SHARE, REFERENCE_IN_BAND_FRAC)
from genenv_lab.core.readings import LAST_THIRD, SECOND_HALF, late_column, window, window_start

def spread_lines(table: pd.DataFrame, study: pd.DataFrame, where: str) -> str:
    """For each baseline label of ``table`` that the study (:func:`seed_differences` rows of a committed comparison)
    also has: this comparison's mean paired difference beside the study's per-seed ones
    (:func:`genenv_lab.core.paired.spread_text`); "" when they share no label."""
    from genenv_lab.core.paired import spread_text

    here = seed_differences(table).groupby("label")["difference"].mean()
    lines = []
    for label, part in study.groupby("label", sort=False):
        if label in here.index:
            seeds = sorted(int(v) for v in part["seed"].unique())
            span = f"seed {seeds[0]}" if len(seeds) == 1 else f"seeds {seeds[0]}–{seeds[-1]}"
            lines.append(spread_text(part["difference"], float(here[label]), baseline=arm_of(label),
                                     reference=arm_of(part["reference"].iloc[0]), where=f"{span} of {where}"))
    return "\n".join(line for line in lines if line)


WIDTH = 120
"""The terminal width the glance is wrapped to."""
GLANCE_HEADER = ("arm", "seeds", "held-out: start → final", "agent rollouts", "p̂ last third", "dry epochs")


def glance(table: pd.DataFrame, study: pd.DataFrame | None = None, where: str = "the study",
           reference_variant: str = REFERENCE_VARIANT, fixed_variant: str = FIXED_SET_VARIANT) -> list[str]:
    """The verdict a person reads at a glance, in lines of at most :data:`WIDTH` characters (pure): per preset, an
    aligned table with one row per arm (seeds; held-out score of the untrained agent → at the final epoch, mean over
    seeds; agent rollouts spent by then; mean p̂ on the simulator's tasks over the last third, :func:`late_averages`;
    second-half epochs that ran dry, :func:`dry_run_table`), then one sentence: whether the curriculum paid against
    the fixed set and by how much; then, with ``study`` (a committed comparison's per-seed differences), the spread
    of that difference over its seeds (:func:`spread_lines`).

    >>> rows = [{"label": f"p:{v}", "variant": v, "seed": 0, "epoch": e, "heldout": h, "cumulative/agent_rollouts": r,
    ...          "p_hat_mean": None if e == 0 else 0.5}
    ...         for v, curve in {"genenv": [(0, 0.2), (100, 0.5), (200, 0.6)],
    ...                          "static": [(0, 0.2), (100, 0.3), (200, 0.5)]}.items()
    ...         for e, (r, h) in enumerate(curve)]
    >>> from genenv_lab.compare.table import COLUMNS
    >>> print("\\n".join(glance(pd.DataFrame(rows, columns=list(COLUMNS)))))
    p, 2 epochs:
      arm     seeds  held-out: start → final  agent rollouts  p̂ last third  dry epochs
      genenv      1        0.200 → 0.600                 200          0.50           –
      static      1        0.200 → 0.500                 200          0.50           –
    The curriculum paid: genenv ends 0.100 above the fixed set (static), on one seed.
    """
    if table.empty:
        return ["No run has finished an epoch yet: no verdict."]
    scores = final_scores(table)
    late = late_averages(table).groupby("label")[late_column(P_HAT_MEAN, LAST_THIRD)].mean()
    dry = {str(r.label): r for r in dry_run_table(table).itertuples()}
    lines: list[str] = []
    for preset_name, part in table.groupby(table["label"].astype(str).str.split(":", n=1).str[0], sort=False):
        rows = []
        for label, runs in part.groupby("label", sort=False):
            label = str(label)
            score, start = scores.get(label), runs[runs["epoch"] == 0]["heldout"].mean()
            final_epoch = runs[runs["epoch"] == runs["epoch"].max()]
            d = dry.get(label)
            rows.append((arm_of(label), str(runs["seed"].nunique()),
                         f"{_num(start)} → {_num(score.mean if score else math.nan)}",
                         f"{final_epoch[CUMULATIVE_AGENT_ROLLOUTS].mean():,.0f}", _num(late.get(label, math.nan), 2),
                         f"{d.dry_epochs} of {d.epochs}" if d is not None else "–"))
        lines.append(f"{preset_name}, {int(part['epoch'].max())} epochs:")
        lines += ["  " + line for line in _aligned([GLANCE_HEADER, *rows])]
        ref, fixed = scores.get(f"{preset_name}:{reference_variant}"), scores.get(f"{preset_name}:{fixed_variant}")
        if ref is not None and fixed is not None:
            lines += textwrap.wrap(_paid_sentence(ref, fixed, reference_variant, fixed_variant), WIDTH)
    if study is not None:
        spread = spread_lines(table, study, where)
        lines += [w for line in spread.splitlines() for w in textwrap.wrap(line, WIDTH)] if spread else [
            f"(the study in {where} has none of these arms)"]
    return lines


def _num(value: float, digits: int = 3) -> str:
    return f"{value:.{digits}f}" if value is not None and math.isfinite(value) else "–"


def _aligned(rows: Sequence[Sequence[str]]) -> list[str]:
    """Rows of cells as aligned text: the first column left-aligned, the others right-aligned, two spaces apart."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths)))
            .rstrip() for row in rows]


def _paid_sentence(ref: FinalScore, fixed: FinalScore, reference_variant: str, fixed_variant: str) -> str:
    """One sentence: did the curriculum pay against the fixed set, by how much, on how many seeds."""
    diff = ref.mean - fixed.mean
    seeds = min(ref.seeds, fixed.seeds)
    on = "on one seed" if seeds < 2 else f"mean over {seeds} seeds"
    if ref.epoch != fixed.epoch:
        on += f" (epoch {ref.epoch} against {fixed.epoch}: still running)"
    if diff > 1e-9:
        return f"The curriculum paid: {reference_variant} ends {diff:.3f} above the fixed set ({fixed_variant}), {on}."
    where = "level with" if diff >= -1e-9 else f"{-diff:.3f} below"
    return f"The curriculum did not pay: {reference_variant} ends {where} the fixed set ({fixed_variant}), {on}."


def verdict(table: pd.DataFrame, reference_variant: str = REFERENCE_VARIANT,
            fixed_variant: str = FIXED_SET_VARIANT, tol: float = 1e-9) -> str:
    """What a comparison found, in a paragraph per preset (pure: the numbers are the table's): the reference arm's
    (genenv's) held-out score at its final epoch against each baseline's (mean ± std over seeds when there are
    several) and the difference; the agent rollouts genenv needed to reach each baseline's final score, as the
    ratio of :func:`rollouts_to_reach_table`; and whether the curriculum paid against the fixed set
    (``static``): it paid when genenv's final mean is above static's (by more than ``tol``), it did not pay
    otherwise. A win smaller than the spread over seeds, or measured on one seed, is said to be so. Then the data
    efficiency paired by seed (:func:`efficiency_table`: the mean held-out score over each pair's common rollout
    range and the rollouts to reach each baseline's own final score, genenv − baseline with a 95 % interval), and,
    where the runs carry the dry-run instrument, one line on how often the fixed set ran dry over the second half
    (:func:`dry_run_table`; nothing for runs written before it).

    >>> rows = [{"label": f"p:{v}", "variant": v, "seed": 0, "epoch": e, "heldout": h, "cumulative/agent_rollouts": r}
    ...         for v, curve in {"genenv": [(0, 0.2), (100, 0.5), (200, 0.6)],
    ...                          "static": [(0, 0.2), (100, 0.3), (200, 0.5)]}.items()
    ...         for e, (r, h) in enumerate(curve)]
    >>> from genenv_lab.compare.table import COLUMNS
    >>> print(verdict(pd.DataFrame(rows, columns=list(COLUMNS))))
    p: held-out score at the final epoch (one seed, so no spread): genenv 0.600 (epoch 2); static 0.500
    (epoch 2), genenv +0.100. Agent rollouts genenv needed to reach each baseline's final score (ratio: the
    baseline's rollouts ÷ genenv's; above 1, genenv needed fewer): static 2.00 (genenv: 100 by epoch 1; static:
    200 by epoch 2). Against the fixed set (static) the curriculum paid: genenv ends 0.100 above it, on one seed
    (more seeds say whether it holds). Paired by seed (genenv − baseline): mean held-out score over the agent
    rollouts both arms' runs cover (the area under the held-out curve ÷ that range): static 0.325 against genenv
    0.450 over 0–200, +0.125 (one seed, no interval). Rollouts to reach each baseline's own final score on the
    same seed: static: genenv got there on 1 of 1 seeds, -100 rollouts (one seed, no interval), where static
    needed 200.
    """
    if table.empty:
        return "No run has finished an epoch yet: no verdict."
    scores = final_scores(table)
    variants = table.drop_duplicates("label").set_index("label")["variant"].astype(str).to_dict()
    reach = {row.label: row for row in rollouts_to_reach_table(table, reference_variant).itertuples()}
    presets = list(dict.fromkeys(str(label).split(":", 1)[0] for label in variants))
    efficiency, dry = efficiency_table(table, reference_variant), dry_run_table(table)
    paragraphs = [_preset_verdict(p, variants, scores, reach, reference_variant, fixed_variant, tol)
                  for p in presets]
    found = [text + _efficiency_text(efficiency, p, reference_variant)
             + _dry_line(dry, p, reference_variant, fixed_variant) + supply_line(table, p, reference_variant)
             + diversity_line(table, p, reference_variant)
             for p, text in zip(presets, paragraphs) if text]
    return "\n\n".join(found) if found else (
        f"No {reference_variant} arm with a baseline beside it (a sweep, or {reference_variant} alone): no verdict.")


def _efficiency_text(efficiency: pd.DataFrame, preset_name: str, reference_variant: str) -> str:
    """The verdict's sentences on data efficiency of one preset (:func:`efficiency_table`), or "" without rows."""
    part = efficiency[efficiency["reference"] == f"{preset_name}:{reference_variant}"]
    auc = [r for r in part.itertuples() if r.measure == "heldout_auc" and math.isfinite(r.baseline_mean)]
    reach = [r for r in part.itertuples() if r.measure == "rollouts_to_reach" and r.seeds > 0]
    text = ""
    if auc:
        text += (f" Paired by seed ({reference_variant} − baseline): mean held-out score over the agent rollouts "
                 f"both arms' runs cover (the area under the held-out curve ÷ that range): "
                 + "; ".join(f"{arm_of(r.label)} {r.baseline_mean:.3f} against {reference_variant} "
                             f"{r.reference_mean:.3f} over {r.range_low:,.0f}–{r.range_high:,.0f}, "
                             f"{paired_row_text(r, int(r.seeds))}" for r in auc)
                 + ".")
    if reach:
        text += (" Rollouts to reach each baseline's own final score on the same seed: "
                 + "; ".join(f"{arm_of(r.label)}: {reference_variant} got there on {int(r.reached)} of {int(r.seeds)} "
                             f"seeds" + (f", {paired_row_text(r, int(r.reached), 0, ' rollouts')}, where "
                                         f"{arm_of(r.label)} needed {r.baseline_mean:,.0f}" if r.reached else "")
                             for r in reach) + ".")
    return text




def _dry_line(dry: pd.DataFrame, preset_name: str, reference_variant: str, fixed_variant: str) -> str:
    """The verdict's dry-run line of one preset: in how many second-half epochs the fixed set (and genenv) ran dry
    (:func:`dry_run_table`); "" when its fixed-set arm has no reading (no such arm, or runs older than the keys)."""
    rows = {str(r.variant): r for r in dry.itertuples() if str(r.label).split(":", 1)[0] == preset_name}
    fixed = rows.get(fixed_variant)
    if fixed is None:
        return ""
    seeds = f" over {fixed.seeds} seeds" if fixed.seeds > 1 else ""
    line = (f"\nDry run: {fixed_variant} ran dry in {fixed.dry_epochs} of {fixed.epochs} second-half epochs{seeds} "
            f"(an epoch runs dry when at least {RAN_DRY_STEP_FRAC * 100:.0f} % of its GRPO steps have no "
            f"informative group; informative groups {fixed.informative_frac:.2f} of all{_per_epoch(fixed)}")
    ref = rows.get(reference_variant)
    if ref is not None:
        line += (f"), {reference_variant} in {ref.dry_epochs} of {ref.epochs} (informative groups "
                 f"{ref.informative_frac:.2f}{_per_epoch(ref)}")
    line += ")."
    few = []
    if ref is not None and math.isfinite(ref.informative_groups):
        few = [r for v, r in rows.items() if v not in (fixed_variant, reference_variant)
               and r.informative_groups < 0.5 * ref.informative_groups]  # NaN (an old table) compares False
    if few:
        line += (" Fewer informative groups an epoch than half of " + reference_variant + "'s, whatever their share: "
                 + "; ".join(f"{r.variant} {r.informative_groups:.1f}" for r in few) + ".")
    return line


def supply_line(table: pd.DataFrame, preset_name: str, reference_variant: str = REFERENCE_VARIANT) -> str:
    """The supply instrument in one line for one preset: the untrained simulator's tasks (the counterfactual set)
    at or above the level ``reference_variant``'s agent trains against, and in band for it, at the first and the
    last epoch (mean over seeds): where that share falls, an untrained simulator has little left to offer and
    training the simulator can add to curation. "" when the runs have no reading (no reference set, no frontier).

    >>> rows = [{"label": "p:genenv", "variant": "genenv", "seed": s, "epoch": e, "reference/frontier_share": f,
    ...          "reference/in_band_frac": b}
    ...         for s in (0, 1) for e, f, b in ((1, 0.6, 0.3), (2, 0.2, 0.1), (3, 0.05, 0.0))]
    >>> line = supply_line(pd.DataFrame(rows), "p")
    >>> "fell from 0.60 at epoch 1 to 0.05 by epoch 3" in line, line.endswith("in band for that agent: 0.30 → 0.00.")
    (True, True)
    """
    rows = table[(table["variant"] == reference_variant) & (table["epoch"] > 0)
                 & (table["label"].astype(str).str.split(":").str[0] == preset_name)]
    frontier, in_band = REFERENCE_FRONTIER_SHARE, REFERENCE_IN_BAND_FRAC
    if frontier not in rows or rows[frontier].notna().sum() == 0:
        return ""
    by_epoch = rows.groupby("epoch")[[frontier, in_band]].mean().dropna(subset=[frontier])
    first, last = by_epoch.iloc[0], by_epoch.iloc[-1]
    went = "fell" if last[frontier] < first[frontier] else "went"
    return (f"\nSupply: the untrained simulator's frontier supply (its tasks at or above the level "
            f"{reference_variant}'s agent trains against) {went} from {first[frontier]:.2f} at epoch "
            f"{by_epoch.index[0]} to {last[frontier]:.2f} by epoch {by_epoch.index[-1]}; its tasks in band for "
            f"that agent: {first[in_band]:.2f} → {last[in_band]:.2f}.")


UNTRAINED_VARIANT = "random_env"
"""The arm whose simulator writes every epoch but is never trained: the diversity line's yardstick."""
NARROWER_BY = 0.5
"""Bits of task entropy below the untrained simulator's at which the diversity line says the tasks narrow."""


def diversity_line(table: pd.DataFrame, preset_name: str, reference_variant: str = REFERENCE_VARIANT) -> str:
    """How varied the simulator's tasks are, in one line for one preset: ``diversity/entropy`` (bits) of the
    reference arm's and of the untrained simulator's (``random_env``) over the second half of the epochs (mean over
    epochs, then seeds), and whether the trained one narrows (:data:`NARROWER_BY` bits or more below), with the other
    trained arms beside them. "" when either arm has no reading.

    >>> rows = [{"label": f"p:{v}", "variant": v, "seed": s, "epoch": e, "diversity/entropy": d}
    ...         for s in (0, 1) for e in (1, 2, 3, 4) for v, d in (("genenv", 4 - e / 2), ("random_env", 3.8))]
    >>> line = diversity_line(pd.DataFrame(rows), "p")
    >>> "genenv's tasks span 2.25 bits against 3.80 for the untrained simulator" in line, line.endswith("narrow.")
    (True, True)
    """
    if DIVERSITY_ENTROPY not in table:
        return ""
    rows = table[(table["epoch"] > 0) & (table["label"].astype(str).str.split(":").str[0] == preset_name)]
    if rows.empty:
        return ""
    last = int(rows["epoch"].max())
    late = window(rows, SECOND_HALF, by=["variant", "seed"])
    bits = late.groupby(["variant", "seed"])[DIVERSITY_ENTROPY].mean().groupby("variant").mean().dropna()
    if reference_variant not in bits or UNTRAINED_VARIANT not in bits:
        return ""
    ref, untrained = bits[reference_variant], bits[UNTRAINED_VARIANT]
    others = [f"{v} {b:.2f}" for v, b in bits.items() if v not in (reference_variant, UNTRAINED_VARIANT)
              and v.startswith("genenv")]
    said = "they narrow" if ref <= untrained - NARROWER_BY else "not narrower"
    return (f"\nDiversity: {reference_variant}'s tasks span {ref:.2f} bits against {untrained:.2f} for the untrained "
            f"simulator ({UNTRAINED_VARIANT}) over epochs {window_start(last, SECOND_HALF)}–{last}: {said}"
            + (f" (also: {'; '.join(others)})" if others else "") + ".")


def _per_epoch(row) -> str:
    """", N an epoch" of a dry-run row's informative groups, or "" for a table written before that column."""
    return f", {row.informative_groups:.1f} an epoch" if math.isfinite(row.informative_groups) else ""


def _preset_verdict(preset_name: str, variants: Mapping[str, str], scores: Mapping[str, FinalScore],
                    reach: Mapping, reference_variant: str, fixed_variant: str, tol: float) -> str:
    ref_label = f"{preset_name}:{reference_variant}"
    if ref_label not in variants:
        return ""
    baselines = [label for label in variants
                 if str(label).split(":", 1)[0] == preset_name and label != ref_label]
    if not baselines:
        return ""
    ref = scores.get(ref_label)
    if ref is None:
        return f"{preset_name}: {reference_variant} has no held-out score yet: no verdict."
    counts = sorted({ref.seeds} | {scores[b].seeds for b in baselines if b in scores})
    spread = ("one seed, so no spread" if counts == [1] else
              f"mean ± std over {counts[0]} seeds" if len(counts) == 1 else
              f"mean ± std over {counts[0]}–{counts[-1]} seeds")
    parts = [f"{arm_of(b)} {scores[b].text()} (epoch {scores[b].epoch}), {reference_variant} "
             f"{ref.mean - scores[b].mean:+.3f}" for b in baselines if b in scores]
    text = (f"{preset_name}: held-out score at the final epoch ({spread}): {reference_variant} {ref.text()} "
            f"(epoch {ref.epoch})")
    text += ("; " + "; ".join(parts) + ".") if parts else "; no baseline has a held-out score yet."
    clauses = [_reach_clause(arm_of(b), reach[b], reference_variant) for b in baselines if b in reach]
    if clauses:
        text += (f" Agent rollouts {reference_variant} needed to reach each baseline's final score (ratio: the "
                 f"baseline's rollouts ÷ {reference_variant}'s; above 1, {reference_variant} needed fewer): "
                 + "; ".join(clauses) + ".")
    fixed = next((b for b in baselines if variants[b] == fixed_variant), None)
    if fixed is None:
        return text + (f" No {fixed_variant} arm beside it, so nothing is said about the fixed set: add "
                       f"--variants {reference_variant} {fixed_variant} to judge the curriculum against it.")
    if fixed not in scores:
        return text + f" {fixed_variant} has no held-out score yet: nothing to say about the fixed set."
    return text + " " + _paid(ref, scores[fixed], reach.get(fixed), reference_variant, arm_of(fixed), tol)


def _reach_clause(name: str, row, reference_variant: str) -> str:
    ratio = float(row.ratio)
    if math.isnan(ratio):
        return f"{name} not reached ({reference_variant}'s mean never scores {row.target_heldout:.3f})"
    if math.isinf(ratio):
        return f"{name} reached before training (the untrained agent already scores {row.target_heldout:.3f})"
    return (f"{name} {ratio:.2f} ({reference_variant}: {row.reference_rollouts:,.0f} by epoch "
            f"{int(row.reached_at_epoch)}; {name}: {row.baseline_rollouts:,.0f} by epoch {int(row.baseline_epoch)})")


def _paid(ref: FinalScore, fixed: FinalScore, reach_row, reference_variant: str, fixed_name: str,
          tol: float) -> str:
    diff = ref.mean - fixed.mean
    head = f"Against the fixed set ({fixed_name}) the curriculum"
    if ref.epoch != fixed.epoch:  # a comparison still running: say which epochs are compared
        head = (f"Comparing {reference_variant}'s epoch {ref.epoch} with {fixed_name}'s epoch {fixed.epoch} (not the "
                f"same length of training yet), against the fixed set the curriculum")
    if diff > tol:
        if min(ref.seeds, fixed.seeds) < 2:
            caveat = ", on one seed (more seeds say whether it holds)"
        else:
            spread = max(ref.std, fixed.std)
            caveat = (f", less than the spread over seeds (std up to {spread:.3f}): not a clear difference"
                      if diff <= spread else "")
        return f"{head} paid: {reference_variant} ends {diff:.3f} above it{caveat}."
    where = "level with it" if diff >= -tol else f"{-diff:.3f} below it"
    text = f"{head} did not pay: {reference_variant} ends {where}"
    ratio = float(reach_row.ratio) if reach_row is not None else math.nan
    if math.isfinite(ratio) and ratio > 1:
        text += f", though it reached {fixed_name}'s final score with {ratio:.2f}× fewer agent rollouts"
    return text + "."
