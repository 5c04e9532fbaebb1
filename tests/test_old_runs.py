"""Runs written by an older genenv_lab: the committed comparison in ``tests/data/old_comparison`` (written by the code
of 2026-12-03, before ``epochs.jsonl`` took one name per metric and before fields moved section in ``config.json``).
No reader knows the old format: ``read_epochs``, the lab and a resume refuse it in one line that names
``genenv-lab upgrade``; after ``genenv-lab upgrade`` the same runs read, open in the lab and report in ``compare``
with their values, under the keys a new run writes; the copy kept beside each run is the run as it was."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from genenv_lab.cli import commands as cli
from genenv_lab.core.metrics import REFERENCE_P_HAT
from genenv_lab.rundir.layout import RunDirError
from genenv_lab.rundir.read import read_epochs
from genenv_lab.rundir.upgrade import BACKUP_SUFFIX, RENAMED, TOP_LEVEL_OLD, upgrade_path, upgrade_run

OLD = Path(__file__).parent / "data" / "old_comparison"
RUNS = ("tiny_genenv-s0", "tiny_static-s0")
COMPARE = ["compare", "--presets", "tiny", "--variants", "genenv", "static", "--seeds", "1", "--epochs", "2",
           "--reference-tasks", "4"]
"""The command that wrote the committed comparison (its README)."""


@pytest.fixture
def old(tmp_path) -> Path:
    """A copy of the committed comparison (tests never write into the repository)."""
    return Path(shutil.copytree(OLD, tmp_path / "old"))


@pytest.fixture
def upgraded(old) -> Path:
    lines = upgrade_path(old)
    said = "upgraded (2 epoch record(s) rewritten in current keys, config.json's moved fields)"
    assert len(lines) == 2 and all(said in x for x in lines)
    return old


def raw_records(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "epochs.jsonl").read_text().splitlines()]


def old_keys(record: dict) -> set[str]:
    return ({k for k in record if k in TOP_LEVEL_OLD}
            | {k for k in record.get("extra", {}) if k in RENAMED and k not in TOP_LEVEL_OLD})


def test_the_committed_runs_are_in_the_old_names():
    """The fixture is what it says: every renamed key is in it, so the tests below read old names."""
    seen = set().union(*(old_keys(r) for run in RUNS for r in raw_records(OLD / "runs" / run)))
    assert seen == set(RENAMED)


def test_an_old_run_is_refused_in_one_line_that_names_the_upgrade(old):
    from genenv_lab.lab.runs import load_run

    with pytest.raises(RunDirError, match="genenv-lab upgrade RUN_DIR") as said:
        read_epochs(old / "runs" / RUNS[0])
    assert "\n" not in str(said.value)
    run = load_run(old / "runs" / RUNS[0])
    assert any("genenv-lab upgrade" in p for p in run.problems)


def test_upgrade_renames_every_key_keeps_every_value_and_keeps_the_run_as_it_was(upgraded):
    for name in RUNS:
        raw = raw_records(OLD / "runs" / name)
        read = read_epochs(upgraded / "runs" / name)
        assert [r.epoch for r in read] == [1, 2]
        for before, after in zip(raw, read):
            after = after.to_dict()
            assert not old_keys(after)
            for key, new in RENAMED.items():
                if key in TOP_LEVEL_OLD:  # written twice: the namespaced value was already there and is kept
                    assert after["extra"][new] == before["extra"][new]
                elif key in before["extra"]:
                    assert after["extra"][new] == before["extra"][key], key
            kept = {k: v for k, v in before.items() if k not in TOP_LEVEL_OLD and k != "extra"}
            assert {k: after[k] for k in kept} == kept  # the rest of the record is untouched
        backup = upgraded / "runs" / f".{name}{BACKUP_SUFFIX}"
        assert {p.relative_to(backup): p.read_bytes() for p in backup.rglob("*") if p.is_file()} == \
            {p.relative_to(OLD / "runs" / name): p.read_bytes() for p in (OLD / "runs" / name).rglob("*")
             if p.is_file()}
    again = upgrade_path(upgraded)
    assert all("already in this version's format; nothing changed" in x for x in again)  # the copies are skipped


def test_upgrade_refuses_a_run_being_written_and_a_taken_backup_place(old, tmp_path):
    import fcntl
    import os

    run_dir = old / "runs" / RUNS[0]
    fd = os.open(run_dir / ".writer.lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        with pytest.raises(RunDirError, match="being written"):
            upgrade_run(run_dir)
    finally:
        os.close(fd)
    (old / "runs" / f".{RUNS[0]}{BACKUP_SUFFIX}").mkdir()
    before = (run_dir / "epochs.jsonl").read_bytes()
    with pytest.raises(RunDirError, match="move it away first"):
        upgrade_run(run_dir)
    assert (run_dir / "epochs.jsonl").read_bytes() == before
    with pytest.raises(RunDirError, match="neither a run directory"):
        upgrade_path(tmp_path / "empty")


def test_the_cli_upgrades_a_folder(old, capsys):
    assert cli.main(["upgrade", str(old)]) == 0
    out = capsys.readouterr().out
    assert out.count("upgraded") == 2 and len(read_epochs(old / "runs" / RUNS[1])) == 2


def test_the_lab_opens_an_upgraded_run_and_draws_its_renamed_curves(upgraded):
    from genenv_lab.lab import figures
    from genenv_lab.lab.glance import story_frame
    from genenv_lab.lab.runs import load_run

    run = load_run(upgraded / "runs" / "tiny_genenv-s0")
    assert not run.problems and len(run.records) == 2
    raw = raw_records(OLD / "runs" / "tiny_genenv-s0")
    frame = figures.curves_frame(run)
    trained = frame[frame["epoch"] > 0].reset_index(drop=True)
    assert list(trained["rwr/kl"]) == pytest.approx([r["env_kl"] for r in raw])  # an update ran in both epochs
    assert list(trained["reference/p_hat"]) == pytest.approx([r["extra"]["p_hat_reference"] for r in raw])
    story = story_frame(run)
    assert list(story[REFERENCE_P_HAT].iloc[1:]) == pytest.approx([r["extra"]["p_hat_reference"] for r in raw])


def test_the_lab_opens_an_upgraded_comparison(upgraded):
    from genenv_lab.lab.comparisons import comparison_figure, load_comparison

    cmp = load_comparison(upgraded)
    assert cmp.problems == () and not cmp.missing
    trained = cmp.table[cmp.table["epoch"] > 0]
    assert len(trained) == 4 and trained[REFERENCE_P_HAT].notna().all()
    assert comparison_figure(cmp).data


def test_compare_reads_the_upgraded_runs_as_finished_and_reports_on_them(upgraded, capsys):
    """The same ``compare`` command over the upgraded folder finds its runs finished (nothing is rerun: their files
    stay as they were) and writes the report from their records."""
    before = {p: p.read_bytes() for p in (upgraded / "runs").rglob("*") if p.is_file()}
    assert cli.main([*COMPARE, "--out", str(upgraded)]) == 0
    assert {p: p.read_bytes() for p in (upgraded / "runs").rglob("*") if p.is_file()} == before
    printed = capsys.readouterr().out
    assert "The curriculum " in printed and "Dry run: static ran dry" in (upgraded / "verdict.txt").read_text()
    import pandas as pd

    table = pd.read_csv(upgraded / "comparison.csv")
    trained = table[table["epoch"] > 0].sort_values(["variant", "epoch"])
    raw = {v: raw_records(OLD / "runs" / f"tiny_{v}-s0") for v in ("genenv", "static")}
    expected = [r["extra"]["p_hat_reference"] for v in ("genenv", "static") for r in raw[v]]
    assert list(trained[REFERENCE_P_HAT]) == pytest.approx(expected)


def test_a_new_tiny_run_writes_the_keys_of_an_upgraded_one(upgraded, tmp_path):
    """The same command today writes records whose keys are the upgraded old records' keys, none more or fewer."""
    assert cli.main([*COMPARE, "--out", str(tmp_path / "new")]) == 0
    for name in RUNS:
        for o, n in zip(raw_records(upgraded / "runs" / name), raw_records(tmp_path / "new" / "runs" / name),
                        strict=True):
            assert set(n) == set(o) and set(n["extra"]) == set(o["extra"]), name


