"""The ``hf`` engine: transformers + peft + TRL, on CPU or one GPU. The reference path, what CI tests.

- Generation: ``model.generate`` on the PeftModel with the requested adapter active.
- Each distinct prompt is encoded once (``model.shared_prefix``, on by default; :mod:`genenv_lab.backends.prefix`): in
  generation, in TRL's rollouts and in every log-prob forward of the GRPO update, with the same numbers as TRL's
  full rows (docs/prefix_sharing.md). ``extra.agent/prefix_path`` records the path taken.
- Agent update: :meth:`HFBackend.train_agent` lends a trainer of :mod:`genenv_lab.trainers.agent` a
  :class:`~genenv_lab.backends.base.TrainerKit` (:meth:`HFBackend.trainer_kit`: the PeftModel with the ``agent``
  adapter active, only its LoRA weights requiring grad; the epoch's prompts; TRL's ``GRPOTrainer``/``GRPOConfig``;
  the run-long AdamW of the agent role, so Adam's moments carry across epochs); the trainer builds and runs the
  update (:mod:`genenv_lab.trainers.grpo`).
- Environment update: :meth:`HFBackend.train_env` lends the simulator's trainer (:mod:`genenv_lab.trainers.env`,
  reward-weighted regression with a KL penalty and a KL cap) an :class:`~genenv_lab.backends.base.EnvKit`: the
  ``env`` adapter active, the chat template, the run-long AdamW of the env role, the base with adapters disabled
  as the KL anchor, and the forward that gives log-probabilities at the target positions
  (:func:`target_log_probs`: the full logits, then the positions).
- Under N processes (``torchrun``/``accelerate launch``; :mod:`genenv_lab.backends.distributed`) TRL's trainer runs
  its own data-parallel path (each process ``prompts_per_step / N`` prompts of a step) and the RWR update splits
  every mini-batch between the processes (the kit lends the job's processes): the same updates as one process.
- Both optimisers' states are saved beside the adapters (``optimizer.pt``) and restored with them on ``--resume``,
  so a resumed run takes the same next step as an uninterrupted one.
"""

from __future__ import annotations

import tempfile
import warnings
from pathlib import Path
from typing import Any, Sequence

import torch
import torch.nn.functional as F

from genenv_lab.config import RunConfig
from genenv_lab.backends.distributed import processes
from genenv_lab.core.seeds import trainer_seed
from genenv_lab.models.loading import ADAPTERS, attach_adapters, load_base
from genenv_lab.models.world import world_spec
from genenv_lab.backends import prefix
from genenv_lab.backends.card import CPU, detect, pick_dtype, picked_line
from genenv_lab.backends.base import (AgentPrompt, AgentTrainer, AgentUpdate, EnvExample, EnvKit, EnvTrainer,
    EnvUpdate, Messages, RewardFn, TrainerKit, alphabet_token_ids, cut_at_stop)

# transformers 5 renames gradient_checkpointing to activation_checkpointing and warns on every GRPOConfig and every
# TRL step that reads the old name (dozens of lines a run in a notebook); the old name is the one that works across
# the versions this project supports (the GPU stack pins transformers <= 5.17), so only that notice is silenced.
warnings.filterwarnings("ignore", message=r".*`(is_)?gradient_checkpointing` is deprecated", category=FutureWarning)

OPTIMIZER_FILE = "optimizer.pt"


THINKING_OFF = "{%- set enable_thinking = false %}"
"""Prepended to a chat template that has a thinking switch (Qwen3's ``enable_thinking``): every prompt, TRL's
rollouts included, then asks for an answer without a reasoning block, as the GRPO examples of Unsloth and TRL do
for short-answer tasks."""


def thinking_off(tokenizer):
    """``tokenizer`` with its chat template's thinking switch held off (:data:`THINKING_OFF`); a template without
    one is left as it is."""
    template = getattr(tokenizer, "chat_template", None)
    if isinstance(template, str) and "enable_thinking" in template and not template.startswith(THINKING_OFF):
        tokenizer.chat_template = THINKING_OFF + template
    return tokenizer


