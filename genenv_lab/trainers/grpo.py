"""The agent's GRPO trainer (TRL), built and run from what an engine lends, one function each for every engine.

On both engines that train the agent (``hf``: transformers + peft + TRL; ``unsloth``: Unsloth's patched TRL on a
GPU, stock TRL under Unsloth's CPU backend) the trainers of :mod:`genenv_lab.trainers.agent` build the update with
:func:`build_grpo_trainer` and run it with :func:`run_grpo`. The engine lends only what is its own (a
:class:`~genenv_lab.backends.base.TrainerKit`): the model with the ``agent`` adapter active, the epoch's prompts as
a data set, the trainer class (TRL's ``GRPOTrainer`` or Unsloth's), the config class, the optimiser of the ``agent``
role, its device flags (vLLM rollouts) and how to read the prefix path its trainer took. Everything the update
depends on is decided here, once:

- the settings (:func:`grpo_settings`): the batch (G completions for each of ``prompts_per_step`` tasks), the
  learning rate, held **constant** (TRL's default decays it to 0 within each call, i.e. within each epoch), the RL
  objective (:class:`~genenv_lab.config.AgentConfig`'s ``loss_type``, ``importance_sampling_level``,
  ``scale_rewards``, ``epsilon``/``epsilon_high``, ``num_iterations``, ``mask_truncated_completions``), the KL
  coefficient and the sampling temperature. :data:`METHOD_FIELDS` names them; a config class that drops or changes
  one of them is refused (:func:`check_method_fields`), on every engine;
- the optimiser: the engine's run-long AdamW of the agent role (float32, the configured learning rate, no weight
  decay), passed to the trainer, so Adam's moments carry across epochs and are saved with the adapters;
- the KL reference: the trainer is built with ``beta = 0`` and given ``agent.kl_beta`` after. TRL given a PeftModel
  and ``beta > 0`` would copy the adapter called ``default`` (Unsloth's one slot) into a ``ref`` adapter, anchoring
  the agent to itself at the epoch's start; built this way no reference copy exists and the anchor is the base with
  adapters disabled, on both engines;
- precision (:func:`precision_flags`): from the dtype the model's weights were loaded in, one rule;
- the update's figures (:func:`run_grpo`): one pass over the epoch's batch (a fresh trainer per epoch around the
  run-long optimiser), timed with its rollouts apart; TRL's logged metrics averaged over the epoch's steps as
  ``grpo/*`` (:data:`GRPO_METRICS`), and the record of what ran (:func:`trainer_record`: the prefix path, whether
  gradient checkpointing was on, the trainer class) as ``agent/*``.

Gradient checkpointing is the one difference kept on purpose: the ``unsloth`` engine's model is built with
Unsloth's checkpointing (``use_gradient_checkpointing="unsloth"``: activations offloaded, the reason to use Unsloth
on a 16 GB T4), the ``hf`` engine's is not (on CPU recomputation costs time and memory is not short). The settings
leave the model's own choice alone (``gradient_checkpointing=False`` asks TRL not to switch it on), and
``agent/gradient_checkpointing`` records it. The project's shared-prefix forward needs the model's cache, which a
checkpointed forward does not keep: with checkpointing on, the update takes full rows and records why
(:func:`genenv_lab.backends.prefix.supports_shared_prefix`).
"""

from __future__ import annotations

import math
import time
from typing import Any, Callable, Sequence

import torch

from genenv_lab.backends import prefix
from genenv_lab.backends.base import AgentUpdate, RewardFn, TrainerKit
from genenv_lab.core.metrics import (AGENT_GRADIENT_CHECKPOINTING, AGENT_PREFIX_PATH, AGENT_ROLLOUTS, AGENT_TRAINER,
    GRPO, GRPO_LOSS)

METHOD_FIELDS = ("per_device_train_batch_size", "num_generations", "max_completion_length", "learning_rate",
                 "lr_scheduler_type", "num_train_epochs", "temperature", "weight_decay", "loss_type",
                 "importance_sampling_level", "scale_rewards", "epsilon", "epsilon_high", "num_iterations",
                 "mask_truncated_completions", "beta", "warmup_steps", "gradient_accumulation_steps")
"""The GRPOConfig fields the method depends on: equal for every engine given the same run configuration."""

TRAINER_KEYS = (AGENT_PREFIX_PATH, AGENT_GRADIENT_CHECKPOINTING, AGENT_TRAINER, AGENT_ROLLOUTS)
"""``extra`` keys of ``epochs.jsonl`` that say how the epoch's agent update ran (:func:`trainer_record`);
``agent/prefix_path`` is one of :data:`genenv_lab.backends.prefix.PATHS`."""

