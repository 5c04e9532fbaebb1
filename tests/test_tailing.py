"""Reading a live run's epochs.jsonl from a cursor (genenv_lab.rundir.read.read_epochs with ``since``, as the lab's
genenv_lab.lab.tailing keeps the cursors) equals reading it whole."""

from __future__ import annotations

import json
import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from genenv_lab.core.types import EpochRecord
from genenv_lab.lab import tailing
from genenv_lab.rundir.layout import EPOCHS, RunDirError
from genenv_lab.rundir.read import read_epochs


def _line(epoch: int, wall_s: float = 0.0, p_hat_mean: float = 0.5, pad: str = "") -> str:
    """One epoch record's line (a pad makes it longer)."""
    record = EpochRecord(epoch, 1, 1, 1.0, p_hat_mean, 0.5, 0.5, 0.0, 0.5, wall_s,
                         reject_reasons={pad: 1} if pad else {})
    return json.dumps(record.to_dict()) + "\n"


def _both(run):
    try:
        want = tuple(read_epochs(run))
    except RunDirError:
        want = "error"
    try:
        got = tailing.read_epochs_appended(run)
    except RunDirError:
        got = "error"
    return want, got


OPS = st.one_of(
    st.tuples(st.just("append"), st.integers(1, 3)),  # whole epoch lines
    st.tuples(st.just("torn"), st.integers(1, 30)),  # a line's first bytes, no newline
    st.tuples(st.just("finish"), st.just(0)),  # the torn line's rest and its newline
    st.tuples(st.just("garbage"), st.just(0)),  # a whole line that is no JSON
    st.tuples(st.just("cut"), st.integers(0, 200)),  # truncate to n bytes
    st.tuples(st.just("rewrite"), st.integers(0, 5)),  # same inode, same length region, new text
    st.tuples(st.just("blank"), st.just(0)),
    st.tuples(st.just("redo"), st.integers(0, 9)),  # a resume: the last line cut, that epoch written again
    st.tuples(st.just("poke"), st.integers(0, 50)),  # round 5: one digit in the middle changed, same length
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(OPS, min_size=1, max_size=12))
def test_reading_what_was_appended_equals_reading_the_whole_file(tmp_path_factory, ops):
    """Over appends, torn writes and their completion, garbage lines, truncations, rewrites in place (a middle
    record's digits changed at the same length included) and a resume's cut-and-rewrite, the incremental reader
    answers what read_epochs answers of the file as it is."""
    _run_ops(tmp_path_factory.mktemp("run"), ops)


def _run_ops(run, ops):
    path = run / EPOCHS
    path.write_text("")
    epoch, pending = 0, ""
    for op, n in ops:
        if op == "append":
            with path.open("a") as f:
                for _ in range(n):
                    epoch += 1
                    f.write(_line(epoch, wall_s=epoch * 0.5))
        elif op == "torn":
            epoch += 1
            pending = _line(epoch, pad="x" * n)
            cut = len(pending) // 2
            with path.open("a") as f:
                f.write(pending[:cut])
            pending = pending[cut:]
        elif op == "finish" and pending:
            with path.open("a") as f:
                f.write(pending)
            pending = ""
        elif op == "garbage":
            with path.open("a") as f:
                f.write("{not json\n")
        elif op == "cut":
            os.truncate(path, min(n, path.stat().st_size))
        elif op == "rewrite":
            text = path.read_text()
            with path.open("r+") as f:  # same file, same size: one record's numbers changed in place
                f.write(text.replace('"wall_s": ', '"wall_s": -', 1)[:len(text)])
        elif op == "redo":
            text = path.read_text()
            cut = text.rstrip("\n").rfind("\n") + 1
            os.truncate(path, len(text[:cut].encode()))
            with path.open("a") as f:
                f.write(_line(max(epoch, 1), wall_s=n + 0.25))
        elif op == "poke":
            data = bytearray(path.read_bytes())
            digits = [i for i, b in enumerate(data) if chr(b).isdigit()]
            if digits:
                i = digits[n % len(digits)]
                data[i] = ord("7") if data[i] != ord("7") else ord("3")
                with path.open("r+b") as f:  # in place: same inode, same length
                    f.write(bytes(data))
        elif op == "blank":
            with path.open("a") as f:
                f.write("\n")
        want, got = _both(run)
        assert got == want, (op, n, path.read_text())


def test_a_live_runs_long_epochs_file_is_parsed_only_where_it_grew(tmp_path, monkeypatch):
    """Round 4, failure 9 (the rest): a run being written with a long epochs.jsonl was re-parsed whole whenever it
    changed (70 MB: 12 s per refresh). After the first read, a refresh parses the appended line alone."""
    import genenv_lab.rundir.read as runread
    from genenv_lab.lab.runs import discover_runs, load_run

    run = tmp_path / "runs" / "live"
    run.mkdir(parents=True)
    (run / "state.json").write_text(json.dumps({"status": "running", "last_complete_epoch": 20000, "pid": 0}))
    with (run / EPOCHS).open("w") as f:
        for epoch in range(1, 20001):
            f.write(_line(epoch, p_hat_mean=0.5))
    assert discover_runs(tmp_path / "runs")[0].epochs_done == 20000
    parsed = []
    real = runread.loads_json
    monkeypatch.setattr(runread, "loads_json",  # the epoch lines parsed (state.json goes through it too)
                        lambda text: (parsed.append(text) if str(text).startswith('{"epoch"') else None, real(text))[1])
    with (run / EPOCHS).open("a") as f:
        f.write(_line(20001, p_hat_mean=0.6))
    (run / "state.json").write_text(json.dumps({"status": "running", "last_complete_epoch": 20001, "pid": 0}))
    assert discover_runs(tmp_path / "runs")[0].epochs_done == 20001
    assert len(parsed) == 1
    assert load_run(run).records[-1].p_hat_mean == 0.6 and len(parsed) == 1


def test_many_live_runs_read_in_turn_stay_kept_within_the_budget(tmp_path, monkeypatch):
    """Round 5: with more live runs than the reader kept (16), each refresh re-parsed every file. What is kept is
    bounded by bytes, and a new file evicts only idle ones, so runs read in turn do not push each other out: the
    ones kept stay kept and parse only their appended line."""
    import genenv_lab.rundir.read as runread

    runs = []
    for k in range(20):
        run = tmp_path / f"r{k}"
        run.mkdir()
        with (run / EPOCHS).open("w") as f:
            for epoch in range(1, 201):
                f.write(_line(epoch))
        runs.append(run)
    size = (runs[0] / EPOCHS).stat().st_size
    monkeypatch.setattr(tailing, "KEPT_BYTES", size * 12 + 100)  # room for 12 of the 20
    monkeypatch.setattr(tailing, "_KEPT", {})
    for run in runs:
        assert len(tailing.read_epochs_appended(run)) == 200
    assert len(tailing._KEPT) == 12
    parsed = []
    real = runread.loads_json
    monkeypatch.setattr(runread, "loads_json", lambda text: (parsed.append(text), real(text))[1])
    for run in runs:  # a refresh after each run's next epoch
        with (run / EPOCHS).open("a") as f:
            f.write(_line(201))
        assert len(tailing.read_epochs_appended(run)) == 201
    assert len(parsed) == 12 * 1 + 8 * 201  # the kept twelve parse one line each; the others their whole file
