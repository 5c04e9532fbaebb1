"""The comparison machinery: grid runs, resume, table, summary, report (tiny preset: numbers mean nothing)."""

import subprocess
import sys

import pandas as pd
import pytest

from genenv_lab.compare import (band_residence, collect, compare_grid, summarise, sweep_entries,
                                variant_entries)

from fakes import ScriptedBackend


def test_variant_entries_and_validation():
    entries = variant_entries(["tiny"], ["genenv", "offline_teacher"], teacher="tiny", epochs=2)
    labels = [label for label, _ in entries]
    assert labels == ["tiny:genenv", "tiny:offline_teacher_x1.8", "tiny:offline_teacher_x3.3"]
    assert all(cfg.loop.eval_every == 1 and cfg.loop.eval_benchmark == "domain" for _, cfg in entries)
    with pytest.raises(ValueError, match="teacher"):
        variant_entries(["tiny"], ["offline_teacher"])
    tools = variant_entries(["tiny"], ["genenv"], domain="tools", data_dir="/data")[0][1].loop  # BFCL simple
    assert (tools.eval_benchmark, tools.eval_category, tools.domain) == ("bfcl", "simple_python", "tools")
    assert tools.eval_data_dir == "/data"
    sweep = sweep_entries("tiny", alphas=[0.3, 0.5], shapes=["gaussian", "azr"])
    assert len(sweep) == 4 and {c.curriculum.shape for _, c in sweep} == {"gaussian", "azr"}


def test_grid_with_fake_backend_collects_summarises_and_resumes(tmp_path):
    entries = variant_entries(["tiny"], ["genenv", "random_env", "static"], epochs=3, reference_tasks=4)
    calls = []

    def factory(cfg):
        calls.append(cfg.loop.variant)
        return ScriptedBackend(num_generations=cfg.agent.num_generations)

    table = compare_grid(entries, 2, tmp_path, progress=False, backend_factory=factory)
    assert len(table) == 3 * 2 * (3 + 1) and len(calls) == 6  # epochs 1-3 and the untrained agent's epoch 0
    assert table["heldout"].notna().all()
    start, trained = table[table["epoch"] == 0], table[table["epoch"] > 0]
    assert (start["tasks_consumed"] == 0).all() and start["p_hat_mean"].isna().all() and len(start) == 6
    assert trained["p_hat_reference"].notna().all()
    assert (table.groupby(["label", "seed"])["tasks_consumed"].apply(lambda s: s.is_monotonic_increasing)).all()
    summary = summarise(table)
    assert {"heldout_mean", "heldout_std", "p_hat_reference_mean"} <= set(summary.columns)
    assert (summary["heldout_count"] == 2).all()
    for name in ("comparison.csv", "comparison.parquet", "summary.csv", "band_residence.csv", "report.html"):
        assert (tmp_path / name).is_file()
    assert "plotly" in (tmp_path / "report.html").read_text()[:5000].lower()
    # finished runs are skipped the second time
    calls.clear()
    again = compare_grid(entries, 2, tmp_path, progress=False, backend_factory=factory)
    assert calls == [] and len(again) == len(table)
    residence = band_residence(table)
    assert {"label", "seed", "entered_at_epoch", "stayed", "epochs_in_band"} <= set(residence.columns)
    assert len(residence) == 6
    assert len(pd.read_csv(tmp_path / "band_residence.csv")) == 6


def test_band_residence_judges_each_label_against_its_own_band():
    table = pd.DataFrame({"label": ["a"] * 3 + ["b"] * 3, "seed": [0] * 6, "epoch": [1, 2, 3] * 2,
                          "p_hat_mean": [0.9, 0.5, 0.45, 0.9, 0.3, float("nan")]})
    res = band_residence(table, bands={"b": (0.3, 0.05)}).set_index("label")
    assert res.loc["a", "entered_at_epoch"] == 2 and res.loc["a", "stayed"] and res.loc["a", "epochs_in_band"] == 2
    assert (res.loc["a", "alpha"], res.loc["a", "k_min"]) == (0.5, 0.1)  # the defaults
    # b enters its own band (0.25–0.35) at epoch 2 but the unmeasured epoch 3 (NaN) counts as outside
    assert res.loc["b", "entered_at_epoch"] == 2 and not res.loc["b", "stayed"] and res.loc["b", "alpha"] == 0.3
    never = band_residence(table, alpha=0.1, k_min=0.05)
    assert never["entered_at_epoch"].isna().all() and not never["stayed"].any()


def test_compare_cli_end_to_end_on_tiny(tmp_path):
    out = tmp_path / "cmp"
    proc = subprocess.run([sys.executable, "-m", "genenv_lab.cli", "compare", "--presets", "tiny", "--variants",
                           "genenv", "random_env", "--seeds", "1", "--epochs", "2", "--reference-tasks", "3",
                           "--eval-limit", "4", "--out", str(out)], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    table = pd.read_csv(out / "comparison.csv")
    assert sorted(table["label"].unique()) == ["tiny:genenv", "tiny:random_env"]
    assert len(table) == 4 + 2 and table["heldout"].between(0, 1).all()
    assert sorted(table["epoch"].unique()) == [0, 1, 2]
    assert collect(out).shape[0] == 4 + 2  # the untrained agent's epoch 0 of each run too


def test_missing_held_out_benchmark_data_fails_before_any_model_loads(tmp_path):
    out = tmp_path / "cmp"
    proc = subprocess.run([sys.executable, "-m", "genenv_lab.cli", "compare", "--presets", "tiny", "--variants",
                           "genenv", "--domain", "tools", "--seeds", "1", "--data-dir", str(tmp_path / "nowhere"),
                           "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "held-out data missing" in proc.stdout and "nowhere" in proc.stdout and "gorilla" in proc.stdout
    assert not out.exists()
