"""No path deletes committed work: ``run --resume`` and ``compare`` continue from what a folder has committed or refuse
in one line, whatever was removed or damaged (reliability round 4, failures 1 and 2; scripted fake backend)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from genenv_lab.compare import compare_grid, run_dir_for, variant_entries
from genenv_lab.coevolution.session import run
from genenv_lab.rundir.layout import RunDirError
from genenv_lab.rundir.read import read_epochs

EPOCHS = 2
COMMITTED = ("epochs.jsonl", "tasks", "attempts", "adapters", "reference_tasks.parquet")
"""What an epoch commits (files under these names): never to be reduced by a resume or a comparison."""


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _committed(snapshot: dict[str, bytes]) -> dict[str, bytes]:
    return {k: v for k, v in snapshot.items() if k.split("/", 1)[0] in COMMITTED}


@pytest.fixture(scope="module")
def finished(tmp_path_factory, scripted_backend):
    """A finished two-epoch comparison of one arm and one seed (so also a finished run), adapters saved."""
    out = tmp_path_factory.mktemp("finished") / "cmp"
    entries = variant_entries(["tiny"], ["genenv"], epochs=EPOCHS, reference_tasks=4)
    compare_grid(entries, [0], out, progress=False, backend_factory=lambda c: scripted_backend(4))
    return out, entries


def _copy(finished, tmp_path: Path) -> tuple[Path, Path, list]:
    out, entries = finished
    copy = tmp_path / "cmp"
    shutil.copytree(out, copy)
    return copy, run_dir_for(copy, entries[0][0], 0), entries


@pytest.fixture(scope="module")
def compare_again(scripted_backend):
    """``compare_again(out, entries)``: the comparison of ``entries`` in ``out`` on the scripted fake, seed 0."""

    def compare_again(out: Path, entries) -> None:
        compare_grid(entries, [0], out, progress=False, backend_factory=lambda c: scripted_backend(4))

    return compare_again


@pytest.fixture(scope="module")
def resume_run(scripted_backend):
    """``resume_run(run_dir, entries)``: ``run --resume`` of the first entry's run, seed 0, on the scripted fake."""

    def resume_run(run_dir: Path, entries) -> None:
        cfg = entries[0][1].replace(loop={"seed": 0})
        list(run(cfg, run_dir, resume=True, backend=scripted_backend(4), progress=False))

    return resume_run


def test_compare_refuses_a_run_whose_state_json_is_missing_and_deletes_nothing(finished, tmp_path, compare_again):
    """Round 4, failure 1: ``compare`` deleted and retrained a run folder whose state.json was missing."""
    out, run_dir, entries = _copy(finished, tmp_path)
    (run_dir / "state.json").unlink()
    before = _snapshot(run_dir)
    with pytest.raises(RunDirError, match="no state.json but holds committed epochs"):
        compare_again(out, entries)
    assert _snapshot(run_dir) == before


@pytest.mark.parametrize("state", ["{}", '{"status": "finished", "pid": 1}', '{"last_complete_epoch": null}'])
def test_resume_refuses_a_state_json_that_does_not_say_what_is_committed(finished, tmp_path, state, resume_run):
    """Round 4, failure 2: ``--resume`` on a state.json without ``last_complete_epoch`` (or ``{}``) discarded every
    committed epoch; it is refused in one line and nothing changes."""
    _, run_dir, entries = _copy(finished, tmp_path)
    (run_dir / "state.json").write_text(state)
    before = _snapshot(run_dir)
    with pytest.raises(RunDirError, match="last_complete_epoch"):
        resume_run(run_dir, entries)
    assert _snapshot(run_dir) == before


