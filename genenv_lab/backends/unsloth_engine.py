"""The ``unsloth`` engine: Unsloth's FastLanguageModel (4-bit or 16-bit base) with the two LoRA adapters, one GPU.

What it adds to the ``hf`` engine (:class:`~genenv_lab.backends.hf.HFBackend`, which it subclasses):

- Base: ``FastLanguageModel.from_pretrained(..., load_in_4bit=ModelConfig.load_in_4bit, fast_inference=True,
  max_lora_rank=, gpu_memory_utilization=)``: Unsloth's kernels, and with ``fast_inference`` a vLLM engine inside
  the same process that shares the base weights. LoRA through ``FastLanguageModel.get_peft_model``.
- Agent update: the hf engine's trainer, built by the same function
  (:func:`genenv_lab.trainers.grpo.build_grpo_trainer`: settings, run-long optimiser per role, beta set
  after construction, one precision rule, method fields checked) around TRL's ``GRPOTrainer`` as Unsloth patches it
  (``import unsloth`` before TRL; the factory does it): rollouts through the vLLM engine (``use_vllm`` when the model
  has one), the current agent weights pushed into vLLM as tensors every step by Unsloth itself. Kept different on
  purpose: Unsloth's gradient checkpointing (``agent/gradient_checkpointing``), so the project's shared-prefix
  forward is not used (Unsloth's patched loss has its own PrefixGrouper, read back as ``agent/prefix_path``).
- Env update: the simulator's trainer (:mod:`genenv_lab.trainers.env`: KL cap, optimiser, batching, the same on
  every engine), lent a leaner log-prob forward (:func:`lean_target_log_probs`): the same log-probabilities at the
  target positions, computed from the decoder's hidden states there only, because the hf forward's float32 logits
  over every position of a 152k-token vocab do not fit a T4 at the GPU presets' batch sizes.

Two adapters, one slot (the deliberate deviation). Unsloth's vLLM bridge (``model.load_lora(dir,
load_tensors=True)``, what its GRPO trainer calls every step) reads the peft adapter named ``default`` and strips
``.default`` from every LoRA tensor name of the model's state dict; a second peft adapter on the same model would
leak its tensors into that request (and serving two adapters on one Unsloth model is a known weak spot). So the
model has a single peft adapter and :class:`AdapterSlot` swaps the ``agent`` and ``env`` weights in and out of it
(a copy of a few MB; the base never changes). Everything that reads "the active adapter" (Unsloth's fused LoRA
kernels, peft's ``disable_adapter`` for the KL anchor, the simulator's trainer) then sees exactly one adapter.

Generation: the role's weights go into the slot, ``model.load_lora(..., load_tensors=True)`` gives a LoRARequest
with a new id, and :class:`~genenv_lab.backends.vllm_engine.VLLMGenerator` samples through Unsloth's engine
(``model.vllm_engine``). Fallback, used when vLLM is missing, when ``fast_inference`` cannot start, or when that
path raises (a warning says so once): transformers generation through Unsloth's ``for_inference`` path, i.e. the hf
engine's ``generate``. ``GENENV_LAB_FAST_INFERENCE=0`` forces the fallback.

Optimisers: one run-long AdamW per role over the slot's parameter objects (the slot swaps weights in place, so each
role's optimiser keeps its own Adam moments for the same tensors and steps only while its role is in the slot),
saved with the adapters (``optimizer.pt``, with the trainer-seed counter) and restored on ``--resume``, as the hf
engine does. Adapters on disk keep the hf engine's peft layout (``dir/agent``, ``dir/env``, same tensor names), so a
run directory resumes under either engine (with the same base model; a 4-bit base shifts outputs slightly).

Needs a CUDA GPU and the ``gpu`` extra (unsloth; vllm for fast inference); see ``docs/gpu.md``. With
``GENENV_LAB_UNSLOTH_CPU=1`` it runs on Unsloth's CPU backend instead (Unsloth's loader and LoRA, stock TRL, no
vLLM): the test tier ``tests/test_unsloth_cpu.py`` (``bash scripts/setup_unsloth_cpu.sh``).
"""

from __future__ import annotations

import contextlib
import importlib.util
import math
import os
import tempfile
import warnings
from pathlib import Path
from typing import Any, Sequence

import torch
import torch.nn.functional as F

from genenv_lab.config import RunConfig
from genenv_lab.models.loading import ADAPTERS, lora_targets, prepare_tokenizer, resolve_model_dir
from genenv_lab.models.world import world_spec
from genenv_lab.backends.distributed import processes
from genenv_lab.backends.base import EnvExample, EnvTrainer, EnvUpdate, Messages
from genenv_lab.backends import prefix
from genenv_lab.backends.card import (CPU, detect, pick_dtype, pick_fast_inference, picked_line,
    vllm_load_problem)
