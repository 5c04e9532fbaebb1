"""Data efficiency math (genenv_lab.core.efficiency): what training consumed, and the rollouts GenEnv needs to reach a
baseline's final held-out score, the area under the held-out curve and the paired intervals over seeds
(genenv_lab.core.paired). Hand-worked examples and Hypothesis properties."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genenv_lab.core.efficiency import (KEYS, Consumption, Point, Reach, common_range, normalised_auc, reach_text,
    rollouts_to_reach)
from genenv_lab.core.paired import paired, t_quantile


def test_consumption_adds_up_and_counts_distinct_tasks_and_questions():
    c = Consumption().add(40, 120, [("a", "1+1"), ("b", "2+2")])
    c = c.add(24, 60, [("a", "1+1"), ("c", "2+2"), ("d", "3+3")])
    assert (c.rollouts, c.tokens, len(c.task_ids), len(c.questions)) == (64, 180, 4, 3)
    assert c.metrics() == dict(zip(KEYS, (64, 180, 4, 3)))
    unknown = c.add(8, None, [])
    assert unknown.tokens is None and unknown.add(8, 5, []).tokens is None  # unknown once, unknown after
    with pytest.raises(ValueError):
        c.add(-1, 0, [])


def _curve(values):
    return [Point(e, r, s) for e, (r, s) in enumerate(values)]


def test_reach_examples():
    genenv = _curve([(0, 0.2), (100, 0.30), (200, 0.50), (300, 0.60)])
    static = _curve([(0, 0.2), (120, 0.25), (240, 0.40), (360, 0.45)])
    r = rollouts_to_reach(genenv, static)
    assert (r.target, r.baseline_epoch, r.baseline_rollouts, r.epoch, r.rollouts) == (0.45, 3, 360, 2, 200)
    assert r.ratio == pytest.approx(1.8) and r.reached
    assert "1.80: genenv needs 200 rollouts to reach 0.450 (epoch 2)" in reach_text(r)
    back = rollouts_to_reach(static, genenv)  # static never scores 0.60
    assert not back.reached and math.isnan(back.ratio) and reach_text(back).startswith("not reached")
    # a baseline no better than the untrained agent: reached at epoch 0, before any rollout
    flat = rollouts_to_reach(genenv, _curve([(0, 0.2), (100, 0.2)]))
    assert flat.epoch == 0 and flat.ratio == math.inf and "before training" in reach_text(flat)
    # unknown points are skipped: the baseline's last usable epoch is its final one, NaN scores never reach
    nan = float("nan")
    gappy = rollouts_to_reach([Point(0, 0, nan), Point(1, 50, 0.5)], [Point(1, 80, 0.4), Point(2, nan, 0.9)])
    assert (gappy.baseline_epoch, gappy.epoch, gappy.ratio) == (1, 1, pytest.approx(1.6))
    assert rollouts_to_reach(genenv, [Point(1, nan, nan)]) is None and reach_text(None) == "no held-out score yet"


scores = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)


@st.composite
def curves(draw, min_size=1):
    """An arm's epochs 0..n: cumulative rollouts never decrease (0 at the untrained epoch 0), scores anywhere."""
    n = draw(st.integers(min_value=min_size, max_value=10))
    steps = draw(st.lists(st.integers(min_value=1, max_value=500), min_size=n - 1, max_size=n - 1))
    rollouts = [0]
    for s in steps:
        rollouts.append(rollouts[-1] + s)
    return [Point(e, float(r), draw(scores)) for e, r in enumerate(rollouts)]


@settings(max_examples=300, deadline=None)
@given(curves(), curves())
def test_reach_is_the_first_epoch_at_or_above_the_target(reference, baseline):
    r = rollouts_to_reach(reference, baseline)
    final = baseline[-1]
    first = next(p for p in baseline if p.score >= final.score - 1e-9)  # the baseline is charged up to here only
    assert (r.target, r.baseline_rollouts, r.baseline_epoch) == (final.score, first.rollouts, first.epoch)
    if r.reached:
        hit = next(p for p in reference if p.epoch == r.epoch)
        assert hit.score >= r.target - 1e-9 and hit.rollouts == r.rollouts
        assert all(p.score < r.target - 1e-9 for p in reference if p.epoch < r.epoch)
        assert r.ratio == (math.inf if r.rollouts == 0 else pytest.approx(first.rollouts / r.rollouts))
    else:
        assert max(p.score for p in reference) < r.target - 1e-9 and math.isnan(r.ratio)


@settings(max_examples=200, deadline=None)
@given(curves(min_size=2))
def test_an_arm_against_itself_needs_exactly_what_it_spent(arm):
    """An arm is charged what it spent to first reach its final score, and reaches it at that same epoch: against
    itself the ratio is exactly 1 (a plateau after it costs nothing)."""
    r = rollouts_to_reach(arm, arm)
    assert r.reached and r.epoch == r.baseline_epoch <= arm[-1].epoch
    assert r.rollouts == 0 or r.ratio == 1.0


