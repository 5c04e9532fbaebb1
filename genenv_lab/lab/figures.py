"""The lab's figures of a run (pure: a :class:`~genenv_lab.lab.runs.RunData` in, a plotly figure out): the
difficulty histogram (p̂ of each epoch's valid tasks against the band) and the epoch curves (p̂, in-band share,
validity, R_env, reward, signal, KL, held-out score, the method's signals), with the colours, fonts and the
:func:`message_figure` every lab figure shares. A figure never raises for a run that lacks what it shows: it is a
:func:`message_figure` carrying a sentence that says why.
"""

from __future__ import annotations

import html
import math
import textwrap
from typing import Any, Sequence

import pandas as pd
import plotly.graph_objects as go
from plotly.colors import sample_colorscale
from plotly.subplots import make_subplots

from genenv_lab.core import curriculum as cur
from genenv_lab.lab.panels import COLS, EMPTY, LINE_KEYS, PANELS, Draw, cell
from genenv_lab.lab.runs import RunData
from genenv_lab.style import ALPHA_COLOUR, BAND_FILL, BAND_LINE, RUN_COLORS, TEMPLATE


FONT = dict(family="Inter, system-ui, -apple-system, Segoe UI, sans-serif", size=13, color="#343a40")


def number(value: Any) -> float:
    """A float, NaN for None or anything non-numeric (epochs.jsonl writes NaN as null)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return math.nan
    return float(value)


def style(fig: go.Figure, *, height: int, title: str | None = None) -> go.Figure:
    fig.update_layout(template=TEMPLATE, font=FONT, height=height, margin=dict(l=60, r=30, t=70 if title else 40,
                      b=50), hoverlabel=dict(font_size=12), paper_bgcolor="white", plot_bgcolor="white")
    if title:
        fig.update_layout(title=dict(text=title, x=0.01, xanchor="left", font=dict(size=16)))
    return fig


def message_figure(text: str, *, height: int = 320) -> go.Figure:
    """A blank figure that says ``text`` (what the lab shows instead of a plot it cannot draw)."""
    fig = go.Figure()
    lines = [wrapped for line in text.split("\n") for wrapped in (textwrap.wrap(line, 90) or [""])]
    fig.add_annotation(text="<br>".join(html.escape(line) for line in lines), x=0.5, y=0.5, xref="paper", yref="paper",
                       showarrow=False, font=dict(size=15, color="#868e96"), align="center")
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return style(fig, height=height)


def valid_mask(frame: pd.DataFrame) -> pd.Series:
    """``valid`` as a boolean Series (missing values count as not valid; an empty mask stays boolean)."""
    return frame["valid"].map(lambda v: v is not None and v == True).astype(bool)  # noqa: E712 - numpy bools


def _epoch_colors(n: int) -> list[str]:
    if n <= 1:
        return ["#1c7ed6"]
    return sample_colorscale("Blues", [0.35 + 0.65 * i / (n - 1) for i in range(n)])


def _p_hat_levels(run: RunData, values: pd.Series) -> list[float]:
    g = run.num_generations
    if g:
        return [k / g for k in range(g + 1)]
    return sorted({round(float(v), 4) for v in values})


def difficulty_bars(run: RunData) -> tuple[list[float], list[tuple[int, list[int], int, int, float | None]]]:
    """p̂ levels and, per epoch, (epoch, task count per level, valid tasks, rejected, in-band share)."""
    tasks = run.tasks
    epochs = sorted(int(e) for e in pd.to_numeric(tasks["epoch"], errors="coerce").dropna().unique())
    valid = tasks[valid_mask(tasks)]
    valid = valid.assign(p_hat=pd.to_numeric(valid["p_hat"], errors="coerce"))
    valid = valid[valid["p_hat"].notna()]
    levels = _p_hat_levels(run, valid["p_hat"]) if len(valid) else []
    out = []
    for epoch in epochs:
        sub = valid[valid["epoch"] == epoch]["p_hat"]
        nearest = sub.map(lambda v: min(levels, key=lambda level: abs(level - v)))
        counts = [int((nearest == lv).sum()) for lv in levels]
        in_band = None
        if run.alpha is not None and run.k_min is not None and len(sub):
            in_band = float(sub.map(lambda p: cur.in_band(p, run.alpha, run.k_min)).mean())
        out.append((epoch, counts, len(sub), int((tasks["epoch"] == epoch).sum()) - len(sub), in_band))
    return levels, out


def band_span(levels: Sequence[float], alpha: float, k_min: float, step: float) -> tuple[float, float]:
    """The x-range shaded as the band on the difficulty histogram: from half a bar group left of the lowest p̂
    level inside [α − k_min, α + k_min] to half a group right of the highest one, so that every epoch's bar of an
    in-band p̂ (bars of one level sit side by side across its group) lies inside the shading and no other bar does.
    Without such a level (or levels), the band's own edges.

    >>> band_span([0, .125, .25, .375, .5, .625, .75, .875, 1], 0.5, 0.125, 0.125)
    (0.3125, 0.6875)
    """
    inside = [v for v in levels if cur.in_band(v, alpha, k_min)]
    if not inside:
        return cur.band_edges(alpha, k_min)
    return min(inside) - step / 2, max(inside) + step / 2


def difficulty_figure(runs: RunData | Sequence[RunData], *, height: int = 440) -> go.Figure:
    """Where the generated tasks' p̂ falls, epoch by epoch, against the α target and the ±k_min band.

    One bar group per p̂ level k/G; within it one bar per epoch (light = early, dark = late), as the share of that
    epoch's valid tasks. A slider shows one epoch at a time. The shading covers the whole bar groups of the p̂ levels
    inside the band (:func:`band_span`). Mass moving into the shaded band is the curriculum
    working. Given two runs, their distributions are drawn side by side (same epoch colors, one band each).
    """
    runs = [runs] if isinstance(runs, RunData) else [r for r in runs if r is not None]
    if not runs:
        return message_figure("No run selected.", height=height)
    panels = [(run, *difficulty_bars(run)) for run in runs]
    if len(runs) == 1 and not any(n for _, _, bars in panels for _, _, n, _, _ in bars):
        run = runs[0]
        why = (run.problems[0] if run.problems else "No generated task committed yet.") if not len(run.tasks) \
            else "No valid generated task with a p̂ yet."
        return message_figure(f"{run.name}: no difficulty distribution to draw.\n{why}", height=height)
    all_epochs = sorted({e for _, _, bars in panels for e, *_ in bars})
    color_of = dict(zip(all_epochs, _epoch_colors(len(all_epochs))))
    shown = set(all_epochs) if len(all_epochs) <= 8 else {
        all_epochs[round(i * (len(all_epochs) - 1) / 5)] for i in range(6)}
    fig = make_subplots(rows=1, cols=len(runs), shared_yaxes=True, horizontal_spacing=0.06,
                        subplot_titles=[f"{html.escape(r.name)}  "
                                        f"<span style='color:{ALPHA_COLOUR}'>{band_label(r)}</span>"
                                        for r in runs] if len(runs) > 1 else None)
    trace_epochs: list[int] = []
    first = {e for e, *_ in panels[0][2]}
    for col, (run, levels, bars) in enumerate(panels, start=1):
        trace_epochs += _difficulty_panel(fig, col, run, levels, bars, color_of=color_of, shown=shown,
                                          alone=len(runs) == 1, first=first)
    if len(all_epochs) > 1:
        _epoch_slider(fig, all_epochs, shown, trace_epochs)
    fig.update_layout(barmode="group", bargap=0.12, bargroupgap=0.04,
                      legend=dict(orientation="v", x=1.01, y=1, font=dict(size=11), title_text="epoch"))
    fig.update_yaxes(tickformat=".0%", rangemode="tozero")
    fig.update_yaxes(title_text="share of the epoch's valid tasks", row=1, col=1)
    title = "Difficulty of generated tasks · " + " vs ".join(r.name for r in runs)
    fig = style(fig, height=height, title=title)
    fig.update_layout(margin=dict(t=90 if len(runs) > 1 else 70, b=125 if len(all_epochs) > 1 else 50))
    return fig


def band_label(run: RunData) -> str:
    """The run's α and band as the difficulty figure labels them ("" without both)."""
    return "" if run.alpha is None or run.k_min is None else f"α = {run.alpha:g} · band ±{run.k_min:g}"