from genenv_lab.backends.hf import OPTIMIZER_FILE, HFBackend, read_adapter, thinking_off
from genenv_lab.backends.vllm_engine import VLLMGenerator, supported_lora_rank

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


def lean_target_log_probs(model, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                          positions: torch.Tensor) -> torch.Tensor:
    """The hf engine's log-prob forward (:func:`genenv_lab.backends.hf.target_log_probs`: (N, V) float32
    log-softmax at ``positions``), lean in memory: the logits are computed only at the N positions that predict a
    target token (lm_head on the decoder's last hidden state there), so memory is N × V instead of B × T × V in
    float32. ``model`` is the PeftModel; the LM head must be a plain linear map of the last hidden state (true of
    Qwen2/Llama/Mistral; see ``_has_plain_lm_head``)."""
    causal_lm = model.get_base_model()
    decoder, head = causal_lm.model, causal_lm.get_output_embeddings()
    hidden = decoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state[:, :-1]  # (B, T-1, H)
    return F.log_softmax(head(hidden[positions]).float(), dim=-1)  # (N, V)


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


def _unsloth_dtype(name: str):
    """Unsloth's ``dtype`` argument for a dtype :func:`~.card.pick_dtype` chose (``auto``: Unsloth's own pick)."""
    return None if name == "auto" else {"bfloat16": torch.bfloat16, "float16": torch.float16,
                                        "float32": torch.float32}[name]


CPU_SWITCH = "GENENV_LAB_UNSLOTH_CPU"
"""Set to 1 to let the engine run on Unsloth's CPU backend (stock TRL under Unsloth's loader; for the test tier)."""


def unsloth_prefix_path(trainer) -> str:
    """The path Unsloth's patched GRPO loss took in ``trainer``'s last ``train()``, read from what it left on the
    model: ``unsloth-prefix-grouper`` once Unsloth's PrefixGrouper (unsloth#6871; ``model.shared_prefix`` switches
    it) verified a batch shape and was not disabled since, ``full-rows`` otherwise (rollouts from vLLM, where Unsloth
    does not engage it, included)."""
    if getattr(trainer.args, "use_vllm", False):
        return prefix.FULL
    if os.environ.get("UNSLOTH_GRPO_PREFIX_GROUPER", "1").lower() in ("0", "false", "no", "off"):
        return prefix.FULL
    model = trainer.accelerator.unwrap_model(trainer.model)
    if getattr(model, "_unsloth_prefix_grouper_nograd_disabled", False):
        return prefix.FULL
    return prefix.UNSLOTH if getattr(model, "_unsloth_prefix_grouper_nograd_verified", None) else prefix.FULL


def is_patched(trainer_cls) -> bool:
    """Whether ``trainer_cls`` is Unsloth's rewrite of TRL's trainer (on a GPU) rather than TRL's own (Unsloth's CPU
    backend trains with stock TRL)."""
    return trainer_cls.__name__.startswith("Unsloth")


def unsloth_cpu_backend() -> bool:
    """Whether the imported Unsloth runs its CPU backend (no accelerator found)."""
    import unsloth

    return getattr(unsloth, "DEVICE_TYPE", "cuda") == "cpu"


