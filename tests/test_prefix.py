"""Encoding each prompt once (genenv_lab/backends/prefix.py): the same numbers as TRL's full rows.

- grouping rows by prompt (examples and a Hypothesis property);
- TRL's private methods the project's trainer overrides still exist with the parameters it uses (a TRL upgrade that
  moves them fails here, instead of silently bypassing the overrides);
- per-token log-probabilities, entropies, the GRPO loss and the LoRA gradients equal TRL's own computation on the same
  batch (float32, 1e-5), for one and several groups, with ``kl_beta`` 0 and > 0, and under two processes;
- generation with shared prompts samples the same tokens as plain ``generate`` (left-padded prompts included);
- ``model.shared_prefix`` turns it off, and the path taken is recorded.
"""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from genenv_lab.trainers.agent import TRAINERS
from genenv_lab.backends import prefix

DRIVER = str(Path(__file__).resolve().parent / "prefix_step_driver.py")
sys.path.insert(0, str(Path(__file__).resolve().parent))
from prefix_step_driver import reward, tiny_backend  # noqa: E402


# ------------------------------------------------------------------------------------------------ grouping
def test_rows_group_by_prompt_ids_and_mask_in_order_of_first_appearance():
    ids = torch.tensor([[5, 6], [1, 2], [5, 6], [1, 2], [0, 2]])
    mask = torch.tensor([[1, 1], [1, 1], [1, 1], [1, 1], [0, 1]])
    first, inverse = prefix.group_rows(ids, mask)
    assert first.tolist() == [0, 1, 4] and inverse.tolist() == [0, 1, 0, 1, 2]
    assert prefix.worth_sharing(inverse)
    assert not prefix.worth_sharing(prefix.group_rows(ids[:2], mask[:2])[1])
    # the same ids with another mask (padding vs a real token 0) are different prompts
    _, inverse = prefix.group_rows(torch.tensor([[0, 2], [0, 2]]), torch.tensor([[0, 1], [1, 1]]))
    assert inverse.tolist() == [0, 1]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=1, max_size=12), st.integers(1, 4))
def test_grouping_reconstructs_every_row(labels, width):
    ids = torch.tensor([[label] * width for label in labels])
    mask = torch.ones_like(ids)
    first, inverse = prefix.group_rows(ids, mask)
    assert torch.equal(ids[first][inverse], ids)
    assert len(set(first.tolist())) == len(first) == len(set(labels))
    assert first.tolist() == sorted(first.tolist())  # order of first appearance
    assert all(inverse[f] == g for g, f in enumerate(first.tolist()))


# ------------------------------------------------------------------------------------------------ TRL hooks
def test_the_trl_methods_the_trainer_overrides_are_still_there():
    from trl import GRPOTrainer

    from genenv_lab.trainers.grpo import TRL_HOOKS

    for name, params in TRL_HOOKS.items():
        method = getattr(GRPOTrainer, name, None)
        assert callable(method), f"TRL's GRPOTrainer has no {name} any more: the project's trainer would not run it"
        have = inspect.signature(method).parameters
        missing = [p for p in params if p not in have]
        assert not missing, f"TRL's GRPOTrainer.{name} lost parameters {missing}"


# ------------------------------------------------------------------------------------------------ equality
def _trainer(kl_beta: float, tasks: int, shared: bool = True):
    backend, prompts = tiny_backend(shared, kl_beta, tasks)
    trainer = TRAINERS["grpo"].build(backend.trainer_kit(prompts, reward, tempfile.mkdtemp(prefix="genenv-test-")))
    trainer.current_gradient_accumulation_steps = 1  # set by Trainer.train(); compute_loss reads it
    return backend, trainer


def _loss_and_grads(trainer, inputs, path: str):
    trainer.prefix_path = path
    trainer.model.zero_grad(set_to_none=True)
    loss = trainer.compute_loss(trainer.model, inputs)
    loss.backward()
    grads = {n: p.grad.detach().clone() for n, p in trainer.model.named_parameters() if p.grad is not None}
    return loss.detach(), grads


