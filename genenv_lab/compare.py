"""Baselines, ablations and sweeps side by side: run a grid of configurations over seeds, then compare.

``compare_grid`` runs every (label, config) entry for every seed into ``<out>/runs/<label>-s<seed>`` (finished runs
are skipped, interrupted ones resumed, so a killed comparison continues where it stopped), with the domain's
held-out evaluation every epoch and the counterfactual reference set switched on. ``collect`` reads the run
directories back into one table (one row per label, seed, epoch); ``summarise`` gives mean and spread over seeds;
``report_figure`` draws the comparison; ``write_report`` saves ``comparison.csv``, ``comparison.parquet``,
``summary.csv``, ``band_residence.csv`` (per label and seed: first epoch with p̂ on generated tasks inside the
label's own band [α−k_min, α+k_min], whether it stayed, epochs in band), ``rollouts_to_reach.csv`` (per baseline:
the agent rollouts GenEnv needs to reach its final held-out score, :func:`rollouts_to_reach_table`),
``efficiency.csv`` (per baseline, paired by seed with GenEnv: the area under the held-out curve against cumulative
agent rollouts over the common range ÷ that range, and the rollouts to reach the baseline's own final score, with
95 % intervals: :func:`efficiency_table`), ``dry_run.csv`` (per label, the second-half epochs that ran dry:
:func:`dry_run_table`) and ``report.html`` (a self-contained plotly page the lab also shows); :func:`verdict`
writes the paragraph that ends ``genenv-lab compare``: genenv's final held-out score against each baseline's, the
rollouts it needed to reach them, whether the curriculum paid against the fixed set (``static``), the data
efficiency paired by seed, and how often the fixed set ran dry. :func:`late_averages` gives each run's in-band
share over its second half and p̂ over its last third, :func:`paired_differences` genenv's final score minus each
baseline's paired by seed (``benchmarks/seed_table.py`` prints both for a comparison folder).

Columns of the comparison table: ``label, variant, seed, epoch`` (0: the untrained agent, held-out score and
``tasks_consumed`` = ``agent_rollouts`` = ``agent_tokens`` = 0 only), ``heldout`` (``eval/domain``, or the first
``eval/<benchmark>`` score), ``p_hat_mean``, ``in_band_frac``, ``p_hat_reference`` (the same epoch's agent on the
untrained simulator's tasks), ``valid_frac``, ``agent_reward_mean``, ``tasks_consumed`` (distinct non-seed tasks
the agent has trained on so far), ``agent_rollouts`` and ``agent_tokens`` (agent completions sampled for training
so far, screening included, and their completion tokens: the records' ``cumulative/*``; a run written before those
keys counts its attempts rows as rollouts and has no tokens), ``wall_s``; then the dry-run instrument
(:func:`dry_columns`): ``informative_frac``, ``dry_step_frac``, ``frontier_informative``, ``level_mean``,
``level_max`` (empty for a run written before it).
"""

from __future__ import annotations

import itertools
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from . import curriculum as cur
from .config import RunConfig, for_domain, preset
from .dryrun import RAN_DRY_STEP_FRAC, ran_dry
from .efficiency import Point, common_range, normalised_auc, reach_text, rollouts_to_reach
from .paired import Paired, paired
from .runlog import RunDirError, atomic_write_json

COLUMNS = ("label", "variant", "seed", "epoch", "heldout", "p_hat_mean", "in_band_frac", "p_hat_reference",
           "valid_frac", "agent_reward_mean", "tasks_consumed", "agent_rollouts", "agent_tokens", "wall_s",
           "informative_frac", "dry_step_frac", "frontier_informative", "level_mean", "level_max")
METRICS = ("heldout", "p_hat_mean", "p_hat_reference", "in_band_frac", "tasks_consumed", "agent_rollouts",
           "agent_tokens", "valid_frac", "informative_frac", "dry_step_frac", "frontier_informative", "level_mean")
RESIDENCE_COLUMNS = ("label", "seed", "alpha", "k_min", "epochs", "entered_at_epoch", "stayed", "epochs_in_band")
REACH_COLUMNS = ("label", "reference", "target_heldout", "baseline_epoch", "baseline_rollouts", "reached_at_epoch",
                 "reference_rollouts", "ratio", "verdict")
REFERENCE_VARIANT = "genenv"
COMPARE_LOCK = ".compare.lock"
"""The file a running comparison holds an exclusive lock on (one comparison per ``--out`` at a time)."""


def variant_entries(presets: Sequence[str], variants: Sequence[str], *, epochs: int | None = None,
                    domain: str | None = None, teacher: str | None = None,
                    teacher_multipliers: Sequence[float] = (1.8, 3.3), reference_tasks: int | None = None,
                    eval_limit: int | None = None, data_dir: str = "") -> list[tuple[str, RunConfig]]:
    """(label, config) for each preset × variant; ``offline_teacher`` expands to one entry per data multiplier."""
    out = []
    for name, variant in itertools.product(presets, variants):
        base = preset(name)
        if domain:
            base = for_domain(base, domain)
        loop = {"variant": variant, **_measurement(base, reference_tasks, eval_limit, data_dir)}
        if epochs:
            loop["epochs"] = epochs
        if variant == "offline_teacher":
            if not teacher:
                raise ValueError("the offline_teacher variant needs a teacher model (--teacher ID or directory)")
            for m in teacher_multipliers:
                cfg = base.replace(loop=loop, env={"teacher_model": teacher, "teacher_data_multiplier": m})
                out.append((f"{name}:offline_teacher_x{m:g}", cfg))
        else:
            out.append((f"{name}:{variant}", base.replace(loop=loop)))
    return out


