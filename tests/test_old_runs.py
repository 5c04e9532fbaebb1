"""Runs written before the metric renames still open: the committed comparison in ``tests/data/old_comparison``
(written by the code of 2026-12-03, before ``epochs.jsonl`` took one name per metric) reads under the current names in
``read_epochs``, the lab and ``compare``; a new tiny run writes the same keys under the new names and nothing else
changed; an old run resumed continues in the new names with its values kept."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from genenv_lab.cli import commands as cli
from genenv_lab.rundir.metrics import RENAMED, TOP_LEVEL_OLD
from genenv_lab.rundir.read import read_epochs

OLD = Path(__file__).parent / "data" / "old_comparison"
RUNS = ("tiny_genenv-s0", "tiny_static-s0")
COMPARE = ["compare", "--presets", "tiny", "--variants", "genenv", "static", "--seeds", "1", "--epochs", "2",
           "--reference-tasks", "4"]
"""The command that wrote the committed comparison (its README)."""


@pytest.fixture
def old(tmp_path) -> Path:
    """A copy of the committed comparison (tests never write into the repository)."""
    return Path(shutil.copytree(OLD, tmp_path / "old"))


def raw_records(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "epochs.jsonl").read_text().splitlines()]


def old_keys(record: dict) -> set[str]:
    return ({k for k in record if k in TOP_LEVEL_OLD}
            | {k for k in record.get("extra", {}) if k in RENAMED and k not in TOP_LEVEL_OLD})


def test_the_committed_runs_are_in_the_old_names():
    """The fixture is what it says: every renamed key is in it, so the tests below read old names."""
    seen = set().union(*(old_keys(r) for run in RUNS for r in raw_records(OLD / "runs" / run)))
    assert seen == set(RENAMED)


def test_read_epochs_gives_an_old_run_in_the_current_names_with_its_values(old):
    for run in RUNS:
        raw, read = raw_records(old / "runs" / run), read_epochs(old / "runs" / run)
        assert [r["epoch"] for r in read] == [1, 2]
        for before, after in zip(raw, read):
            assert not old_keys(after)
            for name, new in RENAMED.items():
                if name in TOP_LEVEL_OLD:  # written twice: the namespaced value was already there and is kept
                    assert after["extra"][new] == before["extra"][new]
                elif name in before["extra"]:
                    assert after["extra"][new] == before["extra"][name], name
            kept = {k: v for k, v in before.items() if k not in TOP_LEVEL_OLD and k != "extra"}
            assert {k: after[k] for k in kept} == kept  # the rest of the record is untouched


def test_the_lab_opens_an_old_run_and_draws_its_renamed_curves(old):
    from genenv_lab.lab import figures
    from genenv_lab.lab.glance import story_frame
    from genenv_lab.lab.runs import load_run

    run = load_run(old / "runs" / "tiny_genenv-s0")
    assert not run.problems and len(run.records) == 2
    raw = raw_records(old / "runs" / "tiny_genenv-s0")
    frame = figures.curves_frame(run)
    trained = frame[frame["epoch"] > 0].reset_index(drop=True)
    assert list(trained["rwr/kl"]) == pytest.approx([r["env_kl"] for r in raw])  # an update ran in both epochs
    assert list(trained["reference/p_hat"]) == pytest.approx([r["extra"]["p_hat_reference"] for r in raw])
    drawn = {key for t in figures.curves_figure([run]).data for key in ("rwr/kl", "reference/p_hat", "fresh/p_hat_gap")
             if f"{key} = " in (t.hovertemplate or "") and any(y is not None for y in t.y)}
    assert drawn == {"rwr/kl", "reference/p_hat", "fresh/p_hat_gap"}  # each renamed curve is drawn with numbers
    story = story_frame(run)
    assert list(story["p_hat_reference"].iloc[1:]) == pytest.approx([r["extra"]["p_hat_reference"] for r in raw])


def test_the_lab_reads_a_damaged_old_run_under_the_current_names_too(old):
    """A bad line sends the lab to its lenient reader; the records it keeps are renamed as read_epochs renames them."""
    from genenv_lab.lab.runs import load_run

    path = old / "runs" / "tiny_genenv-s0" / "epochs.jsonl"
    raw = raw_records(old / "runs" / "tiny_genenv-s0")
    path.write_text("{not json\n" + path.read_text())
    run = load_run(old / "runs" / "tiny_genenv-s0")
    assert run.problems and len(run.records) == 2
    for before, after in zip(raw, run.records):
        assert not old_keys(after) and after["extra"]["reference/p_hat"] == before["extra"]["p_hat_reference"]


def test_the_lab_opens_an_old_comparison(old):
    from genenv_lab.lab.comparisons import comparison_figure, load_comparison

    cmp = load_comparison(old)
    assert cmp.problems == () and not cmp.missing
    trained = cmp.table[cmp.table["epoch"] > 0]
    assert len(trained) == 4 and trained["p_hat_reference"].notna().all()
    assert comparison_figure(cmp).data


def test_compare_reads_the_old_runs_as_finished_and_reports_on_them(old, capsys):
    """The same ``compare`` command over the old folder finds its runs finished (nothing is rerun: their files stay
    as they were) and writes the report from their records, the old names read as the new."""
    before = {p: p.read_bytes() for p in (old / "runs").rglob("*") if p.is_file()}
    assert cli.main([*COMPARE, "--out", str(old)]) == 0
    assert {p: p.read_bytes() for p in (old / "runs").rglob("*") if p.is_file()} == before
    printed = capsys.readouterr().out
    assert "The curriculum " in printed and "Dry run: static ran dry" in (old / "verdict.txt").read_text()
    import pandas as pd

    table = pd.read_csv(old / "comparison.csv")
    trained = table[table["epoch"] > 0].sort_values(["variant", "epoch"])
    raw = {v: raw_records(old / "runs" / f"tiny_{v}-s0") for v in ("genenv", "static")}
    expected = [r["extra"]["p_hat_reference"] for v in ("genenv", "static") for r in raw[v]]
    assert list(trained["p_hat_reference"]) == pytest.approx(expected)


def test_a_new_tiny_run_writes_the_same_keys_under_the_new_names(tmp_path):
    """The same command today writes records whose keys are the old records' keys renamed, none more or fewer."""
    assert cli.main([*COMPARE, "--out", str(tmp_path / "new")]) == 0
    for run in RUNS:
        old_records = read_epochs(OLD / "runs" / run)  # renamed by the reader
        new_raw = raw_records(tmp_path / "new" / "runs" / run)
        for o, n in zip(old_records, new_raw, strict=True):
            assert set(n) == set(o) and set(n["extra"]) == set(o["extra"]), run
            assert not old_keys(n)


