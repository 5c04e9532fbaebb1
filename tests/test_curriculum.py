"""Curriculum math: hand-computed examples and Hypothesis properties."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from genenv_lab.core import curriculum as cur

probs = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)


def test_success_rate_examples():
    assert cur.success_rate([1, 1, 0, 0, 0]) == pytest.approx(0.4)
    assert cur.success_rate([0.6, 0.4], threshold=0.5) == 0.5
    with pytest.raises(ValueError):
        cur.success_rate([])


def test_gaussian_reward_hand_values():
    # exp(-2 * 0.1^2) = exp(-0.02)
    assert cur.env_reward(0.4) == pytest.approx(math.exp(-0.02))
    assert cur.env_reward(1.0, alpha=0.5, beta=4.0) == pytest.approx(math.exp(-1.0))
    assert cur.env_reward(0.3, alpha=0.3, beta=10.0) == 1.0


def test_other_shapes_hand_values():
    assert cur.env_reward(0.5, shape="learnability") == 1.0
    assert cur.env_reward(0.1, shape="learnability") == pytest.approx(0.36)
    assert cur.env_reward(0.2, shape="min") == pytest.approx(0.4)
    assert cur.env_reward(0.0, shape="azr") == 0.0
    assert cur.env_reward(0.25, shape="azr") == 0.75
    with pytest.raises(ValueError, match="unknown env reward shape"):
        cur.env_reward(0.5, shape="nope")
    with pytest.raises(ValueError):
        cur.env_reward(1.5)


def test_band_resolution_for_g():
    assert cur.band_values(8) == [0.5]
    assert cur.band_values(5) == [0.4, 0.6]
    assert cur.band_values(10) == [0.4, 0.5, 0.6]
    assert cur.band_values(4) == [0.5]
    assert cur.band_warning(8) is not None and "G=8" in cur.band_warning(8)
    assert cur.band_warning(5) is None
    assert "no" in cur.band_warning(3, k_min=0.1)  # 1/3, 2/3 are both outside ±0.1


def test_rwr_weights_hand_values():
    w = cur.rwr_weights([0.0, 1.0], lam=math.log(3.0))
    assert w == pytest.approx([0.5, 1.5])
    assert cur.rwr_weights([]) == []
    assert cur.rwr_weights([0.2, 0.2, 0.2]) == pytest.approx([1.0, 1.0, 1.0])


def test_group_advantages_and_zero_std():
    adv = cur.group_advantages([1.0, 0.0, 0.0, 0.0], eps=0.0)
    assert adv[0] == pytest.approx(1.5)  # (1 - 0.25) / 0.5
    assert sum(adv) == pytest.approx(0.0)
    assert cur.group_advantages([1.0, 1.0]) == [0.0, 0.0]
    assert cur.frac_zero_std([[1, 1], [0, 1], [0, 0], [0.5, 0.5]]) == 0.75
    assert cur.frac_zero_std([]) == 0.0


@given(probs, probs, st.floats(min_value=0.01, max_value=50))
def test_gaussian_peaks_at_alpha_and_is_bounded(p, alpha, beta):
    r = cur.env_reward(p, alpha, beta)
    assert 0.0 < r <= 1.0
    assert cur.env_reward(alpha, alpha, beta) >= r


@given(st.floats(min_value=0.0, max_value=0.5), st.floats(min_value=0.01, max_value=50))
def test_gaussian_symmetric_around_half(d, beta):
    assert cur.env_reward(0.5 - d, 0.5, beta) == pytest.approx(cur.env_reward(0.5 + d, 0.5, beta))


@given(probs, st.sampled_from(cur.ENV_REWARD_SHAPES))
def test_every_shape_in_unit_interval_and_max_at_half(p, shape):
    r = cur.env_reward(p, shape=shape)
    assert 0.0 <= r <= 1.0
    if shape != "azr":
        assert cur.env_reward(0.5, shape=shape) >= r
        assert r == pytest.approx(cur.env_reward(1.0 - p, shape=shape))


@given(st.lists(probs, min_size=1, max_size=50), st.floats(min_value=0.0, max_value=20))
def test_rwr_weights_nonnegative_mean_one_monotone(rewards, lam):
    w = cur.rwr_weights(rewards, lam)
    assert all(x >= 0 for x in w)
    assert sum(w) / len(w) == pytest.approx(1.0)
    for (ra, wa) in zip(rewards, w):
        for (rb, wb) in zip(rewards, w):
            if ra < rb:
                assert wa <= wb + 1e-12


@given(st.lists(st.floats(min_value=-5, max_value=5), min_size=2, max_size=16))
def test_advantages_centred(rewards):
    adv = cur.group_advantages(rewards)
    assert sum(adv) == pytest.approx(0.0, abs=1e-6)


@given(st.integers(min_value=1, max_value=64), probs, st.floats(min_value=0.0, max_value=0.5))
def test_band_values_are_exactly_the_in_band_grid(g, alpha, k):
    vals = cur.band_values(g, alpha, k)
    assert all(abs(v - alpha) <= k + 1e-9 for v in vals)
    assert (cur.band_warning(g, alpha, k) is None) == (len(vals) >= 2)


def test_in_band_probability_hand_values():
    # G = 8, band [3/8, 5/8]: C(8,3)+C(8,4)+C(8,5) = 182 of 256 outcomes at p = 0.5
    assert cur.in_band_probability(0.5, 8, 0.5, 0.125) == pytest.approx(182 / 256)
    # G = 2, band {0.5}: 2 p (1 - p)
    assert cur.in_band_probability(0.3, 2, 0.5, 0.1) == pytest.approx(2 * 0.3 * 0.7)
    with pytest.raises(ValueError, match="probability"):
        cur.in_band_probability(1.5, 8)


@given(st.floats(0, 1), st.integers(1, 24), st.floats(0.05, 0.95), st.floats(0.01, 0.5))
def test_in_band_probability_is_the_binomial_mass_on_the_band_values(p, g, alpha, k):
    prob = cur.in_band_probability(p, g, alpha, k)
    assert -1e-12 <= prob <= 1 + 1e-12
    kept = cur.band_values(g, alpha, k)
    if not kept:
        assert prob == 0.0
    # the probability of the complementary outcomes makes up the rest
    rest = sum(math.comb(g, j) * p**j * (1 - p) ** (g - j) for j in range(g + 1) if j / g not in kept)
    assert prob + rest == pytest.approx(1.0)


measured = st.one_of(probs, st.just(math.nan))


@given(st.lists(measured, max_size=30), probs, st.floats(min_value=0.0, max_value=0.5))
def test_nearest_band_keeps_the_band_else_the_nearest(p_hats, alpha, k):
    chosen = cur.nearest_band(p_hats, alpha, k)
    values = [p for p in p_hats if not math.isnan(p)]
    assert all(not math.isnan(p_hats[i]) for i in chosen) and chosen == sorted(set(chosen))
    assert bool(chosen) == bool(values)  # something is chosen exactly when something was measured
    if any(cur.in_band(p, alpha, k) for p in values):  # a band member: the chosen are exactly the band's
        assert chosen == [i for i, p in enumerate(p_hats) if not math.isnan(p) and cur.in_band(p, alpha, k)]
    elif values:  # none in band: every chosen one is as near α as any measured one
        best = min(abs(p - alpha) for p in values)
        assert all(abs(abs(p_hats[i] - alpha) - best) <= 1e-9 for i in chosen)
