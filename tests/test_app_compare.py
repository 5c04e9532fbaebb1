"""Comparisons in the lab: a real comparison folder (``compare_grid`` with the scripted fake backend, ~1 s) read
by ``load_comparison`` and drawn by the pure views; half-finished and corrupt ones; comparison folders kept out of
the runs list; names from the browser validated; the ``/list_comparisons`` endpoint through ``gradio_client``."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
import pytest

from genenv_lab.compare import REPORT_PANELS, collect, compare_grid, variant_entries
from genenv_lab.core.metrics import CUMULATIVE_AGENT_ROLLOUTS, REFERENCE_P_HAT
from genenv_lab.lab import comparisons, views
from genenv_lab.lab.comparisons import comparison_dirs, comparison_fingerprint, load_comparison, resolve_comparison
from genenv_lab.lab.names import LabError
from genenv_lab.lab.runs import discover_runs, is_comparison

from test_app_views import make_run

LABELS = ("tiny:genenv", "tiny:random_env")


def _make_comparison(out: Path, scripted_backend) -> Path:
    entries = variant_entries(["tiny"], ["genenv", "random_env"], epochs=2, reference_tasks=3)
    compare_grid(entries, 2, out, progress=False,
                 backend_factory=lambda cfg: scripted_backend(num_generations=cfg.agent.num_generations))
    return out


@pytest.fixture(scope="module")
def made(tmp_path_factory, scripted_backend) -> Path:
    """One finished comparison (2 configurations × 2 seeds × 2 epochs), copied by the tests that alter it."""
    return _make_comparison(tmp_path_factory.mktemp("made") / "cmp1", scripted_backend)


def _copy(made: Path, dest: Path) -> Path:
    shutil.copytree(made, dest, symlinks=True)
    return dest


def _everything(cmp):
    c = comparisons
    out = (c.comparison_card(cmp), c.comparison_figure(cmp), c.comparison_summary_frame(cmp),
           c.band_residence_frame(cmp), c.comparison_runs_frame(cmp))
    assert isinstance(out[0], str) and isinstance(out[1], go.Figure)
    assert all(isinstance(f, pd.DataFrame) for f in out[2:])
    return out


# ------------------------------------------------------------------------------------------------- a finished one

def test_finished_comparison_reads_like_collect_and_draws(made):
    cmp = load_comparison(made)
    assert (cmp.status, cmp.labels, cmp.seeds, cmp.problems, cmp.missing) == ("finished", LABELS, (0, 1), (), ())
    pd.testing.assert_frame_equal(cmp.table, collect(made))  # the lenient reader agrees with compare.collect
    assert cmp.bands == {label: (0.5, 0.5) for label in LABELS}  # tiny's α and widened band, from the manifest

    card, fig, summary, residence, runs = _everything(cmp)
    assert "cmp1 · ✔ finished" in card and "**4 runs**: 4 finished" in card and "`tiny:random_env`" in card
    assert "missing" not in card
    # report_figure: 12 panels (held-out, tasks consumed, held-out per task, p̂ sim, p̂ untrained sim, valid,
    # held-out per agent rollouts, held-out per completion tokens, dry steps, mean level, task entropy, untrained
    # supply in band) × 2 labels, and two tables: the rollouts to reach, the data efficiency paired by seed
    scatters = [t for t in fig.data if isinstance(t, go.Scatter)]
    tables = [t for t in fig.data if isinstance(t, go.Table)]
    assert len(REPORT_PANELS) == 12
    assert len(scatters) == 12 * 2 and {t.name for t in scatters} == set(LABELS) and len(tables) == 2
    efficiency = [t for t in scatters if t.xaxis == "x3"]
    assert len(efficiency) == 2 and all(list(t.x)[0] == 0 for t in efficiency)  # untrained agent: no task yet
    assert all(list(t.x) == [1, 2] for t in scatters if t.xaxis == "x4")  # p̂: training epochs only
    per_rollout = {t.name: t for t in scatters if t.xaxis == "x7"}  # held-out against cumulative agent rollouts
    means = cmp.table.groupby(["label", "epoch"])[[CUMULATIVE_AGENT_ROLLOUTS, "heldout"]].mean()
    for label in LABELS:
        trace = per_rollout[label]
        assert list(trace.x) == pytest.approx(list(means.loc[label, CUMULATIVE_AGENT_ROLLOUTS]))  # epoch 0 on
        assert list(trace.y) == pytest.approx(list(means.loc[label, "heldout"]))
        assert list(trace.x)[0] == 0 and trace.error_x.array is not None and trace.error_y.array is not None
    assert "tiny:random_env" in tables[0].cells.values[0] and len(tables[0].cells.values[0]) == 1  # one baseline
    assert "rollouts genenv needs" in " ".join(a.text for a in fig.layout.annotations)
    assert "cmp1 · GenEnv and baselines" in fig.layout.title.text and "so far" not in fig.layout.title.text
    titles = [a.text for a in fig.layout.annotations]
    assert "held-out score" in titles and "p̂ on the untrained simulator's tasks (counterfactual)" in titles
    assert all(t.error_y.array is not None for t in scatters)  # ± std over seeds
    assert list(summary["label"]) == list(LABELS) and set(summary["epoch"]) == {2} and set(summary["seeds"]) == {2}
    assert {"heldout_mean", "heldout_std", f"{REFERENCE_P_HAT}_mean", "tasks_consumed_mean"} <= set(summary.columns)
    last = cmp.table[cmp.table["epoch"] == 2].groupby("label")["heldout"].mean()
    assert summary.set_index("label")["heldout_mean"].to_dict() == pytest.approx(last.round(3).to_dict())
    assert list(residence.columns) == comparisons.RESIDENCE_COLUMNS and len(residence) == 4
    assert set(residence["band"]) == {"0.00 – 1.00"} and set(residence["epochs"]) == {2}
    assert len(runs) == 4 and set(runs["status"]) == {"✔ finished"} and set(runs["epochs"]) == {"2 / 2"}


# -------------------------------------------------------------------------------------------- a half-finished one

def test_half_finished_comparison_shows_what_exists_and_names_what_is_missing(made, tmp_path):
    cmp_dir = _copy(made, tmp_path / "half")
    shutil.rmtree(cmp_dir / "runs" / "tiny_random_env-s1")  # not started yet
    in_flight = cmp_dir / "runs" / "tiny_genenv-s1"  # running, epoch 2 written but not committed
    state = json.loads((in_flight / "state.json").read_text())
    (in_flight / "state.json").write_text(json.dumps(state | {"status": "running", "last_complete_epoch": 1,
                                                              "pid": os.getpid()}))
    cmp = load_comparison(cmp_dir)
    assert cmp.status == "running" and [(r.label, r.seed) for r in cmp.missing] == [("tiny:random_env", 1)]
    rows = cmp.table.groupby(["label", "seed"])["epoch"].max().to_dict()
    assert rows == {("tiny:genenv", 0): 2, ("tiny:genenv", 1): 1, ("tiny:random_env", 0): 2}

    card, fig, summary, residence, runs = _everything(cmp)
    assert "half · ● running" in card and "1 run(s) missing" in card and "`runs/tiny_random_env-s1`" in card
    assert "3 of 4 runs so far" in fig.layout.title.text and len(fig.data) == 12 * 2 + 2
    assert summary.set_index("label")[["epoch", "seeds"]].to_dict("index") == {
        "tiny:genenv": {"epoch": 2, "seeds": 1}, "tiny:random_env": {"epoch": 2, "seeds": 1}}
    assert len(residence) == 3
    by_run = runs.set_index("run")
    assert by_run.loc["tiny_random_env-s1", ["status", "epochs", "note"]].tolist() == [
        "? missing", "0 / 2", "not started yet, or deleted"]
    assert by_run.loc["tiny_genenv-s1", "status"] == "● running" and by_run.loc["tiny_genenv-s1", "epochs"] == "1 / 2"

    # the writer dies and nothing else runs: incomplete, still drawn
    (in_flight / "state.json").write_text(json.dumps(state | {"status": "interrupted", "last_complete_epoch": 1}))
    assert load_comparison(cmp_dir).status == "incomplete"

    # only the manifest so far: a message, no error
    shutil.rmtree(cmp_dir / "runs")
    cmp = load_comparison(cmp_dir)
    card, fig, summary, residence, runs = _everything(cmp)
    assert len(cmp.table) == 0 and len(cmp.missing) == 4 and "4 run(s) missing" in card
    assert "nothing to compare yet" in fig.layout.annotations[0].text
    assert len(summary) == 0 and len(residence) == 0 and len(runs) == 4


# -------------------------------------------------------------------------------------------------- corrupt ones

def test_corrupt_comparisons_give_a_message_and_never_raise(made, tmp_path):
    garbage = _copy(made, tmp_path / "garbage")
    (garbage / "manifest.json").write_text("{not json")
    cmp = load_comparison(garbage)
    card, fig, summary, residence, runs = _everything(cmp)
    assert cmp.status == "unreadable" and "manifest.json is unreadable" in card
    assert "manifest.json is unreadable" in fig.layout.annotations[0].text
    assert len(summary) == len(residence) == len(runs) == 0

    (garbage / "manifest.json").write_text(json.dumps({"entries": "nope"}))
    assert "lacks its 'entries' or 'seeds'" in comparisons.comparison_card(load_comparison(garbage))

    # odd entries and seeds are skipped (a seed is never turned into a path), the rest still draws
    manifest = json.loads((made / "manifest.json").read_text())
    manifest["seeds"] = [0, "../../../etc", True]
    manifest["entries"].append({"config": {}})
    (garbage / "manifest.json").write_text(json.dumps(manifest))
    with open(garbage / "runs" / "tiny_genenv-s0" / "epochs.jsonl", "r+") as fh:  # a bad line mid-file
        lines = fh.read().splitlines()
        fh.seek(0)
        fh.write("\n".join([lines[0], "{garbage", *lines[1:]]) + "\n")
    (garbage / "runs" / "tiny_random_env-s0" / "attempts" / "epoch_001.parquet").write_bytes(b"not parquet")
    cmp = load_comparison(garbage)
    card, fig, summary, residence, runs = _everything(cmp)
    assert cmp.seeds == (0,) and cmp.labels == LABELS and len(runs) == 2
    assert any("2 seed(s)" in p for p in cmp.problems) and any("has no label" in p for p in cmp.problems)
    assert any(p.startswith("tiny_genenv-s0: ") and "not valid JSON" in p for p in cmp.problems)
    assert any(p.startswith("tiny_random_env-s0: ") and "attempts table is unreadable" in p for p in cmp.problems)
    assert len(cmp.table) == 2 * 3 and len(fig.data) == 12 * 2 + 2  # both runs, epochs 0-2, still drawn
    assert set(cmp.table.loc[cmp.table["label"] == "tiny:random_env", "tasks_consumed"]) == {0.0}

    assert load_comparison(tmp_path / "gone").status == "missing"


def test_a_run_directory_of_a_comparison_cannot_lead_outside_it(made, tmp_path):
    cmp_dir = _copy(made, tmp_path / "linked")
    outside = tmp_path / "outside"
    shutil.move(cmp_dir / "runs" / "tiny_genenv-s0", outside)
    (cmp_dir / "runs" / "tiny_genenv-s0").symlink_to(outside, target_is_directory=True)
    cmp = load_comparison(cmp_dir)
    refused = [r for r in cmp.runs if r.name == "tiny_genenv-s0"]
    assert refused[0].status == "missing" and "outside" in refused[0].problem
    assert ("tiny:genenv", 0) not in set(zip(cmp.table["label"], cmp.table["seed"]))


# ---------------------------------------------------------------------------------------- the runs folder and names

@pytest.fixture(scope="module")
def runs_root(made, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    make_run(root / "syn", epochs=2)
    _copy(made, root / "cmp1")
    half = _copy(made, root / "half")
    shutil.rmtree(half / "runs" / "tiny_genenv-s1")
    (root / "broken").mkdir()
    (root / "broken" / "manifest.json").write_text("garbage")
    return root


def test_comparison_folders_are_not_runs(runs_root):
    assert {s.name for s in discover_runs(runs_root)} == {"syn"}  # not listed as broken runs
    assert [name for name, _ in comparison_dirs(runs_root)] == ["broken", "cmp1", "half"]
    assert is_comparison(runs_root / "cmp1") and not is_comparison(runs_root / "syn")
    assert "syn" in views.runs_frame(discover_runs(runs_root))["run"].tolist()


def test_comparison_fingerprint_changes_as_runs_appear(made, tmp_path):
    cmp_dir = _copy(made, tmp_path / "fp")
    before = comparison_fingerprint(cmp_dir)
    assert comparison_fingerprint(cmp_dir) == before
    shutil.rmtree(cmp_dir / "runs" / "tiny_genenv-s1")
    assert comparison_fingerprint(cmp_dir) != before


@pytest.mark.parametrize("name", ["../x", "..", ".", "", "/etc", "a/b", ".hidden", None, 3, "cmp1/../..", "~root"])
def test_bad_comparison_names_are_refused(runs_root, name):
    with pytest.raises(LabError):
        resolve_comparison(runs_root, name)


def test_a_run_is_not_a_comparison_and_an_escaping_link_is_refused(runs_root, tmp_path):
    assert resolve_comparison(runs_root, "cmp1") == (runs_root / "cmp1").resolve()
    with pytest.raises(LabError, match="not a comparison"):
        resolve_comparison(runs_root, "syn")
    outside = _copy(runs_root / "cmp1", tmp_path / "elsewhere")
    link = runs_root / "escape"
    link.symlink_to(outside, target_is_directory=True)
    try:
        with pytest.raises(LabError, match="outside"):
            resolve_comparison(runs_root, "escape")
        assert "escape" not in [name for name, _ in comparison_dirs(runs_root)]
    finally:
        link.unlink()


# --------------------------------------------------------------------------------------------------- the endpoint

def test_list_comparisons_through_gradio_client(runs_root):
    pytest.importorskip("gradio", reason="the lab needs the app extra: pip install -e '.[app]'")
    pytest.importorskip("gradio_client", reason="the smoke test needs gradio_client")
    from gradio_client import Client
    from test_app_smoke import free_port, load_app_module

    app = load_app_module()
    demo = app.build_app(runs_root)
    port = free_port()
    app.launch(demo, port=port, prevent_thread_lock=True, quiet=True)
    try:
        client = Client(f"http://127.0.0.1:{port}/", verbose=False)
        assert client.predict(api_name="/list_comparisons") == ["broken", "cmp1", "half"]
        assert [row["run"] for row in client.predict(api_name="/list_runs")] == ["syn"]
        assert "is a comparison, not a run" in client.predict("cmp1", api_name="/run_summary")
        endpoints = client.view_api(return_format="dict", print_info=False)["named_endpoints"]
        assert {"/list_runs", "/run_summary", "/list_comparisons"} <= set(endpoints)
    finally:
        demo.close()