def sweep_entries(preset_name: str, *, alphas: Sequence[float] = (0.5,), shapes: Sequence[str] = ("gaussian",),
                  epochs: int | None = None, domain: str | None = None, reference_tasks: int | None = None,
                  eval_limit: int | None = None, data_dir: str = "") -> list[tuple[str, RunConfig]]:
    """(label, config) for each α × reward shape of the full method (the sweep helper)."""
    base = preset(preset_name)
    if domain:
        base = for_domain(base, domain)
    loop = _measurement(base, reference_tasks, eval_limit, data_dir)
    if epochs:
        loop["epochs"] = epochs
    return [(f"{preset_name}:alpha={a:g}:{s}", base.replace(loop=loop, curriculum={"alpha": a, "shape": s}))
            for a, s in itertools.product(alphas, shapes)]


def _measurement(base: RunConfig, reference_tasks: int | None, eval_limit: int | None,
                 data_dir: str) -> dict:
    """Loop settings every run of a comparison measures with: held-out score after every epoch, and the
    counterfactual set. ``None`` keeps the preset's own choice where it makes one (``cpu-demo``: 32 reference
    tasks, the whole held-out set), else 8 reference tasks and 20 held-out items."""
    lp = base.loop
    if reference_tasks is None:
        reference_tasks = lp.reference_tasks or 8
    if eval_limit is None:
        eval_limit = lp.eval_limit if lp.eval_every else 20
    return {"eval_every": 1, **_heldout(lp.domain, data_dir), "eval_limit": eval_limit,
            "reference_tasks": reference_tasks}


def _heldout(domain: str, data_dir: str = "") -> dict[str, str]:
    """Loop settings of the held-out evaluation: the domain's own held-out set, else its benchmark (read from
    ``data_dir``, else ``$GENENV_LAB_DATA`` or the cache)."""
    from .domains import get_domain

    dom = get_domain(domain)
    if dom.heldout_tasks():
        return {"eval_benchmark": "domain"}
    benchmark, category = dom.heldout_benchmark
    return {"eval_benchmark": benchmark, "eval_category": category, "eval_data_dir": str(data_dir or "")}


def _safe(label: str) -> str:
    return "".join(c if c.isalnum() or c in "-_.=" else "_" for c in label)


def run_dir_for(out: Path, label: str, seed: int) -> Path:
    return Path(out) / "runs" / f"{_safe(label)}-s{seed}"


def compare_grid(entries: Sequence[tuple[str, RunConfig]], seeds: int | Sequence[int], out: str | Path, *,
                 progress: bool = True, backend_factory=None) -> pd.DataFrame:
    """Run (or resume, or skip when finished) every entry for every seed, then write and return the comparison.

    ``backend_factory(cfg)`` builds the backend of each run (default: the engine of its config).
    """
    from .heldout import check_eval_data
    from .loop import run
    from .runlog import read_state

    for _, cfg in entries:  # missing benchmark data fails here, before any folder or model
        check_eval_data(cfg)
    out = Path(out)
    seed_list = list(range(seeds)) if isinstance(seeds, int) else list(seeds)
    manifest = {"entries": [{"label": lab, "config": cfg.to_dict()} for lab, cfg in entries], "seeds": seed_list}
    out.mkdir(parents=True, exist_ok=True)
    lock = _lock_comparison(out)  # before anything of the folder is written: a second compare is refused untouched
    try:
        for (label, cfg), seed in itertools.product(entries, seed_list):
            _check_reusable(run_dir_for(out, label, seed), cfg.replace(loop={"seed": seed}))
        atomic_write_json(out / "manifest.json", manifest)
        for (label, cfg), seed in itertools.product(entries, seed_list):
            _run_one(out, label, cfg.replace(loop={"seed": seed}), seed, progress, backend_factory, run, read_state)
        table = collect(out)
        write_report(table, out, bands_of(entries))
    finally:
        os.close(lock)
    return table


