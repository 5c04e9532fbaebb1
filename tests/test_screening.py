"""online_filter's selection (genenv_lab.core.screening): hand-worked examples and Hypothesis properties."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genenv_lab.core.screening import Screened, fill_up, informative, next_round, screen

G = 4
p_hats = st.integers(min_value=0, max_value=G).map(lambda k: k / G)  # p̂ as G rollouts can measure it


def _measure(table, calls=None):
    def measure(ids):
        if calls is not None:
            calls.append(list(ids))
        return [table[i] for i in ids]
    return measure


def test_rounds_draw_only_what_the_batch_lacks():
    table = {"a": 0.5, "b": 1.0, "c": 0.0, "d": 0.25, "e": 0.75, "f": 0.5}
    calls = []
    out = screen(list("abcdef"), _measure(table, calls), budget=3, cap=12)
    assert calls == [["a", "b", "c"], ["d", "e"]]  # 3 lacking, then 2 (a was kept): e fills the batch
    assert out.kept == ("a", "d", "e") and out.fill == () and out.batch == ("a", "d", "e")
    assert out.used_up == ("b",) and out.unsolved == ("c",)
    assert [s.task_id for s in out.screened] == list("abcde")  # f never screened: no rollout spent on it


def test_the_cap_stops_screening_and_the_batch_is_topped_up_unsolved_first():
    table = {"a": 1.0, "b": 0.0, "c": 0.5, "d": 0.0, "e": 1.0, "f": 0.5}
    out = screen(list("abcdef"), _measure(table), budget=4, cap=5)
    assert [s.task_id for s in out.screened] == list("abcde")
    assert out.kept == ("c",) and out.fill == ("b", "d", "a") and out.used_up == ("a", "e")
    assert len(out.batch) == 4  # every arm trains on `budget` fresh tasks


def test_few_candidates_train_on_what_there_is():
    out = screen(["a", "b"], _measure({"a": 1.0, "b": 0.0}), budget=5, cap=20)
    assert out.kept == () and out.fill == ("b", "a") and out.batch == ("b", "a")
    assert screen([], _measure({}), budget=5, cap=20).batch == ()


def test_examples_of_the_helpers():
    assert [informative(p) for p in (0.0, 0.01, 0.99, 1.0)] == [False, True, True, False]
    assert next_round(0, 0, 3, budget=8, cap=32) == 3 and next_round(0, 32, 50, budget=8, cap=32) == 0
    s = [Screened("x", 0.0), Screened("y", 1.0), Screened("z", 0.0)]
    assert fill_up(s, [], budget=2) == ("x", "z") and fill_up(s, ["a", "b", "c", "d", "e"], budget=2) == ()
    with pytest.raises(ValueError, match="measure returned"):
        screen(["a", "b"], lambda ids: [0.5], budget=2, cap=4)


@st.composite
def screenings(draw):
    n = draw(st.integers(min_value=0, max_value=30))
    table = {f"t{i}": draw(p_hats) for i in range(n)}
    order = draw(st.permutations(sorted(table)))
    budget = draw(st.integers(min_value=1, max_value=10))
    cap = budget * draw(st.integers(min_value=1, max_value=5))
    return table, list(order), budget, cap


@settings(max_examples=300, deadline=None)
@given(screenings())
def test_properties_of_one_screening(case):
    table, order, budget, cap = case
    calls = []
    out = screen(order, _measure(table, calls), budget, cap)
    screened = [s.task_id for s in out.screened]
    assert screened == order[:len(screened)] == [i for c in calls for i in c]  # in order, each once
    assert len(screened) <= cap and len(out.kept) <= budget and len(out.batch) <= budget
    assert all(0 < table[t] < 1 for t in out.kept)  # kept: informative only
    assert all(table[t] in (0.0, 1.0) for t in out.fill)  # the documented fill-up: other screened tasks
    assert set(out.batch) <= set(screened) and len(set(out.batch)) == len(out.batch)
    assert len(out.batch) == min(budget, len(screened))  # topped up to the budget whenever enough were screened
    assert set(out.kept) == {t for t in screened if 0 < table[t] < 1}  # no informative task screened is wasted
    assert set(out.used_up) == {t for t in screened if table[t] == 1.0}
    if len(out.kept) < budget:  # stopped short: the cap or the candidates ran out
        assert len(screened) == min(cap, len(order))
    zeros_first = [table[t] for t in out.fill]
    assert zeros_first == sorted(zeros_first)  # p̂ = 0 before p̂ = 1


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_used_up_tasks_are_never_drawn_again(data):
    """Several epochs as the loop runs them: the pool loses each epoch's used-up tasks; the agent's skill drifts, so
    a task's p̂ changes between epochs."""
    n = data.draw(st.integers(min_value=1, max_value=25))
    pool = [f"t{i}" for i in range(n)]
    budget = data.draw(st.integers(min_value=1, max_value=6))
    cap = budget * data.draw(st.integers(min_value=1, max_value=4))
    gone: set[str] = set()
    for _ in range(data.draw(st.integers(min_value=1, max_value=6))):
        table = {t: data.draw(p_hats) for t in pool}
        order = data.draw(st.permutations(pool))
        out = screen(list(order), _measure(table), budget, cap)
        assert not gone & {s.task_id for s in out.screened}
        assert not gone & set(out.batch)
        gone |= set(out.used_up)
        pool = [t for t in pool if t not in gone]
        assert all(t not in gone for t in pool) and len(pool) + len(gone) == n


@settings(max_examples=300, deadline=None)
@given(screenings(), st.sampled_from([0.1, 0.125, 0.25]))
def test_properties_of_an_in_band_screening(case, k_min):
    """``random_env_select``'s screening: only in-band tasks are kept, the fill-up takes the informative ones nearest
    α first, and what was spent is what was screened (one measured group of G per screened task)."""
    table, order, budget, cap = case
    calls = []
    out = screen(order, _measure(table, calls), budget, cap, keep=lambda p: abs(p - 0.5) <= k_min, alpha=0.5)
    screened = [s.task_id for s in out.screened]
    assert sum(len(c) for c in calls) == len(screened)  # rollouts spent = G × screened, no more
    assert set(out.kept) == {t for t in screened if abs(table[t] - 0.5) <= k_min}
    assert len(out.batch) == min(budget, len(screened)) and len(set(out.batch)) == len(out.batch)
    informative_fill = [abs(table[t] - 0.5) for t in out.fill if 0 < table[t] < 1]
    assert informative_fill == sorted(informative_fill)  # nearest α first
    n_inf = len(informative_fill)
    assert all(0 < table[t] < 1 for t in out.fill[:n_inf]) and all(table[t] in (0.0, 1.0) for t in out.fill[n_inf:])
