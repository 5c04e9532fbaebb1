"""Data efficiency and compute: what the agent's training has consumed, and how much less of it GenEnv needs to
match a baseline. Pure: no model, no I/O.

The paper argues data efficiency (its offline teacher needs 3.3× the data for a lower score); comparing arms per
epoch hides that arms spend different amounts per epoch (``online_filter`` screens candidates with extra
rollouts). So each epoch's record carries cumulative counts (:class:`Consumption`, ``cumulative/*`` in
``epochs.jsonl``), and the comparison reads the rollouts GenEnv needs to reach each baseline's final held-out score
(:func:`rollouts_to_reach`) and, as ScaleRL reads compute efficiency, the area under each run's held-out curve against
its cumulative agent rollouts over a range every compared run covers, divided by that range
(:func:`normalised_auc`, :func:`common_range`): the mean held-out score along the way, comparable between arms
that spent different totals.

What counts as an agent rollout: a completion sampled from the agent *for training*, i.e. the GRPO pass's G per
task and the screening rollouts of ``online_filter``; not the counterfactual reference rollouts nor the held-out
evaluation, which measure and never train.
"""

from __future__ import annotations
from genenv_lab.core.metrics import (CUMULATIVE_AGENT_ROLLOUTS, CUMULATIVE_AGENT_TOKENS,
    CUMULATIVE_DISTINCT_QUESTIONS, CUMULATIVE_DISTINCT_TASKS)

import math
from dataclasses import dataclass
from typing import Iterable, Sequence

KEYS = (CUMULATIVE_AGENT_ROLLOUTS, CUMULATIVE_AGENT_TOKENS, CUMULATIVE_DISTINCT_TASKS,
        CUMULATIVE_DISTINCT_QUESTIONS)
"""The record keys of :meth:`Consumption.metrics` (``extra`` of ``epochs.jsonl``)."""


@dataclass(frozen=True)
class Consumption:
    """What the agent's training has consumed from epoch 1 to now; carried by the loop state and rebuilt on
    ``--resume`` (:func:`genenv_lab.coevolution.state.restore_state`)."""

    rollouts: int = 0
    """Agent completions sampled for training (GRPO rollouts, ``online_filter``'s screening rollouts)."""
    tokens: int | None = 0
    """Their completion tokens as the backend's tokenizer counts them; None once any epoch could not count."""
    task_ids: frozenset[str] = frozenset()
    """Distinct non-seed task ids that entered a GRPO batch."""
    questions: frozenset[str] = frozenset()
    """Distinct prompts (the question as the agent reads it) of those tasks: two ids with the same text count once."""

    def add(self, rollouts: int, tokens: int | None, trained: Iterable[tuple[str, str]]) -> "Consumption":
        """This consumption plus one epoch's: ``rollouts`` more completions of ``tokens`` tokens (None: not
        countable), and ``trained`` (task id, prompt) pairs of the epoch's GRPO batch (seeds left out by the caller).

        >>> c = Consumption().add(8, 20, [("t1", "2*3"), ("t2", "2*3")]).add(4, None, [("t1", "2*3")])
        >>> c.rollouts, c.tokens, len(c.task_ids), len(c.questions)
        (12, None, 2, 1)
        """
        if rollouts < 0 or (tokens is not None and tokens < 0):
            raise ValueError(f"counts must be ≥ 0, got rollouts={rollouts}, tokens={tokens}")
        pairs = list(trained)
        return Consumption(rollouts=self.rollouts + rollouts,
                           tokens=None if tokens is None or self.tokens is None else self.tokens + tokens,
                           task_ids=self.task_ids | {t for t, _ in pairs},
                           questions=self.questions | {q for _, q in pairs})

    def metrics(self) -> dict[str, int | None]:
        """The ``cumulative/*`` keys of an epoch's record."""
        return dict(zip(KEYS, (self.rollouts, self.tokens, len(self.task_ids), len(self.questions))))


# ----------------------------------------------------------------------------------------- rollouts to reach

@dataclass(frozen=True)
class Point:
    """One epoch of an arm, mean over seeds: its cumulative agent rollouts and held-out score."""

    epoch: int
    rollouts: float
    score: float


@dataclass(frozen=True)
class Reach:
    """How many agent rollouts the reference arm (GenEnv) needs to reach a baseline's final held-out score."""

    target: float
    """The baseline's held-out score at its final epoch."""
    baseline_epoch: int
    """The baseline's first epoch whose held-out score reaches its final score (a plateau is not charged)."""
    baseline_rollouts: float
    """The baseline's cumulative agent rollouts at that epoch."""
    epoch: int | None
    """The reference's first epoch whose held-out score reaches ``target`` (None: never)."""
    rollouts: float | None
    """The reference's cumulative agent rollouts at that epoch."""

    @property
    def reached(self) -> bool:
        return self.epoch is not None

    @property
    def ratio(self) -> float:
        """Baseline's rollouts ÷ the reference's: how many times fewer rollouts the reference needed (NaN: not
        reached; infinite: reached before any training, at the untrained agent's epoch 0)."""
        if self.rollouts is None:
            return math.nan
        return math.inf if self.rollouts == 0 else self.baseline_rollouts / self.rollouts


def _usable(points: Iterable[Point]) -> list[Point]:
    return sorted((p for p in points if math.isfinite(p.score) and math.isfinite(p.rollouts)),
                  key=lambda p: p.epoch)


