"""Curriculum math of GenEnv: pure functions, no I/O, no models.

Paper: Guo et al., "GenEnv: Difficulty-Aligned Co-Evolution Between LLM Agents and Environment Simulators",
arXiv 2512.19682.

- ``success_rate``: p̂ = successes / G over the agent's G rollouts of one task (Sec. 3, below Eq. 1).
- ``env_reward``: the α-Curriculum Reward, Eq. 2-3, ``R_env(p̂) = exp(-β (p̂ - α)²)``. The paper never gives β;
  our default is β = 2 (``CurriculumConfig.beta``). Alternative shapes users compare against:
  ``learnability`` 4p(1-p), ``min`` 2·min(p, 1-p), ``azr`` 1-p with 0 at p ∈ {0, 1}.
- ``in_band`` / ``band_values``: the band filter |p̂ - α| ≤ k_min that keeps a generation in the environment
  update. p̂ has resolution 1/G, so ``band_values`` tells which values can pass at all.
- ``nearest_band``: the measured tasks in the band, else those nearest α (the ``band`` parent choice).
- ``in_band_probability``: P(p̂ in band) for a task of true success probability p (binomial sampling of G
  rollouts): what the band filter can keep at best, used to explain a run's in-band fraction
  (:mod:`genenv_lab.rundir.band_ceiling`).
- ``rwr_weights``: reward-weighted regression weights ∝ exp(λ · R_env), normalised to mean 1 over the batch.
- ``group_advantages``: GRPO's group-relative advantage (r - mean_group) / (std_group + eps), as TRL computes it
  with ``scale_rewards="group"``; recorded for inspection (TRL computes its own for the update).
- ``frac_zero_std``: the fraction of groups whose rewards are all equal (no GRPO signal), as TRL logs
  ``frac_reward_zero_std``.

Deliberate deviation: ``band_values``, ``band_warning`` and ``in_band_probability`` are ours; the paper uses G = 8 with
k_min = 0.1, where only p̂ = 0.5 passes.
"""

from __future__ import annotations

import math
from typing import Callable, Iterable, Sequence, TypeVar

T = TypeVar("T")

ENV_REWARD_SHAPES = ("gaussian", "learnability", "min", "azr")

# p̂ values differing by less than this are treated as equal when testing band membership,
# so that 0.4 = 2/5 passes a band edge of 0.5 - 0.1 computed in floating point.
_BAND_TOL = 1e-9


def success_rate(rewards: Sequence[float], threshold: float = 1.0) -> float:
    """p̂: the fraction of rollouts whose reward reaches ``threshold``.

    >>> success_rate([1.0, 0.0, 1.0, 0.0])
    0.5
    >>> success_rate([0.7, 0.3], threshold=0.5)
    0.5
    """
    if len(rewards) == 0:
        raise ValueError("success_rate needs at least one rollout reward")
    return sum(1 for r in rewards if r >= threshold - _BAND_TOL) / len(rewards)


def env_reward(p_hat: float, alpha: float = 0.5, beta: float = 2.0, shape: str = "gaussian") -> float:
    """Environment reward of a task whose empirical success rate is ``p_hat``.

    ``gaussian`` is the paper's α-Curriculum Reward exp(-β (p̂ - α)²); the other shapes ignore α and β:
    ``learnability`` 4p̂(1 − p̂) and ``min`` 2·min(p̂, 1 − p̂) peak at p̂ = 0.5, ``azr`` (Absolute Zero's proposer
    reward) is 1 − p̂ for 0 < p̂ < 1 and 0 at both ends, so it is largest for the hardest task solved at least once
    (with G = 8: 0.875 at p̂ = 1/8).

    >>> env_reward(0.5)
    1.0
    >>> round(env_reward(0.0, alpha=0.5, beta=2.0), 4)  # exp(-2 * 0.25)
    0.6065
    >>> env_reward(0.25, shape="learnability")
    0.75
    >>> env_reward(1.0, shape="azr")
    0.0
    """
    if not 0.0 <= p_hat <= 1.0:
        raise ValueError(f"p_hat must be in [0, 1], got {p_hat}")
    if shape == "gaussian":
        return math.exp(-beta * (p_hat - alpha) ** 2)
    if shape == "learnability":
        return 4.0 * p_hat * (1.0 - p_hat)
    if shape == "min":
        return 2.0 * min(p_hat, 1.0 - p_hat)
    if shape == "azr":
        return 0.0 if p_hat <= 0.0 or p_hat >= 1.0 else 1.0 - p_hat
    raise ValueError(f"unknown env reward shape {shape!r}; choose one of {ENV_REWARD_SHAPES}")


def trim_by_rank(items: Sequence[T], key: Callable[[T], float], fraction: float) -> list[T]:
    """The items ranked by ``key``, without the lowest and highest ``k = int(fraction · n)`` of them, sliced
    ``[k:-k]`` as the authors' release does: fewer than ``1/fraction`` items leave nothing (``[0:-0]`` is empty).

    >>> trim_by_rank([0.9, 0.1, 0.5, 0.3, 0.7, 0.2, 0.8, 0.4, 0.6, 0.0], float, 0.1)
    [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]
    >>> trim_by_rank([0.2, 0.1], float, 0.1)
    []
    """
    ranked = sorted(items, key=key)
    k = int(fraction * len(ranked))
    return ranked[k:-k] if ranked else []


def in_band(p_hat: float, alpha: float = 0.5, k_min: float = 0.1) -> bool:
    """Band filter: True when |p̂ - α| ≤ k_min (with a tolerance for floating-point band edges).

    >>> in_band(0.4), in_band(0.375), in_band(0.5)
    (True, False, True)
    """
    return abs(p_hat - alpha) <= k_min + _BAND_TOL


