"""The ``hf`` engine: transformers + peft + TRL, on CPU or one GPU. The reference path, what CI tests.

- Generation: ``model.generate`` on the PeftModel with the requested adapter active.
- Each distinct prompt is encoded once (``model.shared_prefix``, on by default; :mod:`genenv_lab.backends.prefix`): in
  generation, in TRL's rollouts and in every log-prob forward of the GRPO update, with the same numbers as TRL's
  full rows (docs/prefix_sharing.md). ``extra.agent/prefix_path`` records the path taken.
- Agent update: taken from a trainer of :mod:`genenv_lab.trainers.agent` (:meth:`HFBackend.train_agent`; the
  default is TRL's ``GRPOTrainer``) on the PeftModel with the ``agent`` adapter active (only its LoRA weights
  require grad). A fresh trainer per epoch (one pass over the epoch's batch, G completions per task, constant
  learning rate) around one AdamW optimiser that lives for the whole run, so Adam's moments carry across epochs.
  With ``kl_beta > 0`` the reference is the base with adapters disabled (see :mod:`.agent_trainer`).
  TRL's logged metrics are averaged over the epoch's steps and returned as ``grpo/*`` (see :data:`GRPO_METRICS`).
- Environment update (RWR): written by hand, because no library offers a per-sample weighted NLL with a KL penalty
  to the adapter-disabled base and a KL stopping cap. Loss per mini-batch::

      L = mean_i w_i · NLL_i(target | context)  +  kl_coef · mean_tokens KL(π_env ‖ π_base)

  where NLL_i is the mean token NLL of example i and the KL is the full-vocabulary KL at each target position.
  The epoch's env steps stop as soon as the measured KL exceeds ``kl_cap``. Its AdamW optimiser also lives for
  the whole run.
- Under N processes (``torchrun``/``accelerate launch``; :mod:`genenv_lab.backends.distributed`) TRL's trainer runs
its own
  data-parallel path (each process ``prompts_per_step / N`` prompts of a step); the RWR step splits every
  mini-batch between the processes (an example on one process only), scales each process's loss by its share of
  the examples and target tokens, averages the env adapter's gradients before the step and stops on the KL over
  all target tokens: the same update as one process on the whole mini-batch. With one process both updates are
  the single-process ones, unchanged.
- Both optimisers' states are saved beside the adapters (``optimizer.pt``) and restored with them on ``--resume``,
  so a resumed run takes the same next step as an uninterrupted one.
"""

from __future__ import annotations

import math
import tempfile
import time
import warnings
from contextlib import nullcontext
from pathlib import Path
from typing import Any, Sequence

import torch
import torch.nn.functional as F

from genenv_lab.config import RunConfig
from genenv_lab.backends.distributed import processes
from genenv_lab.core.seeds import trainer_seed
from genenv_lab.models.loading import ADAPTERS, attach_adapters, load_base
from genenv_lab.models.world import world_spec
from genenv_lab.core.rwr import rwr_losses, target_positions
from genenv_lab.backends import prefix
from genenv_lab.backends.agent_trainer import trainer_record
from genenv_lab.backends.card import CPU, detect, pick_dtype, picked_line
from genenv_lab.backends.base import (AgentPrompt, AgentTrainer, AgentUpdate, EnvExample, EnvUpdate, Messages,
    RewardFn, TrainerKit, alphabet_token_ids, cut_at_stop)

# transformers 5 renames gradient_checkpointing to activation_checkpointing and warns on every GRPOConfig and every
# TRL step that reads the old name (dozens of lines a run in a notebook); the old name is the one that works across
# the versions this project supports (the GPU stack pins transformers <= 5.17), so only that notice is silenced.
warnings.filterwarnings("ignore", message=r".*`(is_)?gradient_checkpointing` is deprecated", category=FutureWarning)

GRPO_METRICS = ("loss", "reward", "reward_std", "frac_reward_zero_std", "kl", "entropy", "clip_ratio/region_mean",
                "completions/mean_length", "completions/clipped_ratio", "grad_norm", "learning_rate")
"""TRL's GRPO log keys kept per epoch (mean over the epoch's optimiser steps) as ``grpo/<key>``; a key TRL did not
log (``kl`` without ``kl_beta``, clip ratios of a single-iteration update) is ``NaN``."""
OPTIMIZER_FILE = "optimizer.pt"
PREFIX_PATH = "agent/prefix_path"
"""``extra`` key of ``epochs.jsonl``: the path the epoch's agent update took (:data:`genenv_lab.backends.prefix.
PATHS`: ``shared-prefix``, or ``full-rows`` when ``model.shared_prefix`` is off or the model is not supported)."""


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


