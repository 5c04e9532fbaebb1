"""The ``stride`` world (genenv_lab/domains/stride.py): its tasks parse and score as the module says, its teacher's
agent role succeeds at the rate its mastery curve gives, and its env role keeps the parent's stride but for its
mutation share while the hint moves the length; no teacher task is held out."""

from __future__ import annotations

import random
import statistics

import pytest
from hypothesis import given
from hypothesis import strategies as st

from genenv_lab.domains.base import HELDOUT_REASON
from genenv_lab.domains.stride import (MAX_STEPS, MIN_STEPS, StrideDomain, StrideWorld, all_tasks, heldout_triples,
                                       task_text)

DOMAIN = StrideDomain()


@given(st.sampled_from(all_tasks()))
def test_every_task_of_the_world_parses_scores_its_reference_and_names_its_niche(task):
    a, s, n = task
    result = DOMAIN.parse(task_text(a, s, n))
    if task in heldout_triples():
        assert result.reason == HELDOUT_REASON
        return
    spec = result.spec
    assert spec.features == {"level": s, "start": a, "steps": n}
    assert spec.answer.split()[-1] == str(a + s * n) and len(spec.answer.split()) == n
    assert DOMAIN.score(spec, DOMAIN.reference_solution(spec)) == 1.0
    assert DOMAIN.niche(spec) == f"by {s}, {n} steps"


@pytest.mark.parametrize("text, reason", [
    ("3 to 7 by 2", "missing 'Task:' line"), ("Task: 3 to 7", "not of the form 'a to b by s'"),
    ("Task: 0 to 4 by 2", "start outside 1-9"), ("Task: 3 to 17 by 7", "stride outside 1-6"),
    ("Task: 3 to 8 by 2", "the stride does not reach the end"), ("Task: 3 to 5 by 2", "steps outside 2-6"),
    ("Task: 1 to 8 by 1", "steps outside 2-6"), ("Task: 1 to 11 by 2", HELDOUT_REASON)])
def test_a_task_outside_the_world_is_rejected_with_its_reason(text, reason):
    assert DOMAIN.parse(text).reason == reason


def test_the_held_out_set_spans_every_stride_and_no_seed_is_held_out():
    assert sorted({s for _, s, _ in heldout_triples()}) == [1, 2, 3, 4, 5, 6]
    assert not {(t.spec.features["start"], t.spec.features["level"], t.spec.features["steps"])
                for t in DOMAIN.seed_tasks()} & heldout_triples()


@pytest.mark.parametrize("stride, steps", [(1, 6), (2, 4), (3, 2), (3, 3), (4, 2)])
def test_the_teachers_agent_role_succeeds_as_its_mastery_curve_says(stride, steps):
    world, rng = StrideWorld(), random.Random(stride * 10 + steps)
    spec = DOMAIN._parse(task_text(2, stride, steps), False).spec
    wins = [DOMAIN.score(spec, " " + " ".join(map(str, world.attempt(rng, 2, stride, steps)))) for _ in range(3000)]
    assert statistics.mean(wins) == pytest.approx(world.success_probability(stride, steps), abs=0.03)


def test_the_teachers_env_role_keeps_the_stride_and_moves_the_length_with_the_hint():
    world, rng = StrideWorld(), random.Random(1)
    seed = {"start": 3, "level": 3, "steps": 3}

    def draws(rate):
        tasks = [DOMAIN.parse(world.variation(rng, seed, rate, 0.5, 0.125)).spec.features for _ in range(4000)]
        return tasks, statistics.mean(t["steps"] for t in tasks)

    same, similar_length = draws(0.5)
    kept = sum(t["level"] == 3 for t in same) / len(same)
    assert kept == pytest.approx(1 - world.mutation, abs=0.02)
    assert {t["level"] for t in same} == {2, 3, 4}
    _, harder_length = draws(1.0)
    _, easier_length = draws(0.0)
    assert easier_length < similar_length < harder_length
    assert all(MIN_STEPS <= t["steps"] <= MAX_STEPS for t in same)


def test_no_teacher_task_is_held_out():
    world, rng = StrideWorld(mutation=0.5), random.Random(2)
    for _ in range(3000):
        messages, reply = world.env_example(rng)
        assert DOMAIN.parse("Task:" + reply).valid, reply
