"""The unsloth engine: its CPU-checkable parts here always, the engine itself on a CUDA GPU with Unsloth (``gpu``).

CPU (no marker): the one-slot/two-roles adapter swap on a plain peft model, the interchange of adapter folders with
the hf engine, and the lean RWR loss kernel against the hf engine's kernel. GPU (marker ``gpu``, skipped without
CUDA or without unsloth): construction with a tiny model built locally (head_dim 64, which vLLM's GPU attention
takes), generation with both roles, each update touching only its own adapter, save/load, and two loop epochs.
"""

from __future__ import annotations

import importlib.util

import pytest
import torch

from genenv_lab.backends.unsloth_engine import AdapterSlot, lean_target_log_probs



def gpu_test(fn):
    """Marker ``gpu``; skipped without CUDA or without unsloth."""
    for mark in (pytest.mark.gpu,
                 pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
                 pytest.mark.skipif(importlib.util.find_spec("unsloth") is None,
                                    reason="needs unsloth (pip install -e '.[gpu]' on a GPU machine)")):
        fn = mark(fn)
    return fn


# --------------------------------------------------------------------------------------------------- CPU parts

@pytest.fixture(scope="module")
def hf_backend():
    from genenv_lab.config import preset
    from genenv_lab.domains import get_domain
    from genenv_lab.backends.factory import make_backend

    return make_backend(preset("tiny"), get_domain("arith"))


@pytest.fixture
def restore(hf_backend):
    """Put the module's hf backend adapters back after a test changed them."""
    from peft import set_peft_model_state_dict

    saved = {name: hf_backend.adapter_state(name) for name in hf_backend.adapters}
    yield
    for name, state in saved.items():
        set_peft_model_state_dict(hf_backend.model, state, adapter_name=name)
    hf_backend._use("agent")


@pytest.fixture
def one_slot_model(hf_backend):
    """The same base with a single peft adapter called ``default`` (what Unsloth's get_peft_model builds)."""
    from peft import LoraConfig, get_peft_model

    from genenv_lab.models.loading import load_base

    base, _ = load_base(hf_backend.model.get_base_model().name_or_path)
    cfg = hf_backend.model.peft_config["agent"]
    lora = LoraConfig(r=cfg.r, lora_alpha=cfg.lora_alpha, target_modules=list(cfg.target_modules),
                      lora_dropout=0.0, task_type="CAUSAL_LM")
    return get_peft_model(base, lora)


def test_slot_swaps_roles_in_place_and_fresh_roles_equal_the_base(one_slot_model):
    slot = AdapterSlot(one_slot_model, ("agent", "env"), seed=0)
    params = dict(slot.params)
    with torch.no_grad():
        for p in params.values():
            p.add_(torch.randn_like(p))  # "train" the agent
    agent, env0 = slot.state("agent"), slot.state("env")
    assert all(torch.count_nonzero(v) == 0 for k, v in env0.items() if "lora_B" in k), "a fresh role is the base"
    slot.use("env")
    assert all(slot.params[k] is params[k] for k in params), "the slot's parameter objects must stay the same"
    assert all(torch.equal(slot.state("env")[k], env0[k]) for k in env0)
    assert all(torch.equal(slot.state("agent")[k], agent[k]) for k in agent)
    slot.use("agent")
    assert all(torch.equal(p, agent[slot.peft_key(k)]) for k, p in slot.params.items())
    with pytest.raises(ValueError, match="unknown adapter"):
        slot.use("critic")


def test_slot_folders_interchange_with_the_hf_engine(one_slot_model, hf_backend, restore, tmp_path):
    from safetensors.torch import load_file

    slot = AdapterSlot(one_slot_model, ("agent", "env"), seed=0)
    with torch.no_grad():
        for role in ("env", "agent"):
            slot.use(role)
            for p in slot.params.values():
                p.normal_()
    assert set(slot.state("agent")) == set(hf_backend.adapter_state("agent"))
    for role in ("agent", "env"):
        slot.save(role, tmp_path / "from_slot" / role, one_slot_model.peft_config["default"])
    hf_backend.load_adapters(tmp_path / "from_slot")  # the hf engine reads what the unsloth engine writes
    for role in ("agent", "env"):
        assert all(torch.equal(hf_backend.adapter_state(role)[k], v) for k, v in slot.state(role).items())

    hf_backend.save_adapters(tmp_path / "from_hf")  # and the other way round
    fresh = AdapterSlot(one_slot_model, ("agent", "env"), seed=1)
    for role in ("env", "agent"):
        fresh.load(role, load_file(str(tmp_path / "from_hf" / role / "adapter_model.safetensors")))
        assert all(torch.equal(fresh.state(role)[k], v) for k, v in hf_backend.adapter_state(role).items())
    with pytest.raises(ValueError, match="does not match"):
        fresh.load("env", {"nonsense.lora_A.weight": torch.zeros(1)})