GRPO_METRICS = ("loss", "reward", "reward_std", "frac_reward_zero_std", "kl", "entropy", "clip_ratio/region_mean",
                "completions/mean_length", "completions/clipped_ratio", "grad_norm", "learning_rate")
"""TRL's GRPO log keys kept per epoch (mean over the epoch's optimiser steps) as ``grpo/<key>``; a key TRL did not
log (``kl`` without ``kl_beta``, clip ratios of a single-iteration update) is ``NaN``."""


def grpo_settings(cfg, *, output_dir: str, seed: int, world_size: int = 1) -> dict[str, Any]:
    """GRPOConfig keyword arguments for one agent update of ``cfg`` (a :class:`~genenv_lab.config.RunConfig`).

    Under ``world_size`` processes each takes ``prompts_per_step / world_size`` tasks of a step (the engine
    checks that it divides); ``beta`` is ``agent.kl_beta`` (:func:`build_grpo_trainer` builds the trainer with 0
    and sets it after)."""
    a = cfg.agent
    return dict(
        output_dir=output_dir,
        per_device_train_batch_size=a.num_generations * a.prompts_per_step // world_size,
        gradient_accumulation_steps=1, num_generations=a.num_generations,
        max_completion_length=a.max_completion_length, temperature=a.temperature,
        learning_rate=a.lr, lr_scheduler_type="constant", warmup_steps=0, weight_decay=0.0, num_train_epochs=1,
        beta=a.kl_beta, loss_type=a.loss_type, importance_sampling_level=a.importance_sampling_level,
        scale_rewards=a.scale_rewards, epsilon=a.epsilon, epsilon_high=a.epsilon_high or a.epsilon,
        num_iterations=a.num_iterations, mask_truncated_completions=a.mask_truncated_completions,
        logging_steps=1, save_strategy="no", report_to="none", disable_tqdm=True, seed=seed,
        dataloader_num_workers=0, gradient_checkpointing=False,
    )


def precision_flags(weights_dtype, on_cuda: bool) -> dict[str, bool]:
    """``bf16``/``fp16`` for the trainer, from the dtype the model's weights were loaded in: mixed precision in
    that dtype on a CUDA device, none on CPU (the float32 path every test runs). One rule for both engines.

    >>> import torch
    >>> precision_flags(torch.bfloat16, True), precision_flags(torch.float16, True)
    ({'bf16': True, 'fp16': False}, {'bf16': False, 'fp16': True})
    >>> precision_flags(torch.bfloat16, False), precision_flags(torch.float32, True)
    ({'bf16': False, 'fp16': False}, {'bf16': False, 'fp16': False})
    """
    return {"bf16": on_cuda and weights_dtype == torch.bfloat16, "fp16": on_cuda and weights_dtype == torch.float16}


def weights_dtype(model):
    """The dtype of the model's floating-point base weights (a 4-bit base: its compute dtype, which the unquantised
    norms and embeddings carry); LoRA weights (float32 on every engine) do not count."""
    import torch

    for name, p in model.named_parameters():
        if p.is_floating_point() and "lora_" not in name:
            return p.dtype
    return torch.float32


def check_method_fields(args, settings: dict[str, Any], names: tuple[str, ...] = METHOD_FIELDS) -> None:
    """Refuse a built config that lost or changed a field of ``names`` (:data:`METHOD_FIELDS` and a trainer's own
    settings; an installed TRL or Unsloth config class without it, or one that rewrites it): that would silently run
    another update than the one configured. ``beta`` is checked against 0 (set on the trainer after)."""
    changed = []
    for name in names:
        want = 0.0 if name == "beta" else settings[name]
        have = getattr(args, name, _MISSING)
        have = getattr(have, "value", have)  # enums (lr_scheduler_type) compare by value
        if have is _MISSING or not _same(have, want):
            changed.append(f"{name} ({want!r} configured, {'absent' if have is _MISSING else repr(have)} built)")
    if changed:
        raise RuntimeError(f"the installed {type(args).__name__} does not take the agent update as configured: "
                           f"{'; '.join(changed)}. Install the pinned versions (pip install -e '.[gpu]' on a GPU, "
                           "bash scripts/setup.sh on CPU; docs/dependencies.md)")


_MISSING = object()


def _same(a, b) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        try:
            return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=0.0)
        except (TypeError, ValueError):
            return False
    return a == b


