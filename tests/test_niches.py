"""The niche penalty (a labelled extension, genenv_lab/core/niches.py): its weights, its placebo, each domain's niche
descriptor and the config that turns it on."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genenv_lab.config import ConfigError, preset
from genenv_lab.core.curriculum import rwr_weights
from genenv_lab.core.niches import add_counts, niche_multiplier, niche_weights, placebo_multipliers, top_share
from genenv_lab.domains import get_domain
from genenv_lab.domains.base import canonical_question

NICHES = st.sampled_from(["a", "b", "c", "d", "e"])
ROWS = st.lists(st.tuples(st.floats(0.0, 1.0), NICHES), min_size=1, max_size=30)
COUNTS = st.dictionaries(NICHES, st.integers(0, 500))
GAMMA = st.floats(0.0, 8.0)


@settings(max_examples=200, deadline=None)
@given(ROWS, COUNTS, GAMMA, st.floats(0.0, 5.0), st.booleans(), st.integers(0, 2**32))
def test_the_weights_mean_stays_one(rows, counts, gamma, lam, placebo, seed):
    rewards, niches = zip(*rows)
    w = niche_weights(rewards, niches, counts, lam, gamma, random.Random(seed) if placebo else None)
    assert len(w) == len(rows)
    assert all(x > 0 and math.isfinite(x) for x in w)
    assert sum(w) / len(w) == pytest.approx(1.0)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 1000), st.integers(0, 1000), GAMMA)
def test_the_penalty_is_monotone_in_the_count(n, m, gamma):
    lo, hi = sorted((n, m))
    assert niche_multiplier(hi, gamma) <= niche_multiplier(lo, gamma)
    if gamma >= 0.01 and hi > lo:
        assert niche_multiplier(hi, gamma) < niche_multiplier(lo, gamma)


@settings(max_examples=200, deadline=None)
@given(st.floats(0.0, 1.0), COUNTS, st.floats(0.01, 8.0))
def test_a_more_written_niche_weighs_less_at_equal_reward(reward, counts, gamma):
    counts = dict(counts, a=counts.get("a", 0), b=counts.get("a", 0) + 1 + counts.get("b", 0))
    wa, wb = niche_weights([reward, reward], ["a", "b"], counts, 1.0, gamma)
    assert wb < wa


@settings(max_examples=100, deadline=None)
@given(ROWS, st.floats(0.0, 5.0))
def test_gamma_zero_is_the_papers_rwr(rows, lam):
    rewards, niches = zip(*rows)
    assert niche_weights(rewards, niches, {"a": 7}, lam, 0.0) == rwr_weights(rewards, lam)


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(NICHES, st.floats(0.001, 1.0), min_size=1), st.integers(0, 2**32))
def test_the_placebo_keeps_the_multipliers_and_moves_them(multipliers, seed):
    shuffled = placebo_multipliers(multipliers, random.Random(seed))
    assert sorted(shuffled) == sorted(multipliers)
    assert sorted(shuffled.values()) == sorted(multipliers.values())
    assert shuffled == placebo_multipliers(dict(reversed(list(multipliers.items()))), random.Random(seed))


def test_the_placebo_breaks_the_tie_to_the_memory():
    """Over many shuffles a rare niche is no longer favoured on average: the memory's signal is gone."""
    counts = {"rare": 0, "common": 99, "mid": 9}
    niches = ["rare", "common", "mid"]
    real = niche_weights([1.0] * 3, niches, counts, gamma=1.0)
    assert real[0] > real[2] > real[1]
    mean = [0.0, 0.0, 0.0]
    for seed in range(600):
        for i, w in enumerate(niche_weights([1.0] * 3, niches, counts, gamma=1.0, placebo=random.Random(seed))):
            mean[i] += w / 600
    assert max(mean) - min(mean) < 0.15


def test_counts_and_top_share():
    assert add_counts({}, []) == {}
    c = add_counts(add_counts({}, ["x", "y"]), ["x"])
    assert c == {"x": 2, "y": 1}
    assert top_share(c) == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="niche count"):
        niche_multiplier(-1, 1.0)
    with pytest.raises(ValueError, match="2 rewards but 1 niches"):
        niche_weights([1.0, 1.0], ["a"], {})


def test_each_domains_niche():
    """Counting's niche is (start, end); every other shipped domain's is its canonical question."""
    count = get_domain("count")
    spec = count.parse("Task: 3 to 9").spec
    assert count.niche(spec) == "3 to 9"
    assert count.niche(count.parse("Task: 3 to 8").spec) != count.niche(spec)
    for name in ("arith", "times", "qa", "tools"):
        domain = get_domain(name)
        seed = domain.seed_tasks()[0].spec
        assert domain.niche(seed) == canonical_question(seed.question), name
        assert domain.niche(seed) == domain.niche(type(seed)(seed.question.upper().replace(" ", "  "), seed.answer,
                                                              seed.text, dict(seed.features))), name
    assert canonical_question("What is 4 * 11 ?") == canonical_question("what is 4*11?")
    assert canonical_question("4*11") != canonical_question("4*12")


def test_the_config_turns_it_on_and_the_variants_read_it():
    cfg = preset("tiny")
    assert cfg.env.niche_gamma == 0 and cfg.niche_gamma == 0
    on = cfg.replace(env={"niche_gamma": 1.0})
    assert on.niche_gamma == 1.0
    assert on.replace(loop={"variant": "genenv_paper"}).niche_gamma == 0.0
    assert on.replace(loop={"variant": "random_env"}).niche_gamma == 0.0
    assert on.replace(loop={"variant": "genenv_placebo"}).niche_gamma == 1.0
    with pytest.raises(ConfigError, match="niche_gamma=0.0 is invalid.*genenv_placebo"):
        cfg.replace(loop={"variant": "genenv_placebo"})
    with pytest.raises(ConfigError, match="niche_gamma"):
        cfg.replace(env={"niche_gamma": -0.5})
