"""The curriculum's engine: the project's ``hf`` engine around a model a TRL user built, and the run configuration
their ``GRPOConfig`` implies.

- :class:`ModelEngine` is :class:`~genenv_lab.backends.hf.HFBackend` without the loading: the user's ``PeftModel``
  carries their agent adapter (``default`` when TRL or ``get_peft_model`` made it) and the simulator's ``env``
  adapter (:func:`attach_env`). Generation, the RWR step with its KL anchor (the base, adapters off) and KL cap, and
  the optimiser of the ``env`` role are the engine's own code, unchanged; only the role → adapter names and the
  adapter files (``agent/`` and ``env/`` as the loop writes them) are its own.
- :func:`curriculum_config` is the :class:`~genenv_lab.config.RunConfig` written to the run's ``config.json``: the
  simulator's and the curriculum's settings from the user's configuration (a preset, or their own), the agent's
  from their ``GRPOConfig`` (G, learning rate, completion length, the RL objective), the model's from their LoRA.
"""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

import torch

from genenv_lab.backends.hf import OPTIMIZER_FILE, HFBackend, read_adapter, thinking_off
from genenv_lab.config import IMPORTANCE_SAMPLING_LEVELS, LOSS_TYPES, REWARD_SCALINGS, ConfigError, RunConfig
from genenv_lab.config.presets import TRL_PRESET_PREFIX
from genenv_lab.backends.distributed import processes
from genenv_lab.models.loading import ADAPTERS, prepare_tokenizer

ENV = "env"
"""The simulator's adapter on the user's model."""


def agent_adapter_of(model) -> str:
    """The user's agent adapter: the model's active adapter (TRL's and ``get_peft_model``'s ``default``)."""
    if not hasattr(model, "peft_config") or not hasattr(model, "add_adapter"):
        raise TypeError("GenEnvCurriculum needs a peft model: wrap yours with peft.get_peft_model(model, "
                        "LoraConfig(...)), or pass peft_config to GRPOTrainer and the curriculum takes the "
                        "trainer's model when training begins")
    active = model.active_adapter
    name = active[0] if isinstance(active, (list, tuple)) else active
    if name == ENV:
        raise ValueError(f"the model's active adapter is {ENV!r}, the simulator's; activate the agent's adapter")
    return name


def attach_env(model, agent_adapter: str, lora=None, seed: int = 0) -> None:
    """Add the simulator's LoRA adapter ``env`` to ``model`` (the agent's LoRA configuration, or ``lora``), its
    random half drawn from ``seed`` without touching the caller's random stream; the agent's adapter stays active
    and the only trainable one, so the trainer's optimiser never holds the simulator's weights."""
    if ENV not in model.peft_config:
        config = copy.deepcopy(lora if lora is not None else model.peft_config[agent_adapter])
        config.inference_mode = False
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model.add_adapter(ENV, config)
    model.set_adapter(agent_adapter)


class ModelEngine(HFBackend):
    """:class:`~genenv_lab.backends.hf.HFBackend` over a model built by the user: ``agent`` is their adapter,
    ``env`` the simulator's. Generation and the RWR update are the ``hf`` engine's; the agent is trained by the
    user's trainer, never here."""

    def __init__(self, cfg: RunConfig, model, tokenizer, agent_adapter: str):  # noqa: D107 - no loading: see class
        self.cfg = cfg
        self.procs = processes()
        self.model = model
        self.device = next(model.parameters()).device
        self.dtype = next(p.dtype for n, p in model.named_parameters() if "lora_" not in n)
        self.tokenizer = tokenizer
        self.agent_adapter = agent_adapter
        self.adapters = (agent_adapter, ENV)
        self.eos_token = tokenizer.eos_token
        self.init_run_state()

    def _name(self, role: str) -> str:
        if role not in ADAPTERS:
            raise ValueError(f"unknown adapter {role!r}; expected one of {ADAPTERS}")
        return self.agent_adapter if role == "agent" else ENV

    def save_adapters(self, directory: Path) -> None:
        """The run directory's layout: ``agent/`` and ``env/`` (peft's adapter files) and the ``env`` optimiser's
        state (``optimizer.pt``, as every engine writes it)."""
        from peft import get_peft_model_state_dict
        from safetensors.torch import save_file

        for role in ADAPTERS:
            name, folder = self._name(role), Path(directory) / role
            folder.mkdir(parents=True, exist_ok=True)
            weights = get_peft_model_state_dict(self.model, adapter_name=name)
            save_file({k: v.detach().cpu().contiguous() for k, v in weights.items()},
                      str(folder / "adapter_model.safetensors"))
            self.model.peft_config[name].save_pretrained(str(folder))
        self.save_optimizers(Path(directory) / OPTIMIZER_FILE)

    def load_env(self, directory: Path) -> None:
        """The simulator's adapter and optimiser as a committed epoch left them (the agent's come from the
        trainer's checkpoint)."""
        from peft import set_peft_model_state_dict

        path = Path(directory) / ENV / "adapter_model.safetensors"
        set_peft_model_state_dict(self.model, read_adapter(path), adapter_name=ENV)
        self._use("agent")
        self.load_optimizers(Path(directory) / OPTIMIZER_FILE)


