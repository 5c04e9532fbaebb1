"""The simulator's update (reward-weighted regression) as one pure function of log-probabilities: no model, no I/O.

Given the policy's and the reference's log-probabilities at the N positions that predict a target token, the
target tokens, which example each position belongs to, and the examples' RWR weights (:func:`genenv_lab.core.curriculum.
rwr_weights`), it returns the two terms of the env loss::

    L = mean_i w_i · NLL_i  +  kl_coef · mean_t KL(π_env(·|t) ‖ π_ref(·|t))

where NLL_i is example i's mean target-token negative log-likelihood (an example without target tokens counts 0)
and the KL is the full-vocabulary KL at each target position, averaged over all N of them (0 when N = 0). The
``hf`` engine (full logits) and the ``unsloth`` engine (logits at the target positions only) both compute the
log-probabilities their own way and call this, so the method's distinctive update is written once and tested
against hand-computed values on CPU (``tests/test_rwr.py``). Written by hand: no library offers a per-sample
weighted NLL with a KL penalty to a reference policy for a text generator.
"""

from __future__ import annotations

import torch


def rwr_losses(logp: torch.Tensor, ref_logp: torch.Tensor, labels: torch.Tensor, rows: torch.Tensor,
               weights: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(weighted NLL, mean per-token KL to the reference).

    ``logp``, ``ref_logp``: (N, V) log-probabilities at the target positions (policy, reference); ``labels``: (N,)
    the target token at each; ``rows``: (N,) the example each belongs to, in [0, B); ``weights``: (B,).

    >>> import math
    >>> logp = torch.log(torch.tensor([[0.5, 0.5], [0.25, 0.75]]))
    >>> nll, kl = rwr_losses(logp, logp, torch.tensor([0, 1]), torch.tensor([0, 0]), torch.tensor([2.0]))
    >>> round(nll.item(), 6) == round(2.0 * (math.log(2) + math.log(4 / 3)) / 2, 6), kl.item()
    (True, 0.0)
    """
    if logp.shape != ref_logp.shape or logp.dim() != 2:
        raise ValueError(f"logp and ref_logp must both be (N, V); got {tuple(logp.shape)} and {tuple(ref_logp.shape)}")
    n_examples = weights.shape[0]
    nll = -logp.gather(-1, labels.unsqueeze(-1)).squeeze(-1)  # (N,)
    counts = torch.bincount(rows, minlength=n_examples).clamp(min=1)  # (B,)
    per_example = torch.zeros(n_examples, device=nll.device, dtype=nll.dtype).index_add(0, rows, nll) / counts
    weighted_nll = (weights.to(nll.dtype) * per_example).mean()
    kl_tok = (logp.exp() * (logp - ref_logp)).sum(-1)  # (N,)
    kl = kl_tok.mean() if kl_tok.numel() else kl_tok.sum()
    return weighted_nll, kl


def target_positions(input_ids: torch.Tensor, target_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor,
                                                                                  torch.Tensor]:
    """(pos, labels, rows) of a causal-LM batch: ``pos`` (B, T-1) marks the positions whose *next* token is a target
    token, ``labels`` (N,) those tokens, ``rows`` (N,) their example."""
    pos = target_mask[:, 1:].bool()
    return pos, input_ids[:, 1:][pos], pos.nonzero()[:, 0]