def test_resuming_an_old_run_is_refused_until_it_is_upgraded(old):
    """A resume reads the run's records and configuration: an old run stops there, nothing written, with the way
    out in the message."""
    from genenv_lab.coevolution.session import run
    from genenv_lab.config import preset

    out = old / "runs" / "tiny_genenv-s0"
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    with pytest.raises(Exception, match="genenv-lab upgrade"):
        list(run(preset("tiny").replace(loop={"epochs": 3}), out, resume=True, progress=False))
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file() and p.name != ".writer.lock"} == \
        {p: b for p, b in before.items() if p.name != ".writer.lock"}


def test_a_run_of_the_single_file_table_layout_is_refused_then_split_by_the_upgrade(old):
    """Runs written before per-epoch table files kept ``tasks.parquet`` and ``attempts.parquet`` whole: the reader
    refuses them in one line naming the upgrade, which splits them by epoch with every row kept."""
    import pandas as pd

    from genenv_lab.rundir.read import read_table

    run_dir = old / "runs" / RUNS[0]
    before = {name: read_table(OLD / "runs" / RUNS[0], name) for name in ("tasks", "attempts")}
    for name in ("tasks", "attempts"):
        frames = [pd.read_parquet(p) for p in sorted((run_dir / name).glob("epoch_*.parquet"))]
        pd.concat(frames, ignore_index=True).to_parquet(run_dir / f"{name}.parquet", index=False)
        shutil.rmtree(run_dir / name)
    with pytest.raises(RunDirError, match="genenv-lab upgrade"):
        read_table(run_dir, "tasks")
    assert "tasks.parquet split per epoch" in upgrade_run(run_dir)
    for name, frame in before.items():
        pd.testing.assert_frame_equal(read_table(run_dir, name), frame)
        assert not (run_dir / f"{name}.parquet").exists()