def render_tokenizer(tokenizer):
    """A copy of the user's tokenizer as the engine generates with it (pad token, left padding, a chat template,
    Qwen3's thinking held off): the user's own object is left as it is."""
    return thinking_off(prepare_tokenizer(copy.deepcopy(tokenizer)))


def curriculum_config(base: RunConfig, args, domain: str, model, agent_adapter: str, epochs: int) -> RunConfig:
    """The run's configuration: ``base`` (the simulator, the curriculum, the seed, replay and seed tasks, the success
    threshold) with the domain, ``epochs``, the agent's settings from ``args`` (a ``GRPOConfig``) and the model's
    from the user's LoRA; a ``GRPOConfig`` value the run's configuration cannot record is a :class:`ConfigError`
    naming it."""
    g = args.num_generations
    agent: dict[str, Any] = dict(
        num_generations=g, max_completion_length=args.max_completion_length, temperature=float(args.temperature),
        lr=float(args.learning_rate), prompts_per_step=args.generation_batch_size // g, kl_beta=float(args.beta),
        num_iterations=args.num_iterations, epsilon=float(args.epsilon),
        epsilon_high=float(args.epsilon_high or 0.0), mask_truncated_completions=bool(args.mask_truncated_completions))
    scale = {True: "group", False: "none"}.get(args.scale_rewards, args.scale_rewards)
    for name, value, accepted in (("loss_type", args.loss_type, LOSS_TYPES), ("scale_rewards", scale, REWARD_SCALINGS),
                                  ("importance_sampling_level", args.importance_sampling_level,
                                   IMPORTANCE_SAMPLING_LEVELS)):
        if value in accepted:
            agent[name] = value
    lora = model.peft_config[agent_adapter]
    targets = lora.target_modules
    targets = (targets,) if isinstance(targets, str) else tuple(sorted(targets or ()))
    dtype = next(p.dtype for n, p in model.named_parameters() if "lora_" not in n)
    section = dict(name_or_path=str(getattr(model.config, "_name_or_path", "") or base.model.name_or_path),
                   engine="hf", lora_r=int(lora.r), lora_alpha=int(lora.lora_alpha),
                   lora_dropout=float(lora.lora_dropout), target_modules=targets or base.model.target_modules,
                   dtype={torch.bfloat16: "bfloat16", torch.float16: "float16"}.get(dtype, "float32"),
                   separate_adapters=True)
    try:
        from genenv_lab.coevolution.resolve import for_domain, resolve

        cfg = base.replace(preset=f"{TRL_PRESET_PREFIX}{base.preset}", model=section, agent=agent,
                           loop={"domain": domain, "epochs": max(1, epochs), "save_adapters": True})
        if domain != base.loop.domain:  # the domain's recommended settings, except the ones given here
            return for_domain(cfg, domain, given={"model": section, "agent": agent})
        return resolve(cfg)
    except ConfigError as exc:
        raise ConfigError(f"{exc} (from your GRPOConfig or LoRA configuration)") from None


def steps_per_epoch(args, tasks: int) -> int:
    """The trainer's optimiser steps in one pass over ``tasks`` prompts (G completions each, μ passes)."""
    samples = tasks * args.num_generations * args.num_iterations
    per_step = args.per_device_train_batch_size * args.gradient_accumulation_steps * max(args.world_size, 1)
    return math.ceil(samples / per_step)