def _difficulty_panel(fig: go.Figure, col: int, run: RunData, levels: list[float], bars: list, *,
                      color_of: dict[int, str], shown: set[int], alone: bool, first: set[int]) -> list[int]:
    """One run's bars of the difficulty figure into column ``col``, with its band; the epoch of each trace added
    (-1: the note of a run with no valid task)."""
    if not any(n for _, _, n, _, _ in bars):
        fig.add_scatter(x=[None], y=[None], showlegend=False, hoverinfo="skip", row=1, col=col)
        fig.add_annotation(text=f"no valid generated task<br>with a p̂ in {html.escape(run.name)}",
                           xref="x domain", yref="y domain", x=0.5, y=0.5, showarrow=False,
                           font=dict(color="#868e96", size=13), row=1, col=col)
        return [-1]
    for epoch, counts, n, rejected, in_band in bars:
        share = [c / n if n else 0.0 for c in counts]
        band_txt = "" if in_band is None else f" · {in_band:.0%} in band"
        name = f"epoch {epoch} (n={n}{band_txt})" if alone else f"epoch {epoch}"
        fig.add_bar(x=levels, y=share, name=name, marker_color=color_of[epoch], legendgroup=f"e{epoch}",
                    showlegend=col == 1 or epoch not in first, customdata=[[c, n, rejected] for c in counts],
                    visible=True if epoch in shown else "legendonly", row=1, col=col,
                    hovertemplate=(f"{html.escape(run.name)} · epoch {epoch}{band_txt}<br>p̂ = %{{x:.2f}}<br>"
                                   "%{customdata[0]} of %{customdata[1]} valid tasks (%{y:.0%})<br>"
                                   "%{customdata[2]} rejected<extra></extra>"))
    step = min((b - a for a, b in zip(levels, levels[1:])), default=0.2)
    fig.update_xaxes(range=[-step * 0.6, 1 + step * 0.6], tickvals=levels if len(levels) <= 11 else None,
                     tickformat=".2f", zeroline=False, row=1, col=col,
                     title_text="p̂ (agent success rate over G rollouts)")
    if run.alpha is not None and run.k_min is not None:
        lo, hi = band_span(levels, run.alpha, run.k_min, step)
        fig.add_vrect(x0=lo, x1=hi, fillcolor=BAND_FILL, line_width=0, layer="below", row=1, col=col)
        for edge in sorted({lo, hi}):
            fig.add_vline(x=edge, line=dict(color=BAND_LINE, width=1, dash="dot"), row=1, col=col)
        fig.add_vline(x=run.alpha, line=dict(color=ALPHA_COLOUR, width=2, dash="dash"), row=1, col=col)
        if alone:
            fig.add_annotation(x=run.alpha, y=1.0, xref="x", yref="y domain", yanchor="bottom",
                               showarrow=False, text=band_label(run), font=dict(color=ALPHA_COLOUR, size=12))
    return [epoch for epoch, *_ in bars]


