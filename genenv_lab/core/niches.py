"""A labelled extension beyond the paper: a count-based niche penalty, with memory over the run, on the simulator's
reward-weighted regression. Pure: no model, no I/O.

Why (docs/method.md, "Keeping the simulator's tasks varied"): with the band filter the α-reward leaves the RWR
weights nearly uniform, so the paper's update is close to fine-tuning the simulator on its own in-band samples, epoch
after epoch, and a model fitted to its own samples again and again narrows (Huang et al., ICLR 2025; Alemohammad et
al., ICLR 2024). Count-based exploration bonuses (Bellemare et al., NeurIPS 2016) and 2026 work on generator collapse
(R-Diverse's penalty with memory across iterations) weight a sample down by how often its kind was seen before.
Here each in-band generation's weight becomes::

    w_i ∝ exp(λ · R_env(p̂_i)) / (1 + n(niche_i))^γ,      normalised to mean 1 over the batch,

where ``niche`` is the domain's descriptor of a task (``Domain.niche``: counting's (start, end); by default the
canonical question) and ``n`` counts the simulator's valid generations in that niche so far in the run, this epoch's
included. γ = 0 is the paper's RWR exactly.

The placebo control (:func:`placebo_multipliers`) gives each niche of the batch another niche's multiplier, shuffled:
the same spread of weights, with no tie to the memory. If the placebo does as well as the penalty, the reweighting,
not the memory, did the work.

Written by hand: no library offers a count-based reweighting of a text generator's regression targets.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from genenv_lab.core.curriculum import rwr_weights


def niche_multiplier(count: int, gamma: float) -> float:
    """(1 + count)^−γ: 1 for a niche never seen, smaller the more the simulator has written it.

    >>> niche_multiplier(0, 1.0), niche_multiplier(3, 1.0), niche_multiplier(3, 0.0), niche_multiplier(8, 0.5)
    (1.0, 0.25, 1.0, 0.333...)
    """
    if count < 0:
        raise ValueError(f"a niche count must be ≥ 0, got {count}")
    if gamma < 0:
        raise ValueError(f"the niche penalty's exponent γ must be ≥ 0, got {gamma}")
    return (1.0 + count) ** -gamma


def placebo_multipliers(multipliers: Mapping[str, float], rng: random.Random) -> dict[str, float]:
    """The placebo: the niches' multipliers shuffled across the niches (sorted first, so the result depends on
    ``rng`` alone, not on the mapping's order).

    >>> m = placebo_multipliers({"a": 1.0, "b": 0.5, "c": 0.25}, random.Random(0))
    >>> sorted(m.values()), sorted(m)
    ([0.25, 0.5, 1.0], ['a', 'b', 'c'])
    """
    names = sorted(multipliers)
    values = [multipliers[n] for n in names]
    rng.shuffle(values)
    return dict(zip(names, values))


def niche_weights(rewards: Sequence[float], niches: Sequence[str], counts: Mapping[str, int], lam: float = 1.0,
                  gamma: float = 0.0, placebo: random.Random | None = None) -> list[float]:
    """RWR weights with the niche penalty: exp(λ·R_i) · (1 + counts[niche_i])^−γ, normalised to mean 1.

    ``counts`` holds the run's valid generations per niche, this epoch's included (a niche missing counts 0). With
    ``placebo`` (a random stream), the batch's niches exchange their multipliers (:func:`placebo_multipliers`).
    γ = 0 gives :func:`~genenv_lab.core.curriculum.rwr_weights` exactly.

    >>> [round(w, 3) for w in niche_weights([1.0, 1.0, 1.0], ["a", "a", "b"], {"a": 3, "b": 1}, gamma=1.0)]
    [0.75, 0.75, 1.5]
    >>> niche_weights([1.0, 0.5], ["a", "b"], {}, gamma=2.0) == rwr_weights([1.0, 0.5])
    True
    """
    if len(rewards) != len(niches):
        raise ValueError(f"{len(rewards)} rewards but {len(niches)} niches")
    if not rewards:
        return []
    base = rwr_weights(rewards, lam)
    if gamma == 0:
        return base
    per_niche = {n: niche_multiplier(counts.get(n, 0), gamma) for n in niches}
    if placebo is not None:
        per_niche = placebo_multipliers(per_niche, placebo)
    raw = [w * per_niche[n] for w, n in zip(base, niches)]
    mean = sum(raw) / len(raw)
    return [x / mean for x in raw]


def add_counts(counts: Mapping[str, int], niches: Sequence[str]) -> dict[str, int]:
    """``counts`` with one more for each entry of ``niches`` (a new mapping; ``counts`` is left as it was).

    >>> add_counts({"a": 1}, ["a", "b", "a"])
    {'a': 3, 'b': 1}
    """
    out = dict(counts)
    for n in niches:
        out[n] = out.get(n, 0) + 1
    return out


def top_share(counts: Mapping[str, int]) -> float:
    """The share of all counted generations in the most written niche (NaN when none is counted): 1 when the
    simulator writes one kind of task, 1/k when it spreads evenly over k.

    >>> top_share({"a": 3, "b": 1}), top_share({})
    (0.75, nan)
    """
    total = sum(counts.values())
    return max(counts.values()) / total if total else float("nan")
