"""`genenv-lab eval` and evaluation during a run (eval.every), on the offline benchmark copy."""

import json
import subprocess
import sys

import pytest

from conftest import SHARED

BENCH = SHARED / "benchmarks"
pytestmark = pytest.mark.skipif(not BENCH.is_dir(), reason=f"offline benchmark data not found at {BENCH}")
CLI = [sys.executable, "-m", "genenv_lab.cli"]


def test_gold_round_trip_through_the_cli_scores_100(tmp_path):
    gold = tmp_path / "gold.jsonl"
    data = str(BENCH / "bfcl")
    base = CLI + ["eval", "--benchmark", "bfcl", "--category", "parallel", "--limit", "20", "--data-dir", data]
    assert subprocess.run(base + ["--gold", str(gold)], capture_output=True, text=True).returncode == 0
    proc = subprocess.run(base + ["--predictions", str(gold), "--out", str(tmp_path / "o")], capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["value"] == 1.0 and summary["n"] == 20
    assert len((tmp_path / "o" / "results.jsonl").read_text().splitlines()) == 20


def test_model_eval_writes_predictions_results_and_summary(tmp_path):
    proc = subprocess.run(CLI + ["eval", "--benchmark", "bamboogle", "--model", "tiny", "--limit", "3", "--data-dir",
                                 str(BENCH / "bamboogle"), "--max-new-tokens", "8", "--out", str(tmp_path / "o")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    preds = [json.loads(line) for line in (tmp_path / "o" / "predictions.jsonl").read_text().splitlines()]
    assert len(preds) == 3 and all(set(p) == {"id", "prediction"} for p in preds)
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["n"] == 3 and 0.0 <= summary["value"] <= 1.0


def test_missing_data_is_a_clear_error(tmp_path):
    proc = subprocess.run(CLI + ["eval", "--benchmark", "bamboogle", "--predictions", str(tmp_path / "p.jsonl"),
                                 "--data-dir", str(tmp_path / "nowhere")], capture_output=True, text=True)
    assert proc.returncode in (1, 2) and "nowhere" in proc.stdout


def test_eval_every_logs_scores_in_epochs_jsonl(tiny_cfg, tmp_path):
    from genenv_lab.coevolution.session import run
    from genenv_lab.rundir.read import read_baseline, read_epochs

    cfg = tiny_cfg.replace(loop={"epochs": 2}, eval={"every": 2, "limit": 2, "data_dir": str(BENCH / "bamboogle"),
                                                     "max_new_tokens": 4})
    list(run(cfg, tmp_path / "r", progress=False))
    records = read_epochs(tmp_path / "r")
    assert "eval/bamboogle" not in records[0]["extra"]
    assert 0.0 <= records[1]["extra"]["eval/bamboogle"] <= 1.0
    assert (tmp_path / "r" / "eval" / "epoch_002" / "summary.json").is_file()
    # the untrained agent is evaluated once before epoch 1 (the curve's epoch 0)
    baseline = read_baseline(tmp_path / "r")
    assert set(baseline) == {"eval/bamboogle", "eval/bamboogle_f1"} and 0.0 <= baseline["eval/bamboogle"] <= 1.0
    assert (tmp_path / "r" / "eval" / "epoch_000" / "summary.json").is_file()
    # resuming with more epochs does not evaluate the untrained agent again
    stamp = (tmp_path / "r" / "baseline.json").stat().st_mtime_ns
    list(run(cfg.replace(loop={"epochs": 3}), tmp_path / "r", resume=True, progress=False))
    assert (tmp_path / "r" / "baseline.json").stat().st_mtime_ns == stamp and len(read_epochs(tmp_path / "r")) == 3


def test_prompts_longer_than_the_context_are_counted_not_crashed(tmp_path):
    """TravelPlanner's reference information exceeds the tiny model's 1,024-token context."""
    proc = subprocess.run(CLI + ["eval", "--benchmark", "travelplanner", "--category", "train", "--model", "tiny",
                                 "--limit", "2", "--max-new-tokens", "8", "--data-dir", str(BENCH / "travelplanner"),
                                 "--out", str(tmp_path / "o")], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["n"] == 2 and summary["n_prompt_longer_than_context"] + summary["n_predictions"] == 2


def test_a_baseline_score_that_is_not_a_number_is_left_out_not_fatal(tiny_cfg, tmp_path):
    from genenv_lab.rundir.write import RunWriter
    from genenv_lab.rundir.read import read_baseline

    writer = RunWriter(tmp_path / "r", tiny_cfg)
    writer.write_baseline({"eval/bfcl": float("nan"), "eval/domain": 0.25})
    assert read_baseline(tmp_path / "r") == {"eval/domain": 0.25}
    assert "left out: eval/bfcl" in (tmp_path / "r" / "events.log").read_text()


def test_a_run_whose_held_out_data_is_missing_fails_before_its_directory_exists(tiny_cfg, tmp_path):
    from genenv_lab.evaluation.common import BenchmarkDataMissing
    from genenv_lab.coevolution.session import run

    cfg = tiny_cfg.replace(eval={"every": 1, "benchmark": "bamboogle", "data_dir": str(tmp_path / "nowhere")})
    with pytest.raises(BenchmarkDataMissing, match="nowhere"):
        next(run(cfg, tmp_path / "r", progress=False))
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("value, message", [("0", "below 1"), ("32769", "above 32768"), ("1e9", "not an integer")])
def test_eval_generation_budget_is_bounded_on_the_command_line(value, message, capsys):
    from genenv_lab.cli.commands import build_parser

    with pytest.raises(SystemExit):
        build_parser().parse_args(["eval", "--benchmark", "bamboogle", "--gold", "x", "--max-new-tokens", value])
    assert message in capsys.readouterr().err
    args = build_parser().parse_args(["eval", "--benchmark", "bamboogle", "--gold", "x", "--max-new-tokens", "32768"])
    assert args.max_new_tokens == 32768


@pytest.mark.parametrize("category, message", [
    ("{}", "category '{}' is not available"),  # round 4, L3: stored, then a failure at the first evaluation
    ("level-9", "category 'level-9' is not available"),
])
def test_a_held_out_category_the_data_lacks_is_refused_before_the_run_folder(category, message, tmp_path, capsys):
    from genenv_lab.cli.commands import main

    out = tmp_path / "run"
    assert main(["run", "--preset", "tiny", "--eval.every", "1", "--eval.benchmark", "bamboogle",
                 "--eval.data_dir", str(BENCH / "bamboogle"), "--eval.category", category,
                 "--out", str(out)]) == 1
    assert not out.exists()
    printed = " ".join(capsys.readouterr().out.split())
    assert message in printed and "available: [" in printed


def test_a_category_for_the_domains_own_held_out_set_is_refused():
    from genenv_lab.config import ConfigError, preset

    with pytest.raises(ConfigError, match="EvalConfig.category.*has no categories"):
        preset("tiny").replace(eval={"benchmark": "domain", "category": "simple"})


def test_a_budget_no_prompt_leaves_room_for_is_said_as_such(tmp_path):
    """Round 5: with every item's prompt too long for ``--max-new-tokens`` in the model's context, ``eval`` said
    that no prediction id matched any item (pointing at the id formats). Like any item too long, they are counted
    and scored 0, and the budget is named as the cause."""
    out = tmp_path / "o"
    proc = subprocess.run([sys.executable, "-m", "genenv_lab.cli", "eval", "--benchmark", "bamboogle", "--model",
                           "tiny", "--limit", "3", "--max-new-tokens", "1000", "--data-dir", str(BENCH / "bamboogle"),
                           "--out", str(out)], capture_output=True, text=True, timeout=300)
    said = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode == 0 and "leaves room for 1000 new tokens" in said and "3 of 3 too long" in said, said
    assert "no prediction id matches" not in said and "Traceback" not in said
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n"] == 3 and summary["n_prompt_longer_than_context"] == 3 and summary["value"] == 0