def nearest_band(p_hats: Sequence[float], alpha: float = 0.5, k_min: float = 0.1) -> list[int]:
    """Indices of the p̂ values in the band |p̂ − α| ≤ k_min or, when none is, of those nearest α (ties kept): the
    tasks at the agent's frontier (``env.parents="band"``'s parents). NaN (unmeasured) values are never chosen; no
    measured value gives [].

    >>> nearest_band([1.0, 0.5, 0.375, float("nan")])
    [1]
    >>> nearest_band([1.0, 0.8, 0.8, 0.0])  # none in band: the solved-most-but-not-always ones
    [1, 2]
    >>> nearest_band([float("nan")])
    []
    """
    gaps = [(abs(p - alpha), i) for i, p in enumerate(p_hats) if not math.isnan(p)]
    if not gaps:
        return []
    reach = max(min(g for g, _ in gaps), k_min) + _BAND_TOL
    return [i for g, i in gaps if g <= reach]


def band_edges(alpha: float = 0.5, k_min: float = 0.1) -> tuple[float, float]:
    """The band [α − k_min, α + k_min] clipped to [0, 1], as stated to the simulator and drawn in every figure.

    >>> band_edges(0.5, 0.125), band_edges(0.9, 0.2)
    ((0.375, 0.625), (0.7, 1.0))
    """
    return max(alpha - k_min, 0.0), min(alpha + k_min, 1.0)


def band_values(num_generations: int, alpha: float = 0.5, k_min: float = 0.1) -> list[float]:
    """The values of p̂ = k/G that pass the band filter for G rollouts per task.

    >>> band_values(8)
    [0.5]
    >>> band_values(5)
    [0.4, 0.6]
    >>> band_values(10)
    [0.4, 0.5, 0.6]
    """
    if num_generations < 1:
        raise ValueError("num_generations must be ≥ 1")
    return [k / num_generations for k in range(num_generations + 1) if in_band(k / num_generations, alpha, k_min)]


def in_band_probability(p: float, num_generations: int, alpha: float = 0.5, k_min: float = 0.1) -> float:
    """Probability that a task the agent solves with probability ``p`` is *measured* in the band: p̂ = k/G with
    k ~ Binomial(G, p) and |p̂ − α| ≤ k_min. The ceiling that G's sampling noise puts on the in-band fraction.

    >>> round(in_band_probability(0.5, 8, 0.5, 0.125), 3)   # a task exactly at α is in [3/8, 5/8] 71 % of the time
    0.711
    >>> in_band_probability(1.0, 8, 0.5, 0.125), in_band_probability(0.0, 8, 0.5, 0.125)
    (0.0, 0.0)
    """
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p must be a probability in [0, 1], got {p}")
    g = num_generations
    return sum(math.comb(g, k) * p**k * (1.0 - p) ** (g - k)
               for k in range(g + 1) if in_band(k / g, alpha, k_min))


def band_warning(num_generations: int, alpha: float = 0.5, k_min: float = 0.1) -> str | None:
    """A warning text when the band keeps fewer than two values of p̂ for this G, else None."""
    kept = band_values(num_generations, alpha, k_min)
    if len(kept) >= 2:
        return None
    return (
        f"with G={num_generations} rollouts per task, the band |p̂-{alpha}|≤{k_min} keeps only p̂ ∈ {kept}: "
        f"the environment update sees {'no' if not kept else 'a single'} difficulty level. "
        "Choose G so that at least two values k/G fall in the band (e.g. G=5 or G=10 for α=0.5, k_min=0.1), "
        "or widen k_min."
    )


def rwr_weights(rewards: Sequence[float], lam: float = 1.0) -> list[float]:
    """Reward-weighted-regression weights ∝ exp(λ·R), normalised to mean 1 (max-shifted for stability).

    >>> rwr_weights([1.0, 1.0])
    [1.0, 1.0]
    >>> w = rwr_weights([0.0, 1.0], lam=math.log(3)); [round(x, 6) for x in w]
    [0.5, 1.5]
    """
    if len(rewards) == 0:
        return []
    top = max(rewards)
    raw = [math.exp(lam * (r - top)) for r in rewards]
    mean = sum(raw) / len(raw)
    return [x / mean for x in raw]


def group_advantages(rewards: Sequence[float], eps: float = 1e-4, scale: bool = True) -> list[float]:
    """GRPO group-relative advantages of one group of rollouts: (r - mean) / (std + eps).

    ``std`` is the sample standard deviation (unbiased), as ``torch.std`` gives and TRL uses.

    >>> group_advantages([1.0, 0.0, 1.0, 0.0], eps=0.0)
    [0.866025..., -0.866025..., 0.866025..., -0.866025...]
    """
    n = len(rewards)
    if n == 0:
        return []
    mean = sum(rewards) / n
    centred = [r - mean for r in rewards]
    if not scale:
        return centred
    std = math.sqrt(sum(c * c for c in centred) / (n - 1)) if n > 1 else 0.0
    return [c / (std + eps) for c in centred]


def frac_zero_std(groups: Iterable[Sequence[float]]) -> float:
    """Fraction of reward groups whose rewards are all equal (no learning signal for GRPO).

    >>> frac_zero_std([[1, 1], [0, 1], [0, 0]])
    0.666...
    """
    groups = list(groups)
    if not groups:
        return 0.0
    return sum(1 for g in groups if len(g) == 0 or max(g) - min(g) < 1e-12) / len(groups)


def mean_or_nan(values: Iterable[float]) -> float:
    """Mean of ``values``, NaN when empty (logged as null in ``epochs.jsonl``)."""
    values = list(values)
    return sum(values) / len(values) if values else float("nan")