def chat_text(tokenizer, messages: Messages) -> str:
    """The prompt text of ``messages`` under the tokenizer's chat template; a final assistant message is continued
    (as TRL does for prefilled prompts)."""
    cont = messages[-1]["role"] == "assistant"
    return tokenizer.apply_chat_template(messages, add_generation_prompt=not cont, continue_final_message=cont,
                                         tokenize=False)


def adapter_optimizer(model, adapter: str, lr: float) -> torch.optim.Optimizer:
    """A run-long AdamW over the LoRA weights of ``model``'s adapter ``adapter``, in a fixed order (so that a saved
    state maps back onto the same parameters), with no weight decay."""
    params = [p for n, p in model.named_parameters() if "lora_" in n and f".{adapter}." in n]
    return torch.optim.AdamW(params, lr=lr, weight_decay=0.0)


def target_log_probs(model, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                     positions: torch.Tensor) -> torch.Tensor:
    """The hf engine's log-prob forward (:attr:`~genenv_lab.backends.base.EnvKit.log_probs`): the model's full
    logits, then the float32 log-softmax at ``positions`` (B, T-1), the positions whose next token is scored:
    (N, V)."""
    logits = model(input_ids=input_ids, attention_mask=attention_mask).logits[:, :-1]  # (B, T-1, V)
    return F.log_softmax(logits[positions].float(), dim=-1)


