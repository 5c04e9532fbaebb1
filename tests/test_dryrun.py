"""The dry-run instrument (genenv_lab.core.dryrun): its pure math by example and by Hypothesis, and the keys a run
writes
(the scripted backends on ``count``, a domain with levels, and on ``arith``, one without); no model runs."""

from __future__ import annotations

import json
import math
import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genenv_lab.core import curriculum as cur
from genenv_lab.coevolution.resolve import for_domain
from genenv_lab.core.metrics import HELDOUT_FRONTIER_LEVEL as FRONTIER_KEY
from genenv_lab.core.dryrun import (dry_step_frac, frontier_counts, frontier_level, frontier_share, informative,
    level_counts, ran_dry)
from genenv_lab.coevolution.session import run
from genenv_lab.core.types import EpochRecord
from genenv_lab.rundir.read import read_epochs, read_table


groups = st.lists(st.lists(st.sampled_from([0.0, 0.5, 1.0]), min_size=1, max_size=5), max_size=24)


def test_examples():
    assert dry_step_frac([[1, 1], [1, 0], [0, 0], [0, 0]], 2) == 0.5
    assert dry_step_frac([[1, 1], [0, 0], [1, 0]], 2) == 0.5  # [[1, 1], [0, 0]] dry; the short last step is not
    assert math.isnan(dry_step_frac([], 2))
    with pytest.raises(ValueError):
        dry_step_frac([[1, 0]], 0)
    assert frontier_level([(4, True), (5, True), (6, False), (7, False)]) == 6.0
    assert frontier_level([(4, True), (4, False), (5, True)]) == 4.0  # one unsolved item is enough
    assert frontier_level([(4, True), (6, True)]) == 7.0 and frontier_level([]) is None
    assert frontier_counts([(6, [1, 0]), (6, [0, 0]), (7, [1, 0])], 6.0) == (2, 1)
    assert level_counts([2.5, 2.5, 3]) == {2.5: 2, 3: 1}
    assert ran_dry(0.5) is True and ran_dry(0.49) is False


@settings(max_examples=300, deadline=None)
@given(groups, st.integers(1, 6))
def test_a_step_is_dry_exactly_when_none_of_its_groups_is_informative(gs, per_step):
    frac = dry_step_frac(gs, per_step)
    if not gs:
        assert math.isnan(frac)
        return
    steps = [gs[i:i + per_step] for i in range(0, len(gs), per_step)]
    assert frac == pytest.approx(sum(all(max(g) == min(g) for g in s) for s in steps) / len(steps))
    if per_step == 1:  # one group a step: a dry step is a zero-std group
        assert frac == pytest.approx(cur.frac_zero_std(gs))
    elif len(gs) % per_step == 0:  # full steps: a dry step holds per_step zero-std groups
        assert frac <= cur.frac_zero_std(gs) + 1e-12
    # reordering groups inside a step changes nothing
    shuffled = [g for s in steps for g in random.Random(len(gs)).sample(s, len(s))]
    assert dry_step_frac(shuffled, per_step) == pytest.approx(frac)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 30), st.booleans()), min_size=1, max_size=30))
def test_the_frontier_is_the_lowest_level_with_an_unsolved_item(results):
    f = frontier_level(results)
    assert all(ok for lv, ok in results if lv < f)  # everything below it is solved
    if any(not ok for _, ok in results):
        assert any(lv == f and not ok for lv, ok in results)
    else:
        assert f == max(lv for lv, _ in results) + 1


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([None, 3, 4, 5]), st.lists(st.sampled_from([0.0, 1.0]), min_size=1,
                                                                         max_size=4)), max_size=12),
       st.sampled_from([3.0, 4.0, 5.0]))
def test_frontier_counts_are_bounded_by_the_groups_at_it(pairs, frontier):
    at, useful = frontier_counts(pairs, frontier)
    assert 0 <= useful <= at <= len(pairs)
    assert useful == sum(1 for lv, g in pairs if lv == frontier and informative(g))


def _counted(tiny_cfg, epochs=3, **loop):
    return for_domain(tiny_cfg, "count").replace(
        loop={"epochs": epochs, **loop}, eval={"every": 1, "benchmark": "domain"},
        agent={"num_generations": 4})


def _groups_in_order(attempts, epoch):
    """(end level, rewards) per task of the epoch's GRPO batch, in the attempts table's order (the scripted backend
    trains them in batch order, which is the table's)."""
    part = attempts[attempts["epoch"] == epoch]
    out = {}
    for row in part.itertuples():
        level = int(re.search(r"to (\d+)", row.prompt).group(1))  # "Count from a to b.", then the prefilled start
        out.setdefault(row.task_id, (level, []))[1].append(row.reward)
    return list(out.values())


