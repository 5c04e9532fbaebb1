"""tools/run_length.py: the training-side figures a run length is chosen on (pre-registration 6), on run
directories written here with known tasks, and the rule (examples and a Hypothesis property)."""

import json

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tools.run_length import figures, main, meets_rule, valid_tasks


def write_run(path, rows):
    """A run directory whose tasks/epoch_NNN.parquet hold ``rows`` of (epoch, level, p̂, valid)."""
    (path / "tasks").mkdir(parents=True)
    frame = pd.DataFrame([{"epoch": e, "valid": v, "features": json.dumps({"level": lvl}), "p_hat": p}
                          for e, lvl, p, v in rows])
    for epoch, part in frame.groupby("epoch"):
        part.to_parquet(path / "tasks" / f"epoch_{epoch:03d}.parquet")
    return path


def climbing_run(path, epochs=24, stop_at=None):
    """Each epoch: three solved tasks at level 6 + epoch//4 (capped at ``stop_at``), three unsolved three levels above,
    and an invalid generation that must be ignored."""
    rows = []
    for e in range(1, epochs + 1):
        top = 6 + e // 4 if stop_at is None else min(6 + e // 4, stop_at)
        rows += [(e, top, 0.75, True)] * 3 + [(e, top + 3, 0.125, True)] * 3 + [(e, 30, 1.0, False)]
    return write_run(path, rows)


def test_figures_read_the_climb_and_the_frontier(tmp_path):
    tasks = valid_tasks(climbing_run(tmp_path / "r"))
    assert len(tasks) == 24 * 6 and tasks["level"].max() == 15
    got = figures(tasks, 24, above=9, window=8)
    # last third: epochs 17-24, solved levels 10-12 and unsolved 13-15
    assert got["level"] == pytest.approx(sum(6 + e // 4 + 1.5 for e in range(17, 25)) / 8)
    assert got["frontier"] == 12 and got["rise"] == 2  # epochs 17-24 solve up to 12, epochs 9-16 up to 10
    assert got["epochs"] == 24


def test_the_rule_picks_the_first_length_where_the_frontier_stops_rising(tmp_path, capsys):
    runs = [str(climbing_run(tmp_path / f"s{i}", epochs=48, stop_at=13)) for i in range(4)]
    # the frontier reaches 13 at epoch 28 and stays: the first length whose previous window saw it too is 40
    assert main(runs + ["--candidates", "24", "32", "40", "48"]) == 40
    out = capsys.readouterr().out
    assert "run length by the rule: 40 epochs" in out


def test_without_a_candidate_meeting_the_rule_the_longest_is_chosen(tmp_path, capsys):
    runs = [str(climbing_run(tmp_path / f"s{i}", epochs=24)) for i in range(2)]
    assert main(runs + ["--candidates", "16", "24", "32"]) == 32
    assert "(a run has fewer epochs)" in capsys.readouterr().out


def test_a_folder_without_tasks_is_a_clear_error(tmp_path):
    with pytest.raises(SystemExit, match="no tasks/epoch"):
        valid_tasks(tmp_path)


@given(st.lists(st.tuples(st.floats(3, 24), st.floats(-3, 5)), min_size=1, max_size=8),
       st.floats(3, 24), st.floats(0.1, 3))
def test_the_rule_needs_both_the_climb_and_a_levelled_frontier(rows, above, levelled):
    frame = pd.DataFrame(rows, columns=["level", "rise"])
    met = meets_rule(frame, above, levelled)
    if met:
        assert frame["level"].mean() > above and frame["rise"].mean() < levelled
        assert (frame["level"] > above).sum() >= 0.75 * len(frame)
    if (frame["level"] <= above).all() or frame["rise"].min() >= levelled:
        assert not met
