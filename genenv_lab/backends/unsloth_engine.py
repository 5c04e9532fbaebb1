"""The ``unsloth`` engine: Unsloth's FastLanguageModel (4-bit or 16-bit base) with the two LoRA adapters, one GPU.

What it adds to the ``hf`` engine (:class:`~genenv_lab.backends.hf.HFBackend`, which it subclasses):

- Base: ``FastLanguageModel.from_pretrained(..., load_in_4bit=ModelConfig.load_in_4bit, fast_inference=True,
  max_lora_rank=, gpu_memory_utilization=)``: Unsloth's kernels, and with ``fast_inference`` a vLLM engine inside
  the same process that shares the base weights. LoRA through ``FastLanguageModel.get_peft_model``.
- Agent update: TRL's ``GRPOTrainer`` as Unsloth patches it (``import unsloth`` before TRL): rollouts through the
  vLLM engine (``use_vllm`` when the model has one), the current agent weights pushed into vLLM as tensors every
  step by Unsloth itself. Only ``GRPOConfig`` fields that exist in the running TRL are passed, so the same code
  runs with trl 1.15 (which Unsloth 2026.10 pins) and 1.16.
- Env update: the hf engine's RWR step (KL cap, optimiser, batching: inherited unchanged) with a leaner loss kernel
  (:func:`target_rwr_losses`): the same weighted NLL + full-vocabulary KL, computed from the decoder's hidden states
  at the target positions only, because the hf kernel's float32 logits over every position of a 152k-token vocab
  do not fit a T4 at the GPU presets' batch sizes.

Two adapters, one slot (the deliberate deviation). Unsloth's vLLM bridge (``model.load_lora(dir,
load_tensors=True)``, what its GRPO trainer calls every step) reads the peft adapter named ``default`` and strips
``.default`` from every LoRA tensor name of the model's state dict; a second peft adapter on the same model would
leak its tensors into that request (and serving two adapters on one Unsloth model is a known weak spot). So the
model has a single peft adapter and :class:`AdapterSlot` swaps the ``agent`` and ``env`` weights in and out of it
(a copy of a few MB; the base never changes). Everything that reads "the active adapter" (Unsloth's fused LoRA
kernels, peft's ``disable_adapter`` for the KL anchor, the inherited RWR code) then sees exactly one adapter.

Generation: the role's weights go into the slot, ``model.load_lora(..., load_tensors=True)`` gives a LoRARequest
with a new id, and :class:`~genenv_lab.backends.vllm_engine.VLLMGenerator` samples through Unsloth's engine
(``model.vllm_engine``). Fallback, used when vLLM is missing, when ``fast_inference`` cannot start, or when that
path raises (a warning says so once): transformers generation through Unsloth's ``for_inference`` path, i.e. the hf
engine's ``generate``. ``GENENV_LAB_FAST_INFERENCE=0`` forces the fallback.

Adapters on disk keep the hf engine's peft layout (``dir/agent``, ``dir/env``, same tensor names), so a run
directory resumes under either engine (with the same base model; a 4-bit base shifts outputs slightly).

Needs a CUDA GPU and the ``gpu`` extra (unsloth; vllm for fast inference); see ``docs/gpu.md``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import inspect
import math
import os
import tempfile
import time
import warnings
from contextlib import nullcontext
from pathlib import Path
from typing import Any, Sequence

import torch
import torch.nn.functional as F

from ..config import RunConfig
from ..models.loading import ADAPTERS, resolve_model_dir
from ..rwr import rwr_losses, target_positions
from .base import AgentPrompt, AgentUpdate, EnvExample, EnvUpdate, Messages, RewardFn
from . import prefix
from .agent_trainer import METHOD_FIELDS, grpo_settings
from .hf import PREFIX_PATH, grpo_metrics, HFBackend, grpo_dataset, grpo_reward, timed_trainer
from .vllm_engine import VLLMGenerator, supported_lora_rank

SLOT = "default"


# ------------------------------------------------------------------------------------------ one slot, two roles

class AdapterSlot:
    """Several named LoRA weight sets (``agent``, ``env``) sharing one peft adapter slot of ``model``.

    ``use(role)`` puts ``role``'s weights into the slot (in place, so optimisers and Unsloth's kernels keep their
    parameter objects) and keeps the others aside. Roles other than the first start as a fresh LoRA init (A:
    kaiming-uniform as peft draws it, B = 0), so every role starts equal to the base.
    """

    def __init__(self, model, roles: Sequence[str], *, slot: str = SLOT, seed: int = 0):
        self.slot = slot
        self.markers = (f".lora_A.{slot}.", f".lora_B.{slot}.")
        self.params = {name: p for name, p in model.named_parameters() if any(m in name for m in self.markers)}
        if not self.params:
            raise ValueError(f"the model has no LoRA parameters in adapter slot {slot!r}")
        self.roles = tuple(roles)
        self.active = self.roles[0]
        gen = torch.Generator().manual_seed(seed + 1)
        self.aside: dict[str, dict[str, torch.Tensor]] = {r: self._fresh(gen) for r in self.roles[1:]}

    def _fresh(self, gen: torch.Generator) -> dict[str, torch.Tensor]:
        out = {}
        for name, p in self.params.items():
            t = torch.zeros(p.shape, dtype=torch.float32)
            if self.markers[0] in name:
                torch.nn.init.kaiming_uniform_(t, a=math.sqrt(5), generator=gen)
            out[name] = t.to(device=p.device, dtype=p.dtype)
        return out

    def peft_key(self, name: str) -> str:
        """The tensor name peft writes to ``adapter_model.safetensors`` (no adapter name in it)."""
        return name.replace(self.markers[0], ".lora_A.").replace(self.markers[1], ".lora_B.")

    @torch.no_grad()
    def use(self, role: str) -> None:
        if role not in self.roles:
            raise ValueError(f"unknown adapter {role!r}; expected one of {self.roles}")
        if role == self.active:
            return
        self.aside[self.active] = {k: p.detach().clone() for k, p in self.params.items()}
        incoming = self.aside.pop(role)
        for k, p in self.params.items():
            p.copy_(incoming[k])
        self.active = role

    def state(self, role: str) -> dict[str, torch.Tensor]:
        """A CPU copy of ``role``'s weights under peft's saved names."""
        src = self.params if role == self.active else self.aside[role]
        return {self.peft_key(k): v.detach().to("cpu", copy=True) for k, v in src.items()}

    @torch.no_grad()
    def load(self, role: str, state: dict[str, torch.Tensor], origin: str = "state") -> None:
        """Set ``role``'s weights from peft-named tensors (as ``adapter_model.safetensors`` holds them)."""
        by_key = {self.peft_key(k): k for k in self.params}
        unexpected = sorted(set(state) - set(by_key))
        missing = sorted(set(by_key) - set(state))
        if unexpected or missing:
            raise ValueError(f"{origin} does not match this model's {role!r} adapter: unexpected keys "
                             f"{unexpected[:3]}, missing keys {missing[:3]}")
        target = self.params if role == self.active else self.aside[role]
        for key, name in by_key.items():
            value = state[key].to(device=self.params[name].device, dtype=self.params[name].dtype)
            if role == self.active:
                self.params[name].copy_(value)
            else:
                target[name] = value

    def save(self, role: str, folder: Path, peft_config) -> None:
        """Write ``role`` as a peft adapter folder (adapter_config.json + adapter_model.safetensors)."""
        from safetensors.torch import save_file

        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        peft_config.save_pretrained(str(folder))
        save_file({k: v.contiguous() for k, v in self.state(role).items()}, str(folder / "adapter_model.safetensors"))