def _patched_grpo_trainer(FastLanguageModel):
    """TRL's GRPOTrainer as Unsloth patched it (patching once more through PatchFastRL on older Unsloth)."""
    import trl
    import trl.trainer.grpo_trainer as grpo_module

    for candidate in (getattr(grpo_module, "GRPOTrainer", None), getattr(trl, "GRPOTrainer", None)):
        if candidate is not None and is_patched(candidate):
            return candidate
    if unsloth_cpu_backend():  # Unsloth's CPU backend trains with stock TRL by design: nothing to patch
        return grpo_module.GRPOTrainer
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
        on_cpu = not torch.cuda.is_available()
        if on_cpu and os.environ.get(CPU_SWITCH) != "1":
            raise RuntimeError("the unsloth engine needs a CUDA GPU; use engine 'hf' (or a CPU preset) here "
                               f"({CPU_SWITCH}=1 runs it on Unsloth's CPU fallback, for tests: docs/gpu.md)")
        # Unsloth reads its PrefixGrouper switch (each prompt encoded once in the GRPO loss) when it is imported
        os.environ["UNSLOTH_GRPO_PREFIX_GROUPER"] = "1" if cfg.model.shared_prefix else "0"
        from unsloth import FastLanguageModel  # before TRL, so that Unsloth patches it

        self.cfg = cfg
        self.procs = processes()
        self.device = torch.device("cpu" if on_cpu else "cuda")
        self.FastLanguageModel = FastLanguageModel
        m = cfg.model
        path = resolve_model_dir(m.name_or_path, seed=cfg.loop.seed, format_corpus=format_corpus,
                                 tiny_warmup_steps=m.tiny_warmup_steps, world=world_spec(cfg))
        card = CPU if on_cpu else detect()
        self.dtype = pick_dtype(m.dtype, card)  # bfloat16 where the card has it, float16 on a T4
        fast_inference, why = ((fast_inference, f"fast_inference {'on' if fast_inference else 'off'} (asked)")
                               if fast_inference is not None else
                               pick_fast_inference(card, installed := importlib.util.find_spec("vllm") is not None,
                                                   vllm_problem=vllm_load_problem(torch.version.cuda)
                                                   if installed and card.bf16 else None))
        self.picked = picked_line("unsloth", card, self.dtype, why)
        print(self.picked, flush=True)
        kwargs: dict[str, Any] = dict(model_name=path, max_seq_length=m.max_seq_length,
                                      dtype=_unsloth_dtype(self.dtype), load_in_4bit=m.load_in_4bit)
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
        self.tokenizer = thinking_off(prepare_tokenizer(getattr(tokenizer, "tokenizer", tokenizer)))
        targets = lora_targets(base, m.target_modules, strict=m.targets_chosen)
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
        self.init_run_state()

    # ------------------------------------------------------------------------------------------------- adapters
    def _use(self, role: str) -> None:
        self.slot.use(self._name(role))

    def adapter_state(self, adapter: str) -> dict[str, torch.Tensor]:
        return self.slot.state(self._name(adapter))

    def save_adapters(self, directory: Path) -> None:
        """The hf engine's layout: ``directory/agent/`` and ``directory/env/`` as peft adapter folders."""
        for name in self.adapters:
            self.slot.save(name, Path(directory) / name, self.model.peft_config[SLOT])
        self.save_optimizers(Path(directory) / OPTIMIZER_FILE)

    def load_adapters(self, directory: Path) -> None:
        for name in self.adapters:
            path = Path(directory) / name / "adapter_model.safetensors"
            self.slot.load(name, read_adapter(path), origin=str(path))
        self._use("agent")
        self.load_optimizers(Path(directory) / OPTIMIZER_FILE)

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
    # The update is the hf engine's (HFBackend.train_agent lends HFBackend.trainer_kit to a trainer of
    # genenv_lab.trainers.agent, which builds and runs it with genenv_lab.trainers.grpo); what differs is named by
    # the hooks below.
    def grpo_classes(self):
        """Unsloth's patched GRPOTrainer (stock TRL's under Unsloth's CPU backend) and the running GRPOConfig."""
        from trl import GRPOConfig  # Unsloth's subclass once unsloth is imported (on a GPU)

        return _patched_grpo_trainer(self.FastLanguageModel), GRPOConfig

    def grpo_engine_args(self) -> dict[str, Any]:
        """Rollouts from Unsloth's in-process vLLM engine when one was built."""
        return {"use_vllm": self.generator is not None}

    def shares_prefix_in(self, trainer_cls) -> bool:
        """Unsloth's patched trainer has its own shared-prefix loss (PrefixGrouper); stock TRL (the CPU backend)
        takes the project's where the model allows it."""
        return not is_patched(trainer_cls)

    def prefix_path_of(self, trainer) -> str:
        return unsloth_prefix_path(trainer) if is_patched(type(trainer).__mro__[1]) else trainer.prefix_path

    def after_grpo(self) -> None:
        self.tokenizer.padding_side = "left"  # Unsloth's trainer pads on the right

    def optimizer(self, role: str) -> torch.optim.Optimizer:
        """The run-long AdamW of ``role`` (as the hf engine's), over the one slot's parameter objects. The slot swaps
        each role's weights into the same tensors in place, so every role's optimiser holds its own Adam moments for
        them and is stepped only while its role is in the slot: each role keeps its moments across epochs, and they
        are saved and restored with the adapters (``optimizer.pt``)."""
        name = self._name(role)
        if name not in self._optimizers:
            params = list(self.slot.params.values())
            lr = self.cfg.agent.lr if role == "agent" else self.cfg.env.lr
            self._optimizers[name] = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
        return self._optimizers[name]

    # ------------------------------------------------------------------------------------------------ env (RWR)
    # The update is the simulator's trainer (genenv_lab.trainers.env), lent HFBackend.env_kit with this engine's
    # log-prob forward, in Unsloth's training mode.
    def target_log_probs(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                         positions: torch.Tensor) -> torch.Tensor:
        """The lean forward (:func:`lean_target_log_probs`) where the LM head allows it, else the hf engine's."""
        if self._lean_loss:
            return lean_target_log_probs(self.model, input_ids, attention_mask, positions)
        return super().target_log_probs(input_ids, attention_mask, positions)

    def train_env(self, trainer: EnvTrainer, examples: Sequence[EnvExample]) -> EnvUpdate:
        self.FastLanguageModel.for_training(self.model)
        with _env("UNSLOTH_RETURN_LOGITS", "1"):  # the hf forward (non-lean path) reads logits
            return super().train_env(trainer, examples)