def test_the_upgrade_computes_the_diversity_an_old_run_did_not_log(upgraded):
    """``diversity/entropy`` is computed from each epoch's tasks table, as a run logs it today; an epoch that wrote
    no tasks (``static`` after it drew its fixed set) gets null, as a new one does."""
    from genenv_lab.core.diversity import entropy_bits
    from genenv_lab.rundir.read import read_table

    assert not any("diversity/entropy" in r["extra"] for run in RUNS for r in raw_records(OLD / "runs" / run))
    empty = 0
    for run in RUNS:
        tasks = read_table(upgraded / "runs" / run, "tasks")
        for record in raw_records(upgraded / "runs" / run):
            valid = tasks.loc[(tasks["epoch"] == record["epoch"]) & tasks["valid"].astype(bool), "question"]
            got = record["extra"]["diversity/entropy"]
            assert got == pytest.approx(entropy_bits(valid)) if len(valid) else got is None
            empty += not len(valid)
    assert empty  # the fixture has such an epoch


def test_a_damaged_tasks_table_stops_the_upgrade_in_one_line_with_nothing_changed(old):
    """The diversity an old record lacks is read from its tasks table: a table that cannot be read stops the
    upgrade with its path, before anything is written or copied."""
    run_dir = old / "runs" / RUNS[0]
    table = sorted((run_dir / "tasks").iterdir())[0]
    table.write_bytes(b"PAR1 not a parquet file")
    before = {p: p.read_bytes() for p in run_dir.rglob("*") if p.is_file()}
    with pytest.raises(RunDirError, match=f"{table.name} cannot be read .*nothing was changed"):
        upgrade_run(run_dir)
    assert {p: p.read_bytes() for p in run_dir.rglob("*") if p.is_file()} == before
    assert not run_dir.with_name(f".{run_dir.name}{BACKUP_SUFFIX}").exists()