def build_grpo_trainer(kit: TrainerKit, trainer_args: dict[str, Any] | None = None):
    """The agent's GRPOTrainer for one update (one pass over ``kit.dataset``, G completions each), for any engine.

    ``kit.trainer_cls``/``kit.config_cls``: TRL's ``GRPOTrainer``/``GRPOConfig`` or Unsloth's; ``kit.optimizer``:
    the engine's run-long optimiser of the agent role; ``kit.engine_args``: the engine's own GRPOConfig flags
    (``use_vllm``); ``trainer_args``: the GRPOConfig settings of an agent trainer beyond the configured ones
    (:data:`genenv_lab.trainers.agent.TRAINERS`), checked as built. Neither may touch a method field. The trainer
    adds up its rollout time and, with ``kit.share_prefix``, encodes each prompt once where the model allows it
    (:func:`timed_trainer`)."""
    from transformers.trainer_callback import PrinterCallback

    engine_args, trainer_args = dict(kit.engine_args or {}), dict(trainer_args or {})
    for who, flags in (("engine flags", engine_args), ("a trainer's settings", trainer_args)):
        clash = sorted(set(flags) & set(METHOD_FIELDS))
        if clash:
            raise ValueError(f"{who} may not set method fields {clash}; they come from the run configuration")
    settings = grpo_settings(kit.cfg, output_dir=kit.output_dir, seed=kit.seed, world_size=kit.world_size)
    args = kit.config_cls(**{**settings, "beta": 0.0}, **precision_flags(weights_dtype(kit.model), kit.on_cuda),
                          use_cpu=not kit.on_cuda, ddp_find_unused_parameters=False,  # only the active adapter trains
                          **engine_args, **trainer_args)
    check_method_fields(args, {**settings, **trainer_args}, METHOD_FIELDS + tuple(trainer_args))
    trainer = timed_trainer(kit.trainer_cls, share_prefix=kit.share_prefix)(
        model=kit.model, reward_funcs=[grpo_reward(kit.reward_fn)], args=args, train_dataset=kit.dataset,
        processing_class=kit.tokenizer, optimizers=(kit.optimizer, None))
    trainer.remove_callback(PrinterCallback)  # metrics go to the run directory, not stdout
    trainer.beta = kit.cfg.agent.kl_beta  # no reference adapter was copied: the anchor is the base, adapters disabled
    return trainer


def run_grpo(trainer, kit: TrainerKit) -> AgentUpdate:
    """Run ``trainer`` (built by :func:`build_grpo_trainer`, or any trainer with TRL's ``train()``, ``state`` and
    ``args`` and a ``rollout_s`` of its own) and return the update's figures: the wall time with the rollouts apart,
    TRL's log averaged into ``grpo/*`` (:func:`grpo_metrics`) and what ran under ``agent/*``
    (:func:`trainer_record`, the prefix path read as ``kit.prefix_path_of`` says)."""
    start = time.perf_counter()
    trainer.train()
    total = time.perf_counter() - start
    metrics = {**grpo_metrics(trainer.state.log_history), **trainer_record(trainer, kit.prefix_path_of)}
    return AgentUpdate(loss=metrics[GRPO_LOSS], rollout_s=trainer.rollout_s,
                       update_s=max(total - trainer.rollout_s, 0.0), steps=trainer.state.global_step,
                       metrics=metrics)


def grpo_metrics(log_history: Sequence[dict[str, Any]]) -> dict[str, float]:
    """``grpo/<key>``: the mean over the logged optimiser steps of each of :data:`GRPO_METRICS` (NaN if absent)."""
    steps = [h for h in log_history if "loss" in h and "train_runtime" not in h]
    out = {}
    for key in GRPO_METRICS:
        values = [float(h[key]) for h in steps if isinstance(h.get(key), (int, float))]
        out[f"{GRPO}{key}"] = sum(values) / len(values) if values else math.nan
    return out


def trainer_record(trainer, prefix_path: Callable[[Any], str] | None = None) -> dict[str, Any]:
    """What the update ran, read from the trainer after ``train()``: ``agent/prefix_path`` (``prefix_path(trainer)``
    where the engine reads it itself, else the path the trainer took), ``agent/gradient_checkpointing`` (the
    model's, as it trained) and ``agent/trainer`` (the trainer class it derives from: TRL's or Unsloth's)."""
    model = getattr(trainer, "model", None)
    causal_lm = model.get_base_model() if hasattr(model, "get_base_model") else model
    base = next((c for c in type(trainer).__mro__[1:] if c.__name__ != "TimedGRPOTrainer"), type(trainer))
    return {AGENT_PREFIX_PATH: prefix_path(trainer) if prefix_path else trainer.prefix_path,
            AGENT_GRADIENT_CHECKPOINTING: bool(getattr(causal_lm, "is_gradient_checkpointing", False)),
            AGENT_TRAINER: f"{base.__module__.split('.')[0]}.{base.__name__}",
            AGENT_ROLLOUTS: "vllm" if getattr(trainer.args, "use_vllm", False) else "transformers"}


