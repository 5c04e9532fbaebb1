"""The comparison's files and its figure: ``comparison.csv`` and the rest, and ``report.html``."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Mapping

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from genenv_lab.core import curriculum as cur
from genenv_lab.core.dryrun import RAN_DRY_STEP_FRAC
from genenv_lab.rundir.layout import atomic_write_bytes, atomic_write_parquet
from genenv_lab.style import BAND_FILL
from genenv_lab.compare.stats import (dry_run_table, efficiency_table, paired_row_text, rollouts_to_reach_table,
    seed_differences)
from genenv_lab.compare.table import REFERENCE_VARIANT, arm_of, band_residence, summarise
from genenv_lab.core.metrics import (CUMULATIVE_AGENT_ROLLOUTS, CUMULATIVE_AGENT_TOKENS, DIVERSITY_ENTROPY,
    DRY_STEP_FRAC, FEATURES_LEVEL, P_HAT_MEAN, REFERENCE_IN_BAND_FRAC, REFERENCE_P_HAT, VALID_FRAC)

REPORT_PANELS = (  # (y metric, x column, title, row, col)
    ("heldout", "epoch", "held-out score", 1, 1),
    ("tasks_consumed", "epoch", "training tasks consumed", 1, 2),
    ("heldout", "tasks_consumed", "held-out score per training tasks consumed", 1, 3),
    (P_HAT_MEAN, "epoch", "p̂ on the simulator's tasks (band shaded)", 2, 1),
    (REFERENCE_P_HAT, "epoch", "p̂ on the untrained simulator's tasks (counterfactual)", 2, 2),
    (VALID_FRAC, "epoch", "valid fraction of the generations", 2, 3),
    ("heldout", CUMULATIVE_AGENT_ROLLOUTS, "held-out score per agent rollouts (screening included)", 3, 1),
    ("heldout", CUMULATIVE_AGENT_TOKENS, "held-out score per agent completion tokens", 3, 2),
    (DRY_STEP_FRAC, "epoch", f"share of GRPO steps without an informative group<br>(an epoch ran dry at ≥ "
     f"{RAN_DRY_STEP_FRAC:g})", 4, 1),
    (FEATURES_LEVEL, "epoch", "mean level of the simulator's valid tasks", 4, 2),
    (DIVERSITY_ENTROPY, "epoch", "task entropy of the simulator's valid tasks (bits)", 5, 1),
    (REFERENCE_IN_BAND_FRAC, "epoch", "the untrained simulator's tasks in band for this agent", 5, 2),
)
REPORT_HEIGHT = 1700
"""Pixels of the report figure's five rows."""
X_TITLES = {"epoch": "epoch", "tasks_consumed": "training tasks consumed",
            CUMULATIVE_AGENT_ROLLOUTS: "cumulative agent rollouts",
            CUMULATIVE_AGENT_TOKENS: "cumulative agent completion tokens"}
REACH_TITLE = "rollouts genenv needs to reach each baseline's final held-out score<br>(ratio: baseline's ÷ genenv's)"
REACH_CELL = (3, 3)
"""Row and column of the figure's table of :func:`rollouts_to_reach_table`."""
EFFICIENCY_TITLE = "data efficiency, paired by seed (genenv − baseline, 95 % CI)"
EFFICIENCY_CELL = (4, 3)
"""Row and column of the figure's table of :func:`efficiency_table`."""


def report_figure(table: pd.DataFrame, *, alpha: float = 0.5, k_min: float = 0.1) -> go.Figure:
    """Ten panels, mean ± std over seeds per label (error bars on both axes where the x axis is a count, which
    differs between seeds): held-out score and training tasks consumed per epoch (epoch 0: the untrained agent),
    held-out score against tasks consumed (data efficiency), p̂ on the simulator's tasks and on the untrained
    simulator's tasks with the α band shaded, the valid fraction of the generations, held-out score against
    cumulative agent rollouts and against completion tokens (compute); a table: for each baseline, the agent
    rollouts genenv needs to reach its final held-out score, as a ratio (:func:`rollouts_to_reach_table`); and the
    dry-run instrument: the share of GRPO steps without an informative group and the mean level of the simulator's
    valid tasks per epoch, beside the data-efficiency table paired by seed (:func:`efficiency_figure_table`); and
    how varied the simulator's tasks are (``diversity/entropy``) beside the untrained simulator's supply in band,
    where training the simulator should tell from curation."""
    summary = summarise(table)
    specs = [[{}, {}, {}], [{}, {}, {}], [{}, {}, {"type": "table"}], [{}, {}, {"type": "table"}], [{}, {}, None]]
    cells = sorted([(row, col, title) for *_, title, row, col in REPORT_PANELS]
                   + [(*REACH_CELL, REACH_TITLE), (*EFFICIENCY_CELL, EFFICIENCY_TITLE)])
    fig = make_subplots(rows=5, cols=3, specs=specs, horizontal_spacing=0.07, vertical_spacing=0.065,
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
        fig.add_hrect(*cur.band_edges(alpha, k_min), fillcolor=BAND_FILL, line_width=0,
                      row=2, col=col)
    for metric, x, _, row, col in REPORT_PANELS:
        fig.update_xaxes(title_text=X_TITLES[x], row=row, col=col)
        if metric not in ("tasks_consumed", FEATURES_LEVEL, DIVERSITY_ENTROPY):  # rates and scores: all of [0, 1]
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
    fig.update_layout(template="plotly_white", height=REPORT_HEIGHT,
                      title="GenEnv and baselines (mean ± std over seeds)")
    return fig


def efficiency_figure_table(table: pd.DataFrame) -> go.Table:
    """The report's table of :func:`efficiency_table`: per baseline, the mean held-out score over the common rollout
    range (the normalised area under the curve) and the rollouts to reach the baseline's own final score, each as
    the two arms' means and the paired difference with its 95 % interval."""
    eff = efficiency_table(table)
    names = {"heldout_auc": "held-out AUC ÷ range", "rollouts_to_reach": "rollouts to reach its final"}
    rows = [[arm_of(r.label), names[r.measure], _number(r.baseline_mean, r.measure),
             _number(r.reference_mean, r.measure),
             paired_row_text(r, int(r.seeds if r.measure == "heldout_auc" else r.reached),
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



def write_report(table: pd.DataFrame, out: str | Path,
                 bands: Mapping[str, tuple[float, float]] | None = None) -> Path:
    """The comparison's files in ``out``, each written whole or not at all (a temporary file renamed over the old
    one): a full disk or a kill while they are written leaves the previous file, never a truncated one."""
    out = Path(out)
    atomic_write_bytes(out / "comparison.csv", _csv(table))
    atomic_write_parquet(out / "comparison.parquet", table)
    for name, frame in (("summary.csv", summarise(table)), ("band_residence.csv", band_residence(table, bands=bands)),
                        ("rollouts_to_reach.csv", rollouts_to_reach_table(table)),
                        ("efficiency.csv", efficiency_table(table)), ("dry_run.csv", dry_run_table(table)),
                        ("paired_by_seed.csv", seed_differences(table))):
        atomic_write_bytes(out / name, _csv(frame))
    # the band shaded is the runs' own (the first label's when presets differ, as the lab's Comparisons tab does)
    alpha, k_min = next(iter(bands.values())) if bands else (0.5, 0.1)
    html = report_figure(table, alpha=alpha, k_min=k_min).to_html(include_plotlyjs=True, full_html=True)
    atomic_write_bytes(out / "report.html", html.encode("utf-8"))
    return out / "report.html"


def _csv(frame: pd.DataFrame) -> bytes:
    return frame.to_csv(index=False).encode("utf-8")