class HFBackend:
    """One base model, two LoRA adapters, each lent to its role's trainer: the agent's (:mod:`genenv_lab.trainers.
    agent`, TRL GRPO) and the simulator's (:mod:`genenv_lab.trainers.env`, RWR)."""

    def __init__(self, cfg: RunConfig, format_corpus: Sequence[str] = ()):
        self.cfg = cfg
        self.procs = processes()
        self.device = self.procs.device
        card = detect() if self.device.type == "cuda" else CPU
        self.dtype = pick_dtype(cfg.model.dtype, card)  # bfloat16 becomes float16 on a card without it (a T4)
        if card is not CPU and self.procs.is_main:
            print(picked_line(cfg.model.engine, card, self.dtype), flush=True)
        base, tokenizer = load_base(cfg.model.name_or_path, dtype=self.dtype, seed=cfg.loop.seed,
                                    format_corpus=format_corpus,
                                    tiny_warmup_steps=cfg.model.tiny_warmup_steps, world=world_spec(cfg))
        self.tokenizer = thinking_off(tokenizer)
        # LoRA A is drawn at random: seed it here, or it depends on whether the base was just built or cached
        torch.manual_seed(cfg.loop.seed)
        self.model = attach_adapters(base, r=cfg.model.lora_r, alpha=cfg.model.lora_alpha,
                                     dropout=cfg.model.lora_dropout, target_modules=cfg.model.target_modules,
                                     separate=cfg.model.separate_adapters, strict=cfg.model.targets_chosen)
        self.adapters = ADAPTERS if cfg.model.separate_adapters else ("agent",)
        self.model.to(self.device)
        self.eos_token = self.tokenizer.eos_token
        self.init_run_state()

    def init_run_state(self) -> None:
        """The state every engine keeps beside its model: the GRPO call count (trainer seeds), the run-long
        optimisers per adapter, the alphabet masks of constrained generation. Engines that build their model
        themselves (``unsloth``) call it too."""
        self._grpo_calls = 0
        self._optimizers: dict[str, torch.optim.Optimizer] = {}
        self._outside: dict[str, list[int]] = {}  # alphabet -> token ids it must not sample

    # ------------------------------------------------------------------------------------------------- helpers
    def _name(self, role: str) -> str:
        """The adapter that plays ``role`` (``agent`` or ``env``): itself, or ``agent`` when adapters are shared."""
        if role not in ADAPTERS:
            raise ValueError(f"unknown adapter {role!r}; expected one of {ADAPTERS}")
        return role if role in self.adapters else "agent"

    def _use(self, role: str) -> None:
        self.model.set_adapter(self._name(role))

    def chat_prompt(self, messages: Messages) -> str:
        """The prompt text (:func:`chat_text` under this engine's tokenizer)."""
        return chat_text(self.tokenizer, messages)

    def next_trainer_seed(self) -> int:
        """A fresh seed per GRPO call: Trainer re-seeds every RNG at construction, and one fixed seed would make
        every later epoch's generations and rollouts replay the same random stream. The count is restored with the
        adapters, so a resumed run continues the same sequence of seeds."""
        self._grpo_calls += 1
        return trainer_seed(self.cfg.loop.seed, self._grpo_calls)

    def optimizer(self, role: str) -> torch.optim.Optimizer:
        """The run-long AdamW of the adapter playing ``role`` (created on first use, over that adapter's LoRA
        weights in a fixed order, so that a saved state maps back onto the same parameters)."""
        name = self._name(role)
        if name not in self._optimizers:
            lr = self.cfg.agent.lr if role == "agent" else self.cfg.env.lr
            self._optimizers[name] = adapter_optimizer(self.model, name, lr)
        return self._optimizers[name]

    def prompt_room(self, messages: Messages) -> int:
        """Tokens left for generation after this prompt within the model's context (negative: it does not fit)."""
        limit = getattr(self.model.config, "max_position_embeddings", None) or self.cfg.model.max_seq_length
        return int(limit) - len(self.tokenizer(self.chat_prompt(messages), add_special_tokens=False)["input_ids"])

    def completion_tokens(self, texts: Sequence[str]) -> list[int]:
        """Tokens of each agent completion as the tokenizer encodes its text, without special tokens (the
        end-of-sequence token a completion stopped on is not counted): the run's compute accounting
        (``cumulative/agent_tokens``). TRL hands the reward function decoded text only, so the GRPO pass's
        completions are counted the same way as the screening's."""
        if not texts:
            return []
        return [len(ids) for ids in self.tokenizer(list(texts), add_special_tokens=False)["input_ids"]]

    def tokens_outside(self, alphabet: str) -> list[int]:
        """The ids a generation restricted to ``alphabet`` must not sample (computed once per alphabet)."""
        if alphabet not in self._outside:
            vocab = self.model.get_input_embeddings().num_embeddings
            allowed = set(alphabet_token_ids(self.tokenizer, alphabet, vocab))
            self._outside[alphabet] = [i for i in range(vocab) if i not in allowed]
        return self._outside[alphabet]

    # ---------------------------------------------------------------------------------------------- generation
    @torch.no_grad()
    def generate(self, adapter: str, prompts: Sequence[Messages], *, n: int, max_new_tokens: int,
                 temperature: float, top_p: float = 1.0, stop: Sequence[str] = (), alphabet: str = "",
                 chunk: int = 16) -> list[list[str]]:
        self._use(adapter)
        self.model.eval()
        out: list[list[str]] = []
        for start in range(0, len(prompts), chunk):
            texts = [self.chat_prompt(m) for m in prompts[start:start + chunk]]
            enc = self.tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(self.device)
            sampling = {"do_sample": True, "temperature": temperature, "top_p": top_p} if temperature > 0 \
                else {"do_sample": False}  # temperature 0: greedy (evaluation)
            if stop:  # transformers stops each sequence at a stop string (it stays in the text: cut below)
                sampling.update(stop_strings=list(stop), tokenizer=self.tokenizer)
            if alphabet:
                sampling["suppress_tokens"] = self.tokens_outside(alphabet)
            ids, mask = enc["input_ids"], enc["attention_mask"]
            if n > 1 and self.cfg.model.shared_prefix:  # one row per sample, each prompt encoded once for all n
                ids, mask = ids.repeat_interleave(n, dim=0), mask.repeat_interleave(n, dim=0)
                seqs = prefix.generate_shared(self.model, ids, mask, **sampling, max_new_tokens=max_new_tokens,
                                              pad_token_id=self.tokenizer.pad_token_id)
            else:
                seqs = self.model.generate(input_ids=ids, attention_mask=mask, **sampling,
                                           max_new_tokens=max_new_tokens, num_return_sequences=n,
                                           pad_token_id=self.tokenizer.pad_token_id)
            new = seqs[:, enc["input_ids"].shape[1]:]  # (len(texts) * n, new_tokens)
            decoded = [cut_at_stop(t, stop) for t in self.tokenizer.batch_decode(new, skip_special_tokens=True)]
            out.extend(decoded[i * n:(i + 1) * n] for i in range(len(texts)))
        self._use("agent")
        return out

    # ------------------------------------------------------------------------------------------------- agent
    def grpo_classes(self):
        """(trainer class, config class) of this engine's agent update: TRL's."""
        from trl import GRPOConfig, GRPOTrainer

        return GRPOTrainer, GRPOConfig

    def grpo_engine_args(self) -> dict[str, Any]:
        """This engine's own GRPOConfig flags (none for ``hf``)."""
        return {}

    def trainer_kit(self, prompts: Sequence[AgentPrompt], reward_fn: RewardFn, output_dir: str) -> TrainerKit:
        """What this engine lends a trainer for the epoch's update (one pass over ``prompts``, G completions each):
        the model with the ``agent`` adapter active, the run-long optimiser, the next trainer seed, its trainer
        classes and flags; the shared-prefix forward unless ``model.shared_prefix`` is off or the trainer class has
        its own; how to read the prefix path the trainer took."""
        self._use("agent")
        trainer_cls, config_cls = self.grpo_classes()
        return TrainerKit(
            cfg=self.cfg, model=self.model, tokenizer=self.tokenizer, dataset=grpo_dataset(self, prompts),
            reward_fn=reward_fn, optimizer=self.optimizer("agent"), output_dir=output_dir,
            seed=self.next_trainer_seed(), trainer_cls=trainer_cls, config_cls=config_cls,
            on_cuda=self.device.type == "cuda", world_size=self.procs.world_size,
            share_prefix=self.cfg.model.shared_prefix and self.shares_prefix_in(trainer_cls),
            engine_args=self.grpo_engine_args(), prefix_path_of=self.prefix_path_of)

    def shares_prefix_in(self, trainer_cls) -> bool:
        """Whether the project's shared-prefix forward can serve ``trainer_cls`` (TRL's own trainer: yes)."""
        return True

    def prefix_path_of(self, trainer) -> str:
        """The path the update took (``agent/prefix_path``), read from the trainer."""
        return trainer.prefix_path

    def train_agent(self, trainer: AgentTrainer, prompts: Sequence[AgentPrompt], reward_fn: RewardFn) -> AgentUpdate:
        """One update of the ``agent`` adapter, built and run by ``trainer`` from this engine's :meth:`trainer_kit`
        (a scratch folder for the update's trainer included); the ``agent`` adapter is left active."""
        with tempfile.TemporaryDirectory(prefix="genenv-grpo-") as tmp:
            update = trainer.update(self.trainer_kit(prompts, reward_fn, tmp))
        self.after_grpo()
        self._use("agent")
        return update

    def after_grpo(self) -> None:
        """Whatever the engine's trainer leaves to restore after ``train()`` (nothing for ``hf``)."""

    # --------------------------------------------------------------------------------------------- env (RWR)
    def target_log_probs(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                         positions: torch.Tensor) -> torch.Tensor:
        """This engine's log-prob forward, lent to the simulator's trainer (:func:`target_log_probs`)."""
        return target_log_probs(self.model, input_ids, attention_mask, positions)

    def env_kit(self) -> EnvKit:
        """What this engine lends the simulator's trainer (with the ``env`` adapter active: :meth:`train_env` sets
        it): the model, its chat template, the run-long optimiser of the env role, the base as the KL anchor, the
        log-prob forward and the job's processes."""
        return EnvKit(model=self.model, tokenizer=self.tokenizer, render=self.chat_prompt,
                      max_seq_length=self.cfg.model.max_seq_length, device=self.device,
                      optimizer=self.optimizer("env"), log_probs=self.target_log_probs,
                      base=self.model.disable_adapter, procs=self.procs)

    def train_env(self, trainer: EnvTrainer, examples: Sequence[EnvExample]) -> EnvUpdate:
        """One update of the ``env`` adapter on ``examples``, run by ``trainer`` from this engine's :meth:`env_kit`;
        the ``agent`` adapter is left active."""
        self._use("env")
        try:
            return trainer.update(self.env_kit(), examples)
        finally:
            self._use("agent")

    # ---------------------------------------------------------------------------------------------- adapters
    def save_adapters(self, directory: Path) -> None:
        """Standard peft layout: ``directory/agent/`` and ``directory/env/`` (adapter_config + safetensors), and
        ``directory/optimizer.pt``: both optimisers' states and the GRPO call count (for an exact resume)."""
        # peft writes each adapter not called "default" into a sub-folder named after it
        self.model.save_pretrained(Path(directory), selected_adapters=list(self.adapters))
        self.save_optimizers(Path(directory) / OPTIMIZER_FILE)

    def save_optimizers(self, path: Path) -> None:
        """Both optimisers' states (by adapter name) and the GRPO call count, for an exact resume (every engine)."""
        torch.save({"optimizers": {k: o.state_dict() for k, o in self._optimizers.items()},
                    "grpo_calls": self._grpo_calls}, path)

    def load_adapters(self, directory: Path) -> None:
        from peft import set_peft_model_state_dict

        for name in self.adapters:
            path = Path(directory) / name / "adapter_model.safetensors"
            result = set_peft_model_state_dict(self.model, read_adapter(path), adapter_name=name)
            if getattr(result, "unexpected_keys", None):
                raise ValueError(f"{path} does not match this model's {name!r} adapter: "
                                 f"unexpected keys {result.unexpected_keys[:3]}")
        self._use("agent")
        self.load_optimizers(Path(directory) / OPTIMIZER_FILE)

    def load_optimizers(self, path: Path) -> None:
        """Restore both optimisers and the GRPO call count saved by :meth:`save_adapters` (a folder written before
        optimiser states were saved has none: the optimisers then start fresh)."""
        if not path.is_file():
            return
        saved = torch.load(path, map_location=self.device, weights_only=True)
        for name, state in saved["optimizers"].items():
            self.optimizer(name).load_state_dict(state)
        self._grpo_calls = int(saved["grpo_calls"])

    def adapter_state(self, adapter: str) -> dict[str, torch.Tensor]:
        from peft import get_peft_model_state_dict

        return {k: v.detach().cpu().clone()
                for k, v in get_peft_model_state_dict(self.model, adapter_name=self._name(adapter)).items()}

    def base_state(self) -> dict[str, torch.Tensor]:
        """A copy of the frozen base weights (for the test that the base never changes)."""
        return {k: v.detach().cpu().clone() for k, v in self.model.get_base_model().state_dict().items()
                if "lora_" not in k}


