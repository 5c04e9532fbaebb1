"""The GPU presets' models as shapes: each one's true architecture and vocabulary, written here (the fields of its
``config.json`` that set compute and memory), built with random weights and a tokenizer that covers the vocabulary,
so that time and memory are measured without a model hub (benchmarks/gpu_epoch.py ``--shape``).

Compute and memory depend on a model's shapes (layers, hidden and intermediate sizes, heads, vocabulary) and the
sequence lengths, not on its weight values. A random model writes no parseable task, so the benchmark drives the
engine's phases itself at the preset's sizes, with generations forced to the preset's lengths: an upper bound of
an epoch's time and memory.

The tokenizer is a word-level one with exactly ``vocab_size`` entries (every id decodes to one word, and the words
of decoded text encode back to the same ids, so a generation of N tokens is an RWR target of N tokens), Qwen's
special tokens at their ids, and the model family's chat template (Qwen3's with its thinking switch).
"""

from __future__ import annotations

import json
import string
from dataclasses import dataclass
from pathlib import Path
from typing import Any

QWEN_SPECIALS = {151643: "<|endoftext|>", 151644: "<|im_start|>", 151645: "<|im_end|>", 151667: "<think>",
                 151668: "</think>"}

_QWEN = dict(vocab_size=151936, hidden_act="silu", rms_norm_eps=1e-6, rope_theta=1000000.0, bos_token_id=151643,
             eos_token_id=151645, tie_word_embeddings=True, attention_dropout=0.0, initializer_range=0.02)
SHAPES: dict[str, dict[str, Any]] = {
    # Qwen/Qwen3-0.6B: 0.60 B parameters (0.44 B outside the tied embedding)
    "qwen3-0.6b": dict(_QWEN, model_type="qwen3", hidden_size=1024, intermediate_size=3072, num_hidden_layers=28,
                       num_attention_heads=16, num_key_value_heads=8, head_dim=128, max_position_embeddings=40960,
                       attention_bias=False),
    # Qwen/Qwen3-1.7B: 1.72 B
    "qwen3-1.7b": dict(_QWEN, model_type="qwen3", hidden_size=2048, intermediate_size=6144, num_hidden_layers=28,
                       num_attention_heads=16, num_key_value_heads=8, head_dim=128, max_position_embeddings=40960,
                       attention_bias=False),
    # Qwen/Qwen3-4B: 4.02 B
    "qwen3-4b": dict(_QWEN, model_type="qwen3", hidden_size=2560, intermediate_size=9728, num_hidden_layers=36,
                     num_attention_heads=32, num_key_value_heads=8, head_dim=128, max_position_embeddings=40960,
                     attention_bias=False),
    # Qwen/Qwen2.5-0.5B-Instruct: 0.49 B
    "qwen2.5-0.5b": dict(_QWEN, model_type="qwen2", hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                         num_attention_heads=14, num_key_value_heads=2, max_position_embeddings=32768,
                         max_window_layers=21, use_sliding_window=False, sliding_window=32768),
}


@dataclass(frozen=True)
class Target:
    """A GPU preset's shape and the card it is sized for."""

    preset: str
    shape: str
    card: str
    card_gib: float
    """The memory torch sees on that card (a T4's 15 GB shows as 14.74 GiB, an L4's 24 GB as 22.0 GiB)."""


TARGETS = {
    "colab-t4": Target("colab-t4", "qwen3-0.6b", "Tesla T4", 14.74),
    "colab-t4-qwen2.5": Target("colab-t4-qwen2.5", "qwen2.5-0.5b", "Tesla T4", 14.74),
    "colab-l4": Target("colab-l4", "qwen3-1.7b", "NVIDIA L4", 22.0),
    "a100": Target("a100", "qwen3-4b", "NVIDIA A100 40GB", 39.4),
}

QWEN3_TEMPLATE = (
    "{%- for message in messages %}{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>\\n' }}{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}"
    "{%- if enable_thinking is defined and enable_thinking is false %}{{- '<think>\\n\\n</think>\\n\\n' }}"
    "{%- endif %}{%- endif %}")
"""Qwen3's chat template, reduced to what sets the token count: ChatML turns, and the empty reasoning block that
``enable_thinking=False`` writes (the engines hold it off: genenv_lab/backends/hf.py ``thinking_off``)."""
CHATML_TEMPLATE = QWEN3_TEMPLATE.split("{%- if enable_thinking")[0] + "{%- endif %}"


def config_fields(shape: str, layers: int | None = None) -> dict[str, Any]:
    """The config fields of ``shape``, with ``layers`` decoder layers instead of the model's (a slice)."""
    if shape not in SHAPES:
        raise ValueError(f"unknown shape {shape!r}; one of {sorted(SHAPES)}")
    fields = dict(SHAPES[shape])
    if layers is not None:
        fields["num_hidden_layers"] = layers
        if "max_window_layers" in fields:
            fields["max_window_layers"] = min(fields["max_window_layers"], layers)
    return fields


