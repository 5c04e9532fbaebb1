"""Pure view functions of the lab: a :class:`~genenv_lab.lab.runs.RunData` in, a DataFrame, Markdown or a plotly
figure out. No Gradio, no file access, no state: ``app.py`` lays these out and wires them to events, and the tests
call them directly.

A view never raises for a run that lacks what it shows (no epoch yet, a corrupt table): it returns an empty table
or :func:`message_figure`, a blank figure carrying a sentence that says why.

Figures follow the paper's notation: p̂ is the agent's empirical success rate on a task over G rollouts, α the
target success rate, and the band |p̂ − α| ≤ k_min the filter that selects the env update's training tasks
(``docs/run_directory.md``).

Comparisons (``genenv-lab compare``) have their own views, :class:`~genenv_lab.lab.runs.ComparisonData` in: a
card, the state of each expected run, :func:`genenv_lab.compare.report_figure` (with held-out score against
cumulative agent rollouts and the rollouts genenv needs to reach each baseline), the last epoch's summary and the
band residence, each drawing whatever runs exist so far.
"""

from __future__ import annotations

import html
import json
import math
import re
import textwrap
import time
from typing import Any, Iterable, Sequence

import pandas as pd
import plotly.graph_objects as go
from plotly.colors import sample_colorscale
from plotly.subplots import make_subplots

from .. import curriculum as cur
from ..runlog import fmt_num
from .runs import ComparisonData, RunData, RunSummary

RUN_COLORS = ("#4263eb", "#f76707", "#0ca678", "#ae3ec9", "#e03131", "#1098ad", "#74b816", "#f59f00")
BAND_FILL = "rgba(12, 166, 120, 0.13)"
BAND_LINE = "#0ca678"
TEMPLATE = "plotly_white"
FONT = dict(family="Inter, system-ui, -apple-system, Segoe UI, sans-serif", size=13, color="#343a40")
STATUS_BADGE = {"running": "● running", "finished": "✔ finished", "killed": "✖ killed",
                "interrupted": "‖ interrupted", "failed": "✖ failed", "starting": "… starting",
                "empty": "○ empty",
                "unreadable": "⚠ unreadable", "missing": "? missing"}
"""Status as shown (symbols that common fonts, DejaVu included, have; no emoji font needed)."""

CURVES = (
    ("p_hat_mean", "p̂ mean of generated tasks", None),
    ("in_band_frac", "in-band fraction", (0, 1)),
    ("valid_frac", "valid fraction", (0, 1)),
    ("env_reward_mean", "env reward R_env (mean)", (0, 1)),
    ("agent_reward_mean", "agent reward (mean)", (0, 1)),
    ("frac_zero_std", "zero-std GRPO groups", (0, 1)),
    ("env_kl", "env KL to initial simulator", None),
)
"""(key of epochs.jsonl, panel title, fixed y range) of the per-epoch curves, in panel order."""

Y_TITLES = ("p̂", "share of tasks", "share of generations", "R_env", "mean reward", "share of groups", "KL (nats)",
            "score", "p̂", "|p̂ − α|", "level / feature", "value")
"""The y-axis title of each panel of :func:`curves_figure`, in panel order (rows of four)."""

SIGNALS = (
    ("p̂ on the untrained simulator's tasks", ("p_hat_reference",), (0, 1)),
    ("|p̂ − α|: generated (solid) · untrained (dot)", ("p_hat_gap", "p_hat_gap_reference"), (0, 1)),
    ("mean difficulty of valid tasks (features/*)", ("features/",), None),
    ("GRPO (TRL): reward_std · kl (dot)", ("grpo/reward_std", "grpo/kl"), None),
)
"""The third row of the curves: (panel title, keys of a record's ``extra``, fixed y range). A key ending in ``/``
takes every numeric key with that prefix. The first key of a panel is drawn solid, the others dotted. These are the
signals the method depends on: the counterfactual (the same agent on the untrained simulator's tasks), the distance
of each from α, the difficulty the simulator writes, and GRPO's own health (docs/run_directory.md)."""


# ------------------------------------------------------------------------------------------------------- helpers

def _num(value: Any) -> float:
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


def _valid_mask(frame: pd.DataFrame) -> pd.Series:
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


def _fence(text: str, lang: str = "text") -> str:
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{text}\n{fence}"


def _short(text: Any, limit: int = 90) -> str:
    text = "" if text is None else str(text).replace("\n", " ⏎ ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ---------------------------------------------------------------------------------------------------------- runs

def runs_frame(summaries: Iterable[RunSummary]) -> pd.DataFrame:
    """The runs list: one row per run directory."""
    rows = []
    for s in summaries:
        planned = "?" if s.epochs_planned is None else str(s.epochs_planned)
        rows.append({
            "run": s.name, "status": STATUS_BADGE.get(s.status, s.status), "preset": s.preset, "model": s.model,
            "domain": s.domain, "epochs": f"{s.epochs_done} / {planned}", "processes": s.processes,
            "p̂ mean": fmt_num(s.p_hat_mean, 2), "in band": fmt_num(s.in_band_frac, 2),
            "updated": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(s.updated_at)) if s.updated_at else "",
            "note": s.problem,
        })
    frame = pd.DataFrame(rows, columns=["run", "status", "preset", "model", "domain", "epochs", "processes",
                                        "p̂ mean", "in band", "updated", "note"])
    return frame


