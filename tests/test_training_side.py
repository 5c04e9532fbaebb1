"""tools/training_side.py: the per-epoch training-side table and the per-task p̂ spread (``--tasks-from``), on a
run written here by the scripted backend; nothing read from held-out items."""

import pytest

from genenv_lab.coevolution.session import run
from genenv_lab.rundir.read import read_table
from tools.training_side import COLUMNS, HELD_OUT, SUMMARY, main, summary, task_spread


def test_the_spread_counts_the_valid_measured_tasks_of_the_late_epochs(tiny_cfg, tmp_path, scripted_backend, capsys):
    cfg = tiny_cfg.replace(loop={"epochs": 3}, curriculum={"k_min": 0.25}, agent={"num_generations": 4})
    out = tmp_path / "r"
    list(run(cfg, out, backend=scripted_backend(num_generations=4), progress=False))
    tasks = read_table(out, "tasks")
    late = tasks[(tasks["epoch"] >= 2) & tasks["valid"]]["p_hat"].dropna()
    assert len(late) > 0
    spread = task_spread(out, 2)
    assert spread["n"] == len(late)
    assert spread["at 0"] + spread["between"] + spread["at 1"] == pytest.approx(1.0)
    assert spread["in band"] == sum(abs(p - 0.5) <= 0.25 + 1e-9 for p in late) / len(late)
    assert spread["in band"] <= spread["between"]  # a band inside (0, 1) holds no task at 0 or 1
    assert task_spread(out, 99)["n"] == 0
    main([str(out), "--tasks-from", "2"])
    printed = capsys.readouterr().out.splitlines()
    assert printed[-1].startswith("tasks of epochs 2+: n ") and len(printed) == 1 + 1 + 3 + 1  # path, header, 3 rows


def test_no_column_reads_a_held_out_figure():
    assert not any(extra and extra.startswith(HELD_OUT) for _, _, extra in COLUMNS)


def test_the_summary_averages_the_late_epochs(tiny_cfg, tmp_path, scripted_backend, capsys):
    from genenv_lab.rundir.read import read_epochs

    cfg = tiny_cfg.replace(loop={"epochs": 6}, curriculum={"k_min": 0.25}, agent={"num_generations": 4})
    out = tmp_path / "r"
    list(run(cfg, out, backend=scripted_backend(num_generations=4), progress=False))
    records = read_epochs(out)
    got = summary(out)
    assert got["p̂"] == pytest.approx(sum(r["p_hat_mean"] for r in records[4:]) / 2)  # the last third: epochs 5-6
    entropy = [r["extra"]["diversity/entropy"] for r in records[3:]]  # the second half: epochs 4-6
    assert got["entropy"] == pytest.approx(sum(entropy) / 3)
    assert got["niches"] == records[-1]["extra"]["diversity/niches"]
    main([str(out), str(out), "--summary"])
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) == 4 and printed[-1].startswith("mean") and len(SUMMARY) == 8
