"""A tiny random Qwen2-architecture model with a locally trained byte-level BPE tokenizer, for tests.

Built from nothing (no hub), deterministic by seed. The tokenizer follows Qwen2's normaliser (NFC) and split
regex with ``ByteLevel(use_regex=False)``, so that ``AutoTokenizer`` (which rebuilds a ``qwen2`` checkpoint's
tokenizer as ``Qwen2Tokenizer``) yields the same ids as the trained ``tokenizer.json``.

A random model never writes a parseable task, so the builder can *warm up* the model for a few hundred steps of
next-token prediction on format texts supplied by the caller (e.g. the domain's chat-templated seed tasks). The
model stays tiny and nearly random; the warm-up only teaches it the output format, so that the co-evolution
machinery (parse, validate, rollouts, both updates) is exercised end to end in seconds.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Sequence

import torch

CHATML_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
QWEN2_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_BASE_CORPUS = [
    "The quick brown fox jumps over the lazy dog. 0 1 2 3 4 5 6 7 8 9 + - * / ( ) = : , . ? !",
    "system user assistant Answer: Expression: Question: Compute: task seed success rate harder easier",
]


def chatml(messages: Sequence[dict[str, str]], reply: str) -> str:
    """One ChatML conversation ending with the assistant's ``reply`` (the tiny model's chat format).

    A final assistant message in ``messages`` is the reply's prefilled start, which ``reply`` continues.
    """
    start = ""
    if messages and messages[-1]["role"] == "assistant":
        messages, start = messages[:-1], messages[-1]["content"]
    text = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
    return f"{text}<|im_start|>assistant\n{start}{reply}<|im_end|>\n"


def build_tokenizer(corpus: Sequence[str], vocab_size: int = 512):
    """Train a byte-level BPE tokenizer on ``corpus`` with Qwen2's normaliser and pre-tokenizer."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token=None))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_SPLIT), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(list(_BASE_CORPUS) + list(corpus), trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                   bos_token=None, unk_token=None)
    fast.chat_template = CHATML_TEMPLATE
    return fast


def build_tiny_model(out_dir: str | Path, *, seed: int = 0, corpus: Sequence[str] = (), warmup_steps: int = 0,
                     hidden_size: int = 64, num_layers: int = 2) -> Path:
    """Build the tiny model into ``out_dir`` (idempotent: an existing complete build is reused)."""
    out = Path(out_dir)
    if (out / "genenv_tiny.json").is_file():
        return out
    torch.manual_seed(seed)
    tokenizer = build_tokenizer(corpus)
    model = new_model(tokenizer, hidden_size=hidden_size, num_layers=num_layers, num_key_value_heads=2)
    if warmup_steps and corpus:
        _warm_up(model, tokenizer, corpus, warmup_steps, seed)
    return save_model(model, tokenizer, out, "genenv_tiny.json", {"seed": seed, "warmup_steps": warmup_steps})


def new_model(tokenizer, *, hidden_size: int, num_layers: int, num_key_value_heads: int = 4,
              max_position_embeddings: int = 1024):
    """A randomly initialised Qwen2-architecture causal LM for ``tokenizer`` (4 heads, MLP width 2 × hidden, tied
    embeddings)."""
    from transformers import AutoModelForCausalLM, Qwen2Config

    config = Qwen2Config(
        vocab_size=len(tokenizer), hidden_size=hidden_size, intermediate_size=hidden_size * 2,
        num_hidden_layers=num_layers, num_attention_heads=4, num_key_value_heads=num_key_value_heads,
        max_position_embeddings=max_position_embeddings, tie_word_embeddings=True,
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id, bos_token_id=None,
    )
    return AutoModelForCausalLM.from_config(config, dtype=torch.float32)


def save_model(model, tokenizer, out: Path, marker: str, meta: dict, manifest=None) -> Path:
    """Save model + tokenizer into ``out`` atomically (a ``.partial`` folder renamed), ``marker`` last; with
    ``manifest`` (a key and a function of the folder), the marker also holds ``{key: manifest(folder)}``."""
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    tmp = out.with_name(out.name + ".partial")
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    if manifest is not None:
        meta = {**meta, manifest[0]: manifest[1](tmp)}
    (tmp / marker).write_text(json.dumps(meta))
    if out.exists():
        import shutil

        shutil.rmtree(out)
    tmp.rename(out)
    return out


def _warm_up(model, tokenizer, corpus: Sequence[str], steps: int, seed: int) -> None:
    """Next-token prediction on ``corpus`` for ``steps`` AdamW steps (format only; see the module docstring)."""
    gen = torch.Generator().manual_seed(seed)
    enc = [tokenizer(t, add_special_tokens=False)["input_ids"] for t in corpus]
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    batch = min(8, len(enc))
    for _ in range(steps):
        idx = torch.randint(len(enc), (batch,), generator=gen).tolist()
        seqs = [enc[i][:256] for i in idx]
        width = max(len(s) for s in seqs)
        ids = torch.full((batch, width), tokenizer.pad_token_id)
        mask = torch.zeros((batch, width), dtype=torch.long)
        for row, s in enumerate(seqs):
            ids[row, : len(s)] = torch.tensor(s)
            mask[row, : len(s)] = 1
        labels = ids.masked_fill(mask == 0, -100)
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
    model.eval()


def tiny_cache_key(seed: int, corpus: Sequence[str], warmup_steps: int) -> str:
    h = hashlib.sha256(json.dumps([seed, warmup_steps, list(corpus)]).encode()).hexdigest()[:16]
    return f"tiny-{h}"