def run_card(run: RunData) -> str:
    """Markdown header of one run: status, what it is, its curriculum settings, and any problem found."""
    planned = "?" if run.epochs_planned is None else run.epochs_planned
    esc = lambda value: html.escape(str(value))  # noqa: E731 - names and config strings come from run folders
    parts = [f"preset **{esc(run.preset)}**", f"model **{esc(run.model)}**", f"domain **{esc(run.domain)}**",
             f"variant {esc(run.variant)}", f"epochs **{esc(run.epochs_done)} / {esc(planned)}**",
             f"{run.processes} process{'es' if run.processes > 1 else ''}"]
    if run.alpha is not None:
        parts.append(f"α = {run.alpha:g}")
    if run.k_min is not None:
        parts.append(f"k_min = {run.k_min:g}")
    if run.num_generations is not None:
        parts.append(f"G = {run.num_generations}")
    if isinstance(run.state.get("env_version"), int):
        parts.append(f"env updates {run.state['env_version']}")
    lines = [f"### {esc(run.name)} · {STATUS_BADGE.get(run.status, esc(run.status))}", " · ".join(parts)]
    if run.records:
        last = run.records[-1]
        lines.append(f"last epoch {last['epoch']}: valid {last.get('n_valid', '?')}/{last.get('n_generated', '?')}, "
                     f"p̂ mean {fmt_num(last.get('p_hat_mean'))}, in band {fmt_num(last.get('in_band_frac'))}, "
                     f"agent reward {fmt_num(last.get('agent_reward_mean'))}, env KL {fmt_num(last.get('env_kl'), 4)}, "
                     f"{fmt_num(last.get('wall_s'), 1)} s")
    for problem in run.problems:
        lines.append(f"> ⚠ {esc(problem)}")
    return "\n\n".join(lines)


# ------------------------------------------------------------------------------------------ difficulty histogram

def difficulty_bars(run: RunData) -> tuple[list[float], list[tuple[int, list[int], int, int, float | None]]]:
    """p̂ levels and, per epoch, (epoch, task count per level, valid tasks, rejected, in-band share)."""
    tasks = run.tasks
    epochs = sorted(int(e) for e in pd.to_numeric(tasks["epoch"], errors="coerce").dropna().unique())
    valid = tasks[_valid_mask(tasks)]
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
    def band_label(run: RunData) -> str:
        return "" if run.alpha is None or run.k_min is None else f"α = {run.alpha:g} · band ±{run.k_min:g}"

    fig = make_subplots(rows=1, cols=len(runs), shared_yaxes=True, horizontal_spacing=0.06,
                        subplot_titles=[f"{html.escape(r.name)}  <span style='color:#2b8a3e'>{band_label(r)}</span>"
                                        for r in runs] if len(runs) > 1 else None)
    trace_epochs: list[int] = []
    for col, (run, levels, bars) in enumerate(panels, start=1):
        if not any(n for _, _, n, _, _ in bars):
            fig.add_scatter(x=[None], y=[None], showlegend=False, hoverinfo="skip", row=1, col=col)
            fig.add_annotation(text=f"no valid generated task<br>with a p̂ in {html.escape(run.name)}",
                               xref="x domain", yref="y domain", x=0.5, y=0.5, showarrow=False,
                               font=dict(color="#868e96", size=13), row=1, col=col)
            trace_epochs.append(-1)
            continue
        for epoch, counts, n, rejected, in_band in bars:
            share = [c / n if n else 0.0 for c in counts]
            band_txt = "" if in_band is None else f" · {in_band:.0%} in band"
            name = f"epoch {epoch} (n={n}{band_txt})" if len(runs) == 1 else f"epoch {epoch}"
            fig.add_bar(x=levels, y=share, name=name, marker_color=color_of[epoch], legendgroup=f"e{epoch}",
                        showlegend=col == 1 or epoch not in {e for e, *_ in panels[0][2]},
                        customdata=[[c, n, rejected] for c in counts],
                        visible=True if epoch in shown else "legendonly", row=1, col=col,
                        hovertemplate=(f"{html.escape(run.name)} · epoch {epoch}{band_txt}<br>p̂ = %{{x:.2f}}<br>"
                                       "%{customdata[0]} of %{customdata[1]} valid tasks (%{y:.0%})<br>"
                                       "%{customdata[2]} rejected<extra></extra>"))
            trace_epochs.append(epoch)
        step = min((b - a for a, b in zip(levels, levels[1:])), default=0.2)
        fig.update_xaxes(range=[-step * 0.6, 1 + step * 0.6], tickvals=levels if len(levels) <= 11 else None,
                         tickformat=".2f", zeroline=False, row=1, col=col,
                         title_text="p̂ (agent success rate over G rollouts)")
        if run.alpha is not None and run.k_min is not None:
            lo, hi = band_span(levels, run.alpha, run.k_min, step)
            fig.add_vrect(x0=lo, x1=hi, fillcolor=BAND_FILL, line_width=0, layer="below", row=1, col=col)
            for edge in sorted({lo, hi}):
                fig.add_vline(x=edge, line=dict(color=BAND_LINE, width=1, dash="dot"), row=1, col=col)
            fig.add_vline(x=run.alpha, line=dict(color="#2b8a3e", width=2, dash="dash"), row=1, col=col)
            if len(runs) == 1:
                fig.add_annotation(x=run.alpha, y=1.0, xref="x", yref="y domain", yanchor="bottom",
                                   showarrow=False, text=band_label(run), font=dict(color="#2b8a3e", size=12))
    if len(all_epochs) > 1:
        steps = [dict(label="all", method="restyle",
                      args=[{"visible": [True if e in shown else "legendonly" for e in trace_epochs]}])]
        steps += [dict(label=str(e), method="restyle", args=[{"visible": [t == e for t in trace_epochs]}])
                  for e in all_epochs]
        fig.update_layout(sliders=[dict(active=0, steps=steps, x=0.0, len=1.0, y=-0.22, yanchor="top",
                                        currentvalue=dict(prefix="epoch: ", font=dict(size=12)),
                                        pad=dict(t=10, b=0), font=dict(size=11))])
    fig.update_layout(barmode="group", bargap=0.12, bargroupgap=0.04,
                      legend=dict(orientation="v", x=1.01, y=1, font=dict(size=11), title_text="epoch"))
    fig.update_yaxes(tickformat=".0%", rangemode="tozero")
    fig.update_yaxes(title_text="share of the epoch's valid tasks", row=1, col=1)
    title = "Difficulty of generated tasks · " + " vs ".join(r.name for r in runs)
    fig = style(fig, height=height, title=title)
    fig.update_layout(margin=dict(t=90 if len(runs) > 1 else 70, b=125 if len(all_epochs) > 1 else 50))
    return fig


