"""The lab's first screen for a genenv run beside the fixed set's (``static``) run of the same preset and seed: what
drove the difference, in four panels read left to right, top to bottom.

- **the simulator's tasks climb past the fixed set**: the mean level of each epoch's valid tasks (``features/level``)
  of both runs, and the fixed set's highest level (``levels/max`` of the static run) as a line;
- **the fixed set is solved and its GRPO steps run dry**: p̂ on the tasks each run trains on, and the share of its
  GRPO steps with no informative group (``dry/step_frac``; an epoch *runs dry* at
  :data:`~genenv_lab.core.dryrun.RAN_DRY_STEP_FRAC`);
- **the held-out score** of both agents (epoch 0: the untrained agent);
- **where p̂ sits against α and the band** on genenv's tasks.

:func:`pair_numbers` gives the numbers the caption (:func:`pair_caption`) quotes, from the same two runs, and the
caption says where p̂ sits: in the band, or above or below it, and where calibration is shown when it is not in it.
Pure: two :class:`~genenv_lab.lab.runs.RunData` in, a plotly figure or a sentence out.
"""

from __future__ import annotations

import html
import math
from typing import Any, Sequence

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from genenv_lab.core import curriculum as cur
from genenv_lab.compare.stats import FIXED_SET_VARIANT
from genenv_lab.core.dryrun import RAN_DRY_STEP_FRAC
from genenv_lab.style import ALPHA_COLOUR, BAND_FILL, RUN_COLORS
from genenv_lab.lab.figures import curves_frame, message_figure, style
from genenv_lab.lab.glance import heldout_column
from genenv_lab.lab.runs import RunData
from genenv_lab.core.metrics import DRY_STEP_FRAC, FEATURES_LEVEL, LEVELS_MAX, P_HAT_MEAN
from genenv_lab.core.readings import LAST_THIRD, SECOND_HALF, dry_epochs, window

STORY_TITLE = "What drove the result"
PANELS = ("the simulator's tasks climb past the fixed set (mean level of the epoch's tasks)",
          "the fixed set is solved, and its GRPO steps run dry",
          "held-out score (never trained on)",
          "p̂ on genenv's tasks against α and the band")
CALIBRATION_WORLD = "cpu-demo"
"""The preset whose committed study shows p̂ held in the band (docs/research/README.md); the caption names it when
p̂ sits outside the band here."""


def fixed_set_partner(run: Any, summaries: Sequence[Any]) -> str | None:
    """The name of the fixed set's run (arm ``static``) of ``run``'s world and seed: the runs list's row whose
    configuration is ``run``'s but for the arm and the length (:func:`genenv_lab.lab.runs.world_key`), whatever the
    folders are called; None when there is none, or when ``run`` is itself the fixed set's.

    >>> from genenv_lab.lab.runs import RunSummary
    >>> rows = [RunSummary("a", "finished", variant="genenv", world="w1"),
    ...         RunSummary("static", "finished", variant="static", world="w2"),
    ...         RunSummary("b", "finished", variant="static", world="w1")]
    >>> fixed_set_partner(rows[0], rows), fixed_set_partner(rows[1], rows)
    ('b', None)
    """
    if run.variant == FIXED_SET_VARIANT or not run.world:
        return None
    return next((s.name for s in summaries if s.world == run.world and s.variant == FIXED_SET_VARIANT
                 and s.name != run.name), None)


def pair_frame(run: RunData, fixed_set: bool = False) -> pd.DataFrame:
    """One row per epoch of ``run`` (0: the untrained agent, held-out score only): ``level`` (mean level of the
    epoch's valid tasks), ``level_max``, ``p_hat``, ``dry`` (``dry/step_frac``) and ``heldout``; NaN where not
    logged. ``fixed_set``: the run serves a fixed set, written once (its levels are logged in the epoch that wrote
    it), so its levels carry forward to the later epochs."""
    frame = curves_frame(run)
    columns = {"level": FEATURES_LEVEL, "level_max": LEVELS_MAX, "p_hat": P_HAT_MEAN, "dry": DRY_STEP_FRAC,
               "heldout": heldout_column(frame) if len(frame) else None}
    out = pd.DataFrame({"epoch": frame["epoch"] if len(frame) else []})
    for name, key in columns.items():
        out[name] = pd.to_numeric(frame[key], errors="coerce") if key in frame.columns else math.nan
    if fixed_set:
        trained = out["epoch"] > 0
        out.loc[trained, ["level", "level_max"]] = out.loc[trained, ["level", "level_max"]].ffill()
    return out.reset_index(drop=True)


