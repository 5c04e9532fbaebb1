"""The simulator's trainer, reward-weighted regression (RWR), and Algorithm 1's "update the environment"
(:func:`update_env`).

The loop calls :func:`update_env` once an epoch with the in-band generations as weighted (context → task text)
examples. The engine lends the trainer what is its own (a :class:`~genenv_lab.backends.base.EnvKit`, the ``env``
adapter active: the model, its chat template, the run-long optimiser of the env role, the base as the KL anchor, its
log-prob forward, the job's processes); :class:`RWR` builds the batches and runs the update here, so the update is
the same on every engine and can be run, and tested, on a model with no engine around it.

Written by hand, because no library offers a per-sample weighted NLL with a KL penalty to the adapter-disabled base
and a KL stopping cap. Loss per mini-batch (the math: :func:`genenv_lab.core.rwr.rwr_losses`)::

    L = mean_i w_i · NLL_i(target | context)  +  kl_coef · mean_tokens KL(π_env ‖ π_base)

where NLL_i is the mean token NLL of example i and the KL is the full-vocabulary KL at each target position. Up to
``env.max_steps`` optimiser steps, the mini-batches of ``env.batch_size`` examples taken in turn (wrapping around,
:func:`minibatch`); the update stops as soon as a mini-batch's KL, measured before its step, exceeds ``env.kl_cap``.
The figures: the mean loss of the steps taken, and the KL after the update on every example (:func:`env_kl`).

Under N processes (:mod:`genenv_lab.backends.distributed`) each process takes its contiguous part of every
mini-batch (an example on one process only), scales its loss by its share of the examples and target tokens
(:func:`share_loss`), the adapter's gradients are averaged before the step and the cap is decided on the KL over
all target tokens: the same update as one process on the whole mini-batch. With one process every factor is 1.

Importing this module loads no torch (the loop imports it); torch loads when an update runs.
"""

from __future__ import annotations

import math
from contextlib import nullcontext
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Sequence

from genenv_lab.backends.base import Backend, EnvExample, EnvKit, EnvUpdate

if TYPE_CHECKING:
    import torch


# ------------------------------------------------------------------------------------------------ the batches

def encode(kit: EnvKit, example: EnvExample) -> tuple[list[int], list[int]]:
    """(context ids, target ids) of one example: the context rendered by the engine's chat template, the target
    followed by the end-of-sequence token; cut to ``kit.max_seq_length`` (the context loses its start, keeping at
    least one token, then the target its end)."""
    tokenizer = kit.tokenizer
    prompt = tokenizer(kit.render(example.messages), add_special_tokens=False)["input_ids"]
    target = tokenizer(example.target + tokenizer.eos_token, add_special_tokens=False)["input_ids"]
    limit = kit.max_seq_length
    prompt = prompt[-max(limit - len(target), 1):]
    return prompt, target[: limit - len(prompt)]


def rwr_batch(kit: EnvKit, examples: Sequence[EnvExample]) -> dict[str, torch.Tensor]:
    """The examples as one right-padded batch on the kit's device: ``input_ids``, ``attention_mask``,
    ``target_mask`` (the target tokens) and ``weights`` (float32)."""
    import torch

    encoded = [encode(kit, ex) for ex in examples]
    width = max(len(p) + len(t) for p, t in encoded)
    ids = torch.full((len(encoded), width), kit.tokenizer.pad_token_id, dtype=torch.long)
    attn = torch.zeros_like(ids)
    target_mask = torch.zeros_like(ids, dtype=torch.bool)
    for row, (p, t) in enumerate(encoded):
        seq = p + t
        ids[row, : len(seq)] = torch.tensor(seq)
        attn[row, : len(seq)] = 1
        target_mask[row, len(p): len(seq)] = True
    weights = torch.tensor([ex.weight for ex in examples], dtype=torch.float32)
    return {"input_ids": ids.to(kit.device), "attention_mask": attn.to(kit.device),
            "target_mask": target_mask.to(kit.device), "weights": weights.to(kit.device)}


def minibatch(step: int, batch_size: int, n: int) -> list[int]:
    """The examples (indices into ``n``) of optimiser step ``step``: ``batch_size`` of them in turn, wrapping around.

    >>> minibatch(0, 2, 5), minibatch(2, 2, 5), minibatch(1, 8, 3)
    ([0, 1], [4, 0], [2, 0, 1])
    """
    start = (step * batch_size) % n
    return [(start + k) % n for k in range(min(batch_size, n))]


# ------------------------------------------------------------------------------------------------ the losses