# ------------------------------------------------------------------------------------------------ epoch curves

def curves_frame(run: RunData) -> pd.DataFrame:
    """The per-epoch curves of one run as a table: one row per epoch, the plotted keys and ``eval/*`` scores;
    epoch 0 carries the untrained agent's ``eval/*`` scores when the run has a baseline."""
    rows = []
    if run.baseline and run.records:  # epoch 0: the untrained agent's held-out scores, nothing else yet
        rows.append({"epoch": 0} | {key: float("nan") for key, _, _ in CURVES}
                    | {k: _num(v) for k, v in run.baseline.items()})
    for r in run.records:
        row = {"epoch": r["epoch"]} | {key: _num(r.get(key)) for key, _, _ in CURVES}
        extra = r.get("extra") if isinstance(r.get("extra"), dict) else {}
        row |= {k: _num(v) for k, v in extra.items() if isinstance(k, str) and isinstance(v, (int, float))
                and not isinstance(v, bool)}
        rows.append(row)
    return pd.DataFrame(rows, columns=None if rows else ["epoch"] + [k for k, _, _ in CURVES])


def _signal_keys(frame: pd.DataFrame, keys: Sequence[str]) -> list[str]:
    """The frame's columns named by a :data:`SIGNALS` panel (a key ending in ``/``: every column with that
    prefix), those with at least one number."""
    cols = [c for k in keys for c in (sorted(c for c in frame.columns if c.startswith(k)) if k.endswith("/")
                                      else [k] if k in frame.columns else [])]
    return [c for c in cols if frame[c].notna().any()]


LINE_LABEL = dict(textposition="top left", textfont=dict(size=10), cliponaxis=False)
"""Where a panel with several lines names each one: beside its last point."""


def _end_label(values: pd.Series, label: str) -> list[str]:
    """``label`` at the last number of ``values`` and nothing elsewhere: a line names itself where it ends."""
    last = values.last_valid_index()
    return [label if i == last else "" for i in values.index]