def _third(frame: pd.DataFrame) -> pd.DataFrame:
    """The last third of the trained epochs (:mod:`genenv_lab.core.readings`)."""
    return window(frame, LAST_THIRD)


def _mean(values: pd.Series) -> float | None:
    values = values.dropna()
    return float(values.mean()) if len(values) else None


def _ends(values: pd.Series) -> tuple[float | None, float | None]:
    values = values.dropna()
    return (float(values.iloc[0]), float(values.iloc[-1])) if len(values) else (None, None)


def pair_numbers(run: RunData, fixed: RunData) -> dict[str, Any]:
    """What the caption quotes, from the two runs: genenv's mean task level over the last third and the fixed set's
    highest level; the second-half epochs in which each ran dry; each run's held-out score first → last; mean p̂ on
    each run's tasks over the last third, and α, k_min."""
    a, b = pair_frame(run), pair_frame(fixed, fixed_set=True)
    return {"run": run.name, "fixed": fixed.name, "epochs": int(a["epoch"].max()) if len(a) else 0,
            "level_last_third": _mean(_third(a)["level"]), "fixed_level_max": _mean(b["level_max"].dropna().tail(1))
            if b["level_max"].notna().any() else None,
            "fixed_level_last_third": _mean(_third(b)["level"]),
            "dry": dry_epochs(window(a, SECOND_HALF)["dry"]),
            "fixed_dry": dry_epochs(window(b, SECOND_HALF)["dry"]),
            "heldout": _ends(a["heldout"]), "fixed_heldout": _ends(b["heldout"]),
            "p_hat_last_third": _mean(_third(a)["p_hat"]), "fixed_p_hat_last_third": _mean(_third(b)["p_hat"]),
            "alpha": run.alpha, "k_min": run.k_min}


def _f(value: float | None, digits: int = 2) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def pair_caption(n: dict[str, Any]) -> str:
    """Two sentences under the story figure, every number from :func:`pair_numbers`.

    >>> n = {"run": "g", "fixed": "s", "epochs": 40, "level_last_third": 9.8, "fixed_level_max": 9.0,
    ...      "fixed_level_last_third": 6.1, "dry": (3, 20), "fixed_dry": (12, 20), "heldout": (0.29, 0.48),
    ...      "fixed_heldout": (0.29, 0.29), "p_hat_last_third": 0.82, "fixed_p_hat_last_third": 0.93,
    ...      "alpha": 0.5, "k_min": 0.125}
    >>> print(pair_caption(n))  # doctest: +NORMALIZE_WHITESPACE
    genenv's simulator writes tasks of mean level 9.8 over the last third, past the fixed set's highest (9.0);
    static solves its fixed set at p̂ 0.93 over the last third, and its GRPO steps ran dry in 12 of 20 second-half
    epochs (genenv's in 3 of 20); held-out score genenv 0.29 → 0.48, static 0.29 → 0.29. p̂ on genenv's tasks sits
    above the band (0.82 against α = 0.5 ± 0.125):
    here the gain comes from the climb, not from calibration, which the cpu-demo world shows.
    """
    fixed_arm = FIXED_SET_VARIANT
    climb = (f"genenv's simulator writes tasks of mean level {_f(n['level_last_third'], 1)} over the last third"
             + (f", {'past' if (n['level_last_third'] or 0) > n['fixed_level_max'] else 'not past'} the fixed set's "
                f"highest ({_f(n['fixed_level_max'], 1)})" if n["fixed_level_max"] is not None else ""))
    dry, fixed_dry = n["dry"], n["fixed_dry"]
    solved = (f"{fixed_arm} solves its fixed set at p̂ {_f(n['fixed_p_hat_last_third'])} over the last third, and its "
              f"GRPO steps ran dry in {fixed_dry[0]} of {fixed_dry[1]} second-half epochs (genenv's in {dry[0]} of "
              f"{dry[1]})")
    scores = (f"held-out score genenv {_f(n['heldout'][0])} → {_f(n['heldout'][1])}, {fixed_arm} "
              f"{_f(n['fixed_heldout'][0])} → {_f(n['fixed_heldout'][1])}")
    text = f"{climb}; {solved}; {scores}."
    p, alpha, k = n["p_hat_last_third"], n["alpha"], n["k_min"]
    if p is None or alpha is None or k is None:
        return text
    lo, hi = cur.band_edges(alpha, k)
    band = f"({_f(p)} against α = {alpha:g} ± {k:g})"
    if lo <= p <= hi:
        return text + f" p̂ on genenv's tasks sits in the band {band}: the simulator keeps the agent at its frontier."
    side = "above" if p > hi else "below"
    return text + (f" p̂ on genenv's tasks sits {side} the band {band}: here the gain comes from the climb, not from "
                   f"calibration, which the {CALIBRATION_WORLD} world shows.")


