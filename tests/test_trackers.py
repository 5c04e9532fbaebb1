"""--loop.report_to tensorboard: a tiny run writes TensorBoard event files holding the loop's per-epoch keys."""

from __future__ import annotations

import pytest

from genenv_lab.cli import main
from genenv_lab.config import ConfigError, preset


def test_a_tiny_run_logs_its_epochs_to_tensorboard(tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    out = tmp_path / "run"
    assert main(["run", "--preset", "tiny", "--domain", "count", "--epochs", "2", "--report-to", "tensorboard",
                 "--loop.eval_every", "1", "--loop.eval_benchmark", "domain", "--loop.reference_tasks", "2",
                 "--out", str(out)]) == 0
    events = EventAccumulator(str(out / "tensorboard"))
    events.Reload()
    tags = set(events.Tags()["scalars"])
    for key in ("p_hat_mean", "in_band_frac", "env_reward_mean", "eval/domain", "p_hat_reference", "grpo/loss",
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

    from genenv_lab import trackers
    from genenv_lab.cli import main

    real = importlib.util.find_spec
    monkeypatch.setattr(trackers.importlib.util, "find_spec", lambda name, *a: None if name == "wandb" else real(name))
    out = tmp_path / "run"
    assert main(["run", "--preset", "tiny", "--epochs", "1", "--report-to", "wandb", "--out", str(out)]) == 1
    assert not out.exists()
    assert "needs the 'wandb' package: pip install wandb" in capsys.readouterr().out
