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

from genenv_lab.evaluation import bfcl, bfcl_multi_turn as mt, bfcl_multi_turn_probe
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
    cats = [c for c in bfcl.available_categories(data) if not mt.is_multi_turn(c)]
    single = [c for c in bfcl.CATEGORIES if not mt.is_multi_turn(c)]
    assert set(single) <= set(cats), f"the wheel's folder should hold every covered category: {cats}"
    items = {c: bfcl.load_category(data, c) for c in cats}
    flat = [it for c in cats for it in items[c]]
    return cats, _agreement(flat, probe_predictions(flat), data, tmp_path_factory.mktemp("parity"))


def _agreement(items: list, rows: list[dict], data: Path, work: Path) -> dict:
    """Each probe row scored here and by the official package, compared per category."""
    by_key = {(it.category, it.id): it for it in items}
    ours = [score_safely(bfcl.SPEC, by_key[(r["category"], r["id"])], r["category"], r["prediction"]).correct
            for r in rows]
    return agreement(rows, ours, official_verdicts(rows, str(data), str(BFCL_PY), str(DRIVER), str(work)))


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


@pytest.fixture(scope="module")
def multi_turn_parity(tmp_path_factory):
    data = _wheel_data()
    if not mt.available():
        pytest.skip(f"bfcl-eval is not installed in this venv ({mt.INSTALL})")
    items = [it for c in mt.CATEGORIES for it in bfcl.load_category(data, c)]
    rows = bfcl_multi_turn_probe.probe_predictions(items)
    return rows, _agreement(items, rows, data, tmp_path_factory.mktemp("mt"))


def test_multi_turn_verdicts_agree_with_the_official_multi_turn_checker(multi_turn_parity):
    rows, table = multi_turn_parity
    assert table["all"]["n"] >= 5000
    assert table["all"]["rate"] >= 0.999, table["all"]["disagreements"][:5]
    for c in mt.CATEGORIES:
        assert table[c]["rate"] >= 0.995, (c, table[c]["disagreements"][:5])
        assert table[c]["official_errors"] == 0
        # neither side is trivially one verdict: the mutations make both right and wrong predictions
        assert 0.2 * table[c]["n"] < table[c]["official_correct"] < 0.8 * table[c]["n"]
    assert set(r["kind"] for r in rows) == set(bfcl_multi_turn_probe.MUTATIONS)


def test_call_strings_are_upstreams_byte_for_byte():
    """The call strings rendered from decoded replies (which the response check compares through their results)
    equal upstream's ``default_decode_execute_prompting`` on replies with every value shape its writer handles."""
    _wheel_data()
    replies = ["[cd(folder='document'), ls(a=True)]", "```\nmv(source='a b.txt', destination=\"x'y\")\n```",
               "[f(x=-1.5, y=[1, 'two', None], z=(1, 2), w={'k': 3, 'j': [4]})]", "[f(v={'g': {'a': 1}})]",
               "[f(v={'a': {}}, s='It\\'s')]", "[g(n=2**3, m='a' + 'b', c=1+2j)]", "[h(x=foo, y=bar(1))]",
               "[k(x=1, **rest)]", "[p.q(r=1)]"]
    code = ("import json, sys; from bfcl_eval.model_handler.utils import default_decode_execute_prompting as d\n"
            "out = []\nfor r in json.load(sys.stdin):\n"
            "    try: out.append(d(r))\n    except Exception as e: out.append(None)\nprint(json.dumps(out))")
    proc = subprocess.run([str(BFCL_PY), "-c", code], input=json.dumps(replies), capture_output=True, text=True,
                          cwd="/", check=True)
    theirs = json.loads(proc.stdout)
    ours = []
    for r in replies:
        try:
            ours.append(mt.decode_step(r))
        except Exception:  # noqa: BLE001 - a failed decoding on both sides
            ours.append(None)
    assert ours == theirs