# ------------------------------------------------------------------------------------------- RWR loss kernel

def _has_plain_lm_head(model) -> bool:
    cfg = getattr(model, "config", None)
    return not any(getattr(cfg, k, None) for k in ("final_logit_softcapping", "logit_scale", "logits_scaling"))


def target_rwr_losses(model, batch: dict[str, torch.Tensor], grad: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """(weighted NLL, mean per-token KL to the adapter-disabled base): the hf engine's RWR loss, lean in memory.

    The same :func:`genenv_lab.rwr.rwr_losses` as ``HFBackend._rwr_losses`` (NLL_i is example i's mean target-token
    NLL, the weighted NLL is mean_i w_i · NLL_i, the KL is the full-vocabulary KL(π_env ‖ π_base) averaged over
    target tokens), with the log-probabilities computed differently: the logits
    are computed only at the N positions that predict a target token (lm_head on the decoder's last hidden
    state there), so memory is N × V instead of B × T × V in float32. ``model`` is the PeftModel; the LM head must
    be a plain linear map of the last hidden state (true of Qwen2/Llama/Mistral; see ``_has_plain_lm_head``).
    """
    ids, attn, w = batch["input_ids"], batch["attention_mask"], batch["weights"]
    causal_lm = model.get_base_model()
    decoder, head = causal_lm.model, causal_lm.get_output_embeddings()
    pos, labels, rows = target_positions(ids, batch["target_mask"])

    def target_logp() -> torch.Tensor:
        hidden = decoder(input_ids=ids, attention_mask=attn).last_hidden_state[:, :-1]  # (B, T-1, H)
        return F.log_softmax(head(hidden[pos]).float(), dim=-1)  # (N, V)

    with torch.no_grad(), model.disable_adapter():
        ref_logp = target_logp()
    with nullcontext() if grad else torch.no_grad():
        logp = target_logp()
    return rwr_losses(logp, ref_logp, labels, rows, w)


@contextlib.contextmanager
def _env(name: str, value: str):
    old = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


def _only_known(config_cls, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The kwargs ``config_cls`` accepts (GRPOConfig fields differ between TRL versions and Unsloth's subclass)."""
    params = inspect.signature(config_cls.__init__).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        import dataclasses

        known = {f.name for f in dataclasses.fields(config_cls)} if dataclasses.is_dataclass(config_cls) else set()
        known |= {k for k in params if k not in ("self", "kwargs")}
    else:
        known = set(params)
    return {k: v for k, v in kwargs.items() if k in known}


def _unsloth_dtype(name: str):
    if name == "auto":
        return None  # Unsloth picks bfloat16 where the GPU has it, else float16
    if name == "bfloat16" and not torch.cuda.is_bf16_supported():
        return None  # e.g. a T4: Unsloth falls back to float16
    return {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}[name]


def unsloth_prefix_path(use_vllm: bool) -> str:
    """The path Unsloth's GRPO loss takes: ``unsloth-prefix-grouper`` where the installed Unsloth has its
    PrefixGrouper (unsloth#6871), it is switched on (``model.shared_prefix``) and rollouts do not come from vLLM
    (Unsloth turns it off there); Unsloth then still decides per batch whether sharing pays, and checks it against
    the full rows on first use. Otherwise ``full-rows``."""
    on = os.environ.get("UNSLOTH_GRPO_PREFIX_GROUPER", "1").lower() not in ("0", "false", "no", "off")
    try:
        has = importlib.util.find_spec("unsloth.utils.prefix_grouper") is not None
    except (ImportError, ValueError):
        has = False
    return prefix.UNSLOTH if (on and has and not use_vllm) else prefix.FULL


def _patched_grpo_trainer(FastLanguageModel):
    """TRL's GRPOTrainer as Unsloth patched it (patching once more through PatchFastRL on older Unsloth)."""
    import trl
    import trl.trainer.grpo_trainer as grpo_module

    for candidate in (getattr(grpo_module, "GRPOTrainer", None), getattr(trl, "GRPOTrainer", None)):
        if candidate is not None and candidate.__name__.startswith("Unsloth"):
            return candidate
    try:
        from unsloth import PatchFastRL

        PatchFastRL("GRPO", FastLanguageModel)
    except Exception as exc:  # noqa: BLE001 - an Unsloth without PatchFastRL patches on import
        warnings.warn(f"Unsloth did not patch TRL's GRPOTrainer ({exc}); using it unpatched", stacklevel=2)
    return grpo_module.GRPOTrainer


# ----------------------------------------------------------------------------------------------- the Backend

class UnslothBackend(HFBackend):
    """One Unsloth base, the agent and env LoRA weights in one adapter slot; GRPO via Unsloth's TRL, RWR via hf."""

    def __init__(self, cfg: RunConfig, format_corpus: Sequence[str] = (), *, fast_inference: bool | None = None):
        if not torch.cuda.is_available():
            raise RuntimeError("the unsloth engine needs a CUDA GPU; use engine 'hf' (or a CPU preset) here")
        # Unsloth reads its PrefixGrouper switch (each prompt encoded once in the GRPO loss) when it is imported
        os.environ["UNSLOTH_GRPO_PREFIX_GROUPER"] = "1" if cfg.model.shared_prefix else "0"
        from unsloth import FastLanguageModel  # before TRL, so that Unsloth patches it

        self.cfg = cfg
        self.device = torch.device("cuda")
        self.FastLanguageModel = FastLanguageModel
        m = cfg.model
        path = resolve_model_dir(m.name_or_path, seed=cfg.loop.seed, format_corpus=format_corpus,
                                 tiny_warmup_steps=m.tiny_warmup_steps)
        if fast_inference is None:
            fast_inference = (os.environ.get("GENENV_LAB_FAST_INFERENCE", "1") != "0"
                              and importlib.util.find_spec("vllm") is not None)
        kwargs: dict[str, Any] = dict(model_name=path, max_seq_length=m.max_seq_length, dtype=_unsloth_dtype(m.dtype),
                                      load_in_4bit=m.load_in_4bit)
        fast_kwargs = dict(fast_inference=True, max_lora_rank=supported_lora_rank(m.lora_r),
                           gpu_memory_utilization=m.gpu_memory_utilization)
        try:
            base, tokenizer = FastLanguageModel.from_pretrained(**kwargs, **(fast_kwargs if fast_inference else {}))
        except Exception as exc:  # noqa: BLE001 - vLLM inside Unsloth failed to start: fall back, say so
            if not fast_inference:
                raise
            warnings.warn(f"Unsloth could not start its vLLM engine ({type(exc).__name__}: {exc}); generating "
                          "with transformers instead (slower)", stacklevel=2)
            torch.cuda.empty_cache()
            base, tokenizer = FastLanguageModel.from_pretrained(**kwargs)
        self.tokenizer = getattr(tokenizer, "tokenizer", tokenizer)
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.tokenizer.padding_side = "left"
        if self.tokenizer.chat_template is None:
            from ..models.tiny import CHATML_TEMPLATE

            self.tokenizer.chat_template = CHATML_TEMPLATE
        present = {name.rsplit(".", 1)[-1] for name, _ in base.named_modules()}
        targets = [t for t in m.target_modules if t in present]
        if not targets:
            raise ValueError(f"none of the LoRA target modules {list(m.target_modules)} exist in this model")
        self.model = FastLanguageModel.get_peft_model(
            base, r=m.lora_r, lora_alpha=m.lora_alpha, lora_dropout=m.lora_dropout, target_modules=targets,
            bias="none", use_gradient_checkpointing="unsloth", random_state=cfg.loop.seed,
            max_seq_length=m.max_seq_length)
        self.adapters = ADAPTERS if m.separate_adapters else ("agent",)
        self.slot = AdapterSlot(self.model, self.adapters, seed=cfg.loop.seed)
        self.eos_token = self.tokenizer.eos_token
        self._lean_loss = _has_plain_lm_head(self.model.get_base_model())
        engine = getattr(self.model, "vllm_engine", None)
        self.generator = VLLMGenerator.from_llm(engine, tokenizer=self.tokenizer) if engine is not None else None
        self._lora_dir = tempfile.TemporaryDirectory(prefix="genenv-unsloth-lora-")

    # ------------------------------------------------------------------------------------------------- adapters
    def _use(self, role: str) -> None:
        self.slot.use(self._name(role))

    def adapter_state(self, adapter: str) -> dict[str, torch.Tensor]:
        return self.slot.state(self._name(adapter))

    def save_adapters(self, directory: Path) -> None:
        """The hf engine's layout: ``directory/agent/`` and ``directory/env/`` as peft adapter folders."""
        for name in self.adapters:
            self.slot.save(name, Path(directory) / name, self.model.peft_config[SLOT])

    def load_adapters(self, directory: Path) -> None:
        from safetensors.torch import load_file

        for name in self.adapters:
            path = Path(directory) / name / "adapter_model.safetensors"
            if not path.is_file():
                raise FileNotFoundError(f"adapter weights {path} are missing; the run directory is incomplete")
            self.slot.load(name, load_file(str(path)), origin=str(path))
        self._use("agent")

    # ----------------------------------------------------------------------------------------------- generation
    @torch.no_grad()
    def generate(self, adapter: str, prompts: Sequence[Messages], *, n: int, max_new_tokens: int,
                 temperature: float, top_p: float = 1.0, stop: Sequence[str] = (), alphabet: str = "",
                 chunk: int = 16) -> list[list[str]]:
        if self.generator is not None:
            try:
                self._use(adapter)
                request = self.model.load_lora(self._lora_dir.name, load_tensors=True)
                return self.generator.generate(request, prompts, n=n, max_new_tokens=max_new_tokens,
                                               temperature=temperature, top_p=top_p, stop=stop,
                                               alphabet=alphabet)
            except Exception as exc:  # noqa: BLE001 - keep the run going on the slower path, say why once
                warnings.warn(f"generation through Unsloth's vLLM engine failed ({type(exc).__name__}: {exc}); "
                              "using transformers generation from now on", stacklevel=2)
                self.generator = None
            finally:
                self._use("agent")
        self.FastLanguageModel.for_inference(self.model)
        self.tokenizer.padding_side = "left"
        try:
            return super().generate(adapter, prompts, n=n, max_new_tokens=max_new_tokens, temperature=temperature,
                                    top_p=top_p, stop=stop, alphabet=alphabet, chunk=chunk)
        finally:
            self.FastLanguageModel.for_training(self.model)

    # ---------------------------------------------------------------------------------------------- agent (GRPO)
    def grpo_kwargs(self, output_dir: str) -> dict:
        """The GRPOConfig keywords of this engine's agent update: :func:`~.agent_trainer.grpo_settings` (the same
        as the ``hf`` engine's) plus Unsloth's own flags (it sets bf16/fp16 from the model's dtype when both are
        False; rollouts from its vLLM engine when one was built)."""
        return {**grpo_settings(self.cfg, output_dir=output_dir, seed=self.next_trainer_seed()),
                "bf16": False, "fp16": False, "use_vllm": self.generator is not None}

    def grpo_step(self, prompts: Sequence[AgentPrompt], reward_fn: RewardFn) -> AgentUpdate:
        from transformers.trainer_callback import PrinterCallback
        from trl import GRPOConfig  # Unsloth's subclass once unsloth is imported

        self._use("agent")
        dataset = grpo_dataset(self, prompts)

        trainer_cls = timed_trainer(_patched_grpo_trainer(self.FastLanguageModel))
        with tempfile.TemporaryDirectory(prefix="genenv-grpo-") as tmp:
            kwargs = self.grpo_kwargs(tmp)
            known = _only_known(GRPOConfig, kwargs)
            lost = [k for k in METHOD_FIELDS if k in kwargs and k not in known]
            if lost:  # dropping one would silently run another update than the hf engine's
                raise RuntimeError(f"the installed Unsloth/TRL GRPOConfig has no {lost}; install the pinned versions "
                                   "(pip install -e '.[gpu]', docs/gpu.md)")
            args = GRPOConfig(**known)
            trainer = trainer_cls(model=self.model, reward_funcs=[grpo_reward(reward_fn)], args=args,
                                  train_dataset=dataset, processing_class=self.tokenizer)
            trainer.remove_callback(PrinterCallback)
            start = time.perf_counter()
            trainer.train()
            total = time.perf_counter() - start
        self.tokenizer.padding_side = "left"  # Unsloth's trainer pads on the right
        metrics = grpo_metrics(trainer.state.log_history)
        return AgentUpdate(loss=metrics["grpo/loss"], rollout_s=trainer.rollout_s,
                           update_s=max(total - trainer.rollout_s, 0.0), steps=trainer.state.global_step,
                           metrics={**metrics, "use_vllm": bool(getattr(args, "use_vllm", False)),
                                    PREFIX_PATH: unsloth_prefix_path(bool(getattr(args, "use_vllm", False)))})

    def optimizer(self, role: str) -> torch.optim.Optimizer:
        """A fresh AdamW per update: one adapter slot holds every role's weights in place, so Adam's moments cannot
        be kept per role here (the hf engine keeps them for the whole run)."""
        params = [p for p in self.model.parameters() if p.requires_grad]
        return torch.optim.AdamW(params, lr=self.cfg.agent.lr if role == "agent" else self.cfg.env.lr,
                                 weight_decay=0.0)

    # ------------------------------------------------------------------------------------------------ env (RWR)
    def _rwr_losses(self, batch: dict[str, torch.Tensor], grad: bool) -> tuple[torch.Tensor, torch.Tensor]:
        if self._lean_loss:
            return target_rwr_losses(self.model, batch, grad)
        return super()._rwr_losses(batch, grad)

    def rwr_step(self, examples: Sequence[EnvExample]) -> EnvUpdate:
        self.FastLanguageModel.for_training(self.model)
        with _env("UNSLOTH_RETURN_LOGITS", "1"):  # the hf kernel (non-lean path) reads logits
            return super().rwr_step(examples)

    def env_kl(self, examples: Sequence[EnvExample]) -> float:
        with _env("UNSLOTH_RETURN_LOGITS", "1"):
            return super().env_kl(examples)