def rollouts_to_reach(reference: Sequence[Point], baseline: Sequence[Point], tol: float = 1e-9) -> Reach | None:
    """The agent rollouts ``reference`` needs to reach ``baseline``'s final held-out score.

    Points whose score or rollouts are unknown (NaN) are left out; the target is the baseline's score at its last
    epoch with both, and the baseline is charged its rollouts at its first epoch with a score ≥ target (a baseline
    that plateaued early is not charged its plateau). The reference reaches the target at its first epoch whose
    score is ≥ target (``tol`` absorbs the rounding of means over seeds). None when the baseline has no usable
    point.

    >>> genenv = [Point(0, 0, 0.2), Point(1, 100, 0.3), Point(2, 200, 0.5), Point(3, 300, 0.6)]
    >>> static = [Point(0, 0, 0.2), Point(1, 100, 0.25), Point(2, 200, 0.4), Point(3, 300, 0.45)]
    >>> r = rollouts_to_reach(genenv, static)
    >>> r.epoch, r.rollouts, r.ratio
    (2, 200, 1.5)
    >>> rollouts_to_reach(static, genenv).reached
    False
    >>> plateau = [Point(0, 0, 0.2), Point(1, 100, 0.5), Point(2, 200, 0.5), Point(3, 300, 0.5)]
    >>> r = rollouts_to_reach(genenv, plateau)
    >>> r.baseline_epoch, r.baseline_rollouts, r.ratio
    (1, 100, 0.5)
    """
    last = _usable(baseline)
    if not last:
        return None
    target = last[-1].score
    # the baseline is charged what it spent to first reach its final score, not its whole run: a baseline that
    # plateaued early would otherwise make any arm look several times cheaper
    first = next(p for p in last if p.score >= target - tol)
    hit = next((p for p in _usable(reference) if p.score >= target - tol), None)
    return Reach(target=target, baseline_epoch=first.epoch, baseline_rollouts=first.rollouts,
                 epoch=None if hit is None else hit.epoch, rollouts=None if hit is None else hit.rollouts)


def reach_text(reach: Reach | None, reference: str = "genenv") -> str:
    """One sentence for a report's table cell, the ratio (baseline's rollouts ÷ the reference's) first: above 1,
    the reference needed fewer rollouts.

    >>> reach_text(Reach(0.45, 3, 300.0, 2, 200.0))
    '1.50: genenv needs 200 rollouts to reach 0.450 (epoch 2); the baseline first reached it with 300 (epoch 3)'
    >>> reach_text(Reach(0.45, 3, 300.0, None, None))
    'not reached: genenv never scores 0.450 (baseline: 300 rollouts at epoch 3)'
    """
    if reach is None:
        return "no held-out score yet"
    base = f"{reach.baseline_rollouts:,.0f}"
    if not reach.reached:
        return (f"not reached: {reference} never scores {reach.target:.3f} "
                f"(baseline: {base} rollouts at epoch {reach.baseline_epoch})")
    if reach.rollouts == 0:
        return (f"reached before training: the untrained agent already scores {reach.target:.3f} "
                f"(baseline: {base} rollouts at epoch {reach.baseline_epoch})")
    return (f"{reach.ratio:.2f}: {reference} needs {reach.rollouts:,.0f} rollouts to reach {reach.target:.3f} "
            f"(epoch {reach.epoch}); the baseline first reached it with {base} (epoch {reach.baseline_epoch})")


# ------------------------------------------------------------------------------------- area under the curve

def _curve(points: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    return sorted(((float(r), float(s)) for r, s in points if r is not None and s is not None
                   and math.isfinite(float(r)) and math.isfinite(float(s))), key=lambda p: p[0])


def common_range(curves: Iterable[Iterable[tuple[float, float]]]) -> tuple[float, float] | None:
    """The rollout range every curve of (cumulative rollouts, held-out score) points covers: from the latest first
    point to the earliest last one (a run's untrained epoch 0 is at 0 rollouts). None when a curve is empty or the
    curves do not overlap in more than a point.

    >>> common_range([[(0, 0.2), (100, 0.3), (300, 0.5)], [(0, 0.1), (250, 0.4)]])
    (0.0, 250.0)
    >>> common_range([[(0, 0.2)], [(0, 0.1), (250, 0.4)]]) is None
    True
    """
    ranges = []
    for points in curves:
        pts = _curve(points)
        if not pts:
            return None
        ranges.append((pts[0][0], pts[-1][0]))
    if not ranges:
        return None
    lo, hi = max(r[0] for r in ranges), min(r[1] for r in ranges)
    return (lo, hi) if hi > lo else None


def normalised_auc(points: Iterable[tuple[float, float]], lo: float, hi: float) -> float:
    """The area under the held-out curve between ``lo`` and ``hi`` cumulative agent rollouts, divided by
    ``hi − lo``: the mean held-out score over that stretch of training, the curve drawn straight between evaluated
    epochs (points: (rollouts, score), unknown ones left out). NaN when the points do not cover [lo, hi].

    >>> normalised_auc([(0, 0.2), (100, 0.4), (200, 0.4)], 0, 200)   # (0.3·100 + 0.4·100) / 200
    0.35
    >>> round(normalised_auc([(0, 0.2), (100, 0.4), (200, 0.4)], 0, 50), 3)   # 0.2 → 0.3 over the first 50
    0.25
    >>> normalised_auc([(0, 0.2), (100, 0.4)], 0, 150)
    nan
    """
    pts = _curve(points)
    if not hi > lo or not pts or pts[0][0] > lo or pts[-1][0] < hi:
        return math.nan

    def at(x0: float, y0: float, x1: float, y1: float, x: float) -> float:
        return y0 if x1 == x0 else y0 + (y1 - y0) * (x - x0) / (x1 - x0)

    area = 0.0
    for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
        a, b = max(x0, lo), min(x1, hi)
        if b > a:
            area += (b - a) * (at(x0, y0, x1, y1, a) + at(x0, y0, x1, y1, b)) / 2.0
    return area / (hi - lo)