def test_an_old_run_resumed_goes_on_in_the_new_names(tmp_path):
    """A run of the old layout, resumed for one more epoch: its committed records are rewritten in the new names
    with their values, and the new epoch is written in them too."""
    from genenv_lab.config import preset
    from genenv_lab.coevolution.loop import run

    cfg = preset("tiny").replace(loop={"epochs": 2, "reference_tasks": 2})
    out = tmp_path / "r"
    list(run(cfg, out, progress=False))
    inverse = {new: old for old, new in RENAMED.items()}
    raw = raw_records(out)
    spelled_old = []
    for r in raw:  # as the code of 2026-12-03 wrote it: the four top-level copies, the six loose extras
        extra = {inverse.get(k, k) if inverse.get(k) not in TOP_LEVEL_OLD else k: v for k, v in r["extra"].items()}
        spelled_old.append(r | {"env_kl": r["extra"]["rwr/kl"] if r["extra"]["rwr/ran"] else 0.0,
                                "n_env_steps": int(r["extra"]["rwr/steps"]), "env_loss": r["extra"]["rwr/loss"],
                                "agent_loss": r["extra"]["grpo/loss"], "extra": extra})
    (out / "epochs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in spelled_old))
    list(run(cfg.replace(loop={"epochs": 3}), out, resume=True, progress=False))
    resumed = raw_records(out)
    assert [r["epoch"] for r in resumed] == [1, 2, 3]
    assert not any(old_keys(r) for r in resumed)
    assert resumed[:2] == raw  # the values the run wrote, back under the names it writes now
    assert math.isfinite(resumed[2]["extra"]["reference/p_hat"])
