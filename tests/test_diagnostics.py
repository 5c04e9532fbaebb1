"""The in-band diagnostics: hand-computed values on a small table, and a run directory read back."""

import json

import pandas as pd
import pytest

from genenv_lab.rundir.band_ceiling import band_ceiling, main, run_band_ceiling
from genenv_lab.lab.runs import load_run

from test_app_views import make_run


def _task(epoch, level, p_hat, valid=True, as_json=False):
    features = {"level": level} if level is not None else {}
    return {"epoch": epoch, "valid": valid, "p_hat": p_hat, "in_band": p_hat is not None and abs(p_hat - 0.5) <= 0.125,
            "features": json.dumps(features) if as_json else features}


def test_band_ceiling_hand_values():
    tasks = pd.DataFrame([_task(1, 5, 1.0), _task(1, 5, 1.0, as_json=True), _task(1, 9, 0.5), _task(1, 9, 0.5),
                          _task(1, 12, None, valid=False), _task(1, None, 0.5),  # rejected; no level: left out
                          _task(2, 7, 0.25), _task(2, 8, 0.625)])
    table = band_ceiling(tasks, num_generations=8, alpha=0.5, k_min=0.125)
    one, two = table.iloc[0], table.iloc[1]
    at_half = 182 / 256  # P(3 ≤ Binomial(8, 0.5) ≤ 5)
    assert (one["n"], one["measured"], one["near_alpha"], one["spread"]) == (4, 0.5, 0.5, 2.0)
    assert one["expected"] == pytest.approx(at_half / 2) and one["best"] == pytest.approx(at_half)
    assert two["measured"] == 0.5 and two["best"] < at_half and list(table["epoch"]) == [1, 2]


def test_run_band_ceiling_reads_a_run_directory(tmp_path, capsys):
    run_dir = make_run(tmp_path / "runs" / "syn", epochs=3)
    table = run_band_ceiling(run_dir, feature="n_operands")
    records = load_run(run_dir).records
    assert list(table["epoch"]) == [1, 2, 3]
    assert list(table["measured"]) == pytest.approx([r["in_band_frac"] for r in records])
    assert ((table["best"] >= table["expected"] - 1e-12) & (table["best"] <= 1)).all()
    assert main([str(run_dir), "--feature", "n_operands"]) == 0 and "second half" in capsys.readouterr().out
    with pytest.raises(FileNotFoundError, match="not a run directory"):
        run_band_ceiling(tmp_path)
