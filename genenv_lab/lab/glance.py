"""The curriculum at a glance: the first figure of the lab's Curriculum tab, of the README and of notebook 06.

Two panels, readable without a slider:

- **where the tasks' p̂ falls, epoch by epoch**: a heatmap, one column per epoch and one row per p̂ level k/G, each
  cell the share of that epoch's valid generated tasks at that level; the band's rows are framed and α marked. Mass
  moving into the frame is the simulator writing tasks the agent solves about α of the time.
- **the story on one axis**: p̂ on the simulator's tasks (the mean over the epoch's valid tasks), p̂ of the same
  agent on the untrained simulator's tasks (the counterfactual, ``extra.reference/p_hat``), the held-out score
  (the first ``eval/*`` key; epoch 0 is the untrained agent), against the α band. A curriculum that works keeps the
  first line in the band while the counterfactual leaves it, and the held-out line rises.

Pure: a :class:`~genenv_lab.lab.runs.RunData` in, a plotly figure out (``story_numbers`` gives the numbers a caption
quotes, computed from the same run).
"""

from __future__ import annotations

import html
import math
from typing import Any, Sequence

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from genenv_lab.core import curriculum as cur
from genenv_lab.style import ALPHA_COLOUR
from genenv_lab.style import BAND_FILL, BAND_LINE, RUN_COLORS
from genenv_lab.lab.figures import band_span, curves_frame, difficulty_bars, message_figure, style
from genenv_lab.lab.runs import RunData
from genenv_lab.core.metrics import P_HAT_MEAN, REFERENCE_P_HAT
from genenv_lab.core.readings import LAST_THIRD, heldout_key, late_column, window

GLANCE_TITLE = "Curriculum at a glance"
HEAT_SCALE = ((0.0, "#ffffff"), (0.15, "#d0ebff"), (0.5, "#4dabf7"), (1.0, "#1864ab"))
STORY = ((P_HAT_MEAN, "p̂ on the simulator's tasks", "solid"),
         (REFERENCE_P_HAT, "p̂ on the untrained simulator's tasks", "dot"),
         ("heldout", "held-out score", "dash"))
"""(column of :func:`story_frame`, legend name, line dash) of the story panel's lines."""


def level_label(value: float, g: int | None) -> str:
    """A p̂ level as k/G where G is known (``3/8``), else as a number.

    >>> level_label(0.375, 8), level_label(1.0, 8), level_label(0.4, None)
    ('3/8', '8/8', '0.4')
    """
    return f"{round(value * g)}/{g}" if g else f"{round(value, 4):g}"


def heldout_column(frame: pd.DataFrame) -> str | None:
    """The held-out score the story draws: :func:`genenv_lab.core.readings.heldout_key` among the columns with a
    number, or None."""
    return heldout_key(c for c in frame.columns if frame[c].notna().any())


def story_frame(run: RunData) -> pd.DataFrame:
    """One row per epoch (0 = the untrained agent, where the run has a baseline): ``p_hat_mean``,
    ``reference/p_hat`` (the records' keys) and ``heldout`` (NaN where the run did not log it)."""
    frame = curves_frame(run)
    if not len(frame):
        return pd.DataFrame(columns=["epoch"] + [k for k, _, _ in STORY])
    key = heldout_column(frame)
    out = pd.DataFrame({"epoch": frame["epoch"]})
    for col, source in ((P_HAT_MEAN, P_HAT_MEAN), (REFERENCE_P_HAT, REFERENCE_P_HAT), ("heldout", key)):
        out[col] = frame[source] if source in frame.columns else math.nan
    return out.reset_index(drop=True)