def _whole_tables(run_dir: Path) -> None:
    """Rewrite a run's per-epoch tables as the single files runs wrote before per-epoch table files."""
    import pandas as pd

    for name in ("tasks", "attempts"):
        frames = [pd.read_parquet(p) for p in sorted((run_dir / name).glob("epoch_*.parquet"))]
        pd.concat(frames, ignore_index=True).to_parquet(run_dir / f"{name}.parquet", index=False)
        shutil.rmtree(run_dir / name)


def _files(run_dir: Path) -> dict[str, bytes]:
    return {str(p.relative_to(run_dir)): p.read_bytes() for p in sorted(run_dir.rglob("*")) if p.is_file()}


def test_an_upgrade_is_all_or_nothing(old):
    """Round 6, UP1: a damaged whole table stops the upgrade before anything is written (no copy, the run as it
    was, and the rerun after the table is mended upgrades it); an upgrade killed at each of its writes is finished
    by the rerun, which puts the run back from the copy and upgrades it: the result is the uninterrupted upgrade's."""
    import os

    from genenv_lab.rundir import upgrade as up
    from genenv_lab.rundir.read import read_table

    run_dir = old / "runs" / RUNS[0]
    _whole_tables(run_dir)
    pristine = _files(run_dir)
    attempts = (run_dir / "attempts.parquet").read_bytes()
    (run_dir / "attempts.parquet").write_bytes(attempts[: len(attempts) // 2])
    damaged = _files(run_dir)
    with pytest.raises(RunDirError, match="attempts.parquet cannot be read .*nothing was changed"):
        upgrade_run(run_dir)
    assert _files(run_dir) == damaged and not run_dir.with_name(f".{run_dir.name}{BACKUP_SUFFIX}").exists()
    (run_dir / "attempts.parquet").write_bytes(attempts)
    reference = old / "reference"
    shutil.copytree(run_dir, reference)
    upgrade_run(reference)
    want = _files(reference)
    real = {name: getattr(os, name) for name in ("replace", "rename", "unlink")}
    def dying(fn, calls, n):
        def call(*args, **kwargs):
            calls[0] += 1
            if calls[0] == n:
                raise SystemExit("killed")
            return fn(*args, **kwargs)
        return call

    for n in range(1, 16):  # die at the n-th write of the upgrade (an atomic file's rename, a rename, a removal)
        calls = [0]

        here = old / f"kill-{n}"
        shutil.copytree(run_dir, here)
        assert _files(here) == pristine
        for name, fn in real.items():
            setattr(os, name, dying(fn, calls, n))
        try:
            up.upgrade_run(here)
            finished = True
        except SystemExit:
            finished = False
        finally:
            for name, fn in real.items():
                setattr(os, name, fn)
        if not finished:
            said = upgrade_run(here)
            assert "upgraded" in said or "put back" in said, said
        assert _files(here) == want, f"killed at write {n}"
        assert not (here / up.UPGRADING).exists()
        pd_equal = read_table(here, "attempts")
        assert len(pd_equal) == len(read_table(reference, "attempts"))
        shutil.rmtree(here.with_name(f".{here.name}{BACKUP_SUFFIX}"))


def test_the_upgrade_refuses_a_folder_that_is_not_a_genenv_run_and_drops_no_field(tmp_path):
    """Round 6, UP2: another project's folder with a config.json is refused, nothing written; a moved field with
    nowhere to go stays where it is."""
    from genenv_lab.config.spellings import upgrade_config_dict

    foreign = tmp_path / "f2"
    foreign.mkdir()
    text = json.dumps({"loop": {"eval_every": 3, "lr": 0.1}, "model": {"world_seed": 5}, "eval": "fast"})
    (foreign / "config.json").write_text(text)
    with pytest.raises(RunDirError, match="does not read as a genenv run .*nothing was changed"):
        upgrade_path(foreign)
    assert (foreign / "config.json").read_text() == text and sorted(p.name for p in tmp_path.iterdir()) == ["f2"]
    assert upgrade_config_dict(json.loads(text))["loop"]["eval_every"] == 3
