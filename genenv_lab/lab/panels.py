"""The panel table of the lab's per-epoch curves: one :class:`Panel` per panel of
:func:`genenv_lab.lab.figures.curves_figure` (its name, title, the epoch metric keys it draws, its y axis, and a
small builder that draws one run into it), in grid order, four panels a row. Adding a panel is one entry of
:data:`PANELS` and, where no builder here draws it, one small builder.

A panel's keys come from the metric registry (:data:`genenv_lab.core.metrics.METRICS`): the keys whose ``panel`` is
the panel's name (:func:`registered`), so a new metric reaches its panel by naming it there. Rows one and two hold
the run's health (p̂ with the α band, in-band, valid and zero-std fractions, rewards, the simulator's KL, the held-out
scores); rows three and four the signals the method depends on: the counterfactual (the same agent on the untrained
simulator's tasks), the distance of each from α, the difficulty the simulator writes, GRPO's own health
(docs/run_directory.md), and the dry-run instrument (:mod:`genenv_lab.core.dryrun`): whether the agent's update had
anything to learn from, where the held-out frontier is, how high the simulator writes, and the training at the
frontier.

Written by hand: plotly draws one trace at a time and has no notion of a table of panels.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import pandas as pd
import plotly.graph_objects as go

from genenv_lab.core.metrics import METRICS

COLS = 4
"""Panels in a row of the grid."""


@dataclass(frozen=True)
class Draw:
    """Where one run goes in one panel: the figure, the panel's cell, the run's name and colour, and whether this is
    the table's first panel (the run's legend entry sits there)."""

    fig: go.Figure
    row: int
    col: int
    run: str
    color: str
    first: bool


@dataclass(frozen=True)
class Panel:
    """One panel of the curves: ``name`` (the registry's ``Metric.panel``), its ``title``, the epoch metric ``keys``
    it draws (top-level or in ``extra``; a key ending in ``/`` takes every numeric key with that prefix), the title
    and fixed range of its y axis, the ``band`` it carries (``"line"``: shaded with the α line, ``"shade"``: shaded
    only, None) and its builder: ``draw(where, frame, keys)`` draws one run's frame (:func:`curves_frame`) into the
    panel and says whether it drew a line."""

    name: str
    title: str
    keys: tuple[str, ...]
    y_title: str
    draw: Callable[[Draw, pd.DataFrame, Sequence[str]], bool]
    y_range: tuple[float, float] | None = None
    band: str | None = None

    def __post_init__(self):
        if not self.keys:
            raise ValueError(f"panel {self.name!r}: give it at least one epoch metric key to draw")
        if self.band not in (None, "line", "shade"):
            raise ValueError(f"panel {self.name!r}: band is 'line', 'shade' or None, not {self.band!r}")
        if self.y_range is not None and not self.y_range[0] < self.y_range[1]:
            raise ValueError(f"panel {self.name!r}: y_range {self.y_range} must be (low, high) with low < high")


LINE_LABEL = dict(textposition="top left", textfont=dict(size=10), cliponaxis=False)
"""Where a panel with several lines names each one: beside its last point."""
SYMBOLS = ("circle", "square", "diamond", "triangle-up", "x", "star")
"""The markers of the held-out scores, one per ``eval/*`` key."""


def end_label(values: pd.Series, label: str) -> list[str]:
    """``label`` at the last number of ``values`` and nothing elsewhere: a line names itself where it ends."""
    last = values.last_valid_index()
    return [label if i == last else "" for i in values.index]


def expand(frame: pd.DataFrame, keys: Sequence[str]) -> list[str]:
    """The frame's columns that ``keys`` name (a key ending in ``/``: every column with that prefix, sorted), those
    with at least one number."""
    cols = [c for k in keys for c in (sorted(c for c in frame.columns if c.startswith(k)) if k.endswith("/")
                                      else [k] if k in frame.columns else [])]
    return [c for c in dict.fromkeys(cols) if frame[c].notna().any()]


def _hover(run: str, key: str) -> str:
    return f"{run}<br>epoch %{{x}}<br>{key} = %{{y:.4g}}<extra></extra>"


def one_line(at: Draw, frame: pd.DataFrame, keys: Sequence[str]) -> bool:
    """The trained epochs of one top-level key, drawn even where the run has no number (a gap)."""
    trained, key = frame[frame["epoch"] > 0], keys[0]
    at.fig.add_scatter(x=trained["epoch"], y=trained[key], mode="lines+markers", name=at.run, legendgroup=at.run,
                       showlegend=at.first, line=dict(color=at.color, width=2.2), marker=dict(size=7), row=at.row,
                       col=at.col, hovertemplate=_hover(at.run, key))
    return True


def scores(at: Draw, frame: pd.DataFrame, keys: Sequence[str]) -> bool:
    """Every key of the prefixes ``keys`` (``eval/``) the frame has, epoch 0 (the untrained agent) included, dotted,
    one marker each, named where it ends."""
    drawn = [c for c in frame.columns if any(c.startswith(k) for k in keys)]
    for k, key in enumerate(drawn):
        at.fig.add_scatter(x=frame["epoch"], y=frame[key], mode="lines+markers+text", name=f"{at.run} {key}",
                           legendgroup=at.run, showlegend=False, line=dict(color=at.color, width=2, dash="dot"),
                           marker=dict(size=8, symbol=SYMBOLS[k % len(SYMBOLS)]), row=at.row, col=at.col,
                           text=end_label(frame[key], key.split("/", 1)[1]), **LINE_LABEL,
                           hovertemplate=_hover(at.run, key))
    return bool(drawn)


def signals(at: Draw, frame: pd.DataFrame, keys: Sequence[str]) -> bool:
    """The trained epochs of each of ``keys`` with a number (:func:`expand`): the first solid, the others dotted,
    each named where it ends."""
    trained = frame[frame["epoch"] > 0]
    drawn = expand(trained, keys)
    for k, key in enumerate(drawn):
        at.fig.add_scatter(x=trained["epoch"], y=trained[key], mode="lines+markers+text", name=f"{at.run} {key}",
                           legendgroup=at.run, showlegend=False, marker=dict(size=5),
                           line=dict(color=at.color, width=2, dash="solid" if k == 0 else "dot"), row=at.row,
                           col=at.col, text=end_label(trained[key], key.rsplit("/", 1)[-1]), **LINE_LABEL,
                           hovertemplate=_hover(at.run, key))
    return bool(drawn)


EMPTY = {scores: "no eval/* scores<br>in the records' extra", signals: "not in these records<br>(all null or absent)"}
"""What a panel says where no run drew a line into it, by builder (:func:`one_line` always draws)."""
UNIT = (0, 1)


def registered(name: str) -> tuple[str, ...]:
    """The keys the registry puts on panel ``name``, in its order; a family (``eval/``) stands for its registered
    members (``eval/domain``).

    >>> registered("validation"), registered("grpo")
    (('eval/',), ('grpo/reward_std', 'grpo/kl'))
    """
    keys = [m.key for m in METRICS if m.panel == name]
    families = tuple(k for k in keys if k.endswith("/"))
    return tuple(k for k in keys if k in families or not k.startswith(families))


PANELS: tuple[Panel, ...] = (
    Panel("p_hat", "p̂ mean of generated tasks", registered("p_hat"), "p̂", one_line, UNIT, band="line"),
    Panel("in_band", "in-band fraction", registered("in_band"), "share of tasks", one_line, UNIT),
    Panel("valid", "valid fraction", registered("valid"), "share of generations", one_line, UNIT),
    Panel("env_reward", "env reward R_env (mean)", registered("env_reward"), "R_env", one_line, UNIT),
    Panel("agent_reward", "agent reward (mean)", registered("agent_reward"), "mean reward", one_line, UNIT),
    Panel("zero_std", "zero-std GRPO groups", registered("zero_std"), "share of groups", one_line, UNIT),
    Panel("env_kl", "env KL to initial simulator", registered("env_kl"), "KL (nats)", one_line),
    Panel("validation", "validation (extra eval/*)", registered("validation"), "score", scores),
    Panel("reference", "p̂ on the untrained simulator's tasks", registered("reference"), "p̂", signals, UNIT,
          band="shade"),
    Panel("p_hat_gap", "|p̂ − α|: generated (solid) · untrained (dot)", registered("p_hat_gap"), "|p̂ − α|", signals,
          UNIT),
    Panel("difficulty", "mean difficulty of valid tasks (features/*)", registered("difficulty"), "level / feature",
          signals),
    Panel("grpo", "GRPO (TRL): reward_std · kl (dot)", registered("grpo"), "value", signals),
    Panel("dry_run", "dry run: GRPO steps with no informative group", registered("dry_run"), "share of steps",
          signals, UNIT),
    Panel("frontier", "held-out frontier level · the one trained against (dot)", registered("frontier"), "level",
          signals),
    Panel("levels", "simulator's highest level (levels/max)", registered("levels"), "level", signals),
    Panel("diversity", "diversity of the simulator's valid tasks (entropy)", registered("diversity"), "bits",
          signals),
    Panel("niches", "niches the simulator has written so far (its memory)", registered("niches"), "niches",
          signals),
    Panel("frontier_groups", "groups at the frontier: informative · all (dot)", registered("frontier_groups"),
          "groups", signals),
    Panel("supply", "untrained simulator's supply: in band · at or above the frontier (dot)", registered("supply"),
          "share of its tasks", signals, UNIT),
)
"""The panels of the curves, in grid order (rows of :data:`COLS`)."""

LINE_KEYS = tuple(p.keys[0] for p in PANELS if p.draw is one_line)
"""The keys drawn by :func:`one_line`: every table of curves has their columns, numbers or not."""


def cell(index: int) -> tuple[int, int]:
    """The (row, column) of the ``index``-th panel of the table, both 1-based."""
    return index // COLS + 1, index % COLS + 1


def panel(name: str) -> Panel:
    """The panel called ``name``, or a KeyError naming the panels there are."""
    for p in PANELS:
        if p.name == name:
            return p
    raise KeyError(f"no lab panel {name!r}; the panels are {', '.join(p.name for p in PANELS)}")
