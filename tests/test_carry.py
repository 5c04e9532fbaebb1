"""The ``carry`` world (genenv_lab/domains/carry.py): its tasks parse and score as the module says, the carries are
computed from the digits, its teacher's agent role succeeds at the rate its mastery curve gives, and its env role
moves the length with the hint and draws the digits (so the carries) afresh; no teacher task is held out."""

from __future__ import annotations

import random
import statistics

import pytest
from hypothesis import given
from hypothesis import strategies as st

from genenv_lab.domains.base import HELDOUT_REASON
from genenv_lab.domains.carry import (COLUMNS, MAX_DIGITS, MIN_DIGITS, CarryDomain, CarryWorld, carry_columns,
                                      heldout_pairs)

DOMAIN = CarryDomain()
LENGTH = st.integers(MIN_DIGITS, MAX_DIGITS)


@st.composite
def sums(draw):
    digits = draw(LENGTH)
    number = st.integers(10 ** (digits - 1), 10 ** digits - 1)
    return draw(number), draw(number)


@given(sums())
def test_every_sum_parses_scores_its_reference_and_names_its_niche(pair):
    a, b = pair
    result = DOMAIN.parse(f"Task: {a} + {b}")
    if pair in heldout_pairs():
        assert result.reason == HELDOUT_REASON
        return
    spec = result.spec
    columns = carry_columns(a, b)
    assert spec.features == {"level": len(columns), "digits": len(str(a)), "top_carry": max(columns, default=0),
                             "a": a, "b": b}
    # the column sums' last digits are the sum's digits, the top column's whole sum its leading ones
    sums_written = [part.split()[1] for part in spec.answer.split(", ")]
    assert int(sums_written[-1] + "".join(s[-1] for s in reversed(sums_written[:-1]))) == a + b
    assert DOMAIN.score(spec, DOMAIN.reference_solution(spec)) == 1.0
    assert DOMAIN.niche(spec).startswith(f"{len(str(a))} digits, carries ")


@given(sums())
def test_the_carries_are_the_columns_whose_digits_with_the_carry_in_reach_ten(pair):
    a, b = pair
    expected, carry = [], 0
    for i in range(1, COLUMNS):
        carry = (a // 10 ** (i - 1) % 10 + b // 10 ** (i - 1) % 10 + carry) // 10
        if carry:
            expected.append(i)
    assert carry_columns(a, b) == tuple(expected)


@pytest.mark.parametrize("text, reason", [
    ("47 + 38", "missing 'Task:' line"), ("Task: 47 * 38", "not of the form 'a + b'"),
    ("Task: 47 + 380", "numbers of different lengths"), ("Task: 4 + 3", "numbers outside 2-4 digits"),
    ("Task: 12345 + 12345", "numbers outside 2-4 digits"), ("Task: 047 + 380", "a leading zero")])
def test_a_task_outside_the_world_is_rejected_with_its_reason(text, reason):
    assert DOMAIN.parse(text).reason == reason


def test_a_held_out_sum_is_rejected_and_the_held_out_set_spans_every_length_and_carry_count():
    a, b = sorted(heldout_pairs())[0]
    assert DOMAIN.parse(f"Task: {a} + {b}").reason == HELDOUT_REASON
    kinds = {(len(str(a)), len(carry_columns(a, b))) for a, b in heldout_pairs()}
    assert kinds == {(d, k) for d in range(MIN_DIGITS, MAX_DIGITS + 1) for k in range(min(d, COLUMNS - 1) + 1)}
    assert all(t.spec.features["level"] == 0 for t in DOMAIN.seed_tasks())
    assert not {(t.spec.features["a"], t.spec.features["b"]) for t in DOMAIN.seed_tasks()} & heldout_pairs()


@pytest.mark.parametrize("a, b", [(23, 41), (47, 38), (47, 68), (347, 285), (847, 285), (4750, 3380)])
def test_the_teachers_agent_role_succeeds_as_its_mastery_curve_says(a, b):
    world, rng = CarryWorld(), random.Random(a + b)
    spec = DOMAIN._parse(f"Task: {a} + {b}", False).spec
    wins = [DOMAIN.score(spec, " " + world.attempt(rng, a, b)) for _ in range(3000)]
    assert statistics.mean(wins) == pytest.approx(world.success_probability(a, b), abs=0.03)


def test_the_teachers_env_role_moves_the_length_with_the_hint_and_draws_the_carries_afresh():
    world, rng = CarryWorld(), random.Random(1)
    seed = "Task: 847 + 285"  # three carries

    def variation(rate):  # what the env role writes from a seed and the rate its context states
        return world.variation_of(rng, seed, world.target_level(rng, 3, rate, 0.5, 0.125))

    def draws(rate):
        out = [DOMAIN.parse(variation(rate)).spec.features for _ in range(3000)]
        return out, statistics.mean(t["digits"] for t in out)

    similar, similar_length = draws(0.5)
    _, harder_length = draws(1.0)
    _, easier_length = draws(0.0)
    assert easier_length < similar_length < harder_length
    # a variation of a parent with three carries carries into the hundreds no more often than the teacher's digits do
    assert statistics.mean(t["top_carry"] >= 2 for t in similar) < 0.3
    assert statistics.mean(t["level"] for t in similar) < 1.0


def test_no_teacher_task_is_held_out():
    world, rng = CarryWorld(), random.Random(2)
    for _ in range(3000):
        messages, reply = world.env_example(rng)
        assert DOMAIN.parse("Task:" + reply).valid, reply
