"""The RWR loss (genenv_lab.core.rwr): hand-computed values, properties, and the loss on both engines' log-prob
forwards on one model. The update around it (batching, KL cap, steps) is tests/test_env_trainer.py."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from genenv_lab.core.rwr import rwr_losses, target_positions


def test_hand_computed_weighted_nll_and_kl():
    # example 0 has two target tokens, example 1 one; vocabulary of 2
    p = torch.tensor([[0.5, 0.5], [0.2, 0.8], [0.9, 0.1]])
    q = torch.tensor([[0.5, 0.5], [0.5, 0.5], [0.5, 0.5]])
    labels, rows, w = torch.tensor([0, 1, 0]), torch.tensor([0, 0, 1]), torch.tensor([1.5, 0.5])
    nll, kl = rwr_losses(p.log(), q.log(), labels, rows, w)
    nll0 = (-math.log(0.5) - math.log(0.8)) / 2
    nll1 = -math.log(0.9)
    assert nll.item() == pytest.approx((1.5 * nll0 + 0.5 * nll1) / 2, rel=1e-6)

    def kl_of(a, b):
        return sum(x * math.log(x / y) for x, y in zip(a, b))

    expected_kl = (0.0 + kl_of([0.2, 0.8], [0.5, 0.5]) + kl_of([0.9, 0.1], [0.5, 0.5])) / 3
    assert kl.item() == pytest.approx(expected_kl, rel=1e-6)


def test_an_example_without_targets_counts_zero_and_no_targets_means_no_kl():
    logp = torch.log(torch.tensor([[0.25, 0.75]]))
    nll, kl = rwr_losses(logp, logp, torch.tensor([1]), torch.tensor([0]), torch.tensor([1.0, 1.0]))
    assert nll.item() == pytest.approx(-math.log(0.75) / 2) and kl.item() == 0.0
    empty = torch.zeros(0, 2)
    nll, kl = rwr_losses(empty, empty, torch.zeros(0, dtype=torch.long), torch.zeros(0, dtype=torch.long),
                         torch.tensor([1.0]))
    assert nll.item() == 0.0 and kl.item() == 0.0
    with pytest.raises(ValueError, match="must both be"):
        rwr_losses(torch.zeros(2, 3), torch.zeros(2, 4), torch.zeros(2, dtype=torch.long),
                   torch.zeros(2, dtype=torch.long), torch.ones(1))


def _dense(logits, ref_logits, ids, mask, w):
    """The masked full-sequence formula the hf engine used before (B, T-1, V)."""
    logp, ref = torch.log_softmax(logits, -1), torch.log_softmax(ref_logits, -1)
    labels, pos = ids[:, 1:], mask[:, 1:].float()
    nll = -logp.gather(-1, labels.unsqueeze(-1)).squeeze(-1)
    per = (nll * pos).sum(1) / pos.sum(1).clamp(min=1)
    kl_tok = (logp.exp() * (logp - ref)).sum(-1)
    return (w * per).mean(), (kl_tok * pos).sum() / pos.sum().clamp(min=1)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 4), st.integers(2, 7), st.integers(2, 6), st.integers(0, 2**31 - 1))
def test_equals_the_dense_masked_formula_and_kl_is_nonnegative(b, t, v, seed):
    g = torch.Generator().manual_seed(seed)
    logits, ref_logits = torch.randn(b, t, v, generator=g), torch.randn(b, t, v, generator=g)
    ids = torch.randint(0, v, (b, t), generator=g)
    mask = torch.rand(b, t, generator=g) > 0.4
    w = torch.rand(b, generator=g) * 2
    pos, labels, rows = target_positions(ids, mask)
    nll, kl = rwr_losses(torch.log_softmax(logits[:, :-1][pos], -1), torch.log_softmax(ref_logits[:, :-1][pos], -1),
                         labels, rows, w)
    dense_nll, dense_kl = _dense(logits[:, :-1], ref_logits[:, :-1], ids, mask, w)
    assert nll.item() == pytest.approx(dense_nll.item(), rel=1e-5, abs=1e-6)
    assert kl.item() == pytest.approx(dense_kl.item(), rel=1e-5, abs=1e-6) and kl.item() >= -1e-6
    same_nll, same_kl = rwr_losses(torch.log_softmax(logits[:, :-1][pos], -1),
                                   torch.log_softmax(logits[:, :-1][pos], -1), labels, rows, w)
    assert abs(same_kl.item()) < 1e-6 and same_nll.item() == pytest.approx(nll.item())


def test_both_engines_log_prob_forwards_give_the_same_rwr_losses_on_the_tiny_model(tiny_cfg):
    """The hf engine's full-logit forward and the unsloth engine's target-position forward (run here on the plain
    peft model, no GPU), each lent to the simulator's trainer, give the same RWR loss and KL, after the env adapter
    has moved away from the base."""
    from dataclasses import replace
    from functools import partial

    from genenv_lab.backends.base import EnvExample
    from genenv_lab.backends.hf import HFBackend
    from genenv_lab.backends.unsloth_engine import lean_target_log_probs
    from genenv_lab.domains import get_domain
    from genenv_lab.trainers.env import batch_losses, rwr_batch, update_env

    backend = HFBackend(tiny_cfg)
    domain = get_domain("arith")
    seeds = domain.seed_tasks()[:3]
    examples = [EnvExample(messages=domain.env_messages(s.spec, domain_stats(), 0.5), target=s.spec.text,
                           weight=w) for s, w in zip(seeds, (0.5, 1.0, 1.5))]
    update_env(backend, tiny_cfg, examples)  # move the env adapter so that the KL is not zero
    backend._use("env")
    kit = backend.env_kit()
    batch = rwr_batch(kit, examples)
    hf_nll, hf_kl = batch_losses(kit, batch, grad=False)
    us_nll, us_kl = batch_losses(replace(kit, log_probs=partial(lean_target_log_probs, backend.model)), batch,
                                 grad=False)
    assert hf_kl.item() > 0
    assert us_nll.item() == pytest.approx(hf_nll.item(), rel=1e-5)
    assert us_kl.item() == pytest.approx(hf_kl.item(), rel=1e-4, abs=1e-7)


def domain_stats():
    from genenv_lab.domains import LineageStats

    return LineageStats()