@settings(max_examples=200, deadline=None)
@given(curves(), curves(), st.floats(min_value=0.1, max_value=10.0))
def test_scaling_the_baselines_rollouts_scales_the_ratio(reference, baseline, k):
    scaled = [Point(p.epoch, p.rollouts * k, p.score) for p in baseline]
    r, rk = rollouts_to_reach(reference, baseline), rollouts_to_reach(reference, scaled)
    assert rk.epoch == r.epoch
    if r.reached and 0 < r.rollouts and r.ratio > 0:
        assert rk.ratio == pytest.approx(k * r.ratio)


@settings(max_examples=200, deadline=None)
@given(curves(), scores, scores)
def test_a_higher_target_is_reached_no_earlier(reference, a, b):
    low, high = sorted((a, b))
    r_low = rollouts_to_reach(reference, [Point(1, 100.0, low)])
    r_high = rollouts_to_reach(reference, [Point(1, 100.0, high)])
    if r_high.reached:
        assert r_low.reached and r_low.epoch <= r_high.epoch and r_low.rollouts <= r_high.rollouts
        assert r_low.ratio >= r_high.ratio


def test_reach_ratio_definitions():
    assert Reach(0.5, 3, 300.0, 1, 100.0).ratio == 3.0
    assert Reach(0.5, 3, 300.0, 0, 0.0).ratio == math.inf
    assert math.isnan(Reach(0.5, 3, 300.0, None, None).ratio)


# ------------------------------------------------------------------- area under the curve, paired intervals


@st.composite
def rollout_curves(draw):
    """(cumulative rollouts, held-out score) points from 0 rollouts on, rollouts non-decreasing."""
    steps = draw(st.lists(st.integers(0, 200), min_size=1, max_size=8))
    scores = draw(st.lists(st.floats(0, 1), min_size=len(steps) + 1, max_size=len(steps) + 1))
    xs = [0]
    for s in steps:
        xs.append(xs[-1] + s)
    return list(zip(xs, scores))


@settings(max_examples=300, deadline=None)
@given(rollout_curves(), st.floats(0.0, 1.0), st.floats(0.0, 1.0))
def test_the_normalised_auc_is_a_mean_score_over_the_range(curve, a, b):
    end = curve[-1][0]
    if end == 0:
        assert common_range([curve]) is None
        return
    lo, hi = sorted((a * end, b * end))
    if hi - lo < 1e-6:
        return
    auc = normalised_auc(curve, lo, hi)
    scores = [s for _, s in curve]
    assert min(scores) - 1e-9 <= auc <= max(scores) + 1e-9
    assert normalised_auc([(r, 0.7) for r, _ in curve], lo, hi) == pytest.approx(0.7)  # a flat curve: its score
    raised = normalised_auc([(r, s + 0.1) for r, s in curve], lo, hi)  # every score up by 0.1: the mean too
    assert raised == pytest.approx(auc + 0.1)
    mid = (lo + hi) / 2  # additive over a split range
    assert auc * (hi - lo) == pytest.approx(normalised_auc(curve, lo, mid) * (mid - lo)
                                            + normalised_auc(curve, mid, hi) * (hi - mid), abs=1e-9)
    assert math.isnan(normalised_auc(curve, lo, end + 1))  # past the curve's last point: unknown


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-1, 1), min_size=2, max_size=20), st.floats(-1, 1))
def test_the_paired_interval_holds_the_mean_and_shifts_with_it(diffs, shift):
    p = paired(diffs)
    assert p.seeds == len(diffs) and p.low <= p.mean <= p.high
    q = paired([d + shift for d in diffs])
    assert q.mean == pytest.approx(p.mean + shift, abs=1e-9)
    assert q.high - q.low == pytest.approx(p.high - p.low, abs=1e-9)
    assert (p.high - p.mean) == pytest.approx(t_quantile(0.975, len(diffs) - 1) * p.stderr, abs=1e-9)


def test_t_quantiles_rise_to_the_normal_one():
    values = [t_quantile(0.975, df) for df in (1, 2, 4, 10, 100, 1000)]
    assert values == sorted(values, reverse=True) and values[-1] == pytest.approx(1.962, abs=1e-3)
    with pytest.raises(ValueError):
        t_quantile(0.975, 0)


@given(st.lists(st.floats(-1, 1), min_size=1, max_size=12), st.floats(-1.5, 1.5))
def test_spread_text_says_inside_exactly_when_the_difference_lies_within_the_studys_range(study, this):
    from genenv_lab.core.paired import spread_text

    text = spread_text(study, this, baseline="static", where="seeds 20-27")
    assert text.startswith("For scale: over seeds 20-27, genenv − static at the final epoch was ")
    inside = min(study) - 1e-9 <= this <= max(study) + 1e-9
    assert ("lies inside that range" in text) == inside and ("lies outside that range" in text) == (not inside)
    assert (f"{len(study)} seeds" in text) == (len(study) > 1)
    assert spread_text(study, None, baseline="static").endswith(".")
