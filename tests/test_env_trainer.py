"""The simulator's trainer (genenv_lab/trainers/env.py) on the tiny model with no engine around it: the kit is put
together here from the model, its tokenizer, an optimiser and the job's processes, as an engine lends it. The KL
cap stops the steps, the mini-batches' losses scaled by their shares average to the whole mini-batch's loss and
gradient (the rule the processes of a data-parallel run follow), a zero-weight batch leaves the adapter as it was,
only the env adapter moves, an update of zero steps only measures, and the loop's call reaches the engine with the
RWR trainer."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
import torch

from genenv_lab.backends.base import EnvExample, EnvKit, EnvTrainer
from genenv_lab.backends.card import CPU, pick_dtype
from genenv_lab.backends.distributed import processes
from genenv_lab.backends.hf import adapter_optimizer, chat_text, target_log_probs
from genenv_lab.config import preset
from genenv_lab.models.loading import attach_adapters, load_base
from genenv_lab.trainers.env import (RWR, batch_losses, encode, env_kl, rwr_batch, rwr_update, share_loss,
                                     update_env)

EXAMPLES = [EnvExample([{"role": "user", "content": f"Write a task like {i} + {2 * i}."}],
                       f"Question: {i} + {i * i} + 1" + " * 3" * i, 0.25 + 0.5 * i) for i in range(5)]


def tiny_kit(**env) -> tuple[EnvKit, object]:
    """A fresh tiny model with its two adapters (the env one active) and the kit an engine would lend, with the
    tiny preset's ``env`` settings changed by ``env``; no dropout, so that a forward is a function of the weights."""
    cfg = preset("tiny").replace(model={"lora_dropout": 0.0}, env=env)
    m = cfg.model
    base, tokenizer = load_base(m.name_or_path, dtype=pick_dtype(m.dtype, CPU), seed=cfg.loop.seed,
                                tiny_warmup_steps=m.tiny_warmup_steps)
    torch.manual_seed(cfg.loop.seed)
    model = attach_adapters(base, r=m.lora_r, alpha=m.lora_alpha, dropout=m.lora_dropout,
                            target_modules=m.target_modules, strict=m.targets_chosen)
    model.set_adapter("env")
    kit = EnvKit(model=model, tokenizer=tokenizer, render=lambda messages: chat_text(tokenizer, messages),
                 max_seq_length=m.max_seq_length, device=torch.device("cpu"),
                 optimizer=adapter_optimizer(model, "env", cfg.env.lr),
                 log_probs=lambda ids, mask, pos: target_log_probs(model, ids, mask, pos), base=model.disable_adapter,
                 procs=processes())
    return kit, cfg


def lora(kit: EnvKit, adapter: str) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in kit.model.named_parameters() if "lora_" in n and f".{adapter}." in n}


def base_weights(kit: EnvKit) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in kit.model.named_parameters() if "lora_" not in n}


def same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_the_kl_cap_stops_the_steps():
    """Before each step the mini-batch's KL is measured; the update stops at the first that exceeds the cap. A
    fresh adapter is the base (KL 0), so the first step is always taken; with a cap below what one step moves, it
    is the only one. With a cap out of reach every step is taken."""
    capped, cfg = tiny_kit(max_steps=4, lr=5e-2, kl_cap=1e-6)
    update = RWR(cfg.env).update(capped, EXAMPLES)
    assert update.steps == 1 and update.stopped_by_kl_cap and update.kl > cfg.env.kl_cap
    assert math.isfinite(update.loss) and update.loss > 0

    free, cfg = tiny_kit(max_steps=4, lr=5e-2, kl_cap=100.0)
    update = RWR(cfg.env).update(free, EXAMPLES)
    assert update.steps == 4 and not update.stopped_by_kl_cap and 0 < update.kl < 100.0


def test_mini_batches_scaled_by_their_share_average_to_the_whole_batch():
    """Under N processes each takes a part of the mini-batch and scales its loss by its share of the examples and of
    the target tokens; the mean of the parts' losses, and of their gradients (what the all-reduce averages), is the
    whole mini-batch's. Checked on two uneven parts, after the env adapter has moved (so the KL term counts)."""
    kit, cfg = tiny_kit(max_steps=2, lr=5e-2, kl_cap=100.0, kl_coef=0.5)
    rwr_update(kit, cfg.env, EXAMPLES)
    kit.model.eval()
    params = [p for group in kit.optimizer.param_groups for p in group["params"]]

    def loss_and_grads(examples, world_size, token_share):
        kit.optimizer.zero_grad(set_to_none=True)
        nll, kl = batch_losses(kit, rwr_batch(kit, examples), grad=True)
        loss = share_loss(nll, kl, cfg.env.kl_coef, world_size=world_size, examples=len(examples),
                          batch_examples=len(EXAMPLES), token_share=token_share)
        loss.backward()
        return loss.item(), [p.grad.detach().clone() for p in params]

    def tokens(examples):
        return int(rwr_batch(kit, examples)["target_mask"][:, 1:].sum())

    whole_loss, whole_grads = loss_and_grads(EXAMPLES, 1, 1.0)
    parts = (EXAMPLES[:3], EXAMPLES[3:])
    total = tokens(EXAMPLES)
    results = [loss_and_grads(part, 2, tokens(part) / total) for part in parts]
    assert (results[0][0] + results[1][0]) / 2 == pytest.approx(whole_loss, rel=1e-5)
    for whole, first, second in zip(whole_grads, results[0][1], results[1][1]):
        torch.testing.assert_close((first + second) / 2, whole, rtol=1e-4, atol=1e-7)
    assert any(g.abs().max() > 0 for g in whole_grads)


