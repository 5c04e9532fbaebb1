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
    sweep = sweep_entries("tiny", alphas=[0.3, 0.5], shapes=["gaussian", "azr"])
    assert len(sweep) == 4 and {c.curriculum.shape for _, c in sweep} == {"gaussian", "azr"}


def test_grid_with_fake_backend_collects_summarises_and_resumes(tmp_path):
    entries = variant_entries(["tiny"], ["genenv", "random_env", "static"], epochs=3, reference_tasks=4)
    calls = []

    def factory(cfg):
        calls.append(cfg.loop.variant)
        return ScriptedBackend(num_generations=cfg.agent.num_generations)

    table = compare_grid(entries, 2, tmp_path, progress=False, backend_factory=factory)
    assert len(table) == 3 * 2 * 3 and len(calls) == 6
    assert table["heldout"].notna().all() and table["p_hat_reference"].notna().all()
    assert (table.groupby(["label", "seed"])["tasks_consumed"].apply(lambda s: s.is_monotonic_increasing)).all()
    summary = summarise(table)
    assert {"heldout_mean", "heldout_std", "p_hat_reference_mean"} <= set(summary.columns)
    assert (summary["heldout_count"] == 2).all()
    for name in ("comparison.csv", "comparison.parquet", "summary.csv", "report.html"):
        assert (tmp_path / name).is_file()
    assert "plotly" in (tmp_path / "report.html").read_text()[:5000].lower()
    # finished runs are skipped the second time
    calls.clear()
    again = compare_grid(entries, 2, tmp_path, progress=False, backend_factory=factory)
    assert calls == [] and len(again) == len(table)
    residence = band_residence(table)
    assert set(residence.columns) == {"label", "seed", "entered_at_epoch", "stayed"} and len(residence) == 6


def test_compare_cli_end_to_end_on_tiny(tmp_path):
    out = tmp_path / "cmp"
    proc = subprocess.run([sys.executable, "-m", "genenv_lab.cli", "compare", "--presets", "tiny", "--variants",
                           "genenv", "random_env", "--seeds", "1", "--epochs", "2", "--reference-tasks", "3",
                           "--eval-limit", "4", "--out", str(out)], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    table = pd.read_csv(out / "comparison.csv")
    assert sorted(table["label"].unique()) == ["tiny:genenv", "tiny:random_env"]
    assert len(table) == 4 and table["heldout"].between(0, 1).all()
    assert collect(out).shape[0] == 4