def test_a_counting_run_records_the_instrument_and_a_resume_repeats_it(tiny_cfg, tmp_path, scripted_counter):
    cfg = _counted(tiny_cfg)
    records = [r.to_dict() for r in run(cfg, tmp_path / "r", backend=scripted_counter(), progress=False)]
    baseline = json.loads((tmp_path / "r" / "baseline.json").read_text())
    assert baseline[FRONTIER_KEY] == 6.0  # the scripted agent greedily counts to any end below its skill, 6
    attempts, tasks = read_table(tmp_path / "r", "attempts"), read_table(tmp_path / "r", "tasks")
    for r in records:
        x, e = r["extra"], r["epoch"]
        assert x["dry/frontier_level"] == 5.0 + e  # the previous evaluation's frontier: the skill before the epoch
        assert x[FRONTIER_KEY] == 6.0 + e  # this epoch's evaluation: one step of skill later
        trained = _groups_in_order(attempts, e)
        at = [g for lv, g in trained if lv == x["dry/frontier_level"]]
        assert x["dry/frontier_groups"] == len(at) and x["dry/frontier_informative"] == sum(map(informative, at))
        assert x["dry/frontier_informative"] == x["dry/frontier_groups"]  # at its skill the agent half-solves
        assert x["dry/step_frac"] == pytest.approx(dry_step_frac([g for _, g in trained],
                                                                 cfg.agent.prompts_per_step))
        valid = tasks[(tasks["epoch"] == e) & tasks["valid"]]
        levels = [f["level"] for f in valid["features"]]
        assert x["levels/counts"] == {str(k): v for k, v in level_counts(levels).items()}
        assert sum(x["levels/counts"].values()) == r["n_valid"] and x["levels/max"] == max(levels)
        assert x["features/level"] == pytest.approx(sum(levels) / len(levels))
    assert any(r["extra"]["dry/step_frac"] > 0 for r in records)  # seeds below the skill: some steps carry nothing
    # killed after epoch 2 and resumed: the third record's instrument is the uninterrupted run's
    list(run(cfg.replace(loop={"epochs": 2}), tmp_path / "k", backend=scripted_counter(), progress=False))
    resumed = [r.to_dict() for r in run(cfg, tmp_path / "k", resume=True, backend=scripted_counter(),
                                        progress=False)]
    keys = [k for k in records[2]["extra"] if k.startswith(("dry/", "levels/", "heldout/"))]
    assert len(keys) == 7 and {k: resumed[-1]["extra"][k] for k in keys} == {k: records[2]["extra"][k] for k in keys}


@given(st.lists(st.one_of(st.none(), st.integers(0, 30)), max_size=40), st.one_of(st.none(), st.integers(0, 30)))
def test_the_frontier_share_is_the_share_at_or_above_the_frontier(levels, frontier):
    share = frontier_share(levels, frontier)
    levelled = [lv for lv in levels if lv is not None]
    if frontier is None or not levelled:
        assert share is None
    else:
        assert 0 <= share <= 1 and share == pytest.approx(sum(lv >= frontier for lv in levelled) / len(levelled))
        assert frontier_share(levelled, frontier - 1) >= share  # a lower frontier leaves more to learn


def test_the_supply_instrument_reads_the_untrained_simulators_tasks_against_the_frontier(tiny_cfg, tmp_path,
                                                                                          scripted_counter):
    """Each epoch's ``reference/frontier_share`` is the share of the counterfactual set (the untrained simulator's
    tasks, written in epoch 1) at or above the frontier that epoch trained against; as the agent's frontier
    climbs, the share can only fall (the set is fixed)."""
    cfg = _counted(tiny_cfg, epochs=3, reference_tasks=8)
    records = list(run(cfg, tmp_path / "r", backend=scripted_counter(), progress=False))
    reference = read_table(tmp_path / "r", "reference_tasks")
    levels = [f["level"] for f in reference[reference["valid"]]["features"]]
    shares = [r["reference/frontier_share"] for r in records]
    for r, share in zip(records, shares):
        assert share == pytest.approx(frontier_share(levels, r["dry/frontier_level"]))
    assert shares == sorted(shares, reverse=True)