def grpo_reward(reward_fn: RewardFn):
    """TRL's reward-function signature around ``reward_fn(task_ids, completion_texts)``."""

    def genenv_reward(completions, task_id, **_: Any) -> list[float]:
        texts = [c[-1]["content"] if isinstance(c, list) else c for c in completions]
        return reward_fn(list(task_id), texts)

    return genenv_reward


TRL_HOOKS = {
    "_generate_and_score_completions": ("inputs",),
    "_generate_single_turn": ("prompt_ids", "images", "multimodal_fields", "num_generations"),
    "_get_per_token_logps_and_entropies": ("model", "input_ids", "attention_mask", "logits_to_keep", "batch_size",
                                           "compute_entropy", "compute_aux_loss"),
}
"""TRL's private methods the project's trainer overrides, with the parameters it relies on. ``tests/test_prefix.py``
pins them, so a TRL upgrade that moves them fails a test instead of silently bypassing the overrides."""


def timed_trainer(trainer_cls, share_prefix: bool = False):
    """``trainer_cls`` (TRL's GRPOTrainer, or Unsloth's patched one) adding up the time of its rollout phase; with
    ``share_prefix``, encoding each distinct prompt once in the rollouts and in every log-prob forward of the update
    (:mod:`genenv_lab.backends.prefix`). ``prefix_path`` says which path the update took (:data:`prefix.PATHS`)."""

    class TimedGRPOTrainer(trainer_cls):
        rollout_s = 0.0

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            causal_lm = self.model.get_base_model() if hasattr(self.model, "get_base_model") else self.model
            self.prefix_unsupported = prefix.supports_shared_prefix(causal_lm) if share_prefix else "turned off"
            self.prefix_path = prefix.FULL if self.prefix_unsupported else prefix.SHARED
            if self.prefix_path == prefix.SHARED:
                prefix.install_prefix_forward(causal_lm)  # after TRL's fused head: it wraps the forward TRL left

        def _generate_and_score_completions(self, inputs):  # TRL's hook: generation + scoring of a batch
            start = time.perf_counter()
            try:
                return super()._generate_and_score_completions(inputs)
            finally:
                self.rollout_s += time.perf_counter() - start

        def _generate_single_turn(self, prompt_ids, images, multimodal_fields, num_generations, *args, **kwargs):
            plain = (self.prefix_path != prefix.SHARED or self.use_vllm or images or multimodal_fields
                     or getattr(self, "use_transformers_continuous_batching", False))
            if plain:
                return super()._generate_single_turn(prompt_ids, images, multimodal_fields, num_generations,
                                                     *args, **kwargs)
            with prefix.sharing_generate(self.accelerator.unwrap_model(self.model)):
                return super()._generate_single_turn(prompt_ids, images, multimodal_fields, num_generations,
                                                     *args, **kwargs)

        def _get_per_token_logps_and_entropies(self, model, input_ids, attention_mask, logits_to_keep,
                                               batch_size=None, compute_entropy=False, compute_aux_loss=False,
                                               **multimodal):
            if self.prefix_path != prefix.SHARED or compute_aux_loss or \
                    any(v is not None for v in multimodal.values()):
                return super()._get_per_token_logps_and_entropies(
                    model, input_ids, attention_mask, logits_to_keep, batch_size=batch_size,
                    compute_entropy=compute_entropy, compute_aux_loss=compute_aux_loss, **multimodal)
            request = prefix.PrefixRequest(logits_to_keep, float(self.temperature), compute_entropy)
            step = batch_size or input_ids.size(0)
            logps, entropies = [], []
            for start in range(0, input_ids.size(0), step):
                with self.accelerator.autocast():
                    out = model(input_ids=input_ids[start:start + step],
                                attention_mask=attention_mask[start:start + step], prefix_request=request)
                logps.append(out.log_probs)
                entropies.append(out.entropy)
            return torch.cat(logps), (torch.cat(entropies) if compute_entropy else None), None

    return TimedGRPOTrainer