def story_numbers(run: RunData) -> dict[str, Any]:
    """What a caption of the glance figure quotes, from the run itself: epochs, the in-band share of the first and
    last epoch's valid tasks, mean p̂ over the last third of the epochs on the simulator's tasks and on the
    untrained simulator's (named by :func:`genenv_lab.core.readings.late_column`, as ``compare``'s late readings:
    ``p_hat_mean, last third``, ``reference/p_hat, last third``), and the held-out score at epoch 0 and at the last
    epoch (None where not logged)."""
    _, bars = difficulty_bars(run)
    frame = story_frame(run)
    trained = frame[frame["epoch"] > 0]
    third = window(frame, LAST_THIRD)

    def mean(col: str, rows: pd.DataFrame) -> float | None:
        values = pd.to_numeric(rows[col], errors="coerce").dropna() if col in rows else pd.Series(dtype=float)
        return float(values.mean()) if len(values) else None

    def heldout_at(rows: pd.DataFrame) -> float | None:
        values = rows["heldout"].dropna() if "heldout" in rows else pd.Series(dtype=float)
        return float(values.iloc[0]) if len(values) else None

    in_band = [b for *_, b in bars if b is not None]
    return {"run": run.name, "epochs": int(trained["epoch"].max()) if len(trained) else 0,
            "alpha": run.alpha, "k_min": run.k_min,
            "in_band_first": in_band[0] if in_band else None, "in_band_last": in_band[-1] if in_band else None,
            late_column(P_HAT_MEAN, LAST_THIRD): mean(P_HAT_MEAN, third),
            late_column(REFERENCE_P_HAT, LAST_THIRD): mean(REFERENCE_P_HAT, third),
            "heldout_first": heldout_at(frame.head(1)), "heldout_last": heldout_at(frame.tail(1))}


def _heatmap(fig: go.Figure, run: RunData, col: int, scale: bool) -> bool:
    """The epoch × p̂ heatmap of ``run`` into column ``col`` (``scale``: with the color bar, right of it); False
    when it has no valid task with a p̂."""
    levels, bars = difficulty_bars(run)
    bars = [b for b in bars if b[2]]
    if not bars:
        return False
    g = run.num_generations
    epochs = [e for e, *_ in bars]
    share = [[counts[i] / n for _, counts, n, _, _ in bars] for i in range(len(levels))]
    text = [[f"{counts[i]} of {n}" for _, counts, n, _, _ in bars] for i in range(len(levels))]
    labels = [level_label(v, g) for v in levels]
    fig.add_heatmap(x=epochs, y=list(range(len(levels))), z=share, text=text, zmin=0, zmax=1,
                    colorscale=[list(c) for c in HEAT_SCALE], xgap=1, ygap=1, row=1, col=col,
                    colorbar=dict(title=dict(text="share of<br>the epoch's<br>tasks", font=dict(size=11)),
                                  tickformat=".0%", len=0.9, thickness=12, xanchor="left", y=0.5,
                                  x=fig.layout[f"xaxis{col if col > 1 else ''}"].domain[1] + 0.005),
                    showscale=scale, customdata=[[labels[i]] * len(epochs) for i in range(len(levels))],
                    hovertemplate=(f"{html.escape(run.name)} · epoch %{{x}}<br>p̂ = %{{customdata}}<br>"
                                   "%{text} valid tasks (%{z:.0%})<extra></extra>"))
    fig.update_yaxes(tickvals=list(range(len(levels))), ticktext=labels,
                     title_text="p̂ = k/G (agent's success rate)" if col == 1 else None,
                     range=[-0.5, len(levels) - 0.5], row=1, col=col)
    fig.update_xaxes(title_text="epoch", dtick=1 if len(epochs) <= 20 else None, row=1, col=col)
    if run.alpha is not None and run.k_min is not None:
        step = 1.0 / g if g else min((b - a for a, b in zip(levels, levels[1:])), default=0.2)
        lo, hi = band_span(levels, run.alpha, run.k_min, step)
        to_row = (lambda v: v * g) if g else (lambda v: min(range(len(levels)), key=lambda i: abs(levels[i] - v)))
        x0, x1 = min(epochs) - 0.5, max(epochs) + 0.5
        fig.add_shape(type="rect", x0=x0, x1=x1, y0=to_row(lo), y1=to_row(hi), line=dict(color=BAND_LINE, width=2),
                      fillcolor="rgba(0,0,0,0)", row=1, col=col)
        fig.add_annotation(x=x1, y=to_row(hi), xanchor="right", yanchor="bottom", showarrow=False,
                           text=f"band: α = {run.alpha:g} ± {run.k_min:g}", font=dict(color=ALPHA_COLOUR, size=11),
                           row=1, col=col)
    return True


