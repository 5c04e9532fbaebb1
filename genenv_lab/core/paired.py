"""Paired statistics over seeds: the mean of per-seed differences (genenv minus a baseline, the same seed), its
spread, standard error and Student-t confidence interval. Pure: no I/O, no SciPy (the t quantile is computed from
the distribution's closed form for integer degrees of freedom).

Pairing by seed removes what a seed does to every arm (the same untrained agent, the same counterfactual set), so
a small effect reads sooner than from the two arms' spreads side by side; the interval is the t interval of the
paired mean, ``mean ± t(1 − (1 − level)/2, n − 1) · std / √n``, which needs two seeds or more.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable


def _central_mass(t: float, df: int) -> float:
    """P(|T| < t) for Student's T with ``df`` (integer ≥ 1) degrees of freedom, from its closed form in
    θ = atan(t / √df) (Abramowitz & Stegun 26.7.3-4)."""
    theta = math.atan(t / math.sqrt(df))
    c2, s = math.cos(theta) ** 2, math.sin(theta)
    if df % 2 == 0:  # sinθ · (1 + ½cos²θ + (1·3)/(2·4)cos⁴θ + … up to cos^(df−2)θ)
        term = total = 1.0
        for k in range(1, df // 2):
            term *= c2 * (2 * k - 1) / (2 * k)
            total += term
        return s * total
    if df == 1:
        return 2.0 * theta / math.pi
    term = total = 1.0  # (2/π)(θ + sinθ cosθ (1 + (2/3)cos²θ + … up to cos^(df−3)θ))
    for k in range(1, (df - 1) // 2):
        term *= c2 * (2 * k) / (2 * k + 1)
        total += term
    return 2.0 / math.pi * (theta + s * math.cos(theta) * total)


def t_quantile(p: float, df: int) -> float:
    """The ``p`` quantile (0.5 < p < 1) of Student's t with ``df`` degrees of freedom, by bisection on the exact
    distribution function.

    >>> [round(t_quantile(0.975, df), 3) for df in (1, 2, 3, 5, 7, 15, 30)]
    [12.706, 4.303, 3.182, 2.571, 2.365, 2.131, 2.042]
    """
    if not 0.5 < p < 1.0:
        raise ValueError(f"p must be in (0.5, 1), got {p}")
    if df < 1 or int(df) != df:
        raise ValueError(f"df must be an integer ≥ 1, got {df}")
    target = 2.0 * p - 1.0
    lo, hi = 0.0, 1.0
    while _central_mass(hi, int(df)) < target:
        hi *= 2.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        lo, hi = (mid, hi) if _central_mass(mid, int(df)) < target else (lo, mid)
        if hi - lo < 1e-12 * max(1.0, hi):
            break
    return (lo + hi) / 2.0


@dataclass(frozen=True)
class Paired:
    """The paired differences over seeds, summarised."""

    seeds: int
    mean: float
    std: float
    """Sample standard deviation (NaN with one seed)."""
    stderr: float
    """std / √seeds."""
    low: float
    """Lower end of the confidence interval of the mean (NaN with fewer than two seeds)."""
    high: float
    level: float = 0.95

    def text(self, digits: int = 3, unit: str = "") -> str:
        """``+0.050 (95 % CI −0.010 to +0.110, 3 seeds)``, or the difference alone on one seed.

        >>> paired([0.1, 0.0, 0.05]).text()
        '+0.050 (95 % CI -0.074 to +0.174, 3 seeds)'
        >>> paired([0.2]).text()
        '+0.200 (one seed, no interval)'
        """
        if self.seeds < 2:
            return f"{self.mean:+,.{digits}f}{unit} (one seed, no interval)"
        return (f"{self.mean:+,.{digits}f}{unit} ({self.level * 100:.0f} % CI {self.low:+,.{digits}f} to "
                f"{self.high:+,.{digits}f}{unit}, {self.seeds} seeds)")


def paired(differences: Iterable[float], level: float = 0.95) -> Paired:
    """Mean, std, standard error and the ``level`` t interval of per-seed differences (NaN ones left out).

    >>> p = paired([0.1, 0.0, 0.05]); round(p.mean, 3), round(p.std, 3), round(p.low, 3), round(p.high, 3)
    (0.05, 0.05, -0.074, 0.174)
    >>> paired([]).seeds, math.isnan(paired([]).mean)
    (0, True)
    """
    values = [float(v) for v in differences if v is not None and math.isfinite(float(v))]
    n = len(values)
    if n == 0:
        return Paired(0, math.nan, math.nan, math.nan, math.nan, math.nan, level)
    mean = sum(values) / n
    if n == 1:
        return Paired(1, mean, math.nan, math.nan, math.nan, math.nan, level)
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    stderr = std / math.sqrt(n)
    half = t_quantile(1.0 - (1.0 - level) / 2.0, n - 1) * stderr
    return Paired(n, mean, std, stderr, mean - half, mean + half, level)


def spread_text(study: Iterable[float], this: float | None, *, baseline: str, reference: str = "genenv",
                where: str = "the study", level: float = 0.95) -> str:
    """One sentence putting a comparison's paired difference (``this``: ``reference`` − ``baseline`` at the final
    epoch, on one seed or a mean) beside the per-seed differences of a committed study (``study``): their mean, the
    ``level`` interval of that mean, their spread and range, and whether ``this`` lies inside the range. Numbers
    differ between machines (floating point makes runs of one seed part after the first epochs), so a difference on
    one seed is one more draw from that spread, and only one outside it says more.

    >>> print(spread_text([0.05, -0.05, 0.0, 0.1], 0.05, baseline="static", where="seeds 20-23"))
    ... # doctest: +NORMALIZE_WHITESPACE
    For scale: over seeds 20-23, genenv − static at the final epoch was +0.025 (95 % CI -0.078 to +0.128, 4 seeds),
    std over seeds 0.065, from -0.050 to +0.100; this comparison's +0.050 lies inside that range: one more draw from
    it (numbers differ across machines and seeds).
    >>> spread_text([], 0.1, baseline="static")
    ''
    """
    stats = paired(study, level)
    if stats.seeds == 0:
        return ""
    values = [float(v) for v in study if v is not None and math.isfinite(float(v))]
    lo, hi = min(values), max(values)
    text = (f"For scale: over {where}, {reference} − {baseline} at the final epoch was {stats.text()}")
    if stats.seeds > 1:
        text += f", std over seeds {stats.std:.3f}, from {lo:+.3f} to {hi:+.3f}"
    if this is None or not math.isfinite(this):
        return text + "."
    inside = lo - 1e-9 <= this <= hi + 1e-9
    reading = ("lies inside that range: one more draw from it (numbers differ across machines and seeds)" if inside
               else "lies outside that range: more than the seeds' spread")
    return text + f"; this comparison's {this:+.3f} {reading}."