def _epoch_slider(fig: go.Figure, epochs: list[int], shown: set[int], trace_epochs: list[int]) -> None:
    """The difficulty figure's slider: "all" (the epochs ``shown``), then one epoch at a time."""
    steps = [dict(label="all", method="restyle",
                  args=[{"visible": [True if e in shown else "legendonly" for e in trace_epochs]}])]
    steps += [dict(label=str(e), method="restyle", args=[{"visible": [t == e for t in trace_epochs]}])
              for e in epochs]
    fig.update_layout(sliders=[dict(active=0, steps=steps, x=0.0, len=1.0, y=-0.22, yanchor="top",
                                    currentvalue=dict(prefix="epoch: ", font=dict(size=12)),
                                    pad=dict(t=10, b=0), font=dict(size=11))])


def curves_frame(run: RunData) -> pd.DataFrame:
    """The per-epoch curves of one run as a table: one row per epoch, the keys :func:`~.panels.one_line` draws and
    every numeric key of ``extra``; epoch 0 carries the untrained agent's ``eval/*`` scores when the run has a
    baseline."""
    rows = []
    if run.baseline and run.records:  # epoch 0: the untrained agent's held-out scores, nothing else yet
        rows.append({"epoch": 0} | {key: float("nan") for key in LINE_KEYS}
                    | {k: number(v) for k, v in run.baseline.items()})
    for r in run.records:
        row = {"epoch": r["epoch"]} | {key: number(r.get(key)) for key in LINE_KEYS}
        extra = r.extra
        row |= {k: number(v) for k, v in extra.items() if isinstance(k, str) and isinstance(v, (int, float))
                and not isinstance(v, bool)}
        rows.append(row)
    return pd.DataFrame(rows, columns=None if rows else ["epoch", *LINE_KEYS])