def test_lean_rwr_loss_equals_the_hf_kernel(hf_backend, restore):
    from genenv_lab.backends.base import EnvExample

    examples = [
        EnvExample([{"role": "user", "content": "Write a harder task."}], "Question: 2 + 3 * 4", 1.5),
        EnvExample([{"role": "user", "content": "Vary it."}, {"role": "assistant", "content": "Question:"}],
                   " 7 - 5", 0.5),
        EnvExample([{"role": "user", "content": "Another."}], "Question: (1 + 2) * 3 - 4", 1.0),
    ]
    from peft import set_peft_model_state_dict

    gen = torch.Generator().manual_seed(0)
    state = hf_backend.adapter_state("env")
    set_peft_model_state_dict(hf_backend.model, {k: v + 0.05 * torch.randn(v.shape, generator=gen)
                                                 for k, v in state.items()}, adapter_name="env")
    from dataclasses import replace
    from functools import partial

    from genenv_lab.trainers.env import batch_losses, rwr_batch

    hf_backend._use("env")
    kit = hf_backend.env_kit()
    lean = replace(kit, log_probs=partial(lean_target_log_probs, hf_backend.model))
    batch = rwr_batch(kit, examples)
    nll_ref, kl_ref = batch_losses(kit, batch, grad=False)
    nll, kl = batch_losses(lean, batch, grad=False)
    assert kl_ref > 0
    torch.testing.assert_close(nll, nll_ref, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(kl, kl_ref, rtol=1e-4, atol=1e-7)
    nll_g, kl_g = batch_losses(lean, batch, grad=True)
    (nll_g + kl_g).backward()
    grads = [p.grad for n, p in hf_backend.model.named_parameters() if ".env." in n and p.requires_grad]
    assert grads and all(g is not None for g in grads)
    hf_backend.model.zero_grad(set_to_none=True)


# ------------------------------------------------------------------------------------------------------ GPU

@pytest.fixture(scope="module")
def gpu_cfg(tmp_path_factory):
    from genenv_lab.config import preset
    from genenv_lab.domains import get_domain
    from genenv_lab.models.tiny import build_tiny_model, chatml

    cfg = preset("tiny")
    corpus = [chatml(m, r) for m, r in get_domain(cfg.loop.domain).format_examples(cfg.curriculum.alpha)]
    model_dir = build_tiny_model(tmp_path_factory.mktemp("tiny-gpu") / "m", seed=0, corpus=corpus,
                                 warmup_steps=cfg.model.tiny_warmup_steps, hidden_size=256)
    return cfg.replace(model={"name_or_path": str(model_dir), "engine": "unsloth", "dtype": "bfloat16",
                              "max_seq_length": 512, "gpu_memory_utilization": 0.3, "lora_r": 8, "lora_alpha": 16},
                       loop={"epochs": 2})


@pytest.fixture(scope="module")
def unsloth_backend(gpu_cfg):
    from genenv_lab.backends.unsloth_engine import UnslothBackend

    return UnslothBackend(gpu_cfg)


@gpu_test
@pytest.mark.parametrize("adapter", ["agent", "env"])
def test_gpu_generate_with_each_role(unsloth_backend, adapter):
    prompts = [[{"role": "user", "content": "Compute: 3 + 4"}],
               [{"role": "user", "content": "Write a task."}, {"role": "assistant", "content": "Question:"}]]
    out = unsloth_backend.generate(adapter, prompts, n=3, max_new_tokens=8, temperature=1.0)
    assert [len(o) for o in out] == [3, 3] and all(isinstance(t, str) for o in out for t in o)
    assert unsloth_backend.slot.active == "agent"


@gpu_test
def test_gpu_updates_touch_only_their_adapter_and_two_epochs_run(unsloth_backend, gpu_cfg, tmp_path):
    from genenv_lab.coevolution.session import run

    base0 = unsloth_backend.base_state()
    agent0, env0 = unsloth_backend.adapter_state("agent"), unsloth_backend.adapter_state("env")
    records = list(run(gpu_cfg, tmp_path / "run", backend=unsloth_backend, progress=False))
    assert [r.epoch for r in records] == [1, 2]
    base1 = unsloth_backend.base_state()
    assert all(torch.equal(base0[k], base1[k]) for k in base0)
    assert any(not torch.equal(v, unsloth_backend.adapter_state("agent")[k]) for k, v in agent0.items())
    if any(r.extra["rwr/steps"] for r in records):
        assert any(not torch.equal(v, unsloth_backend.adapter_state("env")[k]) for k, v in env0.items())
    saved = tmp_path / "run" / "adapters"
    assert any(saved.rglob("agent/adapter_model.safetensors")) and any(saved.rglob("env/adapter_model.safetensors"))
    print("phase seconds:", [r.phase_s for r in records], "peak GiB:",
          round(torch.cuda.max_memory_allocated() / 2**30, 2))


@gpu_test
def test_gpu_save_load_round_trip(unsloth_backend, tmp_path):
    unsloth_backend.save_adapters(tmp_path / "a")
    env = unsloth_backend.adapter_state("env")
    unsloth_backend.slot.load("env", {k: torch.zeros_like(v) for k, v in env.items()})
    unsloth_backend.load_adapters(tmp_path / "a")
    assert all(torch.equal(unsloth_backend.adapter_state("env")[k], v) for k, v in env.items())