def test_resume_refuses_a_state_behind_more_than_the_epoch_in_flight(finished, tmp_path, resume_run):
    """Round 5: ``"last_complete_epoch": 0`` over two committed epochs retrained both, exit 0. A kill leaves at most
    the epoch in flight past state.json; a state further behind is damaged, refused, and nothing changes."""
    _, run_dir, entries = _copy(finished, tmp_path)
    state = json.loads((run_dir / "state.json").read_text())
    (run_dir / "state.json").write_text(json.dumps(state | {"last_complete_epoch": EPOCHS - 2}))
    before = _snapshot(run_dir)
    with pytest.raises(RunDirError, match=f"says {EPOCHS - 2} epoch.*holds epochs up to {EPOCHS}"):
        resume_run(run_dir, entries)
    assert _snapshot(run_dir) == before


def test_an_epochs_file_that_repeats_an_epoch_is_refused(finished, tmp_path, resume_run):
    """Round 5: line 2's epoch set to 1 was resumed over (the records ran 1, 1, ...); the records must run 1, 2, 3
    once each."""
    _, run_dir, entries = _copy(finished, tmp_path)
    lines = (run_dir / "epochs.jsonl").read_text().splitlines()
    lines[1] = json.dumps(json.loads(lines[1]) | {"epoch": 1})
    (run_dir / "epochs.jsonl").write_text("\n".join(lines) + "\n")
    before = _snapshot(run_dir)
    with pytest.raises(RunDirError, match="record 2 is epoch 1, not 2"):
        resume_run(run_dir, entries)
    assert _snapshot(run_dir) == before