@pytest.mark.parametrize("kl_beta,tasks", [(0.0, 1), (0.0, 3), (0.1, 3)])
def test_log_probs_loss_and_lora_gradients_equal_trls_on_the_same_batch(kl_beta, tasks):
    from trl import GRPOTrainer

    backend, trainer = _trainer(kl_beta, tasks)
    assert trainer.prefix_path == prefix.SHARED
    batch = next(iter(trainer.get_train_dataloader()))
    backend.model.train()
    trainer.prefix_path = prefix.FULL  # the batch (and its reference log-probs) as TRL computes them
    inputs = trainer._generate_and_score_completions(batch)
    assert (inputs["advantages"] != 0).any(), "rewards without spread: the test would compare zero gradients"
    ids = torch.cat([inputs["prompt_ids"], inputs["completion_ids"]], 1)
    mask = torch.cat([inputs["prompt_mask"], inputs["completion_mask"]], 1)
    keep = inputs["completion_ids"].size(1)
    groups = prefix.group_rows(inputs["prompt_ids"], inputs["prompt_mask"])[0].numel()
    assert groups == tasks

    trainer.prefix_path = prefix.SHARED
    contexts = [torch.no_grad()] + ([backend.model.disable_adapter()] if kl_beta else [])
    for ctx in contexts:  # the policy's log-probs, and the reference's (adapters off) when the KL is on
        with ctx:
            want, want_entropy, _ = GRPOTrainer._get_per_token_logps_and_entropies(
                trainer, trainer.model, ids, mask, keep, compute_entropy=True)
            got, got_entropy, _ = trainer._get_per_token_logps_and_entropies(
                trainer.model, ids, mask, keep, compute_entropy=True)
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(got_entropy, want_entropy, rtol=1e-5, atol=1e-5)

    want_loss, want_grads = _loss_and_grads(trainer, inputs, prefix.FULL)
    got_loss, got_grads = _loss_and_grads(trainer, inputs, prefix.SHARED)
    torch.testing.assert_close(got_loss, want_loss, rtol=1e-5, atol=1e-7)
    assert set(got_grads) == set(want_grads) and want_grads
    assert all(".agent." in name for name in want_grads)  # the agent adapter only: the env adapter is not touched
    for name, grad in want_grads.items():
        scale = grad.abs().max().clamp(min=1e-12)
        assert (got_grads[name] - grad).abs().max() / scale < 1e-5, name
        assert grad.abs().max() > 0, name


def test_generation_samples_the_same_tokens_with_shared_prompts():
    from genenv_lab.backends.factory import make_backend
    from genenv_lab.config import preset
    from genenv_lab.domains import get_domain

    domain = get_domain("arith")
    prompts = [domain.agent_messages(s.spec) for s in domain.seed_tasks()[:3]]
    prompts[1] = [{"role": "user", "content": "2 + 2?"}]  # a short prompt: the others are left-padded to its length
    out = {}
    for shared in (False, True):
        cfg = preset("tiny").replace(model={"shared_prefix": shared})
        backend = make_backend(cfg, get_domain(cfg.loop.domain))
        torch.manual_seed(0)
        out[shared] = backend.generate("agent", prompts, n=4, max_new_tokens=10, temperature=1.0)
    assert out[True] == out[False]
    assert len({t for group in out[True] for t in group}) > 3  # sampled, not one text repeated


def test_a_model_whose_forward_returns_a_tuple_cache_generates_without_sharing():
    """Unsloth's fast forward on a GPU returns its cache as legacy (key, value) tuples, which have no reorder_cache
    (found by the first device check: every generation of the unsloth engine raised). Such a model generates the plain
    way, the same tokens as with sharing off, and is not prefilled again."""
    from genenv_lab.backends.factory import make_backend
    from genenv_lab.config import preset
    from genenv_lab.domains import get_domain

    domain = get_domain("arith")
    prompts = [domain.agent_messages(s.spec) for s in domain.seed_tasks()[:2]]
    out, calls = {}, []
    for shared in (False, True):
        cfg = preset("tiny").replace(model={"shared_prefix": shared})
        backend = make_backend(cfg, domain)
        causal_lm = backend.model.get_base_model()
        forward = causal_lm.forward

        def tuple_cache_forward(*args, _forward=forward, **kwargs):  # a cache it made itself comes back as tuples
            made_here = kwargs.get("cache") is None and kwargs.get("past_key_values") is None
            result = _forward(*args, **kwargs)
            name = "cache" if "cache" in result else "past_key_values"
            if made_here and kwargs.get("use_cache") and result.get(name) is not None:
                calls.append(name)
                result[name] = tuple((layer.keys, layer.values) for layer in result[name].layers)
            return result

        causal_lm.forward = tuple_cache_forward
        torch.manual_seed(0)
        out[shared] = backend.generate("agent", prompts, n=4, max_new_tokens=8, temperature=1.0)
        if shared:
            assert getattr(backend.model, prefix.LEGACY_CACHE_MARK) is True
            before = len(calls)
            backend.generate("agent", prompts, n=4, max_new_tokens=8, temperature=1.0)
            assert len(calls) == before  # marked: no prefill forward again
    assert calls and out[True] == out[False]