def curves_figure(runs: Sequence[RunData], *, height: int = 1060) -> go.Figure:
    """The per-epoch curves of one or more runs, overlaid (one color per run), one panel per entry of the panel
    table (:data:`~genenv_lab.lab.panels.PANELS`: p̂ with the α band, in-band, valid and zero-std fractions, env and
    agent reward, env KL, held-out scores, the method's signals); a panel no run has numbers for says so."""
    runs = [r for r in runs if r is not None]
    frames = [curves_frame(r) for r in runs]
    if not any(len(f) for f in frames):
        names = ", ".join(r.name for r in runs) or "no run selected"
        return message_figure(f"No committed epoch yet ({names}): the curves appear after the first epoch.",
                              height=height)
    rows = -(-len(PANELS) // COLS)
    fig = make_subplots(rows=rows, cols=COLS, subplot_titles=[p.title for p in PANELS], horizontal_spacing=0.06,
                        vertical_spacing=0.08)
    drawn: set[str] = set()
    for i, (run, frame) in enumerate(zip(runs, frames)):
        if not len(frame):
            continue
        for j, p in enumerate(PANELS):
            at = Draw(fig, *cell(j), run=run.name, color=RUN_COLORS[i % len(RUN_COLORS)], first=j == 0)
            if p.draw(at, frame, p.keys):
                drawn.add(p.name)
    _bands(fig, runs)
    _dress_panels(fig, drawn)
    fig.update_xaxes(dtick=1 if max(len(f) for f in frames) <= 12 else None, tick0=1)
    fig.update_xaxes(title_text="epoch", row=rows)
    fig.update_annotations(font_size=12)
    fig.update_layout(legend=dict(orientation="h", x=1, xanchor="right", y=1.09, yanchor="bottom"),
                      hovermode="closest")
    title = "Per-epoch curves · " + " vs ".join(r.name for r in runs)
    return style(fig, height=height, title=title).update_layout(margin=dict(t=110))


def _bands(fig: go.Figure, runs: Sequence[RunData]) -> None:
    """The α band of every (α, k_min) of ``runs`` on the panels that carry one (``Panel.band``)."""
    bands = {(r.alpha, r.k_min) for r in runs if r.alpha is not None and r.k_min is not None}
    for alpha, k_min in sorted(bands):
        for j, p in enumerate(PANELS):
            if p.band is None:
                continue
            row, col = cell(j)
            fig.add_hrect(*cur.band_edges(alpha, k_min), fillcolor=BAND_FILL, line_width=0, layer="below", row=row,
                          col=col)
            if p.band == "line":
                fig.add_hline(y=alpha, line=dict(color=ALPHA_COLOUR, width=1.5, dash="dash"), row=row, col=col)


def _dress_panels(fig: go.Figure, drawn: set[str]) -> None:
    """Each panel's y title and fixed range, and a note in each panel no run drew a line into."""
    for j, p in enumerate(PANELS):
        row, col = cell(j)
        note = EMPTY.get(p.draw)
        if note and p.name not in drawn:  # an empty trace anchors the panel's axes, so that the note lands in it
            fig.add_scatter(x=[None], y=[None], showlegend=False, hoverinfo="skip", row=row, col=col)
            fig.add_annotation(text=note, xref="x domain", yref="y domain", x=0.5, y=0.5, showarrow=False,
                               font=dict(color="#adb5bd", size=12), row=row, col=col)
            fig.update_xaxes(showticklabels=False, showgrid=False, row=row, col=col)
            fig.update_yaxes(showticklabels=False, showgrid=False, row=row, col=col)
    for j, p in enumerate(PANELS):
        row, col = cell(j)
        fig.update_yaxes(title_text=p.y_title, title_standoff=4, title_font=dict(size=11), row=row, col=col)
        if p.y_range:
            fig.update_yaxes(range=[p.y_range[0] - 0.03, p.y_range[1] + 0.03], row=row, col=col)
