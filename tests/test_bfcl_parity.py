"""Parity of the default BFCL verdict with the official checker (the ``bfcl-eval`` package), per category.

Runs only where the official package's venv exists: ``$GENENV_LAB_BFCL_PY`` (default ``.venv-bfcl/bin/python``),
created by ``scripts/setup_bfcl_official.sh`` (``scripts/test.sh`` runs it unless GENENV_LAB_SKIP_BFCL_OFFICIAL=1).
The data folder is the one inside the official wheel, which holds every category (live ones included) side by
side; the predictions are built from its answer keys by :mod:`genenv_lab.evaluation.bfcl_probe`. About 270,000
predictions, scored here and officially in about a minute on two cores.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from genenv_lab.evaluation import bfcl
from genenv_lab.evaluation.bfcl_probe import agreement, official_verdicts, probe_predictions
from genenv_lab.evaluation.runner import score_safely

ROOT = Path(__file__).resolve().parents[1]
BFCL_PY = Path(os.environ.get("GENENV_LAB_BFCL_PY", ROOT / ".venv-bfcl" / "bin" / "python"))
DRIVER = ROOT / "tests" / "bfcl_official_driver.py"


def _wheel_data() -> Path | None:
    if os.environ.get("GENENV_LAB_SKIP_BFCL_OFFICIAL") == "1":
        pytest.skip("GENENV_LAB_SKIP_BFCL_OFFICIAL=1")
    if not BFCL_PY.is_file():
        pytest.skip(f"no official BFCL venv at {BFCL_PY} (bash scripts/setup_bfcl_official.sh)")
    out = subprocess.run([str(BFCL_PY), "-c", "import bfcl_eval, pathlib; "
                          "print(pathlib.Path(bfcl_eval.__file__).parent / 'data')"],
                         capture_output=True, text=True, cwd="/")
    if out.returncode != 0:
        pytest.skip(f"the official package does not import: {out.stderr.strip().splitlines()[-1:]}")
    return Path(out.stdout.strip())


@pytest.fixture(scope="module")
def parity(tmp_path_factory):
    data = _wheel_data()
    cats = bfcl.available_categories(data)
    assert set(bfcl.CATEGORIES) <= set(cats), f"the wheel's folder should hold every covered category: {cats}"
    items = {c: bfcl.load_category(data, c) for c in cats}
    by_key = {(c, it.id): it for c in cats for it in items[c]}
    rows = probe_predictions([it for c in cats for it in items[c]])
    ours = [score_safely(bfcl.SPEC, by_key[(r["category"], r["id"])], r["category"], r["prediction"]).correct
            for r in rows]
    theirs = official_verdicts(rows, str(data), str(BFCL_PY), str(DRIVER), str(tmp_path_factory.mktemp("parity")))
    return cats, agreement(rows, ours, theirs)


def test_every_category_agrees_with_the_official_checker(parity):
    cats, table = parity
    rates = {c: round(table[c]["rate"], 5) for c in cats}
    worst = table["all"]["disagreements"][:5]
    assert table["all"]["rate"] >= 0.999, (rates, json.dumps(worst, indent=1)[:3000])
    assert all(table[c]["rate"] >= 0.995 for c in cats), (rates, json.dumps(worst, indent=1)[:3000])
    # the probes exercise both verdicts in every category (a table of all-False would agree trivially)
    for c in cats:
        assert 0 < table[c]["official_correct"] < table[c]["n"], c


def test_the_probes_cover_every_category_with_many_predictions(parity):
    cats, table = parity
    assert table["all"]["n"] > 200_000
    assert all(table[c]["n"] >= 300 for c in cats)