def _lock_comparison(out: Path) -> int:
    """An exclusive ``flock`` on ``out/.compare.lock`` for the comparison's whole run (released when it ends, a kill
    included), or a RunDirError in one line when another comparison holds it."""
    import fcntl

    fd = os.open(out / COMPARE_LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise RunDirError(f"{out} is being written by another comparison; wait for it to finish or stop it, then "
                          "run this one again (nothing was changed)") from None
    return fd


def _check_reusable(run_dir: Path, cfg_s: RunConfig) -> None:
    """A run folder the comparison will reuse (skip when finished, resume otherwise) must have been started with this
    arm's configuration, epochs aside, and must not hold more epochs than asked (the report would say otherwise than
    the manifest): else a RunDirError in one line, before the manifest is written."""
    from .runlog import read_state

    if not (run_dir / "config.json").is_file():
        return
    try:
        saved = RunConfig.from_dict(json.loads((run_dir / "config.json").read_text())).to_dict()
    except Exception as exc:  # noqa: BLE001 - ConfigError, JSON errors: the run writer says the same on resume
        raise RunDirError(f"{run_dir / 'config.json'} cannot be read ({exc}); move that run away or choose a new "
                          "--out (nothing was changed)") from None
    mine = cfg_s.to_dict()
    for section in (saved, mine):
        section["loop"].pop("epochs", None)
    if json.loads(json.dumps(saved)) != json.loads(json.dumps(mine)):
        raise RunDirError(f"{run_dir} was run with another configuration than this comparison's (see its config.json); "
                          "pass the same options or choose a new --out (nothing was changed)")
    if (run_dir / "state.json").is_file():
        done = read_state(run_dir).get("last_complete_epoch", 0)
        if isinstance(done, int) and done > cfg_s.loop.epochs:
            raise RunDirError(f"{run_dir} holds {done} epochs, more than the {cfg_s.loop.epochs} asked; pass --epochs "
                              f"{done} or choose a new --out (nothing was changed)")


def _run_one(out: Path, label: str, cfg_s: RunConfig, seed: int, progress: bool, backend_factory, run,
             read_state) -> None:
    """Run, resume or (when finished) skip one arm's seed. An existing folder is always resumed, never cleared: the
    run writer continues from what it committed, or refuses in one line (a folder without state.json that holds
    committed epochs included)."""
    run_dir = run_dir_for(out, label, seed)
    resume = run_dir.exists()
    state = read_state(run_dir) if (run_dir / "state.json").is_file() else {}
    if state.get("status") == "finished" and state.get("last_complete_epoch", 0) >= cfg_s.loop.epochs:
        return
    backend = backend_factory(cfg_s) if backend_factory else None
    if progress:
        print(f"== {label} seed {seed} → {run_dir}")
    for _ in run(cfg_s, run_dir, resume=resume, backend=backend, progress=progress):
        pass


def collect(out: str | Path) -> pd.DataFrame:
    """One row per (label, seed, epoch) from the run directories listed in ``manifest.json``; epoch 0 (the
    untrained agent's held-out score, from ``baseline.json``) where the run has it."""
    from .runlog import read_baseline, read_epochs, read_table

    out = Path(out)
    manifest = json.loads((out / "manifest.json").read_text())
    rows = []
    for entry, seed in itertools.product(manifest["entries"], manifest["seeds"]):
        run_dir = run_dir_for(out, entry["label"], seed)
        attempts = read_table(run_dir, "attempts")
        rows += table_rows(entry["label"], entry["config"]["loop"]["variant"], seed, read_epochs(run_dir),
                           _tasks_consumed(attempts), read_baseline(run_dir), _attempt_rollouts(attempts))
    return pd.DataFrame(rows, columns=list(COLUMNS)).astype({m: float for m in METRICS})


def heldout_of(scores: Mapping) -> float | None:
    """The held-out score among ``eval/*`` keys: ``eval/domain``, else the first benchmark's main metric."""
    held = scores.get("eval/domain")
    if held is None:
        held = next((v for k, v in scores.items() if str(k).startswith("eval/") and not str(k).endswith("_f1")),
                    None)
    return held


def table_rows(label: str, variant: str, seed: int, records: Sequence[Mapping], consumed: Mapping[int, int],
               baseline: Mapping | None = None, rollouts: Mapping[int, int] | None = None) -> list[dict]:
    """Rows of the comparison table for one run: epoch 0 from ``baseline`` (held-out score only, no training yet)
    when it has a score, then one row per epoch record. Agent rollouts and tokens come from the records'
    ``cumulative/*``; ``rollouts`` (cumulative attempts rows per epoch, :func:`_attempt_rollouts`) stands in for a
    record written before those keys."""
    rows = []
    start = heldout_of(baseline or {})
    if start is not None:
        rows.append({"label": label, "variant": variant, "seed": seed, "epoch": 0, "heldout": start,
                     "tasks_consumed": 0, "agent_rollouts": 0, "agent_tokens": 0})
    for r in records:
        extra = r.get("extra") if isinstance(r.get("extra"), dict) else {}
        done = extra.get("cumulative/agent_rollouts", (rollouts or {}).get(r["epoch"]))
        rows.append({"label": label, "variant": variant, "seed": seed, "epoch": r["epoch"],
                     "heldout": heldout_of(extra), "p_hat_mean": r.get("p_hat_mean"),
                     "in_band_frac": r.get("in_band_frac"), "p_hat_reference": extra.get("p_hat_reference"),
                     "valid_frac": r.get("valid_frac"), "agent_reward_mean": r.get("agent_reward_mean"),
                     "tasks_consumed": consumed.get(r["epoch"], 0), "agent_rollouts": done,
                     "agent_tokens": extra.get("cumulative/agent_tokens"), "wall_s": r.get("wall_s"),
                     **dry_columns(r, extra)})
    return rows


def dry_columns(record: Mapping, extra: Mapping) -> dict:
    """The dry-run instrument's columns of one record (:mod:`genenv_lab.dryrun`): the share of informative GRPO
    groups (1 − ``frac_zero_std``), of optimiser steps without one (``dry/step_frac``), the informative groups at
    the held-out frontier, and the mean and highest level of the simulator's valid tasks (``features/level``,
    ``levels/max``); None where the record has no such key (a run written before it, a domain without levels)."""
    zero = record.get("frac_zero_std")
    return {"informative_frac": None if not isinstance(zero, (int, float)) else 1.0 - zero,
            "dry_step_frac": extra.get("dry/step_frac"), "frontier_informative": extra.get("dry/frontier_informative"),
            "level_mean": extra.get("features/level"), "level_max": extra.get("levels/max")}


def _tasks_consumed(attempts: pd.DataFrame) -> dict[int, int]:
    """Cumulative number of distinct non-seed tasks in the agent's GRPO batches, per epoch."""
    if attempts.empty:
        return {}
    trained = attempts[attempts["source"] != "seed"]
    out, seen = {}, set()
    for epoch in sorted(attempts["epoch"].unique()):
        seen |= set(trained.loc[trained["epoch"] == epoch, "task_id"])
        out[int(epoch)] = len(seen)
    return out


def _attempt_rollouts(attempts: pd.DataFrame) -> dict[int, int]:
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


REPORT_PANELS = (  # (y metric, x column, title, row, col)
    ("heldout", "epoch", "held-out score", 1, 1),
    ("tasks_consumed", "epoch", "training tasks consumed", 1, 2),
    ("heldout", "tasks_consumed", "held-out score per training tasks consumed", 1, 3),
    ("p_hat_mean", "epoch", "p̂ on the simulator's tasks (band shaded)", 2, 1),
    ("p_hat_reference", "epoch", "p̂ on the untrained simulator's tasks (counterfactual)", 2, 2),
    ("valid_frac", "epoch", "valid fraction of the generations", 2, 3),
    ("heldout", "agent_rollouts", "held-out score per agent rollouts (screening included)", 3, 1),
    ("heldout", "agent_tokens", "held-out score per agent completion tokens", 3, 2),
    ("dry_step_frac", "epoch", f"share of GRPO steps without an informative group<br>(an epoch ran dry at ≥ "
     f"{RAN_DRY_STEP_FRAC:g})", 4, 1),
    ("level_mean", "epoch", "mean level of the simulator's valid tasks", 4, 2),
)
X_TITLES = {"epoch": "epoch", "tasks_consumed": "training tasks consumed",
            "agent_rollouts": "cumulative agent rollouts", "agent_tokens": "cumulative agent completion tokens"}
REACH_TITLE = "rollouts genenv needs to reach each baseline's final held-out score<br>(ratio: baseline's ÷ genenv's)"
REACH_CELL = (3, 3)
"""Row and column of the figure's table of :func:`rollouts_to_reach_table`."""
EFFICIENCY_TITLE = "data efficiency, paired by seed (genenv − baseline, 95 % CI)"
EFFICIENCY_CELL = (4, 3)
"""Row and column of the figure's table of :func:`efficiency_table`."""


def report_figure(table: pd.DataFrame, *, alpha: float = 0.5, k_min: float = 0.1) -> go.Figure:
    """Eight panels, mean ± std over seeds per label (error bars on both axes where the x axis is a count, which
    differs between seeds): held-out score and training tasks consumed per epoch (epoch 0: the untrained agent),
    held-out score against tasks consumed (data efficiency), p̂ on the simulator's tasks and on the untrained
    simulator's tasks with the α band shaded, the valid fraction of the generations, held-out score against
    cumulative agent rollouts and against completion tokens (compute); a table: for each baseline, the agent
    rollouts genenv needs to reach its final held-out score, as a ratio (:func:`rollouts_to_reach_table`); and the
    dry-run instrument: the share of GRPO steps without an informative group and the mean level of the simulator's
    valid tasks per epoch, beside the data-efficiency table paired by seed (:func:`efficiency_figure_table`)."""
    summary = summarise(table)
    specs = [[{}, {}, {}], [{}, {}, {}], [{}, {}, {"type": "table"}], [{}, {}, {"type": "table"}]]
    cells = sorted([(row, col, title) for *_, title, row, col in REPORT_PANELS]
                   + [(*REACH_CELL, REACH_TITLE), (*EFFICIENCY_CELL, EFFICIENCY_TITLE)])
    fig = make_subplots(rows=4, cols=3, specs=specs, horizontal_spacing=0.07, vertical_spacing=0.08,
                        subplot_titles=[title for *_, title in cells])
    palette = ["#636EFA", "#EF553B", "#00CC96", "#AB63FA", "#FFA15A", "#19D3F3", "#FF6692", "#B6E880"]
    for i, label in enumerate(summary["label"].unique() if len(summary) else []):
        part = summary[summary["label"] == label]
        color = palette[i % len(palette)]
        for k, (metric, x, _, row, col) in enumerate(REPORT_PANELS):
            if f"{metric}_mean" not in part:
                continue
            shown = part[part[f"{metric}_mean"].notna()]
            if x != "epoch":
                shown = shown[shown[f"{x}_mean"].notna()]
            error = {"type": "data", "array": shown[f"{metric}_std"].fillna(0.0), "visible": True}
            error_x = None if x == "epoch" else {"type": "data", "array": shown[f"{x}_std"].fillna(0.0),
                                                 "visible": True, "thickness": 1}
            fig.add_scatter(x=shown[x if x == "epoch" else f"{x}_mean"], y=shown[f"{metric}_mean"], error_y=error,
                            error_x=error_x, mode="lines+markers", name=label, legendgroup=label,
                            showlegend=(k == 0), line={"color": color}, row=row, col=col)
    for col in (1, 2):
        fig.add_hrect(*cur.band_edges(alpha, k_min), fillcolor="green", opacity=0.1, line_width=0,
                      row=2, col=col)
    for metric, x, _, row, col in REPORT_PANELS:
        fig.update_xaxes(title_text=X_TITLES[x], row=row, col=col)
        if metric not in ("tasks_consumed", "level_mean"):  # rates and scores: all of [0, 1], a flat line flat
            fig.update_yaxes(range=[-0.03, 1.03], row=row, col=col)
    reach = rollouts_to_reach_table(table)
    cells = ([list(reach["label"]), [f"{r:.2f}" if math.isfinite(r) else ("∞" if r > 0 else "not reached")
                                     for r in reach["ratio"]], list(reach["verdict"])]
             if len(reach) else [["—"], ["—"], [f"no {REFERENCE_VARIANT} arm with a baseline beside it yet"]])
    fig.add_trace(go.Table(columnwidth=[1.2, 0.6, 3.2],
                           header={"values": ["baseline", "ratio", "how it was read"],
                                   "align": "left", "font": {"size": 11}},
                           cells={"values": cells, "align": "left", "font": {"size": 10}, "height": 22}),
                  row=REACH_CELL[0], col=REACH_CELL[1])
    fig.add_trace(efficiency_figure_table(table), row=EFFICIENCY_CELL[0], col=EFFICIENCY_CELL[1])
    fig.update_layout(template="plotly_white", height=1400, title="GenEnv and baselines (mean ± std over seeds)")
    return fig


def efficiency_figure_table(table: pd.DataFrame) -> go.Table:
    """The report's table of :func:`efficiency_table`: per baseline, the mean held-out score over the common rollout
    range (the normalised area under the curve) and the rollouts to reach the baseline's own final score, each as
    the two arms' means and the paired difference with its 95 % interval."""
    eff = efficiency_table(table)
    names = {"heldout_auc": "held-out AUC ÷ range", "rollouts_to_reach": "rollouts to reach its final"}
    rows = [[_arm(r.label), names[r.measure], _number(r.baseline_mean, r.measure),
             _number(r.reference_mean, r.measure),
             _paired_text(r, int(r.seeds if r.measure == "heldout_auc" else r.reached),
                          3 if r.measure == "heldout_auc" else 0)
             + ("" if r.measure == "heldout_auc" else f"; reached on {int(r.reached)}/{int(r.seeds)} seeds")]
            for r in eff.itertuples()]
    values = [list(col) for col in zip(*rows)] if rows else [["—"], ["—"], ["—"], ["—"],
                                                            [f"no {REFERENCE_VARIANT} arm with a baseline yet"]]
    return go.Table(columnwidth=[0.9, 1.1, 0.6, 0.6, 2.4],
                    header={"values": ["baseline", "measure", "baseline", REFERENCE_VARIANT, "difference"],
                            "align": "left", "font": {"size": 11}},
                    cells={"values": values, "align": "left", "font": {"size": 10}, "height": 22})


def _number(value: float, measure: str) -> str:
    if not math.isfinite(value):
        return "—"
    return f"{value:.3f}" if measure == "heldout_auc" else f"{value:,.0f}"


def rollouts_to_reach_table(table: pd.DataFrame, reference_variant: str = REFERENCE_VARIANT) -> pd.DataFrame:
    """For each baseline label, the agent rollouts the reference arm (the same preset's ``genenv`` label, the part
    of a label before its first ``:`` naming the preset) needs to reach the baseline's final held-out score, from
    the means over seeds per epoch (:func:`genenv_lab.efficiency.rollouts_to_reach`): ``ratio`` is the baseline's
    rollouts at its first epoch at its final score ÷ the reference's at its first epoch whose mean held-out score
    reaches it (above 1:
    genenv needed fewer; NaN: not reached; inf: the untrained agent's epoch 0 already scores it). Labels without a
    reference beside them (a sweep) give no row."""
    if table.empty or "agent_rollouts" not in table:
        return pd.DataFrame(columns=list(REACH_COLUMNS))
    summary = summarise(table)
    variants = table.drop_duplicates("label").set_index("label")["variant"].to_dict()
    curves = {label: [Point(int(r.epoch), float(r.agent_rollouts_mean), float(r.heldout_mean))
                      for r in part.itertuples()]
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
    scored = table[table["heldout"].notna() & table["agent_rollouts"].notna()].sort_values("epoch", kind="stable")
    return {(str(label), int(seed)): [Point(int(r.epoch), float(r.agent_rollouts), float(r.heldout))
                                      for r in part.itertuples()]
            for (label, seed), part in scored.groupby(["label", "seed"], sort=False)}


def efficiency_table(table: pd.DataFrame, reference_variant: str = REFERENCE_VARIANT) -> pd.DataFrame:
    """Data efficiency per baseline label, paired by seed with the same preset's reference arm (genenv), two
    ``measure`` rows each:

    - ``heldout_auc``: the area under each run's held-out curve against its cumulative agent rollouts over the
      preset's common rollout range [``range_low``, ``range_high``] (the stretch every run of the preset covers:
      from 0, the untrained agent, to the smallest total any run spent), divided by that range
      (:func:`genenv_lab.efficiency.normalised_auc`): the mean held-out score along the way. ``baseline_mean`` and
      ``reference_mean`` are the two arms' means over the paired seeds, ``mean``/``std``/``ci_low``/``ci_high`` the
      paired difference reference − baseline (95 % t interval, :func:`genenv_lab.paired.paired`).
    - ``rollouts_to_reach``: per seed, the threshold is the baseline's own final held-out score on that seed; the
      baseline is charged its rollouts at its first epoch at that score, the reference its rollouts at its first
      epoch at or above it (:func:`genenv_lab.efficiency.rollouts_to_reach`, per seed instead of on the means).
      ``reached`` counts the seeds where the reference got there; the difference (reference − baseline, in
      rollouts: below 0, genenv needed fewer) and ``reference_mean`` are over those seeds only, ``baseline_mean``
      over all paired seeds.

    Labels without a reference beside them (a sweep), or without paired seeds, give no rows.

    >>> rows = [{"label": f"p:{v}", "variant": v, "seed": s, "epoch": e, "heldout": h, "agent_rollouts": 100 * e}
    ...         for v, per_seed in {"genenv": [[0.2, 0.5, 0.6], [0.2, 0.35, 0.6]],
    ...                             "static": [[0.2, 0.3, 0.5], [0.2, 0.3, 0.4]]}.items()
    ...         for s, curve in enumerate(per_seed) for e, h in enumerate(curve)]
    >>> out = efficiency_table(pd.DataFrame(rows, columns=list(COLUMNS))).set_index("measure")
    >>> out.loc["heldout_auc", ["baseline_mean", "reference_mean", "mean", "range_high"]].round(2).to_dict()
    {'baseline_mean': 0.31, 'reference_mean': 0.41, 'mean': 0.1, 'range_high': 200.0}
    >>> out.loc["rollouts_to_reach", ["baseline_mean", "reference_mean", "mean", "reached"]].to_dict()
    {'baseline_mean': 200.0, 'reference_mean': 150.0, 'mean': -50.0, 'reached': 2.0}
    """
    if table.empty or "agent_rollouts" not in table:
        return pd.DataFrame(columns=list(EFFICIENCY_COLUMNS))
    curves = _run_curves(table)
    variants = table.drop_duplicates("label").set_index("label")["variant"].astype(str).to_dict()
    ranges = {}
    for preset_name in dict.fromkeys(str(label).split(":", 1)[0] for label in variants):
        ranges[preset_name] = common_range([(p.rollouts, p.score) for p in pts]
                                           for (label, _), pts in curves.items()
                                           if label.split(":", 1)[0] == preset_name)
    rows = []
    for label, variant in variants.items():
        preset_name = str(label).split(":", 1)[0]
        ref = f"{preset_name}:{reference_variant}"
        seeds = sorted(s for lab, s in curves if lab == label and (ref, s) in curves)
        if variant == reference_variant or ref not in variants or not seeds:
            continue
        span = ranges[preset_name]
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


DRY_COLUMNS = ("label", "variant", "seeds", "epochs", "dry_epochs", "dry_share", "informative_frac", "step_frac")


def dry_run_table(table: pd.DataFrame, threshold: float = RAN_DRY_STEP_FRAC) -> pd.DataFrame:
    """Per label, its runs' second halves (epoch > E // 2, E the run's last epoch, as :func:`late_averages`): the
    epochs with a dry-run reading (``epochs``), those that *ran dry* (``dry_epochs``: ``dry_step_frac`` ≥
    ``threshold``, :func:`genenv_lab.dryrun.ran_dry`) and their share, and the mean share of informative groups and
    of dry steps. Labels whose runs predate the instrument (no ``dry_step_frac``) give no row.

    >>> rows = [{"label": "p:static", "variant": "static", "seed": 0, "epoch": e, "dry_step_frac": d,
    ...          "informative_frac": 1 - d} for e, d in [(1, 0.0), (2, 0.25), (3, 0.5), (4, 1.0)]]
    >>> dry_run_table(pd.DataFrame(rows)).to_dict("records")[0]["dry_epochs"]   # epochs 3 and 4 of 3-4
    2
    """
    if table.empty or "dry_step_frac" not in table or "informative_frac" not in table:
        return pd.DataFrame(columns=list(DRY_COLUMNS))
    trained = table[table["epoch"] > 0]
    late = trained[trained["epoch"] > trained.groupby(["label", "seed"])["epoch"].transform("max") // 2]
    rows = []
    for label, part in late.groupby("label", sort=False):
        readings = [ran_dry(v) for v in pd.to_numeric(part["dry_step_frac"], errors="coerce")]
        known = [r for r in readings if r is not None]
        if not known:
            continue
        rows.append({"label": label, "variant": str(part["variant"].iloc[0]), "seeds": part["seed"].nunique(),
                     "epochs": len(known), "dry_epochs": sum(known), "dry_share": sum(known) / len(known),
                     "informative_frac": float(pd.to_numeric(part["informative_frac"], errors="coerce").mean()),
                     "step_frac": float(pd.to_numeric(part["dry_step_frac"], errors="coerce").mean())})
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


LATE_COLUMNS = ("in_band_second_half", "p_hat_last_third", "p_hat_reference_last_third")


def late_averages(table: pd.DataFrame) -> pd.DataFrame:
    """Per run (``label``, ``seed``) the curriculum's late readings, steadier than one epoch's: the in-band share over
    the second half of its epochs (epoch > E // 2) and the mean p̂ over the last third (epoch > E − max(1, E // 3)), on
    the simulator's tasks and on the untrained simulator's; E is the run's last epoch.

    >>> rows = [{"label": "a", "seed": 0, "epoch": e, "in_band_frac": b, "p_hat_mean": p, "p_hat_reference": 0.9}
    ...         for e, b, p in [(0, None, None), (1, 0.0, 0.1), (2, 0.2, 0.3), (3, 0.4, 0.5), (4, 0.6, 0.7)]]
    >>> late_averages(pd.DataFrame(rows)).round(2).to_dict("records")[0]
    {'label': 'a', 'seed': 0, 'in_band_second_half': 0.5, 'p_hat_last_third': 0.7, 'p_hat_reference_last_third': 0.9}
    """
    keys = ["label", "seed"]
    trained = table[table["epoch"] > 0]
    last = trained.groupby(keys)["epoch"].transform("max")
    half = trained[trained["epoch"] > last // 2].groupby(keys)
    third = trained[trained["epoch"] > last - (last // 3).clip(lower=1)].groupby(keys)
    return pd.DataFrame({LATE_COLUMNS[0]: half["in_band_frac"].mean(), LATE_COLUMNS[1]: third["p_hat_mean"].mean(),
                         LATE_COLUMNS[2]: third["p_hat_reference"].mean()}, columns=list(LATE_COLUMNS)).reset_index()


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
    (std / √seeds), the 95 % t interval of the mean (:func:`genenv_lab.paired.paired`; NaN on one seed) and the
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


def spread_lines(table: pd.DataFrame, study: pd.DataFrame, where: str) -> str:
    """For each baseline label of ``table`` that the study (:func:`seed_differences` rows of a committed comparison)
    also has: this comparison's mean paired difference beside the study's per-seed ones
    (:func:`genenv_lab.paired.spread_text`); "" when they share no label."""
    from .paired import spread_text

    here = seed_differences(table).groupby("label")["difference"].mean()
    lines = []
    for label, part in study.groupby("label", sort=False):
        if label in here.index:
            seeds = sorted(int(v) for v in part["seed"].unique())
            span = f"seed {seeds[0]}" if len(seeds) == 1 else f"seeds {seeds[0]}–{seeds[-1]}"
            lines.append(spread_text(part["difference"], float(here[label]), baseline=_arm(label),
                                     reference=_arm(part["reference"].iloc[0]), where=f"{span} of {where}"))
    return "\n".join(line for line in lines if line)


def read_study(path: str | Path) -> pd.DataFrame:
    """A committed ``paired_by_seed.csv`` (bounded read: a regular file of at most 1 MB); ValueError naming what is
    wrong otherwise."""
    import io

    from .safe_io import MB, read_regular

    try:
        frame = pd.read_csv(io.BytesIO(read_regular(path, MB, "study file")))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path} cannot be read as a paired_by_seed.csv ({exc})") from None
    missing = set(SEED_DIFFERENCE_COLUMNS) - set(frame.columns)
    if missing:
        raise ValueError(f"{path} is not a paired_by_seed.csv: no column(s) {sorted(missing)}")
    frame["difference"] = pd.to_numeric(frame["difference"], errors="coerce")
    return frame.dropna(subset=["difference"])


def verdict(table: pd.DataFrame, reference_variant: str = REFERENCE_VARIANT,
            fixed_variant: str = FIXED_SET_VARIANT, tol: float = 1e-9) -> str:
    """What a comparison found, in a paragraph per preset (pure: the numbers are the table's): the reference arm's
    (genenv's) held-out score at its final epoch against each baseline's (mean ± std over seeds when there are
    several) and the difference; the agent rollouts genenv needed to reach each baseline's final score, as the
    ratio of :func:`rollouts_to_reach_table`; and whether the curriculum paid against the fixed set
    (``static``): it paid when genenv's final mean is above static's (by more than ``tol``), it did not pay
    otherwise. A win smaller than the spread over seeds, or measured on one seed, is said to be so. Then the data
    efficiency paired by seed (:func:`efficiency_table`: the mean held-out score over the common rollout range and
    the rollouts to reach each baseline's own final score, genenv − baseline with a 95 % interval), and, where the
    runs carry the dry-run instrument, one line on how often the fixed set ran dry over the second half
    (:func:`dry_run_table`; nothing for runs written before it).

    >>> rows = [{"label": f"p:{v}", "variant": v, "seed": 0, "epoch": e, "heldout": h, "agent_rollouts": r}
    ...         for v, curve in {"genenv": [(0, 0.2), (100, 0.5), (200, 0.6)],
    ...                          "static": [(0, 0.2), (100, 0.3), (200, 0.5)]}.items()
    ...         for e, (r, h) in enumerate(curve)]
    >>> print(verdict(pd.DataFrame(rows, columns=list(COLUMNS))))
    p: held-out score at the final epoch (one seed, so no spread): genenv 0.600 (epoch 2); static 0.500
    (epoch 2), genenv +0.100. Agent rollouts genenv needed to reach each baseline's final score (ratio: the
    baseline's rollouts ÷ genenv's; above 1, genenv needed fewer): static 2.00 (genenv: 100 by epoch 1; static:
    200 by epoch 2). Against the fixed set (static) the curriculum paid: genenv ends 0.100 above it, on one seed
    (more seeds say whether it holds). Paired by seed (genenv − baseline): mean held-out score over 0–200 agent
    rollouts (the area under the held-out curve ÷ the range every run covers) genenv 0.450; static 0.325, +0.125
    (one seed, no interval). Rollouts to reach each baseline's own final score on the same seed: static: genenv
    got there on 1 of 1 seeds, -100 rollouts (one seed, no interval), where static needed 200.
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
             + _dry_line(dry, p, reference_variant, fixed_variant) for p, text in zip(presets, paragraphs) if text]
    return "\n\n".join(found) if found else (
        f"No {reference_variant} arm with a baseline beside it (a sweep, or {reference_variant} alone): no verdict.")


def _efficiency_text(efficiency: pd.DataFrame, preset_name: str, reference_variant: str) -> str:
    """The verdict's sentences on data efficiency of one preset (:func:`efficiency_table`), or "" without rows."""
    part = efficiency[efficiency["reference"] == f"{preset_name}:{reference_variant}"]
    auc = [r for r in part.itertuples() if r.measure == "heldout_auc" and math.isfinite(r.baseline_mean)]
    reach = [r for r in part.itertuples() if r.measure == "rollouts_to_reach" and r.seeds > 0]
    text = ""
    if auc:
        text += (f" Paired by seed ({reference_variant} − baseline): mean held-out score over "
                 f"{auc[0].range_low:,.0f}–{auc[0].range_high:,.0f} agent rollouts (the area under the held-out "
                 f"curve ÷ the range every run covers) {reference_variant} {auc[0].reference_mean:.3f}; "
                 + "; ".join(f"{_arm(r.label)} {r.baseline_mean:.3f}, {_paired_text(r, int(r.seeds))}" for r in auc)
                 + ".")
    if reach:
        text += (" Rollouts to reach each baseline's own final score on the same seed: "
                 + "; ".join(f"{_arm(r.label)}: {reference_variant} got there on {int(r.reached)} of {int(r.seeds)} "
                             f"seeds" + (f", {_paired_text(r, int(r.reached), 0, ' rollouts')}, where "
                                         f"{_arm(r.label)} needed {r.baseline_mean:,.0f}" if r.reached else "")
                             for r in reach) + ".")
    return text


def _paired_text(row, seeds: int, digits: int = 3, unit: str = "") -> str:
    return Paired(seeds, float(row.mean), float(row.std), math.nan, float(row.ci_low), float(row.ci_high)).text(
        digits, unit)


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
            f"informative group; informative groups {fixed.informative_frac:.2f} of all")
    ref = rows.get(reference_variant)
    if ref is not None:
        line += (f"), {reference_variant} in {ref.dry_epochs} of {ref.epochs} (informative groups "
                 f"{ref.informative_frac:.2f}")
    return line + ")."


def _arm(label: str) -> str:
    return str(label).split(":", 1)[1] if ":" in str(label) else str(label)


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
    parts = [f"{_arm(b)} {scores[b].text()} (epoch {scores[b].epoch}), {reference_variant} "
             f"{ref.mean - scores[b].mean:+.3f}" for b in baselines if b in scores]
    text = (f"{preset_name}: held-out score at the final epoch ({spread}): {reference_variant} {ref.text()} "
            f"(epoch {ref.epoch})")
    text += ("; " + "; ".join(parts) + ".") if parts else "; no baseline has a held-out score yet."
    clauses = [_reach_clause(_arm(b), reach[b], reference_variant) for b in baselines if b in reach]
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
    return text + " " + _paid(ref, scores[fixed], reach.get(fixed), reference_variant, _arm(fixed), tol)


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


def write_report(table: pd.DataFrame, out: str | Path,
                 bands: Mapping[str, tuple[float, float]] | None = None) -> Path:
    out = Path(out)
    table.to_csv(out / "comparison.csv", index=False)
    table.to_parquet(out / "comparison.parquet", index=False)
    summarise(table).to_csv(out / "summary.csv", index=False)
    band_residence(table, bands=bands).to_csv(out / "band_residence.csv", index=False)
    rollouts_to_reach_table(table).to_csv(out / "rollouts_to_reach.csv", index=False)
    efficiency_table(table).to_csv(out / "efficiency.csv", index=False)
    dry_run_table(table).to_csv(out / "dry_run.csv", index=False)
    seed_differences(table).to_csv(out / "paired_by_seed.csv", index=False)
    # the band shaded is the runs' own (the first label's when presets differ, as the lab's Comparisons tab does)
    alpha, k_min = next(iter(bands.values())) if bands else (0.5, 0.1)
    report_figure(table, alpha=alpha, k_min=k_min).write_html(out / "report.html", include_plotlyjs=True,
                                                               full_html=True)
    return out / "report.html"


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
        inside = [cur.in_band(p, a, k) if p == p else False for p in part["p_hat_mean"]]
        first = next((e for e, ok in zip(part["epoch"], inside) if ok), None)
        stays = first is not None and all(inside[list(part["epoch"]).index(first):])
        rows.append({"label": label, "seed": seed, "alpha": a, "k_min": k, "epochs": len(part),
                     "entered_at_epoch": first, "stayed": stays,
                     "epochs_in_band": int(sum(inside))})
    return pd.DataFrame(rows, columns=list(RESIDENCE_COLUMNS))