class HFBackend:
    """One base model, two LoRA adapters, the agent trained by a trainer of :mod:`genenv_lab.trainers.agent` (TRL
    GRPO), and a hand-written RWR step for the env."""

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
        """The prompt text; a final assistant message is continued (as TRL does for prefilled prompts)."""
        cont = messages[-1]["role"] == "assistant"
        return self.tokenizer.apply_chat_template(messages, add_generation_prompt=not cont,
                                                  continue_final_message=cont, tokenize=False)

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
            params = [p for n, p in self.model.named_parameters() if "lora_" in n and f".{name}." in n]
            lr = self.cfg.agent.lr if role == "agent" else self.cfg.env.lr
            self._optimizers[name] = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
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
        its own."""
        self._use("agent")
        trainer_cls, config_cls = self.grpo_classes()
        return TrainerKit(
            cfg=self.cfg, model=self.model, tokenizer=self.tokenizer, dataset=grpo_dataset(self, prompts),
            reward_fn=reward_fn, optimizer=self.optimizer("agent"), output_dir=output_dir,
            seed=self.next_trainer_seed(), trainer_cls=trainer_cls, config_cls=config_cls,
            on_cuda=self.device.type == "cuda", world_size=self.procs.world_size,
            share_prefix=self.cfg.model.shared_prefix and self.shares_prefix_in(trainer_cls),
            engine_args=self.grpo_engine_args())

    def shares_prefix_in(self, trainer_cls) -> bool:
        """Whether the project's shared-prefix forward can serve ``trainer_cls`` (TRL's own trainer: yes)."""
        return True

    def prefix_path_of(self, trainer) -> str:
        """The path the update took, read from the trainer (:data:`PREFIX_PATH`)."""
        return trainer.prefix_path

    def train_agent(self, trainer: AgentTrainer, prompts: Sequence[AgentPrompt], reward_fn: RewardFn) -> AgentUpdate:
        """One update of the ``agent`` adapter built by ``trainer`` from this engine's :meth:`trainer_kit`: trained,
        timed (rollouts apart), its TRL log averaged into ``grpo/*`` and what ran recorded under ``agent/*``."""
        with tempfile.TemporaryDirectory(prefix="genenv-grpo-") as tmp:
            trainer = trainer.build(self.trainer_kit(prompts, reward_fn, tmp))
            start = time.perf_counter()
            trainer.train()
            total = time.perf_counter() - start
        self.after_grpo()
        metrics = {**grpo_metrics(trainer.state.log_history), **trainer_record(trainer, self.prefix_path_of)}
        self._use("agent")
        return AgentUpdate(loss=metrics["grpo/loss"], rollout_s=trainer.rollout_s,
                           update_s=max(total - trainer.rollout_s, 0.0), steps=trainer.state.global_step,
                           metrics=metrics)

    def after_grpo(self) -> None:
        """Whatever the engine's trainer leaves to restore after ``train()`` (nothing for ``hf``)."""

    # --------------------------------------------------------------------------------------------- env (RWR)
    def _encode(self, ex: EnvExample) -> tuple[list[int], list[int]]:
        prompt = self.tokenizer(self.chat_prompt(ex.messages), add_special_tokens=False)["input_ids"]
        target = self.tokenizer(ex.target + self.eos_token, add_special_tokens=False)["input_ids"]
        limit = self.cfg.model.max_seq_length
        prompt = prompt[-max(limit - len(target), 1):]
        return prompt, target[: limit - len(prompt)]

    def _batch(self, examples: Sequence[EnvExample]) -> dict[str, torch.Tensor]:
        encoded = [self._encode(ex) for ex in examples]
        width = max(len(p) + len(t) for p, t in encoded)
        pad = self.tokenizer.pad_token_id
        ids = torch.full((len(encoded), width), pad, dtype=torch.long)
        attn = torch.zeros_like(ids)
        target_mask = torch.zeros_like(ids, dtype=torch.bool)
        for row, (p, t) in enumerate(encoded):
            seq = p + t
            ids[row, : len(seq)] = torch.tensor(seq)
            attn[row, : len(seq)] = 1
            target_mask[row, len(p): len(seq)] = True
        weights = torch.tensor([ex.weight for ex in examples], dtype=torch.float32)
        return {"input_ids": ids.to(self.device), "attention_mask": attn.to(self.device),
                "target_mask": target_mask.to(self.device), "weights": weights.to(self.device)}

    def _rwr_losses(self, batch: dict[str, torch.Tensor], grad: bool) -> tuple[torch.Tensor, torch.Tensor]:
        """(weighted NLL, mean per-token KL to the adapter-disabled base) of one batch (:func:`genenv_lab.core.rwr.
        rwr_losses` on the log-probabilities at the target positions)."""
        ids, attn, w = batch["input_ids"], batch["attention_mask"], batch["weights"]
        pos, labels, rows = target_positions(ids, batch["target_mask"])

        def target_logp() -> torch.Tensor:
            logits = self.model(input_ids=ids, attention_mask=attn).logits[:, :-1]  # (B, T-1, V)
            return F.log_softmax(logits[pos].float(), dim=-1)  # (N, V)

        with torch.no_grad(), self.model.disable_adapter():
            ref_logp = target_logp()
        with nullcontext() if grad else torch.no_grad():
            logp = target_logp()
        return rwr_losses(logp, ref_logp, labels, rows, w)

    def rwr_step(self, examples: Sequence[EnvExample]) -> EnvUpdate:
        e = self.cfg.env
        if not examples or e.max_steps == 0:
            return EnvUpdate(steps=0, kl=self.env_kl(examples) if examples else 0.0)
        self._use("env")
        self.model.train()
        opt = self.optimizer("env")
        params = [p for group in opt.param_groups for p in group["params"]]
        procs = self.procs
        losses, steps, capped = [], 0, False
        n = len(examples)
        for step in range(e.max_steps):
            start = (step * e.batch_size) % n
            idx = [(start + k) % n for k in range(min(e.batch_size, n))]
            share = procs.shard(idx)  # this process's part of the step's mini-batch (all of it with one process)
            if share:
                batch = self._batch([examples[i] for i in share])
                nll, kl = self._rwr_losses(batch, grad=True)
                tokens = int(batch["target_mask"][:, 1:].sum())
            # the batch's KL over every process's target tokens: all processes take the same decision
            kl_all, token_share = procs.pooled_mean(kl.item() if share else 0.0, tokens if share else 0)
            if kl_all > e.kl_cap:
                capped = True
                break
            local = 0.0
            if share:
                # scaled so that the processes' mean of these losses (and of their gradients) is the loss of the
                # whole mini-batch; with one process both factors are exactly 1
                loss = nll * (procs.world_size * len(share) / len(idx)) + \
                    e.kl_coef * kl * (procs.world_size * token_share)
                loss.backward()
                local = loss.item()
            procs.average_gradients(params)
            opt.step()
            opt.zero_grad(set_to_none=True)
            losses.append(procs.mean(local))
            steps += 1
        self.model.eval()
        final_kl = self.env_kl(examples)
        self._use("agent")
        return EnvUpdate(loss=sum(losses) / len(losses) if losses else math.nan, kl=final_kl, steps=steps,
                         stopped_by_kl_cap=capped or final_kl > e.kl_cap)

    @torch.no_grad()
    def env_kl(self, examples: Sequence[EnvExample]) -> float:
        """Mean per-token KL of the env adapter to the initial simulator on ``examples``' targets."""
        if not examples:
            return 0.0
        self._use("env")
        kls = []
        for start in range(0, len(examples), self.cfg.env.batch_size):
            _, kl = self._rwr_losses(self._batch(examples[start:start + self.cfg.env.batch_size]), grad=False)
            kls.append(kl.item())
        self._use("agent")
        return sum(kls) / len(kls)

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


def grpo_metrics(log_history: Sequence[dict[str, Any]]) -> dict[str, float]:
    """``grpo/<key>``: the mean over the logged optimiser steps of each of :data:`GRPO_METRICS` (NaN if absent)."""
    steps = [h for h in log_history if "loss" in h and "train_runtime" not in h]
    out = {}
    for key in GRPO_METRICS:
        values = [float(h[key]) for h in steps if isinstance(h.get(key), (int, float))]
        out[f"grpo/{key}"] = sum(values) / len(values) if values else math.nan
    return out