def story_figure(run: RunData, fixed: RunData, *, height: int = 620) -> go.Figure:
    """The four panels of the module docstring, ``run`` (genenv) against ``fixed`` (the static run)."""
    a, b = pair_frame(run), pair_frame(fixed, fixed_set=True)
    if not (a["epoch"] > 0).any() or not (b["epoch"] > 0).any():
        return message_figure(f"{run.name} beside {fixed.name}: the story appears once both have a committed epoch.",
                              height=height)
    fig = make_subplots(rows=2, cols=2, subplot_titles=PANELS, vertical_spacing=0.16, horizontal_spacing=0.09)
    colour = {run.name: RUN_COLORS[0], fixed.name: RUN_COLORS[1]}
    names = {run.name: f"genenv ({run.name})", fixed.name: f"static, the fixed set ({fixed.name})"}
    arm = {run.name: "genenv", fixed.name: FIXED_SET_VARIANT}

    def line(frame: pd.DataFrame, who: RunData, col: str, r: int, c: int, *, dash: str = "solid",
             name: str | None = None, legend: bool = False, from_epoch: int = 1) -> None:
        rows = frame[(frame["epoch"] >= from_epoch) & frame[col].notna()]
        if not len(rows):
            return
        label = name or names[who.name]
        fig.add_scatter(x=rows["epoch"], y=rows[col], mode="lines", name=label, legendgroup=who.name,
                        showlegend=legend, line=dict(color=colour[who.name], width=2.4, dash=dash), row=r, col=c,
                        hovertemplate=f"{html.escape(label)}<br>epoch %{{x}}<br>%{{y:.2f}}<extra></extra>")

    for frame, who in ((a, run), (b, fixed)):
        line(frame, who, "level", 1, 1, legend=True)
        line(frame, who, "dry", 1, 2, dash="dot", name=f"{arm[who.name]}: share of GRPO steps with no informative "
             "group", legend=True)
        line(frame, who, "heldout", 2, 1, from_epoch=0)
    line(b, fixed, "p_hat", 1, 2, name="static: p̂ on the fixed set's tasks", legend=True)
    top = b["level_max"].dropna()
    if len(top):
        fig.add_hline(y=float(top.iloc[-1]), line=dict(color=colour[fixed.name], width=1.5, dash="dash"), row=1,
                      col=1, annotation_text=f"fixed set's highest level ({float(top.iloc[-1]):g})",
                      annotation_position="bottom right", annotation_font=dict(size=11, color=colour[fixed.name]))
    fig.add_hline(y=RAN_DRY_STEP_FRAC, line=dict(color="#868e96", width=1, dash="dot"), row=1, col=2,
                  annotation_text="an epoch runs dry", annotation_position="top left",
                  annotation_font=dict(size=10, color="#868e96"))
    line(a, run, "p_hat", 2, 2, name="genenv: p̂ on its simulator's tasks", legend=True)
    if run.alpha is not None and run.k_min is not None:  # after the panel's line: plotly skips shapes on empty panels
        fig.add_hrect(*cur.band_edges(run.alpha, run.k_min), fillcolor=BAND_FILL, line_width=0, layer="below", row=2,
                      col=2)
        fig.add_hline(y=run.alpha, line=dict(color=ALPHA_COLOUR, width=1.5, dash="dash"), row=2, col=2,
                      annotation_text=f"α = {run.alpha:g} ± {run.k_min:g}", annotation_position="bottom right",
                      annotation_font=dict(size=11, color=ALPHA_COLOUR))
    for r, c in ((1, 2), (2, 1), (2, 2)):
        fig.update_yaxes(range=[-0.03, 1.03], row=r, col=c)
    fig.update_yaxes(title_text="level", row=1, col=1)
    fig.update_yaxes(title_text="rate", row=1, col=2)
    fig.update_yaxes(title_text="score", row=2, col=1)
    fig.update_yaxes(title_text="p̂", row=2, col=2)
    fig.update_xaxes(title_text="epoch", row=2)
    fig.update_annotations(font_size=12)
    fig.update_layout(legend=dict(orientation="h", x=0, y=-0.12, yanchor="top", font=dict(size=11)),
                      hovermode="closest")
    fig = style(fig, height=height, title=f"{STORY_TITLE} · {run.name} beside {fixed.name}")
    return fig.update_layout(margin=dict(l=70, t=80, b=90))