def glance_figure(runs: RunData | Sequence[RunData], *, height: int = 400) -> go.Figure:
    """The at-a-glance view of one run (or two, side by side: a heatmap each and one story panel): see the module
    docstring."""
    runs = [runs] if isinstance(runs, RunData) else [r for r in runs if r is not None]
    if not runs:
        return message_figure("No run selected.", height=height)
    stories = [story_frame(r) for r in runs]
    if not any(len(s) for s in stories):
        names = ", ".join(r.name for r in runs)
        return message_figure(f"No committed epoch yet ({names}): the curriculum appears after the first epoch.",
                              height=height)
    heat_titles = [f"where the tasks' p̂ falls · {html.escape(r.name)}" if len(runs) > 1
                   else "where the tasks' p̂ falls, epoch by epoch" for r in runs]
    widths = [0.5 / len(runs)] * len(runs) + [0.5]
    fig = make_subplots(rows=1, cols=len(runs) + 1, column_widths=widths, horizontal_spacing=0.13,
                        subplot_titles=heat_titles + ["the story: p̂ against the band, and the held-out score"])
    for col, run in enumerate(runs, start=1):
        if not _heatmap(fig, run, col, scale=col == len(runs)):
            fig.add_scatter(x=[None], y=[None], showlegend=False, hoverinfo="skip", row=1, col=col)
            fig.add_annotation(text="no valid generated task<br>with a p̂ yet", xref="x domain", yref="y domain",
                               x=0.5, y=0.5, showarrow=False, font=dict(color="#868e96", size=13), row=1, col=col)
    story_col = len(runs) + 1
    for run in runs:
        if run.alpha is not None and run.k_min is not None:
            fig.add_hrect(*cur.band_edges(run.alpha, run.k_min), fillcolor=BAND_FILL, line_width=0, layer="below",
                          row=1, col=story_col)
            fig.add_hline(y=run.alpha, line=dict(color=ALPHA_COLOUR, width=1.5, dash="dash"), row=1, col=story_col)
            break
    for i, (run, story) in enumerate(zip(runs, stories)):
        color = RUN_COLORS[i % len(RUN_COLORS)] if len(runs) > 1 else None
        for j, (col, name, dash) in enumerate(STORY):
            rows = story if col == "heldout" else story[story["epoch"] > 0]
            if not len(rows) or rows[col].isna().all():
                continue
            fig.add_scatter(x=rows["epoch"], y=rows[col], mode="lines+markers", row=1, col=story_col,
                            name=name if len(runs) == 1 else f"{run.name}: {name}",
                            line=dict(color=color or RUN_COLORS[j], width=2.4, dash=dash), marker=dict(size=6),
                            hovertemplate=f"{html.escape(run.name)}<br>epoch %{{x}}<br>{name} = %{{y:.2f}}"
                                          "<extra></extra>")
    fig.update_yaxes(range=[-0.03, 1.03], title_text="rate", row=1, col=story_col)
    last = max((int(s["epoch"].max()) for s in stories if len(s)), default=1)
    fig.update_xaxes(title_text="epoch", dtick=1 if last <= 20 else None, range=[-0.4, last + 0.4], row=1,
                     col=story_col)
    fig.update_layout(legend=dict(orientation="h", x=1, xanchor="right", y=-0.2, yanchor="top", font=dict(size=11)),
                      hovermode="closest")
    fig.update_annotations(font_size=12)
    fig = style(fig, height=height, title=f"{GLANCE_TITLE} · " + " vs ".join(r.name for r in runs))
    return fig.update_layout(margin=dict(l=90, t=70, b=95))


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def caption(numbers: dict[str, Any]) -> str:
    """The sentence under a glance figure, every number from :func:`story_numbers` of the run it shows.

    >>> caption({"run": "r", "epochs": 16, "alpha": 0.5, "k_min": 0.125, "in_band_first": 0.09, "in_band_last": 0.1,
    ...          "p_hat_mean, last third": 0.64, "reference/p_hat, last third": 0.81, "heldout_first": 0.24,
    ...          "heldout_last": 0.33})[:60]
    'r, 16 epochs: in band 0.09 of the first epoch’s tasks and 0.'
    """
    band = "" if numbers.get("alpha") is None else f" (α = {numbers['alpha']:g} ± {numbers['k_min']:g})"
    return (f"{numbers['run']}, {numbers['epochs']} epochs: in band {_pct(numbers['in_band_first'])} of the first "
            f"epoch’s tasks and {_pct(numbers['in_band_last'])} of the last{band}; mean p̂ over the last third "
            f"{_pct(numbers[late_column(P_HAT_MEAN, LAST_THIRD)])} on the simulator’s tasks against "
            f"{_pct(numbers[late_column(REFERENCE_P_HAT, LAST_THIRD)])} on the untrained simulator’s; held-out score "
            f"{_pct(numbers['heldout_first'])} → {_pct(numbers['heldout_last'])}.")
