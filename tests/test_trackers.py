"""--loop.report_to tensorboard: a tiny run writes TensorBoard event files holding the loop's per-epoch keys."""

from __future__ import annotations

import pytest

from genenv_lab.cli.commands import main
from genenv_lab.config import ConfigError, preset


def test_a_tiny_run_logs_its_epochs_to_tensorboard(tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    out = tmp_path / "run"
    assert main(["run", "--preset", "tiny", "--domain", "count", "--epochs", "2", "--report-to", "tensorboard",
                 "--eval.every", "1", "--eval.benchmark", "domain", "--loop.reference_tasks", "2",
                 "--out", str(out)]) == 0
    events = EventAccumulator(str(out / "tensorboard"))
    events.Reload()
    tags = set(events.Tags()["scalars"])
    for key in ("p_hat_mean", "in_band_frac", "env_reward_mean", "eval/domain", "reference/p_hat", "grpo/loss",
                "cumulative/agent_rollouts", "phase_s/generate"):
        assert key in tags, (key, sorted(tags))
        assert [e.step for e in events.Scalars(key)] == [1, 2]
    # a resume continues the same curves at the next epoch
    assert main(["run", "--out", str(out), "--resume", "--epochs", "3"]) == 0
    events = EventAccumulator(str(out / "tensorboard"))
    events.Reload()
    assert [e.step for e in events.Scalars("p_hat_mean")] == [1, 2, 3]


def test_an_unknown_tracker_is_refused():
    with pytest.raises(ConfigError, match="report_to"):
        preset("tiny").replace(loop={"report_to": "mlflow"})


def test_a_tracker_whose_package_is_missing_is_refused_before_the_run_folder_exists(tmp_path, monkeypatch, capsys):
    import importlib.util

    from genenv_lab.rundir import trackers
    from genenv_lab.cli.commands import main

    real = importlib.util.find_spec
    monkeypatch.setattr(trackers.importlib.util, "find_spec", lambda name, *a: None if name == "wandb" else real(name))
    out = tmp_path / "run"
    assert main(["run", "--preset", "tiny", "--epochs", "1", "--report-to", "wandb", "--out", str(out)]) == 1
    assert not out.exists()
    assert "needs the 'wandb' package: pip install wandb" in capsys.readouterr().out


@pytest.mark.parametrize("replace_with_file", [True, False])
def test_a_tracker_that_fails_mid_run_never_fails_the_run(tmp_path, capfd, replace_with_file):
    """Round 4, failure 11: the tensorboard folder deleted after epoch 1 failed the run at epoch 2; now the tracker
    stops with one warning in events.log and the run finishes with every epoch committed."""
    import shutil

    pytest.importorskip("tensorboard")
    from genenv_lab.coevolution.session import run
    from genenv_lab.rundir.read import read_epochs, read_state

    out = tmp_path / "run"
    cfg = preset("tiny").replace(loop={"epochs": 4, "report_to": "tensorboard"})
    with pytest.warns(UserWarning, match="tracker tensorboard stopped"):
        for record in run(cfg, out, progress=False):
            if record.epoch == 1:
                shutil.rmtree(out / "tensorboard")
                if replace_with_file:  # else the folder is only gone: tensorboard's own writer thread fails
                    (out / "tensorboard").write_text("a file where the tracker's folder was")
    assert [r["epoch"] for r in read_epochs(out)] == [1, 2, 3, 4] and read_state(out)["status"] == "finished"
    assert "warning: tracker tensorboard stopped" in (out / "events.log").read_text()
    assert "Traceback" not in capfd.readouterr().err  # round 5: the writer thread's exception printed one