def parameters(fields: dict[str, Any]) -> int:
    """The parameter count of a Qwen2/Qwen3 config (tied embedding counted once).

    >>> round(parameters(SHAPES["qwen3-0.6b"]) / 1e9, 2), round(parameters(SHAPES["qwen3-1.7b"]) / 1e9, 2)
    (0.6, 1.72)
    >>> round(parameters(SHAPES["qwen2.5-0.5b"]) / 1e9, 2), round(parameters(SHAPES["qwen3-4b"]) / 1e9, 2)
    (0.49, 4.02)
    """
    h, v = fields["hidden_size"], fields["vocab_size"]
    d = fields.get("head_dim") or h // fields["num_attention_heads"]
    q, kv = fields["num_attention_heads"] * d, fields["num_key_value_heads"] * d
    attn = h * q + 2 * h * kv + q * h + (q + 2 * kv if fields["model_type"] == "qwen2" else 0)
    norms = 2 * h + (2 * d if fields["model_type"] == "qwen3" else 0)
    per_layer = attn + 3 * h * fields["intermediate_size"] + norms
    return v * h + fields["num_hidden_layers"] * per_layer + h + (0 if fields["tie_word_embeddings"] else v * h)


def vocabulary(vocab_size: int, specials: dict[int, str], words: list[str] = ()) -> dict[str, int]:
    """``vocab_size`` distinct single-word tokens, id -> token: the specials at their ids, then ``words``, the
    printable characters and the numbers 0-9999 (so that the domains' prompts encode to real tokens), then ``w<id>``
    fillers up to the size."""
    vocab: dict[str, int] = {"UNK": 0}  # one word, so that it survives a decode and encode as well
    taken = set(specials)
    wanted = [*dict.fromkeys([*words, *string.ascii_letters, *string.punctuation,
                                       *map(str, range(10000))])]
    ids = (i for i in range(vocab_size) if i not in taken and i != 0)
    for token in wanted:
        if token not in vocab:
            i = next(ids, None)
            if i is None:  # a vocabulary smaller than the wanted words (tests)
                break
            vocab[token] = i
    for i in ids:
        vocab[f"w{i}"] = i
    for i, token in specials.items():
        vocab[token] = i
    if len(vocab) != vocab_size or sorted(vocab.values()) != list(range(vocab_size)):
        raise AssertionError("the vocabulary does not cover every id exactly once")
    return vocab


def build_tokenizer(vocab_size: int, *, template: str, words: list[str] = ()):
    """A fast tokenizer whose ids are exactly ``0 .. vocab_size - 1`` (:func:`vocabulary`): word-level, split on
    whitespace and punctuation, decoded with spaces; Qwen's end-of-turn token as end of sequence."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    specials = (QWEN_SPECIALS if vocab_size > max(QWEN_SPECIALS) else  # a small test vocabulary: at its end
                {vocab_size - len(QWEN_SPECIALS) + k: t for k, t in enumerate(QWEN_SPECIALS.values())})
    core = Tokenizer(models.WordLevel(vocabulary(vocab_size, specials, list(words)), unk_token="UNK"))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    core.decoder = decoders.WordPiece(prefix="##", cleanup=False)  # joins words with spaces
    tok = PreTrainedTokenizerFast(tokenizer_object=core, unk_token="UNK", pad_token="<|endoftext|>",
                                  eos_token="<|im_end|>", additional_special_tokens=list(specials.values()))
    tok.chat_template = template
    return tok


def build_shape_model(shape: str, out: Path, *, layers: int | None = None, words: list[str] = (), seed: int = 0,
                      dtype: str = "bfloat16", device: str = "cpu") -> Path:
    """A local model folder of ``shape`` (``layers``: a slice) with random weights in ``dtype`` and the tokenizer of
    :func:`build_tokenizer`; built once per (shape, layers, dtype) under ``out`` and reused."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    fields = config_fields(shape, layers)
    folder = Path(out) / f"{shape}-l{fields['num_hidden_layers']}-{dtype}"
    if (folder / "config.json").is_file() and (folder / "tokenizer.json").is_file():
        return folder
    config = AutoConfig.for_model(**fields)
    torch.manual_seed(seed)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, dtype=getattr(torch, dtype))
    partial = folder.with_name(folder.name + ".partial")
    model.save_pretrained(partial)
    del model
    if device != "cpu":
        torch.cuda.empty_cache()  # before the benchmark caps the process's memory at the target card's
    template = QWEN3_TEMPLATE if fields["model_type"] == "qwen3" else CHATML_TEMPLATE
    tokenizer = build_tokenizer(fields["vocab_size"], template=template, words=list(words))
    tokenizer.save_pretrained(partial)
    (partial / "shape.json").write_text(json.dumps({"shape": shape, "layers": fields["num_hidden_layers"],
                                                    "parameters": parameters(fields)}, indent=1))
    if folder.exists():
        import shutil

        shutil.rmtree(folder)
    partial.rename(folder)
    return folder