def curves_figure(runs: Sequence[RunData], *, height: int = 820) -> go.Figure:
    """The per-epoch curves of one or more runs, overlaid (one color per run) in a grid of panels: p̂ mean with
    the α band, in-band, valid and zero-std fractions, env and agent reward, env KL, and validation scores
    (``eval/*`` keys of a record's ``extra``) when a run has them; a third row holds the method's signals
    (:data:`SIGNALS`: the counterfactual p̂, |p̂ − α|, task difficulty, GRPO metrics) where the records have
    them."""
    runs = [r for r in runs if r is not None]
    frames = [curves_frame(r) for r in runs]
    if not any(len(f) for f in frames):
        names = ", ".join(r.name for r in runs) or "no run selected"
        return message_figure(f"No committed epoch yet ({names}): the curves appear after the first epoch.",
                              height=height)
    titles = [t for _, t, _ in CURVES] + ["validation (extra eval/*)"] + [t for t, _, _ in SIGNALS]
    fig = make_subplots(rows=3, cols=4, subplot_titles=titles, horizontal_spacing=0.06, vertical_spacing=0.11)
    has_eval = False
    drawn_signals: set[int] = set()
    for i, (run, frame) in enumerate(zip(runs, frames)):
        color = RUN_COLORS[i % len(RUN_COLORS)]
        if not len(frame):
            continue
        trained = frame[frame["epoch"] > 0]
        for j, (key, _, _) in enumerate(CURVES):
            fig.add_scatter(x=trained["epoch"], y=trained[key], mode="lines+markers", name=run.name,
                            legendgroup=run.name, showlegend=(j == 0), line=dict(color=color, width=2.2),
                            marker=dict(size=7), row=j // 4 + 1, col=j % 4 + 1,
                            hovertemplate=f"{run.name}<br>epoch %{{x}}<br>{key} = %{{y:.4g}}<extra></extra>")
        eval_keys = [c for c in frame.columns if c.startswith("eval/")]
        symbols = ("circle", "square", "diamond", "triangle-up", "x", "star")
        for k, key in enumerate(eval_keys):
            has_eval = True
            fig.add_scatter(x=frame["epoch"], y=frame[key], mode="lines+markers+text", name=f"{run.name} {key}",
                            legendgroup=run.name, showlegend=False, line=dict(color=color, width=2, dash="dot"),
                            marker=dict(size=8, symbol=symbols[k % len(symbols)]), row=2, col=4,
                            text=_end_label(frame[key], key[len("eval/"):]), **LINE_LABEL,
                            hovertemplate=f"{run.name}<br>epoch %{{x}}<br>{key} = %{{y:.4g}}<extra></extra>")
        for col, (_, keys, _) in enumerate(SIGNALS, start=1):
            for k, key in enumerate(_signal_keys(trained, keys)):
                drawn_signals.add(col)
                fig.add_scatter(x=trained["epoch"], y=trained[key], mode="lines+markers+text",
                                name=f"{run.name} {key}", legendgroup=run.name, showlegend=False, marker=dict(size=5),
                                line=dict(color=color, width=2, dash="solid" if k == 0 else "dot"), row=3, col=col,
                                text=_end_label(trained[key], key.rsplit("/", 1)[-1]), **LINE_LABEL,
                                hovertemplate=f"{run.name}<br>epoch %{{x}}<br>{key} = %{{y:.4g}}<extra></extra>")
    bands = {(r.alpha, r.k_min) for r in runs if r.alpha is not None and r.k_min is not None}
    for alpha, k_min in sorted(bands):
        band = cur.band_edges(alpha, k_min)
        fig.add_hrect(*band, fillcolor=BAND_FILL, line_width=0, layer="below", row=1, col=1)
        fig.add_hline(y=alpha, line=dict(color="#2b8a3e", width=1.5, dash="dash"), row=1, col=1)
        fig.add_hrect(*band, fillcolor=BAND_FILL, line_width=0, layer="below", row=3, col=1)
    empty = [(2, 4, "no eval/* scores<br>in the records' extra")] if not has_eval else []
    empty += [(3, col, "not in these records<br>(all null or absent)") for col in range(1, len(SIGNALS) + 1)
              if col not in drawn_signals]
    for row, col, note in empty:  # an empty trace anchors the panel's axes, so that the note lands in it
        fig.add_scatter(x=[None], y=[None], showlegend=False, hoverinfo="skip", row=row, col=col)
        fig.add_annotation(text=note, xref="x domain", yref="y domain", x=0.5, y=0.5, showarrow=False,
                           font=dict(color="#adb5bd", size=12), row=row, col=col)
        fig.update_xaxes(showticklabels=False, showgrid=False, row=row, col=col)
        fig.update_yaxes(showticklabels=False, showgrid=False, row=row, col=col)
    for panel, title in enumerate(Y_TITLES):
        fig.update_yaxes(title_text=title, title_standoff=4, title_font=dict(size=11), row=panel // 4 + 1,
                         col=panel % 4 + 1)
    fig.update_yaxes(range=[-0.03, 1.03], row=1, col=1)
    for j, (_, _, fixed) in enumerate(CURVES):
        if fixed:
            fig.update_yaxes(range=[fixed[0] - 0.03, fixed[1] + 0.03], row=j // 4 + 1, col=j % 4 + 1)
    for col, (_, _, fixed) in enumerate(SIGNALS, start=1):
        if fixed:
            fig.update_yaxes(range=[fixed[0] - 0.03, fixed[1] + 0.03], row=3, col=col)
    few = max(len(f) for f in frames) <= 12
    fig.update_xaxes(dtick=1 if few else None, tick0=1)
    fig.update_xaxes(title_text="epoch", row=3)
    fig.update_annotations(font_size=12)
    fig.update_layout(legend=dict(orientation="h", x=1, xanchor="right", y=1.09, yanchor="bottom"),
                      hovermode="closest")
    title = "Per-epoch curves · " + " vs ".join(r.name for r in runs)
    return style(fig, height=height, title=title).update_layout(margin=dict(t=110))


# --------------------------------------------------------------------------------------------- generated tasks

BAND_FILTERS = ("all", "in band", "out of band")
VALIDITY_FILTERS = ("all", "valid", "rejected")


def task_filter_choices(run: RunData) -> dict[str, list]:
    """Choices of the tasks table's filters: ``epochs`` (``all`` then each epoch) and ``reasons`` (``all`` then
    each reject reason seen)."""
    tasks = run.tasks
    epochs = sorted(int(e) for e in pd.to_numeric(tasks["epoch"], errors="coerce").dropna().unique())
    reasons = sorted({str(r) for r in tasks["reject_reason"].dropna() if str(r)})
    return {"epochs": ["all"] + [str(e) for e in epochs], "reasons": ["all"] + reasons}


def _features_columns(features: pd.Series) -> pd.DataFrame:
    def flat(f: Any) -> dict[str, Any]:
        if isinstance(f, str):
            try:
                f = json.loads(f)
            except json.JSONDecodeError:
                return {}
        if not isinstance(f, dict):
            return {}
        return {f"f.{k}": (", ".join(map(str, v)) if isinstance(v, (list, tuple)) else v) for k, v in f.items()}

    return pd.DataFrame([flat(f) for f in features], index=features.index)


def tasks_frame(run: RunData, *, epoch: str | int = "all", band: str = "all", validity: str = "all",
                reason: str = "all", search: str = "") -> pd.DataFrame:
    """The generated tasks, filtered: by ``epoch``, ``band`` (:data:`BAND_FILTERS`), ``validity``
    (:data:`VALIDITY_FILTERS`), reject ``reason`` and a case-insensitive ``search`` in the task's id, question,
    answer and raw output. Difficulty features are columns ``f.<name>``."""
    tasks = run.tasks
    cols = ["task_id", "epoch", "question", "answer", "p̂", "in_band", "R_env", "valid", "reject_reason", "weight",
            "env_v", "parent_id"]  # what a reader scans first comes first: readable at 1280 px
    if not len(tasks):
        return pd.DataFrame(columns=cols)
    keep = pd.Series(True, index=tasks.index)
    if str(epoch) != "all":
        keep &= pd.to_numeric(tasks["epoch"], errors="coerce") == int(epoch)
    valid = _valid_mask(tasks)
    if validity == "valid":
        keep &= valid
    elif validity == "rejected":
        keep &= ~valid
    in_band = tasks["in_band"].map(lambda v: bool(v) if v is not None and v == v else False)
    if band == "in band":
        keep &= in_band
    elif band == "out of band":
        keep &= valid & ~in_band
    if reason and reason != "all":
        keep &= tasks["reject_reason"].astype(str) == reason
    if search and search.strip():
        needle = search.strip().lower()
        hay = (tasks["task_id"].astype(str) + "\n" + tasks["question"].astype(str) + "\n"
               + tasks["answer"].astype(str) + "\n" + tasks["raw"].astype(str)).str.lower()
        keep &= hay.str.contains(needle, regex=False)
    sub = tasks[keep]
    out = pd.DataFrame({
        "task_id": sub["task_id"].astype(str), "epoch": sub["epoch"], "question": sub["question"].map(_short),
        "answer": sub["answer"], "p̂": pd.to_numeric(sub["p_hat"], errors="coerce").round(3),
        "in_band": in_band[keep], "R_env": pd.to_numeric(sub["env_reward"], errors="coerce").round(3),
        "valid": valid[keep], "reject_reason": sub["reject_reason"],
        "weight": pd.to_numeric(sub["weight"], errors="coerce").round(3), "env_v": sub["env_version"],
        "parent_id": sub["parent_id"].astype(str),
    })[cols]
    feats = _features_columns(sub["features"])
    return pd.concat([out, feats], axis=1).reset_index(drop=True)


def _task_row(run: RunData, task_id: str) -> pd.Series | None:
    tasks = run.tasks
    if not task_id or not len(tasks):
        return None
    match = tasks[tasks["task_id"].astype(str) == str(task_id)]
    return None if match.empty else match.iloc[-1]


def lineage_ids(run: RunData, task_id: str) -> list[str]:
    """The ids from the base seed down to ``task_id`` along ``parent_id`` (the seed first)."""
    tasks = run.tasks
    parents = dict(zip(tasks["task_id"].astype(str), tasks["parent_id"].astype(str))) if len(tasks) else {}
    if task_id not in parents:
        return []
    chain = [task_id]
    while chain[-1] in parents and len(chain) <= len(parents):  # the bound guards against a corrupt cycle
        chain.append(parents[chain[-1]])
    return chain[::-1]


LINEAGE_COLUMNS = ["step", "task_id", "epoch", "env_v", "valid", "p̂", "in_band", "weight", "task"]
ATTEMPTS_COLUMNS = ["epoch", "source", "#", "completion", "reward", "success", "advantage"]


def lineage_frame(run: RunData, task_id: str) -> pd.DataFrame:
    """One row per step from the base seed to ``task_id``: epoch, env version, validity, p̂, band, task text."""
    cols = LINEAGE_COLUMNS
    chain = lineage_ids(run, task_id)
    rows = []
    for i, tid in enumerate(chain):
        row = _task_row(run, tid)
        if row is None:
            rows.append({"step": i, "task_id": tid, "epoch": 0, "env_v": None, "valid": True, "p̂": None,
                         "in_band": None, "weight": None, "task": _short(run.seeds.get(tid, "(base seed)"), 200)})
            continue
        valid = bool(row["valid"]) if row["valid"] is not None else False
        rows.append({"step": i, "task_id": tid, "epoch": row["epoch"], "env_v": row["env_version"], "valid": valid,
                     "p̂": round(_num(row["p_hat"]), 3), "in_band": bool(row["in_band"]) if valid else False,
                     "weight": round(_num(row["weight"]), 3),
                     "task": _short(row["text"] if valid else f"[rejected: {row['reject_reason']}] {row['raw']}",
                                    200)})
    return pd.DataFrame(rows, columns=cols)


def lineage_figure(run: RunData, task_id: str, *, height: int = 380) -> go.Figure:
    """The family of ``task_id``'s base seed as a tree over epochs: every variation generated from it (x = epoch,
    color = p̂, ✕ = rejected), with the path from the seed to ``task_id`` highlighted."""
    row = _task_row(run, task_id)
    if row is None:
        return message_figure("Pick a generated task (click a row of the table) to see its lineage.", height=height)
    tasks = run.tasks
    root = str(row["root_id"])
    family = tasks[tasks["root_id"].astype(str) == root]
    parent = dict(zip(family["task_id"].astype(str), family["parent_id"].astype(str)))
    children: dict[str, list[str]] = {}
    for child, par in parent.items():
        children.setdefault(par, []).append(child)
    for kids in children.values():
        kids.sort()
    # Tidy layout: leaves on consecutive rows, each parent at the mean of its children (iterative post-order).
    ypos: dict[str, float] = {}
    next_leaf = 0
    stack: list[tuple[str, bool]] = [(root, False)]
    seen: set[str] = set()
    while stack:
        node, done = stack.pop()
        kids = [k for k in children.get(node, []) if k not in seen]
        if done or not kids:
            if node in ypos:
                continue
            placed = [ypos[k] for k in children.get(node, []) if k in ypos]
            if placed:
                ypos[node] = sum(placed) / len(placed)
            else:
                ypos[node] = next_leaf
                next_leaf += 1
            continue
        seen.add(node)
        stack.append((node, True))
        stack.extend((k, False) for k in reversed(kids))
    info = {str(r.task_id): r for r in family.itertuples(index=False)}
    xpos = {tid: int(info[tid].epoch) if tid in info else 0 for tid in ypos}
    path = set(lineage_ids(run, str(task_id)))
    fig = go.Figure()
    for highlight in (False, True):
        xs: list[Any] = []
        ys: list[Any] = []
        for child, par in parent.items():
            if child in ypos and par in ypos and ((child in path and par in path) == highlight):
                xs += [xpos[par], xpos[child], None]
                ys += [ypos[par], ypos[child], None]
        fig.add_scatter(x=xs, y=ys, mode="lines", hoverinfo="skip", showlegend=False,
                        line=dict(color="#f76707" if highlight else "#ced4da", width=3.5 if highlight else 1.2))
    nodes = list(ypos)
    valid_nodes = [t for t in nodes if t in info and info[t].valid]
    bad_nodes = [t for t in nodes if t in info and not info[t].valid]

    def hover(tid: str) -> str:
        if tid not in info:
            return f"<b>{html.escape(tid)}</b> (base seed)<br>{html.escape(_short(run.seeds.get(tid, ''), 80))}"
        r = info[tid]
        what = html.escape(_short(r.question, 80)) if r.valid else "rejected: " + html.escape(str(r.reject_reason))
        return (f"<b>{html.escape(tid)}</b> · epoch {r.epoch} · env v{r.env_version}<br>p̂ = {fmt_num(r.p_hat, 2)} · "
                f"{'in band' if r.in_band else 'out of band'} · weight {fmt_num(r.weight, 2)}<br>{what}")

    fig.add_scatter(x=[0], y=[ypos[root]], mode="markers+text", text=[root], textposition="middle left",
                    marker=dict(size=16, color="#495057", symbol="diamond"), name="seed",
                    hovertext=[hover(root)], hoverinfo="text", showlegend=False)
    fig.add_scatter(x=[xpos[t] for t in valid_nodes], y=[ypos[t] for t in valid_nodes], mode="markers",
                    marker=dict(size=[18 if t == str(task_id) else 12 for t in valid_nodes],
                                color=[_num(info[t].p_hat) for t in valid_nodes], cmin=0, cmax=1,
                                colorscale="RdYlGn", showscale=True, line=dict(color="#212529", width=[
                                    3 if t == str(task_id) else 0.5 for t in valid_nodes]),
                                colorbar=dict(title=dict(text="p̂"), thickness=12, len=0.8)),
                    hovertext=[hover(t) for t in valid_nodes], hoverinfo="text", name="valid", showlegend=False)
    if bad_nodes:
        fig.add_scatter(x=[xpos[t] for t in bad_nodes], y=[ypos[t] for t in bad_nodes], mode="markers",
                        marker=dict(size=[16 if t == str(task_id) else 10 for t in bad_nodes], color="#adb5bd",
                                    symbol="x"),
                        hovertext=[hover(t) for t in bad_nodes], hoverinfo="text", name="rejected", showlegend=False)
    max_epoch = max(xpos.values(), default=1)
    fig.update_xaxes(title_text="epoch (0 = base seed)", dtick=1, range=[-1.2, max_epoch + 0.5], zeroline=False)
    fig.update_yaxes(visible=False, autorange="reversed")
    return style(fig, height=height, title=f"Lineage of {task_id} · family of {root} ({len(family)} generations)")


def context_markdown(run: RunData, task_id: str) -> str:
    """The env context ``task_id`` was generated from (its chat messages) and the simulator's raw output."""
    row = _task_row(run, task_id)
    if row is None:
        return "_Pick a generated task to see the env context it came from._"
    parts = [f"#### Env context of `{task_id}` (epoch {row['epoch']}, env version {row['env_version']})"]
    try:
        messages = json.loads(row["context"])
        if not isinstance(messages, list):
            raise ValueError("not a list")
        for m in messages:
            role = m.get("role", "?") if isinstance(m, dict) else "?"
            content = m.get("content", "") if isinstance(m, dict) else str(m)
            parts.append(f"**{html.escape(str(role))}**\n\n{_fence(str(content))}")
    except (TypeError, ValueError):
        parts.append("_The context is not JSON chat messages; shown as stored:_\n\n" + _fence(str(row["context"])))
    verdict = ("valid" if bool(row["valid"]) else f"rejected: {row['reject_reason']}")
    parts.append(f"**simulator output** ({verdict})\n\n{_fence(str(row['raw']))}")
    if bool(row["valid"]):
        parts.append(f"**parsed task**: gold answer `{row['answer']}`\n\n{_fence(str(row['text']))}")
    return "\n\n".join(parts)


# ---------------------------------------------------------------------------------------------------- attempts

def attempts_frame(run: RunData, task_id: str) -> pd.DataFrame:
    """The agent's completions of ``task_id`` (its G rollouts in each epoch it was attempted) with reward,
    success and group-relative advantage."""
    cols = ATTEMPTS_COLUMNS
    attempts = run.attempts
    if not task_id or not len(attempts):
        return pd.DataFrame(columns=cols)
    sub = attempts[attempts["task_id"].astype(str) == str(task_id)]
    out = pd.DataFrame({
        "epoch": sub["epoch"], "source": sub["source"],
        "#": sub.groupby("epoch").cumcount() + 1 if len(sub) else pd.Series(dtype=int),
        "completion": sub["completion"].astype(str),
        "reward": pd.to_numeric(sub["reward"], errors="coerce").round(3), "success": sub["success"],
        "advantage": pd.to_numeric(sub["advantage"], errors="coerce").round(3),
    })
    return out.sort_values(["epoch", "#"], kind="stable").reset_index(drop=True)


def attempts_markdown(run: RunData, task_id: str) -> str:
    """The prompt the agent saw for ``task_id`` and, per epoch, its success rate and reward spread."""
    frame = attempts_frame(run, task_id)
    if not len(frame):
        if _task_row(run, task_id) is not None:
            return f"_No agent attempt of `{task_id}` (a rejected generation is never attempted)._"
        return "_Pick a generated task to see the agent's attempts._"
    attempts = run.attempts
    prompt = attempts[attempts["task_id"].astype(str) == str(task_id)]["prompt"].iloc[0]
    lines = [f"#### Agent attempts of `{task_id}`", f"**prompt**\n\n{_fence(str(prompt))}"]
    for epoch, group in frame.groupby("epoch"):
        rewards = group["reward"]
        lines.append(f"- epoch {epoch} ({group['source'].iloc[0]}): G = {len(group)}, p̂ = "
                     f"{group['success'].astype(bool).mean():.2f}, reward mean {rewards.mean():.3f}, "
                     f"std {rewards.std(ddof=0):.3f}" + (" (all equal: no GRPO signal)" if rewards.nunique() <= 1
                                                         else ""))
    return "\n\n".join(lines[:2]) + "\n\n" + "\n".join(lines[2:])


# ------------------------------------------------------------------------------------------------- comparisons

COMPARISON_BADGE = {"running": "● running", "finished": "✔ finished", "incomplete": "‖ incomplete",
                    "unreadable": "⚠ unreadable", "missing": "? missing"}
COMPARISON_RUNS_COLUMNS = ["label", "seed", "run", "status", "epochs", "note"]
RESIDENCE_COLUMNS = ["label", "seed", "band", "epochs", "entered at epoch", "stayed", "epochs in band"]


def _inline(text: Any) -> str:
    """``text`` as inline Markdown code (a backtick in it cannot end the span)."""
    return "`" + str(text).replace("`", "'").replace("\n", " ") + "`"


def comparison_card(cmp: ComparisonData) -> str:
    """Markdown header of a comparison: status, what it compares, how many of its runs exist, which are missing."""
    lines = [f"### {cmp.name} · {COMPARISON_BADGE.get(cmp.status, cmp.status)}"]
    if cmp.labels:
        counts: dict[str, int] = {}
        for r in cmp.runs:
            counts[r.status] = counts.get(r.status, 0) + 1
        done = ", ".join(f"{n} {status}" for status, n in sorted(counts.items(), key=lambda kv: -kv[1]))
        lines.append(f"{len(cmp.labels)} configuration(s) × {len(cmp.seeds)} seed(s) = **{len(cmp.runs)} runs**: "
                     f"{done or 'none yet'} · {len(cmp.table)} epoch row(s) so far")
        lines.append("compares " + ", ".join(_inline(label) for label in cmp.labels) + " · seeds "
                     + ", ".join(str(s) for s in cmp.seeds))
        bands = sorted(set(cmp.bands.values()))
        if bands:
            lines.append(" · ".join(f"α = {a:g}, band ±{k:g}" for a, k in bands))
    if cmp.missing:
        names = ", ".join(f"{_inline(r.label)} seed {r.seed} ({_inline('runs/' + r.name)})" for r in cmp.missing)
        why = "not started yet" if cmp.status == "running" else "not started yet, stopped before it began, or deleted"
        lines.append(f"> {len(cmp.missing)} run(s) missing ({why}): {names}. The figures show the others.")
    for problem in cmp.problems:
        lines.append(f"> ⚠ {problem}")
    return "\n\n".join(lines)


def comparison_runs_frame(cmp: ComparisonData) -> pd.DataFrame:
    """The runs a comparison's manifest expects, one row each: label, seed, run directory, status, epochs."""
    rows = [{"label": r.label, "seed": r.seed, "run": r.name, "status": STATUS_BADGE.get(r.status, r.status),
             "epochs": f"{r.epochs_done} / {'?' if r.epochs_planned is None else r.epochs_planned}",
             "note": r.problem}
            for r in cmp.runs]
    return pd.DataFrame(rows, columns=COMPARISON_RUNS_COLUMNS)


def _first_band(cmp: ComparisonData) -> tuple[float, float]:
    from ..config import CurriculumConfig

    default = (CurriculumConfig().alpha, CurriculumConfig().k_min)
    return next((cmp.bands[label] for label in cmp.labels if label in cmp.bands), default)


def comparison_figure(cmp: ComparisonData, *, height: int = 1080) -> go.Figure:
    """:func:`genenv_lab.compare.report_figure` of the runs that exist so far (held-out score, training tasks
    consumed, data efficiency, p̂ on the simulator's and on the untrained simulator's tasks, valid fraction,
    held-out score against cumulative agent rollouts and completion tokens; mean ± std over seeds; and the table
    of the rollouts genenv needs to reach each baseline's final held-out score), or a figure that says why there is
    nothing to draw."""
    from ..compare import REPORT_PANELS, report_figure

    if not len(cmp.table):
        if cmp.status in ("unreadable", "missing"):
            why = cmp.problems[0] if cmp.problems else f"the comparison is {cmp.status}"
        elif cmp.runs:
            why = (f"None of its {len(cmp.runs)} runs has committed an epoch yet "
                   f"({len(cmp.missing)} not started).")
        else:
            why = "Its manifest lists no run."
        return message_figure(f"{cmp.name}: nothing to compare yet.\n{why}", height=height)
    alpha, k_min = _first_band(cmp)
    fig = report_figure(cmp.table, alpha=alpha, k_min=k_min)
    runs_seen = cmp.table.groupby(["label", "seed"]).ngroups
    title = f"{html.escape(cmp.name)} · GenEnv and baselines (mean ± std over seeds)"
    if runs_seen < len(cmp.runs):
        title += f" · {runs_seen} of {len(cmp.runs)} runs so far"
    if len(set(cmp.bands.values())) > 1:
        title += f" · band shaded for α = {alpha:g} ± {k_min:g}"
    fig.update_layout(font=FONT, height=height, title=dict(text=title, x=0.01, xanchor="left", font=dict(size=16)),
                      legend=dict(orientation="h", x=1, xanchor="right", y=1.06, yanchor="bottom"),
                      margin=dict(l=60, r=30, t=110, b=50))
    for _, x, _, row, col in REPORT_PANELS:
        if x == "epoch":
            fig.update_xaxes(dtick=1, tick0=0, row=row, col=col)
    fig.update_annotations(font_size=12)
    return fig


def comparison_summary_frame(cmp: ComparisonData) -> pd.DataFrame:
    """The last epoch of each configuration: mean and std over seeds of every compared metric (``seeds``: how many
    runs reached that epoch)."""
    from ..compare import METRICS, summarise

    columns = ["label", "epoch", "seeds"] + [f"{m}_{s}" for m in METRICS for s in ("mean", "std")]
    if not len(cmp.table):
        return pd.DataFrame(columns=columns)
    summary = summarise(cmp.table)
    last = summary.loc[summary.groupby("label")["epoch"].idxmax()]
    seeds = cmp.table.groupby(["label", "epoch"]).size().rename("seeds").reset_index()
    last = last.merge(seeds, on=["label", "epoch"], how="left")
    order = {label: i for i, label in enumerate(cmp.labels)}
    last = last.sort_values("label", key=lambda s: s.map(lambda v: order.get(v, len(order)))).reset_index(drop=True)
    return last[columns].round(3)


def band_residence_frame(cmp: ComparisonData) -> pd.DataFrame:
    """Per configuration and seed: the first epoch whose p̂ on generated tasks enters the configuration's own band
    [α − k_min, α + k_min], and whether it stayed there (:func:`genenv_lab.compare.band_residence`)."""
    from ..compare import band_residence

    if not len(cmp.table):
        return pd.DataFrame(columns=RESIDENCE_COLUMNS)
    alpha0, k0 = _first_band(cmp)
    out = band_residence(cmp.table, alpha=alpha0, k_min=k0, bands=cmp.bands)
    if not len(out):
        return pd.DataFrame(columns=RESIDENCE_COLUMNS)
    out["band"] = [f"{max(0.0, a - k):.2f} – {min(1.0, a + k):.2f}" for a, k in zip(out["alpha"], out["k_min"])]
    out["entered at epoch"] = out["entered_at_epoch"].map(lambda e: "never" if e is None or e != e else str(int(e)))
    out["epochs in band"] = out["epochs_in_band"]
    order = {label: i for i, label in enumerate(cmp.labels)}
    out = out.sort_values(["label", "seed"], key=lambda s: s.map(lambda v: order.get(v, len(order)))
                          if s.name == "label" else s)
    return out[RESIDENCE_COLUMNS].reset_index(drop=True)