def batch_losses(kit: EnvKit, batch: dict[str, torch.Tensor], grad: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """(weighted NLL, mean per-token KL to the adapter-disabled base) of one batch: :func:`genenv_lab.core.rwr.
    rwr_losses` on the engine's log-probabilities at the target positions (the base's without a gradient)."""
    import torch

    from genenv_lab.core.rwr import rwr_losses, target_positions

    ids, attn = batch["input_ids"], batch["attention_mask"]
    pos, labels, rows = target_positions(ids, batch["target_mask"])
    with torch.no_grad(), kit.base():
        ref_logp = kit.log_probs(ids, attn, pos)
    with nullcontext() if grad else torch.no_grad():
        logp = kit.log_probs(ids, attn, pos)
    return rwr_losses(logp, ref_logp, labels, rows, batch["weights"])


def share_loss(nll: torch.Tensor, kl: torch.Tensor, kl_coef: float, *, world_size: int, examples: int,
               batch_examples: int, token_share: float) -> torch.Tensor:
    """This process's loss for a mini-batch of ``batch_examples`` of which it holds ``examples`` and
    ``token_share`` of the target tokens: scaled so that the processes' mean of these losses (and of their
    gradients) is the loss of the whole mini-batch. With one process both factors are exactly 1."""
    return nll * (world_size * examples / batch_examples) + kl_coef * kl * (world_size * token_share)


def env_kl(kit: EnvKit, examples: Sequence[EnvExample], batch_size: int) -> float:
    """Mean per-token KL of the env adapter to the initial simulator (the base) on ``examples``' targets: the mean
    over batches of ``batch_size`` examples of each batch's KL."""
    import torch

    if not examples:
        return 0.0
    kls = []
    with torch.no_grad():
        for start in range(0, len(examples), batch_size):
            _, kl = batch_losses(kit, rwr_batch(kit, examples[start:start + batch_size]), grad=False)
            kls.append(kl.item())
    return sum(kls) / len(kls)


# ------------------------------------------------------------------------------------------------ the update

def rwr_update(kit: EnvKit, env, examples: Sequence[EnvExample]) -> EnvUpdate:
    """One RWR update of the kit's (env) adapter on ``examples`` under ``env`` (an :class:`~genenv_lab.config.
    EnvConfig`: ``max_steps``, ``batch_size``, ``kl_coef``, ``kl_cap``); see the module's docstring. Without
    examples or steps it only measures the KL."""
    if not examples or env.max_steps == 0:
        return EnvUpdate(steps=0, kl=env_kl(kit, examples, env.batch_size) if examples else 0.0)
    kit.model.train()
    opt, procs = kit.optimizer, kit.procs
    params = [p for group in opt.param_groups for p in group["params"]]
    losses: list[float] = []
    steps, capped = 0, False
    for step in range(env.max_steps):
        idx = minibatch(step, env.batch_size, len(examples))
        share = procs.shard(idx)  # this process's part of the step's mini-batch (all of it with one process)
        if share:
            batch = rwr_batch(kit, [examples[i] for i in share])
            nll, kl = batch_losses(kit, batch, grad=True)
            tokens = int(batch["target_mask"][:, 1:].sum())
        # the batch's KL over every process's target tokens: all processes take the same decision
        kl_all, token_share = procs.pooled_mean(kl.item() if share else 0.0, tokens if share else 0)
        if kl_all > env.kl_cap:
            capped = True
            break
        local = 0.0
        if share:
            loss = share_loss(nll, kl, env.kl_coef, world_size=procs.world_size, examples=len(share),
                              batch_examples=len(idx), token_share=token_share)
            loss.backward()
            local = loss.item()
        procs.average_gradients(params)
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(procs.mean(local))
        steps += 1
    kit.model.eval()
    final_kl = env_kl(kit, examples, env.batch_size)
    return EnvUpdate(loss=sum(losses) / len(losses) if losses else math.nan, kl=final_kl, steps=steps,
                     stopped_by_kl_cap=capped or final_kl > env.kl_cap)


@dataclass(frozen=True)
class RWR:
    """The simulator's trainer: :func:`rwr_update` under the run's ``env`` settings (an
    :class:`~genenv_lab.config.EnvConfig`)."""

    env: Any
    name: str = "rwr"

    def update(self, kit: EnvKit, examples: Sequence[EnvExample]) -> EnvUpdate:
        return rwr_update(kit, self.env, examples)


def update_env(backend: Backend, cfg, examples: Sequence[EnvExample]) -> EnvUpdate:
    """Algorithm 1's "update the environment": one RWR update of the env adapter on ``examples`` under
    ``cfg.env``, taken by ``backend`` (:meth:`~genenv_lab.backends.base.Backend.train_env`)."""
    return backend.train_env(RWR(cfg.env), examples)


def measured_env_kl(backend: Backend, cfg, examples: Sequence[EnvExample]) -> float:
    """The env adapter's KL to the base on ``examples`` (:func:`env_kl`), measured through the engine without a step
    (an RWR update of zero steps only measures)."""
    return backend.train_env(RWR(replace(cfg.env, max_steps=0)), examples).kl