def test_a_zero_weight_batch_leaves_the_adapter_as_it_was():
    """An RWR weight of 0 removes an example from the regression: with every weight 0 (and no KL penalty) the steps
    are taken with a zero gradient and AdamW leaves the adapter exactly where it was."""
    kit, cfg = tiny_kit(max_steps=3, lr=5e-2, kl_cap=100.0, kl_coef=0.0)
    before = lora(kit, "env")
    update = RWR(cfg.env).update(kit, [replace(ex, weight=0.0) for ex in EXAMPLES])
    assert update.steps == 3 and update.loss == 0.0 and update.kl == 0.0
    assert same(lora(kit, "env"), before)


def test_the_update_moves_the_env_adapter_only_and_lowers_the_weighted_nll():
    kit, cfg = tiny_kit(max_steps=4, lr=2e-2, kl_cap=100.0)
    agent, env, frozen = lora(kit, "agent"), lora(kit, "env"), base_weights(kit)
    kit.model.eval()
    nll_before, _ = batch_losses(kit, rwr_batch(kit, EXAMPLES), grad=False)
    update = RWR(cfg.env).update(kit, EXAMPLES)
    nll_after, _ = batch_losses(kit, rwr_batch(kit, EXAMPLES), grad=False)
    assert update.steps == 4 and not same(lora(kit, "env"), env)
    assert same(lora(kit, "agent"), agent) and same(base_weights(kit), frozen)
    assert nll_after < nll_before
    # the KL after the update: 5 examples in batches of 4, the mean of the two batches' KLs
    kls = [batch_losses(kit, rwr_batch(kit, part), grad=False)[1].item() for part in (EXAMPLES[:4], EXAMPLES[4:])]
    assert update.kl == pytest.approx(sum(kls) / 2, rel=1e-6) == env_kl(kit, EXAMPLES, cfg.env.batch_size)


def test_an_update_of_zero_steps_or_no_examples_only_measures():
    kit, cfg = tiny_kit(max_steps=2, lr=5e-2, kl_cap=100.0)
    RWR(cfg.env).update(kit, EXAMPLES)
    moved = lora(kit, "env")
    measured = RWR(replace(cfg.env, max_steps=0)).update(kit, EXAMPLES)
    assert measured.steps == 0 and math.isnan(measured.loss) and not measured.stopped_by_kl_cap
    assert measured.kl == env_kl(kit, EXAMPLES, cfg.env.batch_size) > 0
    assert same(lora(kit, "env"), moved)
    empty = RWR(cfg.env).update(kit, [])
    assert (empty.steps, empty.kl) == (0, 0.0)


def test_an_example_longer_than_the_model_takes_loses_its_context_first():
    """The context is cut from its start (keeping a token) before the target loses its end; the target is followed
    by the end-of-sequence token and marked in the batch, the padding is not."""
    kit, _ = tiny_kit()
    prompt, target = encode(kit, EXAMPLES[4])
    full = kit.tokenizer(EXAMPLES[4].target + kit.tokenizer.eos_token, add_special_tokens=False)["input_ids"]
    assert target == full and target[-1] == kit.tokenizer.eos_token_id
    short = replace(kit, max_seq_length=len(full) + 2)
    cut_prompt, cut_target = encode(short, EXAMPLES[4])
    assert cut_prompt == prompt[-2:] and cut_target == full
    tiny = replace(kit, max_seq_length=4)
    assert [len(part) for part in encode(tiny, EXAMPLES[4])] == [1, 3]
    batch = rwr_batch(kit, EXAMPLES[:2])
    lengths = [sum(len(part) for part in encode(kit, ex)) for ex in EXAMPLES[:2]]
    assert batch["attention_mask"].sum(1).tolist() == lengths
    assert batch["target_mask"].sum(1).tolist() == [len(encode(kit, ex)[1]) for ex in EXAMPLES[:2]]
    assert batch["weights"].tolist() == [ex.weight for ex in EXAMPLES[:2]]


def test_the_loops_call_hands_the_engine_the_rwr_trainer_under_the_runs_env_settings(scripted_backend):
    cfg = preset("tiny")
    backend = scripted_backend()
    update = update_env(backend, cfg, EXAMPLES)
    assert backend.env_trainers == ["rwr"] and backend.rwr_batches == [EXAMPLES] and update.steps == 1
    assert isinstance(RWR(cfg.env), EnvTrainer) and RWR(cfg.env).env is cfg.env