def test_trls_rollouts_sample_the_same_tokens_with_shared_prompts():
    backend, trainer = _trainer(0.0, 3)
    batch = next(iter(trainer.get_train_dataloader()))
    prompt_ids, _, fields = trainer._tokenize_prompts([row["prompt"] for row in batch])
    prompt_ids[0] = prompt_ids[0][-3:]  # rows of different lengths: the others are left-padded
    prompt_ids[1] = prompt_ids[1][-3:]
    out = {}
    for path in (prefix.FULL, prefix.SHARED):
        trainer.prefix_path = path
        torch.manual_seed(0)
        out[path], _ = trainer._generate_single_turn(prompt_ids, None, fields, trainer.num_generations)
    assert out[prefix.SHARED] == out[prefix.FULL]


def test_the_switch_turns_it_off_and_the_path_is_recorded():
    _, trainer = _trainer(0.0, 1, shared=False)
    assert trainer.prefix_path == prefix.FULL and trainer.prefix_unsupported == "turned off"


def test_a_model_that_scales_its_logits_takes_the_full_rows():
    class Config:
        final_logit_softcapping = 30.0

    class Model:
        config = Config()

    assert "soft-caps" in prefix.supports_shared_prefix(Model())
    Config.final_logit_softcapping = None
    Config.logit_scale = 0.5
    assert "scales" in prefix.supports_shared_prefix(Model())


GLOO_ABORT = "terminate called without an active exception"
"""What a rank printed when gloo's C++ side aborted it mid-step, with no Python error before it: twice in the
project's full runs (stop 46's review, stop 62's CI), never in 18 launches in a row here (6 on a quiet machine, 12
beside two busy processes)."""


def two_process_step(cmd: list[str]) -> subprocess.CompletedProcess:
    """Run the driver under torchrun, Python stacks dumped on an abort (``PYTHONFAULTHANDLER``); launched once more
    when, and only when, a rank died of :data:`GLOO_ABORT` (the driver writes its file only at the end, so a second
    launch starts clean). Any other failure, or the abort twice, fails the test with the ranks' output."""
    env = {**os.environ, "PYTHONFAULTHANDLER": "1"}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    if proc.returncode != 0 and GLOO_ABORT in proc.stderr:
        warnings.warn(f"a rank aborted in gloo ({GLOO_ABORT!r}); launched once more:\n{proc.stderr[-3000:]}",
                      stacklevel=2)
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    return proc


@pytest.mark.parametrize("kl_beta", [0.0, 0.1])
def test_under_two_processes_the_step_is_trls(tmp_path, kl_beta):
    from test_distributed import torchrun

    out = tmp_path / "two.pt"
    proc = two_process_step(torchrun(2) + [DRIVER, str(out), str(kl_beta)])
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = torch.load(out, weights_only=False)
    shared, full = results["shared"], results["full"]
    assert shared["path"] == prefix.SHARED and full["path"] == prefix.FULL
    assert shared["texts"] == full["texts"] and len(full["texts"]) >= 2 * 4  # both processes, 2 tasks x G (4)
    assert shared["loss"] == pytest.approx(full["loss"], rel=1e-5, abs=1e-7)
    assert len(shared["grads"]) == len(full["grads"]) > 0
    assert sum(bool(g.abs().max() > 0) for g in full["grads"]) > len(full["grads"]) // 2
    for got, want in zip(shared["grads"], full["grads"]):
        assert (got - want).abs().max() <= 1e-5 * want.abs().max().clamp(min=1e-12)