def test_a_resume_before_the_first_epoch_keeps_the_untrained_agents_frontier(tiny_cfg, tmp_path, scripted_counter):
    out = tmp_path / "r"
    cfg = _counted(tiny_cfg, epochs=1)
    list(run(cfg, out, backend=scripted_counter(), progress=False))
    for name in ("epochs.jsonl", "state.json"):  # as if killed during epoch 1, after baseline.json
        (out / name).unlink()
    (out / "state.json").write_text(json.dumps({"last_complete_epoch": 0, "status": "interrupted"}))
    again = list(run(cfg, out, resume=True, backend=scripted_counter(), progress=False))
    assert again[0].extra["dry/frontier_level"] == 6.0


def test_a_domain_without_levels_records_the_dry_steps_only(tiny_cfg, tmp_path, scripted_backend):
    cfg = tiny_cfg.replace(loop={"epochs": 2}, eval={"every": 1, "benchmark": "domain"},
                           agent={"num_generations": 4})
    list(run(cfg, tmp_path / "r", backend=scripted_backend(num_generations=4), progress=False))
    for r in read_epochs(tmp_path / "r"):
        x = r["extra"]
        assert 0.0 <= x["dry/step_frac"] <= 1.0
        assert not [k for k in x if k.startswith(("dry/frontier", "levels/", "heldout/"))]
    assert FRONTIER_KEY not in json.loads((tmp_path / "r" / "baseline.json").read_text())


def test_every_key_of_a_counting_runs_records_is_documented(tiny_cfg, tmp_path, scripted_counter):
    """docs/run_directory.md names every key a record holds: as `key`, `extra.key`, or a family `prefix/<name>`."""
    from pathlib import Path

    doc = (Path(__file__).resolve().parent.parent / "docs" / "run_directory.md").read_text()
    record = next(run(_counted(tiny_cfg, epochs=1), tmp_path / "r", backend=scripted_counter(), progress=False))
    keys = list(record.to_dict()) + list(record.extra)
    missing = [k for k in keys if f"`{k}`" not in doc and f"`extra.{k}`" not in doc
               and not re.search(rf"{re.escape(k.split('/')[0])}/<\w+>", doc)]
    assert not missing, missing


def test_informative_groups_count_what_a_high_share_of_few_tasks_hides():
    """The comparison's ``informative_groups`` is the share of informative groups × the epoch's GRPO groups; the dry
    table averages it over the second half, and the verdict names an arm with fewer than half of genenv's an epoch
    (online_filter, which trains on the few tasks its screening keeps) even when its steps rarely run dry."""
    import pandas as pd

    from genenv_lab.compare import dry_run_table, verdict
    from genenv_lab.compare.table import COLUMNS, table_rows
    from genenv_lab.core.metrics import CUMULATIVE_AGENT_ROLLOUTS

    def record(epoch, zero, n, dry):
        return EpochRecord(epoch, n, n, 1.0, 0.5, 0.5, 0.5, zero, 0.5, 1.0, n_agent_prompts=n,
                           extra={"dry/step_frac": dry})

    row = table_rows("p:genenv", "genenv", 0, [record(1, 0.75, 48, 0.5)], {})[0]
    assert row["informative_frac"] == 0.25 and row["informative_groups"] == 12

    per_arm = {"genenv": (48, 0.75, 0.1), "static": (48, 0.9, 0.6), "online_filter": (8, 0.5, 0.1)}
    rows = [{"label": f"p:{v}", "variant": v, "seed": s, "epoch": e, "heldout": 0.3, CUMULATIVE_AGENT_ROLLOUTS: 100 * e,
             **table_rows(f"p:{v}", v, s, [record(e, zero, n, dry)], {})[0]}
            for v, (n, zero, dry) in per_arm.items() for s in (0, 1) for e in (1, 2, 3, 4)]
    table = pd.DataFrame(rows, columns=list(COLUMNS))
    dry = dry_run_table(table).set_index("variant")
    assert dry["informative_groups"].round(6).to_dict() == {"genenv": 12.0, "static": 4.8, "online_filter": 4.0}
    line = verdict(table).split("\nDry run: ")[1]
    assert "informative groups 0.10 of all, 4.8 an epoch" in line and "(informative groups 0.25, 12.0 an epoch)" in line
    assert line.endswith("whatever their share: online_filter 4.0.")  # static is the dry line's subject already

    old_table = table.drop(columns=["informative_groups"])
    assert math.isnan(dry_run_table(old_table).set_index("variant").loc["genenv", "informative_groups"])
    old_line = verdict(old_table).split("\nDry run: ")[1]
    assert old_line.endswith("(informative groups 0.25).") and "whatever their share" not in old_line
