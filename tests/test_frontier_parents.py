"""The ``genenv_frontier`` variant (an extension of the paper's method): the pool half of the simulator's parents is
drawn from the recent tasks at the agent's frontier. The pure choice (:func:`genenv_lab.curriculum.nearest_band`),
the parents it gives, the other variants' parents left as they were, and a real tiny run whose parents are checked
against its own run directory."""

from __future__ import annotations

import math
import random

from hypothesis import given, strategies as st

from genenv_lab import cli
from genenv_lab import curriculum as cur
from genenv_lab.config import preset
from genenv_lab.domains import get_domain
from genenv_lab.runlog import read_table
from genenv_lab.simulator import choose_parents, frontier_pool
from genenv_lab.types import LoopState, PoolTask, TaskSpec

p_hats = st.lists(st.one_of(st.sampled_from([k / 8 for k in range(9)]), st.just(math.nan),
                            st.floats(0, 1)), max_size=12)


@given(p_hats, st.sampled_from([0.3, 0.5, 0.7]), st.sampled_from([0.0, 0.1, 0.125, 0.25]))
def test_nearest_band_is_the_band_or_else_the_nearest(values, alpha, k_min):
    chosen = cur.nearest_band(values, alpha, k_min)
    measured = [i for i, p in enumerate(values) if not math.isnan(p)]
    assert set(chosen) <= set(measured) and chosen == sorted(chosen)
    assert bool(chosen) == bool(measured)
    in_band = [i for i in measured if cur.in_band(values[i], alpha, k_min)]
    if in_band:
        assert chosen == in_band
    elif measured:
        best = min(abs(values[i] - alpha) for i in measured)
        assert chosen == [i for i in measured if abs(values[i] - alpha) <= best + 1e-9]


@given(p_hats, st.sampled_from([0.3, 0.5, 0.7]), st.sampled_from([0.0, 0.1, 0.125]), st.data())
def test_frontier_is_the_hardest_level_solved_at_the_band_edge(values, alpha, k_min, data):
    levels = data.draw(st.lists(st.integers(3, 24), min_size=len(values), max_size=len(values)))
    chosen = cur.frontier_indices(values, levels, alpha, k_min)
    solved = [i for i, p in enumerate(values) if not math.isnan(p) and p >= alpha - k_min - 1e-9]
    if solved:
        top = max(levels[i] for i in solved)
        assert chosen == [i for i in solved if levels[i] == top]
    else:
        assert chosen == cur.nearest_band(values, alpha, k_min)
    # without a level feature the band decides
    assert cur.frontier_indices(values, [None] * len(values), alpha, k_min) == cur.nearest_band(values, alpha, k_min)


def task(text: str):
    return get_domain("count").safe_parse(text).spec


def pool_state(epoch: int = 4) -> LoopState:
    rows = [("Task: 3 to 12", 1.0, 1), ("Task: 3 to 8", 1.0, 2), ("Task: 3 to 9", 0.875, 3),
            ("Task: 2 to 10", 0.375, 3), ("Task: 3 to 9", 0.5, 4), ("Task: 1 to 11", math.nan, 4),
            ("Task: 5 to 14", 0.0, 4)]  # with stats_window 3, epoch 1's task is too old at epoch 4
    return LoopState(epoch=epoch, pool=[PoolTask(f"t{i}", "seed-0", e, task(text), p)
                                        for i, (text, p, e) in enumerate(rows)])


def test_frontier_pool_takes_the_recent_hardest_level_solved_at_the_band_edge():
    cfg = preset("tiny").replace(loop={"variant": "genenv_frontier"}, env={"stats_window": 3},
                                 curriculum={"alpha": 0.5, "k_min": 0.125})
    state = pool_state()
    assert [t.task_id for t in frontier_pool(state, cfg)] == ["t3"]  # level 10 at p̂ 0.375; t0 (12) is too old
    strict = cfg.replace(curriculum={"k_min": 0.0})
    assert [t.task_id for t in frontier_pool(state, strict)] == ["t2", "t4"]  # level 9 at p̂ ≥ 0.5
    unmeasured = LoopState(epoch=4, pool=[PoolTask("u", "seed-0", 4, task("Task: 1 to 5"))])
    assert frontier_pool(unmeasured, cfg) == unmeasured.pool


def test_parents_come_from_the_frontier_only_for_the_variant_and_genenv_draws_as_before():
    seeds = get_domain("count").seed_tasks()
    state = pool_state()
    base = preset("tiny").replace(env={"stats_window": 3, "seeds_per_epoch": 10},
                                  curriculum={"alpha": 0.5, "k_min": 0.0})
    frontier = choose_parents(state, seeds, base.replace(loop={"variant": "genenv_frontier"}), random.Random(3))
    assert {p.parent_id for p in frontier[1::2]} <= {"t2", "t4"}
    assert {p.parent_id for p in frontier[0::2]} <= {s.seed_id for s in seeds}
    rng = random.Random(3)  # genenv: every other parent uniform over the whole pool, the stream unchanged
    expected = [(rng.choice(state.pool).task_id if k % 2 else rng.choice(seeds).seed_id) for k in range(10)]
    assert [p.parent_id for p in choose_parents(state, seeds, base, random.Random(3))] == expected


def test_a_tiny_frontier_run_varies_the_frontier_tasks_of_its_own_run_directory(tmp_path):
    """The real CLI and model: every pool parent of epochs 2 and 3 is in the frontier rebuilt from the run's own
    tasks table (the tiny model's p̂ are mostly tied, so the narrowing itself is shown by the tests above)."""
    out = tmp_path / "run"
    assert cli.main(["run", "--preset", "tiny", "--variant", "genenv_frontier", "--epochs", "3", "--seed", "1",
                     "--curriculum.k_min", "0.1", "--out", str(out)]) == 0
    cfg = preset("tiny").replace(loop={"variant": "genenv_frontier"}, curriculum={"k_min": 0.1})
    tasks = read_table(out, "tasks")
    valid = tasks[tasks["valid"]]  # the pool: every valid task of earlier epochs, measured or not
    for epoch in (2, 3):
        earlier = valid[valid["epoch"] < epoch]
        state = LoopState(epoch=epoch - 1, pool=[
            PoolTask(r.task_id, r.root_id, int(r.epoch), TaskSpec(r.question, r.answer, r.text, dict(r.features)),
                     float(r.p_hat)) for r in earlier.itertuples()])
        allowed = {t.task_id for t in frontier_pool(state, cfg)}
        parents = set(tasks.loc[tasks["epoch"] == epoch, "parent_id"])
        from_pool = parents & set(earlier["task_id"])
        assert from_pool and from_pool <= allowed, (epoch, from_pool - allowed)
        assert parents - from_pool <= set(tasks["root_id"])  # the other half: base seeds
