"""The ``facts`` world (genenv_lab/domains/facts.py): its tasks parse and score as the module says, the sums are
computed from the digits, its teacher's agent role writes each fact right at its mastery and else that fact's own
slip, its env role moves the number of pairs with the hint and draws the digits (so the facts) afresh; no teacher
task is held out, and the held-out set covers every fact that crosses ten."""

from __future__ import annotations

import random
import statistics
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from genenv_lab.domains.base import HELDOUT_REASON
from genenv_lab.domains.facts import (PAIRS_MAX, PAIRS_MIN, TEN, FactsDomain, FactsWorld, hard_facts, heldout_pairs,
                                      slip, task_text)

DOMAIN = FactsDomain()
PAIRS = st.lists(st.tuples(st.integers(1, 9), st.integers(1, 9)), min_size=PAIRS_MIN, max_size=PAIRS_MAX)


@given(PAIRS)
def test_every_task_parses_scores_its_reference_and_names_its_niche(pairs):
    result = DOMAIN.parse(task_text(pairs))
    if tuple(pairs) in heldout_pairs():
        assert result.reason == HELDOUT_REASON
        return
    spec = result.spec
    over = [x + y for x, y in pairs if x + y >= TEN]
    assert spec.features == {"level": len(over), "pairs": tuple(pairs), "length": len(pairs),
                             "top_sum": max(x + y for x, y in pairs)}
    assert [int(s) for s in spec.answer.split()] == [x + y for x, y in pairs]
    assert DOMAIN.score(spec, DOMAIN.reference_solution(spec)) == 1.0
    assert DOMAIN.score(spec, " " + " ".join(str(x + y) for x, y in pairs[:-1])) == 0.0  # a sum left out
    assert DOMAIN.niche(spec) == f"{len(pairs)} pairs, over ten: {' '.join(map(str, sorted(over))) or 'none'}"


@given(st.integers(1, 9), st.integers(1, 9))
def test_a_slip_is_one_off_the_sum_and_the_same_whichever_way_round(x, y):
    assert abs(slip(x, y) - (x + y)) == 1 and slip(x, y) == slip(y, x)


def test_the_slips_go_both_ways_within_a_sum_so_no_one_correction_fixes_them():
    by_sum: dict[int, set[int]] = {}
    for x, y in hard_facts():
        by_sum.setdefault(x + y, set()).add(slip(x, y) - x - y)
    assert all(ways == {-1, 1} for total, ways in by_sum.items() if total <= 16)


@pytest.mark.parametrize("text, reason", [
    ("7+8 3+4", "missing 'Task:' line"), ("Task: 7*8 3+4", "not of the form 'x+y x+y ...'"),
    ("Task: 7+8 3+0", "a digit outside 1-9"), ("Task: 17+8 3+4", "a digit outside 1-9"),
    ("Task: 7+8", "a number of pairs outside 2-4"), ("Task: 1+1 1+1 1+1 1+1 1+1", "a number of pairs outside 2-4"),
    ("Task: 7+8, 3+4", "not of the form 'x+y x+y ...'")])
def test_a_task_outside_the_world_is_rejected_with_its_reason(text, reason):
    assert DOMAIN.parse(text).reason == reason


def test_the_held_out_set_spans_every_length_and_count_and_every_fact_over_ten():
    pairs = sorted(heldout_pairs())
    assert DOMAIN.parse(task_text(pairs[0])).reason == HELDOUT_REASON
    kinds = {(len(p), sum(x + y >= TEN for x, y in p)) for p in pairs}
    assert kinds == {(n, k) for n in range(PAIRS_MIN, PAIRS_MAX + 1) for k in (0, 1, 2)}
    assert {tuple(sorted(f)) for p in pairs for f in p if sum(f) >= TEN} == set(hard_facts())
    assert all(t.spec.features["level"] == 0 for t in DOMAIN.seed_tasks())
    assert not {t.spec.features["pairs"] for t in DOMAIN.seed_tasks()} & heldout_pairs()


@pytest.mark.parametrize("pairs", [[(1, 2), (3, 4)], [(5, 5), (2, 2)], [(6, 7), (1, 1)], [(7, 8), (9, 9), (1, 3)]])
def test_the_teachers_agent_role_writes_each_fact_right_at_its_mastery_else_its_slip(pairs):
    world, rng = FactsWorld(), random.Random(sum(map(sum, pairs)))
    spec = DOMAIN._parse(task_text(pairs), False).spec
    attempts = [world.attempt(rng, pairs) for _ in range(3000)]
    assert statistics.mean(DOMAIN.score(spec, " " + a) for a in attempts) == pytest.approx(
        world.success_probability(pairs), abs=0.03)
    for i, (x, y) in enumerate(pairs):
        written = Counter(a.split()[i] for a in attempts)
        assert set(written) <= {str(x + y), str(slip(x, y))}
        assert written[str(x + y)] / 3000 == pytest.approx(world.mastery(x + y), abs=0.03)


def test_the_teachers_env_role_moves_the_length_with_the_hint_and_draws_the_facts_afresh():
    world, rng = FactsWorld(), random.Random(1)
    seed = "Task: 7+8 9+6 8+8"  # three facts over ten

    def draws(rate):
        out = [DOMAIN.parse(world.variation_of(rng, seed, world.target_level(rng, 3, rate, 0.5, 0.125))).spec.features
               for _ in range(3000)]
        return out, statistics.mean(t["length"] for t in out)

    similar, similar_length = draws(0.5)
    _, harder_length = draws(1.0)
    _, easier_length = draws(0.0)
    assert easier_length < similar_length < harder_length
    facts = [x + y for t in similar for x, y in t["pairs"]]
    assert statistics.mean(s >= TEN for s in facts) < 0.2  # the teacher's digits, not the parent's
    assert statistics.mean(s >= 13 for s in facts) < 0.05


def test_no_teacher_task_is_held_out_and_every_reply_parses():
    world, rng = FactsWorld(), random.Random(2)
    for _ in range(3000):
        messages, reply = world.env_example(rng)
        assert DOMAIN.parse("Task:" + reply).valid, reply
