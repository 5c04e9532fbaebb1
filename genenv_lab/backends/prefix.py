"""Encode each prompt once: shared-prefix generation and shared-prefix log-probabilities (the ``hf`` engine).

A GRPO batch holds every task G times (G rollouts of one prompt), and the simulator writes several variations of one
context. Generation and the GRPO log-prob forward both run the model over ``prompt + completion`` rows, so the same
prompt is encoded G times. Here each distinct prompt is encoded once: its key/value cache is computed on the
distinct prompts only and repeated per row (``Cache.reorder_cache``, an ``index_select``), and only the rows'
completions run against it. The method is Prefix Grouper's (arXiv 2506.05433): a causal model's prompt positions do
not see the completion, so the prompt's keys, values and hidden states are the same in every copy, and the outputs
are identical; the gradient that flows into the one shared prompt through ``index_select`` is the sum of what its
copies would get, so the gradients are identical too (the tests compare both with TRL's own computation, float32,
1e-5).

Written by hand because no library offers it for transformers + TRL on CPU: TRL has no shared-prefix path (trl#3549
is open); Unsloth's "PrefixGrouper" is CUDA-only and inside its own trainer.

Positions follow the full-row computation exactly: TRL's log-prob forward passes no ``position_ids`` (a row's
positions are ``0..T-1``, left padding included), and ``generate`` derives them from the attention mask; each path
here gives the prompt and the completion the positions the full row would give them.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import functools
import inspect

import torch
import torch.nn.functional as F
from transformers.cache_utils import Cache
from transformers.utils import ModelOutput

SHARED = "shared-prefix"
FULL = "full-rows"
UNSLOTH = "unsloth-prefix-grouper"
PATHS = (SHARED, FULL, UNSLOTH)
"""The values of ``agent/prefix_path`` in ``epochs.jsonl``: which log-prob and rollout path the agent update took
(``unsloth-prefix-grouper``: the unsloth engine, Unsloth's own shared-prefix loss switched on)."""

_LOGIT_CHUNK = 1024
"""Completion positions projected through the LM head at a time (bounds the (positions, vocabulary) logits)."""


def group_rows(prefix_ids: torch.Tensor, prefix_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(first, inverse)``: the first row of each distinct ``(ids, mask)`` prefix, in order of first appearance,
    and for every row the index (into ``first``) of its prefix, so ``prefix_ids[first][inverse] == prefix_ids``.

    >>> first, inverse = group_rows(torch.tensor([[1, 2], [3, 4], [1, 2]]), torch.ones(3, 2, dtype=torch.long))
    >>> first.tolist(), inverse.tolist()
    ([0, 1], [0, 1, 0])
    """
    keys = [tuple(row) for row in torch.cat([prefix_ids, prefix_mask.to(prefix_ids.dtype)], dim=1).tolist()]
    group_of: dict[tuple, int] = {}
    first, inverse = [], []
    for row, key in enumerate(keys):
        if key not in group_of:
            group_of[key] = len(first)
            first.append(row)
        inverse.append(group_of[key])
    device = prefix_ids.device
    return torch.tensor(first, dtype=torch.long, device=device), torch.tensor(inverse, dtype=torch.long,
                                                                               device=device)


def worth_sharing(inverse: torch.Tensor) -> bool:
    """Whether any prefix is shared by two rows (otherwise the full-row path does the same work in one pass)."""
    return int(inverse.max()) + 1 < inverse.numel() if inverse.numel() else False


def supports_shared_prefix(model: Any) -> str:
    """``""`` when the shared-prefix log-prob path computes what the model's own head computes, else the reason
    it does not (the caller then takes the full-row path and records it)."""
    if getattr(model, "is_gradient_checkpointing", False):
        return "gradient checkpointing is on (a checkpointed forward keeps no key/value cache to share)"
    cfg = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
    if getattr(cfg, "final_logit_softcapping", None) is not None:
        return "the model soft-caps its logits"
    for name in ("logit_scale", "output_multiplier", "lm_head_multiplier", "logits_scaling"):
        if getattr(cfg, name, None) not in (None, 1, 1.0):
            return f"the model scales its logits ({name})"
    if getattr(cfg, "output_router_logits", False):
        return "mixture-of-experts router losses"
    return ""


@dataclass(frozen=True)
class PrefixRequest:
    """What the patched forward is asked for: the last ``logits_to_keep`` columns are the completion."""

    logits_to_keep: int
    temperature: float = 1.0
    entropy: bool = False


@dataclass
class PrefixOutput(ModelOutput):
    """Per-completion-token log-probabilities (and entropies) of a shared-prefix forward, ``(B, logits_to_keep)``,
    zero where the completion is padding (as TRL's fused head returns them). A ``ModelOutput``, so that whatever
    wraps the model (DistributedDataParallel) finds its tensors."""

    log_probs: torch.Tensor | None = None
    entropy: torch.Tensor | None = None


def _cache_name(module: Any) -> str:
    """The keyword a transformers model takes its key/value cache by: ``cache`` (transformers >= 5.20) or
    ``past_key_values`` (earlier)."""
    return _cache_keyword(type(module))


@functools.lru_cache(maxsize=None)
def _cache_keyword(cls: type) -> str:
    return "cache" if "cache" in inspect.signature(cls.forward).parameters else "past_key_values"


def _cache_of(output: Any):
    return output["cache"] if "cache" in output else output["past_key_values"]


def _prefix_positions(mask: torch.Tensor) -> torch.Tensor:
    """Positions ``generate`` gives a left-padded prompt: the running count of real tokens (padding, which nothing
    attends to, gets 0)."""
    pos = mask.long().cumsum(-1) - 1
    return pos.masked_fill(mask == 0, 0)


def shared_prefix_logps(causal_lm: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                        request: PrefixRequest) -> PrefixOutput:
    """Log-probabilities of the completion tokens (the last ``request.logits_to_keep`` columns of ``input_ids``),
    with each distinct prompt encoded once.

    Equal to TRL's ``_get_per_token_logps_and_entropies`` on the same rows: the prompts run through the backbone
    once per distinct prompt (positions ``0..P-1``, as TRL's forward without ``position_ids``), their cache is
    repeated per row, the completions run against it (positions ``P..P+C-1``), and the LM head scores completion
    token j from the hidden state before it (the prompt's last for j = 0), divided by the temperature."""
    c = request.logits_to_keep
    prompt_ids, prompt_mask = input_ids[:, :-c], attention_mask[:, :-c]
    completion_ids, completion_mask = input_ids[:, -c:], attention_mask[:, -c:]
    first, inverse = group_rows(prompt_ids, prompt_mask)
    backbone = causal_lm.base_model
    out = backbone(input_ids=prompt_ids[first], attention_mask=prompt_mask[first], use_cache=True)
    cache = _cache_of(out)
    cache.reorder_cache(inverse)  # one cache row per completion row; index_select sums the copies' gradients
    rest = backbone(input_ids=completion_ids, attention_mask=attention_mask, use_cache=True,
                    **{_cache_name(backbone): cache})
    hidden = torch.cat([out.last_hidden_state[:, -1:][inverse], rest.last_hidden_state[:, :-1]], dim=1)
    labels_ok = completion_mask.bool()
    head = causal_lm.get_output_embeddings()
    picked, ents = [], []
    flat_hidden, flat_labels = hidden[labels_ok], completion_ids[labels_ok]
    for start in range(0, flat_hidden.size(0), _LOGIT_CHUNK):
        logits = head(flat_hidden[start:start + _LOGIT_CHUNK]).float() / request.temperature
        logp = F.log_softmax(logits, dim=-1)
        picked.append(logp.gather(-1, flat_labels[start:start + _LOGIT_CHUNK, None]).squeeze(-1))
        if request.entropy:
            ents.append(-(logp.exp() * logp).sum(-1))
    zeros = hidden.new_zeros(completion_ids.shape, dtype=torch.float32)
    log_probs = zeros.masked_scatter(labels_ok, torch.cat(picked)) if picked else zeros + 0 * hidden.sum()
    entropy = zeros.masked_scatter(labels_ok, torch.cat(ents)) if ents else (zeros if request.entropy else None)
    return PrefixOutput(log_probs=log_probs, entropy=entropy)


def install_prefix_forward(causal_lm: Any) -> None:
    """Give ``causal_lm`` (the transformers model under peft, whatever wraps it) a ``prefix_request=`` argument:
    ``model(input_ids=…, attention_mask=…, prefix_request=PrefixRequest(…))`` returns a :class:`PrefixOutput`.

    Going through the model's own ``forward`` keeps the two backbone passes inside one call of whatever wraps the
    model (peft, accelerate, DistributedDataParallel, which allows one forward per backward). Without the argument
    the forward is the one it replaces. Installing twice is a no-op."""
    if getattr(causal_lm, "_genenv_prefix_forward", False):
        return
    previous = causal_lm.forward

    # keep the class's signature: generate reads it (whether to derive position_ids from the attention mask)
    @functools.wraps(type(causal_lm).forward)
    def forward(*args, prefix_request: PrefixRequest | None = None, **kwargs):
        if prefix_request is None:
            return previous(*args, **kwargs)
        return shared_prefix_logps(causal_lm, kwargs["input_ids"], kwargs["attention_mask"], prefix_request)

    causal_lm.forward = forward
    causal_lm._genenv_prefix_forward = True


# ------------------------------------------------------------------------------------------------ generation
LEGACY_CACHE_MARK = "_genenv_legacy_cache"  # set on a model whose forward returned a tuple cache: no prefill again
@torch.no_grad()
def prefill_shared(model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor):
    """A cache of every row's prompt but its last token, computed once per distinct prompt and repeated per row,
    for ``generate(input_ids, attention_mask, past_key_values=cache)`` (which then encodes only the last prompt
    token and what it samples). ``None`` when no prompt repeats or the prompt is a single token: plain
    ``generate`` does the same work then; ``None`` too for a model whose forward returns its cache in the legacy
    tuple form (Unsloth's fast forward on a GPU does), which has no ``reorder_cache`` and which such a model's own
    generation keeps in a layout of its own: the model is marked and never prefilled again (plain ``generate``)."""
    if input_ids.size(1) < 2 or getattr(model, LEGACY_CACHE_MARK, False):
        return None
    first, inverse = group_rows(input_ids, attention_mask)
    if not worth_sharing(inverse):
        return None
    ids, mask = input_ids[first, :-1], attention_mask[first, :-1]
    out = model(input_ids=ids, attention_mask=mask, position_ids=_prefix_positions(mask), use_cache=True,
                logits_to_keep=1)
    cache = _cache_of(out)
    if not isinstance(cache, Cache):
        setattr(model, LEGACY_CACHE_MARK, True)
        return None
    cache.reorder_cache(inverse)
    return cache


@contextmanager
def sharing_generate(model: Any):
    """Within the block, ``model.generate`` encodes each distinct prompt row once (:func:`generate_shared`): for a
    caller that calls ``generate`` itself (TRL's rollouts)."""
    original = model.generate
    model.generate = lambda input_ids, attention_mask, **kw: generate_shared(model, input_ids, attention_mask,
                                                                            generate=original, **kw)
    try:
        yield model
    finally:
        del model.generate  # the class's method again


def generate_shared(model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor, *, generate=None,
                    **generate_kwargs):
    """``model.generate`` with each distinct prompt row encoded once.

    Rows must already be expanded (a prompt G times for G samples), as TRL passes them; sampling is whatever
    ``generate_kwargs`` say, unchanged. ``generate``: the method to call (default ``model.generate``)."""
    generate = generate or model.generate
    cache = prefill_shared(model, input_ids, attention_mask)
    if cache is not None:
        causal_lm = model.get_base_model() if hasattr(model, "get_base_model") else model
        generate_kwargs[_cache_name(causal_lm)] = cache
    return generate(input_ids=input_ids, attention_mask=attention_mask, **generate_kwargs)