def read_adapter(path: Path) -> dict[str, torch.Tensor]:
    """The tensors of a run's ``adapter_model.safetensors`` (every engine reads them so): ``FileNotFoundError`` when
    missing, one-line ``ValueError`` when the file is not a safetensors file (garbage, cut short by a full disk)."""
    from safetensors.torch import load_file

    if not path.is_file():
        raise FileNotFoundError(f"adapter weights {path} are missing; the run directory is incomplete")
    try:
        return load_file(str(path))
    except Exception as exc:  # noqa: BLE001 - SafetensorError and the OS errors under it
        raise ValueError(f"adapter weights {path} cannot be read ({type(exc).__name__}: {str(exc)[:100]}); the run "
                         "directory is corrupt") from None


def grpo_dataset(backend: "HFBackend", prompts: Sequence[AgentPrompt]):
    """The GRPO dataset: prompts rendered to text by :meth:`HFBackend.chat_prompt`, one row per task.

    TRL renders conversational prompts with ``add_generation_prompt=True`` whatever their last message, which would
    turn a domain's prefilled reply start into a finished turn and open a new one; text prompts keep the prefill.
    """
    from datasets import Dataset

    return Dataset.from_list([{"prompt": backend.chat_prompt(p.messages), "task_id": p.task_id} for p in prompts])
