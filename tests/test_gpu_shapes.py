"""The device check's dry run on CPU (``bash scripts/gpu_check.sh --dry-run``) in the core venv: the T4 preset's
model at a slice of its true shape (Qwen3-0.6B's vocabulary of 151,936 and hidden size 1,024, 2 layers, a few
tokens) through the hf engine's four phases, generations forced to their lengths; the gpu tier skipping itself; the
tiny model's two epochs; the unsloth engine's steps skipped here (the Unsloth CPU tier runs them,
tests/test_unsloth_cpu.py). It exits 0 and writes the figures docs/gpu.md keeps, with no GPU figure."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_device_checks_dry_run_measures_the_t4_shape_at_a_slice_and_exits_0(tmp_path):
    out = tmp_path / "gpu-check"
    env = {**os.environ, "OUT": str(out), "PYTHON": sys.executable, "GENENV_LAB_CACHE": str(tmp_path / "cache"),
           "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "gpu_check.sh"), "--dry-run"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    ran = {name for name, step in summary.items() if step["rc"] != "skipped"}
    assert {"versions", "gpu-tier", "shape-t4-hf", "epoch-hf"} <= ran
    assert all(summary[name]["rc"] == 0 for name in ran), summary
    versions = dict(line.split(" ", 1) for line in (out / "versions.txt").read_text().splitlines() if " " in line)
    if versions.get("unsloth") == "absent":  # the core venv: the unsloth engine's steps are the Unsloth tier's
        assert {n for n in summary if "unsloth" in n} == set(summary) - ran

    shape = json.loads((out / "shape-colab-t4-hf.json").read_text())
    assert shape["shape"] == "qwen3-0.6b" and shape["layers"] == 2 and shape["gpu"].startswith("none")
    model = json.loads(next((tmp_path / "cache" / "shapes").glob("qwen3-0.6b-l2-*/config.json")).read_text())
    assert (model["vocab_size"], model["hidden_size"], model["model_type"]) == (151936, 1024, "qwen3")
    (epoch,) = shape["epochs"]
    seeds, variations, length = 2, 2, 8  # the slice (benchmarks/gpu_epoch.py SLICE)
    assert epoch["generate"]["tokens"] == seeds * variations * length  # forced to its length
    assert epoch["rollouts"]["tokens"] == 2 * 2 * length  # one step's 2 tasks (of 5) x G 2 x 8: forced too
    assert epoch["agent_steps_of_epoch"] == 2 and epoch["epoch_s_scaled"] > epoch["epoch_s"]  # scaled to 2 steps
    assert epoch["env_update"]["steps"] == 1 and shape["fits"] is None  # no memory figure without a GPU
    table = (out / "figures.md").read_text()
    assert "| colab-t4 (qwen3-0.6b, 2) | hf | none (CPU dry run) |" in table and "| hf |" in table