DAMAGE = st.sampled_from(["remove", "empty", "garbage", "truncate"])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(choice=st.data())
def test_any_removed_or_corrupted_files_are_continued_from_or_refused_never_reduced(finished, tmp_path_factory,
                                                                                     choice, compare_again, resume_run):
    """For any subset of a finished run's files removed or damaged, ``--resume`` and ``compare`` each either
    continue (the run is finished: nothing to add) or refuse with a RunDirError or a one-line OSError/ValueError, and
    every committed file still there before is there after, byte for byte."""
    out, run_dir, entries = _copy(finished, tmp_path_factory.mktemp("damaged"))
    files = sorted(str(p.relative_to(run_dir)) for p in run_dir.rglob("*") if p.is_file())
    picked = choice.draw(st.lists(st.sampled_from(files), min_size=1, max_size=4, unique=True), label="files")
    for name in picked:
        path, how = run_dir / name, choice.draw(DAMAGE, label=name)
        data = path.read_bytes()
        if how == "remove":
            path.unlink()
        else:
            path.write_bytes({"empty": b"", "garbage": b"\x00\xff{not json", "truncate": data[: len(data) // 2]}[how])
    for operation in (resume_run, lambda _, e: compare_again(out, e)):
        before = _committed(_snapshot(run_dir))
        try:
            operation(run_dir, entries)
        except (RunDirError, OSError, ValueError) as exc:
            assert "\n" not in str(exc).strip(), f"not one line: {exc}"
        after = _committed(_snapshot(run_dir))
        lost = {k for k in before if after.get(k) != before[k]}
        assert not lost, f"{operation} changed or removed committed files {sorted(lost)} after damage to {picked}"
        if (run_dir / "epochs.jsonl").is_file() and "epochs.jsonl" not in picked:
            assert len(read_epochs(run_dir)) == EPOCHS


def test_the_lab_lists_every_run_beside_a_symlink_loop_and_a_huge_pid(finished, tmp_path):
    """Round 4, failures 3 and 4: a symlink loop under ``--runs`` (and inside a comparison's runs folder) and a
    ``running`` state with a pid past what the system's pid type holds each emptied the lab; now the other runs and
    comparisons are listed and those folders are skipped or shown as not running."""
    import json

    from genenv_lab.lab.comparisons import comparison_dirs, load_comparison
    from genenv_lab.lab.runs import discover_runs, folder_fingerprint
    from genenv_lab.lab.status import pid_alive

    runs = tmp_path / "runs"
    out, run_dir, _ = _copy(finished, runs)
    shutil.copytree(run_dir, runs / "good")
    shutil.copytree(run_dir, runs / "huge-pid")
    state = json.loads((runs / "huge-pid" / "state.json").read_text())
    (runs / "huge-pid" / "state.json").write_text(json.dumps({**state, "status": "running", "pid": 2**31}))
    (runs / "loop").symlink_to("loop")
    (out / "runs" / "tiny_genenv-s1").symlink_to("tiny_genenv-s1")
    assert not pid_alive(2**31) and not pid_alive(2**70)
    listed = {s.name: s.status for s in discover_runs(runs)}
    assert set(listed) == {"good", "huge-pid"} and listed["huge-pid"] != "running"
    assert folder_fingerprint(runs)
    assert [name for name, _ in comparison_dirs(runs)] == ["cmp"]
    assert load_comparison(out).runs


def test_a_refused_comparison_changes_nothing_and_reused_runs_must_match(finished, tmp_path, compare_again):
    """Round 4, failure 8: a second ``compare`` on the same folder had rewritten ``manifest.json`` before it was
    refused, and finished runs were reused whatever their configuration or epochs. Now the comparison holds a lock
    before it writes anything, and a reused run must have this arm's configuration and no more epochs than asked."""
    import fcntl
    import os

    out, _, entries = _copy(finished, tmp_path)
    manifest = (out / "manifest.json").read_bytes()
    fd = os.open(out / ".compare.lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)  # another comparison is running on this folder
    try:
        other = variant_entries(["tiny"], ["genenv", "random_env"], epochs=EPOCHS, reference_tasks=4)
        with pytest.raises(RunDirError, match="another comparison"):
            compare_again(out, other)
    finally:
        os.close(fd)
    assert (out / "manifest.json").read_bytes() == manifest
    fewer = variant_entries(["tiny"], ["genenv"], epochs=1, reference_tasks=4)
    with pytest.raises(RunDirError, match="holds 2 epochs, more than the 1 asked"):
        compare_again(out, fewer)
    changed = variant_entries(["tiny"], ["genenv"], epochs=EPOCHS, reference_tasks=2)
    with pytest.raises(RunDirError, match="another configuration"):
        compare_again(out, changed)
    assert (out / "manifest.json").read_bytes() == manifest
    compare_again(out, entries)  # the same comparison again: every run finished, reused, the report rewritten
    assert (out / "manifest.json").read_bytes() == manifest


def test_a_resume_that_cannot_start_leaves_a_finished_run_finished(finished, tmp_path, scripted_backend):
    """Round 3's L4, still open in round 4: with ``events.log`` made a folder, ``--resume`` failed in one line but
    left ``state.json`` ``running`` with a dead pid; it goes back to what it was."""
    _, run_dir, entries = _copy(finished, tmp_path)
    state = (run_dir / "state.json").read_bytes()
    (run_dir / "events.log").unlink()
    (run_dir / "events.log").mkdir()
    cfg = entries[0][1].replace(loop={"seed": 0, "epochs": EPOCHS + 1})
    with pytest.raises(IsADirectoryError):
        list(run(cfg, run_dir, resume=True, backend=scripted_backend(4), progress=False))
    assert (run_dir / "state.json").read_bytes() == state


@pytest.mark.parametrize("line", ["5", '{"epoch": "2"}', '{"epoch": true}', "[1]"])
def test_an_epochs_line_that_is_no_epoch_record_is_one_refusal(finished, tmp_path, line, resume_run):
    """Round 3's L1, still open: an ``epochs.jsonl`` line ``5`` or ``{"epoch": "2"}`` raised a TypeError traceback on
    ``--resume``; now a RunDirError naming the line, and nothing changes."""
    _, run_dir, entries = _copy(finished, tmp_path)
    lines = (run_dir / "epochs.jsonl").read_text().splitlines()
    (run_dir / "epochs.jsonl").write_text("\n".join([line] + lines) + "\n")
    before = _snapshot(run_dir)
    with pytest.raises(RunDirError, match="epochs.jsonl:1 is not an epoch record"):
        resume_run(run_dir, entries)
    assert _committed(_snapshot(run_dir)) == _committed(before)
