"""Unsloth CPU tier: the real ``UnslothBackend`` end to end, on Unsloth's CPU backend, in its own venv.

Runs only when the Unsloth venv exists: ``$GENENV_LAB_UNSLOTH_PY`` (default ``.venv-unsloth/bin/python``), created by
``bash scripts/setup_unsloth_cpu.sh``; ``GENENV_LAB_SKIP_UNSLOTH=1`` skips it. Everything between Unsloth's API and
the loop runs for real there (``FastLanguageModel.from_pretrained``/``get_peft_model``/``for_inference``/
``for_training``, the one adapter slot, the agent trainer, RWR with the lean kernel, save/resume); on a CPU Unsloth
trains with stock TRL, so its patched GRPO trainer, 4-bit kernels and in-process vLLM are the GPU tier's
(docs/gpu.md). This side (the core venv) runs the ``hf`` engine for comparison and loads the Unsloth runs back.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from genenv_lab.rundir.read import read_epochs

ROOT = Path(__file__).resolve().parent.parent
UNSLOTH_PY = Path(os.environ.get("GENENV_LAB_UNSLOTH_PY", ROOT / ".venv-unsloth" / "bin" / "python"))
DRIVER = Path(__file__).with_name("unsloth_cpu_driver.py")
RUN_ARGS = ["--preset", "tiny", "--engine", "unsloth", "--epochs", "2", "--loop.reference_tasks", "4"]
EVAL_ARGS = ["--eval-every", "1", "--eval-benchmark", "domain", "--eval-limit", "4"]  # count ships a held-out set
FINITE_KEYS = ("grpo/loss", "grpo/reward", "grpo/grad_norm", "grpo/entropy", "rwr/loss", "rwr/kl")

pytestmark = [
    pytest.mark.skipif(os.environ.get("GENENV_LAB_SKIP_UNSLOTH") == "1", reason="GENENV_LAB_SKIP_UNSLOTH=1"),
    pytest.mark.skipif(not UNSLOTH_PY.is_file(),
                       reason=f"no Unsloth venv at {UNSLOTH_PY}: create it with `bash scripts/setup_unsloth_cpu.sh` "
                              "(or point GENENV_LAB_UNSLOTH_PY at its python)"),
]


def _unsloth(*args: str, cache: Path, check: bool = True) -> subprocess.CompletedProcess:
    """Run ``args`` with the Unsloth venv's python, Unsloth's CPU fallback allowed, the tests' model cache."""
    env = {**os.environ, "GENENV_LAB_UNSLOTH_CPU": "1", "GENENV_LAB_CACHE": str(cache),
           "PYTHONPATH": str(ROOT / "tests")}
    proc = subprocess.run([str(UNSLOTH_PY), *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    if check and proc.returncode != 0:
        raise AssertionError(f"{args[:3]} exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}")
    return proc


def _cli(*args: str, cache: Path, check: bool = True) -> subprocess.CompletedProcess:
    return _unsloth("-m", "genenv_lab.cli", *args, cache=cache, check=check)


def _core_cli(*args: str, cache: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "GENENV_LAB_CACHE": str(cache)}
    proc = subprocess.run([sys.executable, "-m", "genenv_lab.cli", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, f"{args[:2]} exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def _flat(record: dict) -> dict:
    out = {}
    for key, value in record.items():
        if isinstance(value, dict) and key != "reject_reasons":
            out.update({f"{key}.{k}": v for k, v in _flat(value).items()})
        else:
            out[key] = value
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two-epoch runs: the unsloth engine on ``count`` (uninterrupted, and SIGKILLed in epoch 2 then resumed with
    ``--resume``) and on ``tools``; the hf engine on both with the same arguments, from the core venv."""
    tmp = tmp_path_factory.mktemp("unsloth-tier")
    cache = tmp / "cache"
    out = {name: tmp / name for name in ("count", "killed", "tools", "hf-count", "hf-tools")}
    _cli("run", *RUN_ARGS, *EVAL_ARGS, "--domain", "count", "--out", str(out["count"]), cache=cache)
    killed = _unsloth(str(DRIVER), "kill", str(out["killed"]), *RUN_ARGS, *EVAL_ARGS, "--domain", "count",
                      cache=cache, check=False)
    after_kill = [r["epoch"] for r in read_epochs(out["killed"])]
    _cli("run", "--resume", "--out", str(out["killed"]), cache=cache)
    _cli("run", *RUN_ARGS, "--domain", "tools", "--out", str(out["tools"]), cache=cache)
    hf_args = [a if a != "unsloth" else "hf" for a in RUN_ARGS]
    _core_cli("run", *hf_args, *EVAL_ARGS, "--domain", "count", "--out", str(out["hf-count"]), cache=cache)
    _core_cli("run", *hf_args, "--domain", "tools", "--out", str(out["hf-tools"]), cache=cache)
    return {**out, "cache": cache, "kill_rc": killed.returncode, "after_kill": after_kill}


@pytest.mark.parametrize("domain", ["count", "tools"])
def test_every_phase_runs_and_logs_what_the_hf_engine_logs(runs, domain):
    records = read_epochs(runs[domain])
    hf = read_epochs(runs[f"hf-{domain}"])
    assert [r["epoch"] for r in records] == [1, 2]
    assert set(_flat(records[0].to_dict())) == set(_flat(hf[0].to_dict())), "the two engines log different keys"
    for r in records:
        extra = r["extra"]
        assert r["n_generated"] > 0 and r["n_agent_prompts"] > 0  # simulator generation, the agent's batch
        assert r["n_valid"] + sum(r["reject_reasons"].values()) == r["n_generated"]  # the validity check counted
        if domain == "count":  # (the random tiny model writes no valid tool call for the reference set)
            assert math.isfinite(extra["reference/p_hat"])  # reference rollouts on the untrained simulator's tasks
            assert math.isfinite(extra["eval/domain"])  # held-out evaluation
        for key in FINITE_KEYS if extra["rwr/ran"] else FINITE_KEYS[:4]:
            assert extra[key] is not None and math.isfinite(extra[key]), key
        # what ran: Unsloth builds its model with gradient checkpointing, so the update took full rows
        assert extra["agent/gradient_checkpointing"] is True and extra["agent/prefix_path"] == "full-rows"
        assert extra["agent/trainer"] == "trl.GRPOTrainer" and extra["agent/rollouts"] == "transformers"
    # RWR trains on valid in-band tasks: the random tiny model writes none of tools' 500-character JSON tasks
    # (every rejection counted above; its agent trains on the seed tasks), so the RWR phase is count's to show
    assert domain != "count" or any(r["extra"]["rwr/ran"] for r in records), "no RWR update ran in two epochs"
    for epoch in ("epoch_001", "epoch_002"):
        folder = runs[domain] / "adapters" / epoch
        assert (folder / "agent" / "adapter_model.safetensors").is_file()
        assert (folder / "env" / "adapter_model.safetensors").is_file()
        assert (folder / "optimizer.pt").is_file()
    assert json.loads((runs[domain] / "config.json").read_text())["model"]["engine"] == "unsloth"


def test_sigkill_in_epoch_two_and_resume_continue_the_same_run(runs):
    """Killed at the start of epoch 2's agent update, the run keeps epoch 1; ``--resume`` restores both roles'
    adapters, their Adam states and the trainer-seed counter, so its epoch 2 equals the uninterrupted run's."""
    import torch

    assert runs["kill_rc"] == -9 and runs["after_kill"] == [1]
    resumed, whole = read_epochs(runs["killed"]), read_epochs(runs["count"])
    assert [r["epoch"] for r in resumed] == [1, 2]
    for key in ("p_hat_mean", "agent_reward_mean", "env_reward_mean", "n_valid"):
        assert resumed[1][key] == pytest.approx(whole[1][key], rel=1e-6, abs=1e-9), key
    for key in ("grpo/loss", "grpo/grad_norm", "rwr/loss", "rwr/kl", "eval/domain"):
        assert resumed[1]["extra"][key] == pytest.approx(whole[1]["extra"][key], rel=1e-6, abs=1e-9), key
    saved = torch.load(runs["killed"] / "adapters" / "epoch_002" / "optimizer.pt", weights_only=True)
    assert saved["grpo_calls"] == 2 and set(saved["optimizers"]) == {"agent", "env"}
    assert all(state["state"] for state in saved["optimizers"].values()), "an optimiser has no Adam moments"
    events = (runs["killed"] / "events.log").read_text()
    assert "resume" in events


def test_export_and_generate_load_the_unsloth_run_in_the_core_venv(runs, tmp_path):
    exported = tmp_path / "agent"
    _core_cli("export", "--run", str(runs["count"]), "--out", str(exported), cache=runs["cache"])
    assert (exported / "adapter_model.safetensors").is_file() and (exported / "README.md").is_file()
    answer = _core_cli("generate", "--run", str(runs["count"]), "Task: 2 to 5", cache=runs["cache"]).stdout
    assert "(agent after epoch 2)" in answer and "reward" in answer


def test_both_engines_build_the_same_trainer(tmp_path):
    """The hf and unsloth engines' GRPO trainers over one tiny model, configuration and agent weights: the same
    optimiser (class, hyper-parameters, parameters, the backend's run-long one), scheduler, beta and reference (no
    copy: the base with adapters off), method fields and precision; per-token log-probabilities of one batch within
    float32 rounding; one update with the same loss and weight change. Kept different on purpose, and shown:
    gradient checkpointing (Unsloth's model has it) and so the prefix path."""
    out = tmp_path / "trainers.json"
    _unsloth(str(DRIVER), "trainers", str(out), cache=tmp_path / "cache")
    r = json.loads(out.read_text())
    hf, un = r["hf"], r["unsloth"]
    for key in ("optimizer", "optimizer_defaults", "optimizer_params", "scheduler", "scheduler_lrs", "beta",
                "args_beta", "ref_model", "ref_adapter", "method_fields", "bf16", "fp16"):
        assert hf[key] == un[key], key
    assert hf["optimizer"] == "torch.optim.adamw.AdamW" and hf["is_backend_optimizer"] and un["is_backend_optimizer"]
    assert len(set(hf["scheduler_lrs"])) == 1  # constant learning rate
    assert hf["beta"] == 0.05 and hf["args_beta"] == 0.0 and not hf["ref_model"] and not hf["ref_adapter"]
    assert hf["gradient_checkpointing"] is False and un["gradient_checkpointing"] is True
    assert hf["prefix_path"] == "shared-prefix" and un["prefix_path"] == "full-rows"
    assert r["logps_max_abs_diff"] < 1e-5 and math.isfinite(r["logps_mean"])
    assert un["update_loss"] == pytest.approx(hf["update_loss"], rel=1e-5, abs=1e-7)
    assert un["update_kl"] > 0 and un["update_kl"] == pytest.approx(hf["update_kl"], rel=1e-4)  # anchored to the base
    for key, delta in hf["delta"].items():
        flat_hf = [x for row in delta for x in row]
        flat_un = [x for row in un["delta"][key] for x in row]
        assert max(abs(a - b) for a, b in zip(flat_hf, flat_un)) < 1e-6, key
        assert max(abs(a) for a in flat_hf) > 0, f"{key} did not move"


def test_the_device_check_dry_run_fails_only_where_a_gpu_is_missing(tmp_path):
    """scripts/gpu_check.sh --dry-run in the Unsloth venv: every step exits 0, the gpu tier's tests skip for want of
    CUDA (none fails or errors), both engines' gpu_epoch.py figures are written and tabled for docs/gpu.md, the T4
    and L4 presets' shapes among them (at a slice: 2 layers, the real vocabulary and hidden size)."""
    import xml.etree.ElementTree as ET

    out = tmp_path / "gpu-check"
    env = {**os.environ, "OUT": str(out), "PYTHON": str(UNSLOTH_PY), "GENENV_LAB_CACHE": str(tmp_path / "cache")}
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "gpu_check.sh"), "--dry-run"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=1800)  # the dry run's step limits: 3x the GPU check's
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary) == {"versions", "shape-t4-unsloth", "shape-l4-unsloth", "gpu-tier", "shape-t4-hf",
                            "epoch-unsloth", "epoch-unsloth-he", "epoch-hf"}
    assert all(step["rc"] == 0 for step in summary.values()), summary  # none skipped: Unsloth is there
    suite = ET.parse(out / "gpu-tier.xml").getroot().find("testsuite")
    assert int(suite.get("tests")) > 0 and int(suite.get("failures")) == 0 and int(suite.get("errors")) == 0
    assert int(suite.get("skipped")) == int(suite.get("tests"))
    assert all("needs a CUDA GPU" in s.get("message", "") for s in suite.iter("skipped"))
    for engine in ("unsloth", "hf"):
        figures = json.loads((out / f"{engine}.json").read_text())
        assert [e["epoch"] for e in figures["epochs"]] == [1, 2] and figures["gpu"].startswith("none")
    for preset, shape in (("colab-t4", "qwen3-0.6b"), ("colab-l4", "qwen3-1.7b")):  # the real shapes, at a slice
        figures = json.loads((out / f"shape-{preset}-unsloth.json").read_text())
        assert (figures["shape"], figures["layers"], len(figures["epochs"])) == (shape, 2, 1)
        assert "unsloth engine on CPU: float32, fast_inference off: no CUDA GPU" in figures["picked"]
    table = (out / "figures.md").read_text()
    assert "| unsloth |" in table and "| hf |" in table and "| colab-l4 (qwen3-1.7b, 2) | unsloth |" in table
    assert "imports ok" in (out / "versions.txt").read_text()
