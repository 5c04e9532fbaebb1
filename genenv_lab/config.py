"""Configuration: one frozen dataclass per component, validated at construction, and presets by name.

Every default of ``docs/method.md`` where the paper is silent is a field here, so it appears in the run's
``config.json``. Invalid values raise :class:`ConfigError` naming the field, the value and the accepted range,
before any model is loaded.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from .curriculum import ENV_REWARD_SHAPES
from .trackers import TRACKERS


class ConfigError(ValueError):
    """A configuration value is out of its accepted range; the message says which field and what to do."""


def _require(ok: bool, where: str, name: str, value: Any, accepted: str) -> None:
    if not ok:
        raise ConfigError(f"{where}.{name}={value!r} is invalid: accepted {accepted}.")


def _in_range(where: str, name: str, value: Any, lo: float | None = None, hi: float | None = None,
              integer: bool = False, lo_open: bool = False) -> None:
    kind = "an integer" if integer else "a number"
    bounds = []
    if lo is not None:
        bounds.append(f"{'>' if lo_open else '≥'} {lo}")
    if hi is not None:
        bounds.append(f"≤ {hi}")
    accepted = f"{kind} {' and '.join(bounds)}".strip()
    is_num = isinstance(value, int) if integer else isinstance(value, (int, float))
    ok = is_num and not isinstance(value, bool) and not (isinstance(value, float) and math.isnan(value))
    if ok and lo is not None:
        ok = value > lo if lo_open else value >= lo
    if ok and hi is not None:
        ok = value <= hi
    _require(ok, where, name, value, accepted)


ENGINES = ("hf", "unsloth", "vllm")
LOSS_TYPES = ("dapo", "grpo", "dr_grpo", "bnpo", "cispo", "sapo", "luspo", "vespo")
"""TRL's GRPO loss formulations (``GRPOConfig.loss_type``; TRL's default ``dapo`` first)."""
IMPORTANCE_SAMPLING_LEVELS = ("token", "sequence")
REWARD_SCALINGS = ("group", "batch", "none")


@dataclass(frozen=True)
class Variant:
    """What a baseline changes (method.md §7), read by the loop's named steps; never the agent optimiser or the
    per-epoch budget of fresh tasks (``RunConfig.budget``)."""

    name: str
    fixed_set: str | None = None
    """``untrained``/``teacher``: the whole task set is written in epoch 1 (by the untrained simulator, by a
    teacher model) and each epoch samples ``budget`` fresh tasks from it; None: new generations every epoch."""
    trains_env: bool = True
    """The simulator is updated by RWR on the in-band generations."""
    shows_statistics: bool = True
    """The simulator's context holds the lineage's success statistics."""
    one_variation_each: bool = False
    """``budget`` parents with one variation each, instead of ``seeds_per_epoch`` × ``n_variations``."""
    rank_trim: float = 0.0
    """Share of the epoch's measured tasks dropped at each end of the p̂ ranking before they join the pool."""
    pool_keeps_last_epoch: bool = False
    """The pool holds the last epoch's (trimmed) tasks only, instead of every valid task so far."""
    screens: bool = False
    """Online difficulty filtering (``genenv_lab.screening``): each epoch's fresh tasks are drawn from the fixed
    set and screened by G agent rollouts without an update; only tasks at 0 < p̂ < 1 train (topped up to the budget
    with other screened tasks), and tasks screened at p̂ = 1 leave the pool (``loop.screen_factor`` caps it)."""


VARIANT_TABLE = {v.name: v for v in (
    Variant("genenv"),
    Variant("random_env", trains_env=False),
    Variant("static", fixed_set="untrained", trains_env=False),
    Variant("filter_only", trains_env=False, shows_statistics=False, one_variation_each=True, rank_trim=0.1,
            pool_keeps_last_epoch=True),  # the authors' release: no simulator update, a 10 % rank filter
    Variant("offline_teacher", fixed_set="teacher", trains_env=False),
    # what practitioners use (DAPO's dynamic sampling): static's fixed set, screened online for 0 < p̂ < 1
    Variant("online_filter", fixed_set="untrained", trains_env=False, screens=True),
)}
VARIANTS = tuple(VARIANT_TABLE)
DTYPES = ("float32", "bfloat16", "float16", "auto")
MAX_SEED = 2**32 - 1  # numpy and torch take seeds below 2**32


@dataclass(frozen=True)
class ModelConfig:
    """The base model and the two LoRA adapters (``agent`` and ``env``) on it."""

    name_or_path: str = "tiny"
    """``tiny`` (random tiny Qwen2 built locally), ``smollm2-135m`` (packaged GGUF), a hub id or a local directory."""
    engine: str = "hf"
    """``hf`` (transformers + peft + TRL, CPU or GPU), ``unsloth`` or ``vllm`` (GPU)."""
    dtype: str = "float32"
    """Floating-point type of the base model's weights (``auto``: what the checkpoint says)."""
    lora_r: int = 8
    """LoRA rank of each adapter."""
    lora_alpha: int = 16
    """LoRA scaling α (the update is scaled by lora_alpha / lora_r)."""
    lora_dropout: float = 0.0
    """Dropout on the LoRA input."""
    target_modules: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
    """Module names that get LoRA (comma-separated on the command line)."""
    load_in_4bit: bool = False
    """Load the base in 4 bits (bitsandbytes / Unsloth; GPU only)."""
    max_seq_length: int = 512
    """Longest prompt + completion, in tokens."""
    gpu_memory_utilization: float = 0.5
    """Share of GPU memory vLLM may take (GPU engines only)."""
    shared_prefix: bool = True
    """``hf`` engine: encode each distinct prompt once, in generation (a prompt's n samples share its cache) and in
    the GRPO update's log-prob forwards (a task's G completions run against one encoding of its prompt); same
    numbers as the full rows, faster (docs/prefix_sharing.md). False: every row encodes its prompt (TRL's path).
    ``epochs.jsonl`` records the path taken as ``extra.agent/prefix_path``."""
    separate_adapters: bool = True
    """True: two LoRA adapters (``agent``, ``env``). False: one shared adapter plays both roles (an ablation, and
    the single-adapter reference of the memory benchmark)."""
    tiny_warmup_steps: int = 300
    """``tiny`` only: steps of format warm-up on the domain's seed texts, so a random model writes parseable tasks."""
    world_steps: int = 450
    """``tiny-world`` only: pre-training steps of the agent role on the domain's world (genenv_lab.models.world)."""
    world_env_steps: int = 200
    """``tiny-world`` only: then rounds of one simulator batch and one agent batch."""
    world_hidden_size: int = 128
    """``tiny-world`` only: hidden size of the model built for the world."""
    world_layers: int = 3
    """``tiny-world`` only: number of its decoder layers."""
    world_anchor: str = "newest"
    """``tiny-world`` only: where the world's teacher starts the simulator's next task in the pre-training corpus:
    ``newest`` (the newest recent task's level; the seed's when the context has none), ``seed`` (always the seed
    task's level, the hint only moving it) or ``task`` (as ``seed``, keeping the rest of the seed task where the
    world can: a count keeps its start), genenv_lab/domains/worlds.py."""
    world_seed: int = 0
    """``tiny-world`` only: seed of the world corpus and the model's initialisation (one model serves every loop
    seed, so a comparison's seeds differ in the loop only)."""

    def __post_init__(self) -> None:
        w = "ModelConfig"
        _require(isinstance(self.name_or_path, str) and self.name_or_path.strip() != "", w, "name_or_path",
                 self.name_or_path,
                 "'tiny', 'tiny-world', 'smollm2-135m', a Hugging Face model id or a local directory")
        _require(self.engine in ENGINES, w, "engine", self.engine, f"one of {ENGINES}")
        _require(self.dtype in DTYPES, w, "dtype", self.dtype, f"one of {DTYPES}")
        _in_range(w, "lora_r", self.lora_r, 1, 1024, integer=True)
        _in_range(w, "lora_alpha", self.lora_alpha, 1, 4096, integer=True)
        _in_range(w, "lora_dropout", self.lora_dropout, 0.0, 0.9)
        _require(isinstance(self.shared_prefix, bool), w, "shared_prefix", self.shared_prefix, "true or false")
        _require(len(self.target_modules) > 0, w, "target_modules", self.target_modules, "at least one module name")
        _in_range(w, "max_seq_length", self.max_seq_length, 64, 131072, integer=True)
        _in_range(w, "gpu_memory_utilization", self.gpu_memory_utilization, 0.05, 0.95)
        _in_range(w, "tiny_warmup_steps", self.tiny_warmup_steps, 0, 100000, integer=True)
        _in_range(w, "world_steps", self.world_steps, 1, 10**6, integer=True)
        _in_range(w, "world_env_steps", self.world_env_steps, 0, 10**6, integer=True)
        _in_range(w, "world_hidden_size", self.world_hidden_size, 16, 4096, integer=True)
        _require(self.world_hidden_size % 4 == 0, w, "world_hidden_size", self.world_hidden_size,
                 "a multiple of 4 (4 attention heads)")
        _in_range(w, "world_layers", self.world_layers, 1, 64, integer=True)
        _in_range(w, "world_seed", self.world_seed, 0, MAX_SEED, integer=True)
        _require(self.world_anchor in ("newest", "seed", "task"), w, "world_anchor", self.world_anchor,
                 "'newest', 'seed' or 'task'")


@dataclass(frozen=True)
class EnvConfig:
    """The environment simulator π_env: generation and its RWR update."""

    seeds_per_epoch: int = 4
    """Seed tasks the simulator varies each epoch."""
    n_variations: int = 4
    """Variations generated per seed (method.md default 4)."""
    max_new_tokens: int = 64
    """Most tokens of one simulator generation."""
    temperature: float = 1.0
    """Sampling temperature of the simulator."""
    top_p: float = 1.0
    """Nucleus sampling of the simulator (1.0: off)."""
    lr: float = 1e-4
    """RWR learning rate of the ``env`` adapter (LoRA on a small model needs more than the paper's 5e-7)."""
    batch_size: int = 8
    """Examples per RWR optimiser step."""
    max_steps: int = 4
    """Most optimiser steps of the env update per epoch (fewer when the KL cap is reached)."""
    kl_coef: float = 0.05
    """Weight of the KL penalty to the initial simulator (the base with the env adapter off)."""
    kl_cap: float = 0.5
    """Per-token KL to the initial simulator (nats) at which the epoch's env steps stop."""
    stats_window: int = 3
    """Epochs of a lineage's success statistics shown in the env context."""
    static_variations: int = 5
    """``static`` baseline: variations per base seed generated once before training (the paper: 5)."""
    teacher_model: str = ""
    """``offline_teacher`` baseline: the stronger model that writes the variations once (hub id or directory)."""
    teacher_data_multiplier: float = 1.0
    """``offline_teacher``: its fixed set holds this many times the tasks GenEnv generates over the run
    (the paper compares 1.8× and 3.3×)."""

    def __post_init__(self) -> None:
        w = "EnvConfig"
        _in_range(w, "seeds_per_epoch", self.seeds_per_epoch, 1, 10000, integer=True)
        _in_range(w, "n_variations", self.n_variations, 1, 64, integer=True)
        _in_range(w, "max_new_tokens", self.max_new_tokens, 8, 8192, integer=True)
        _in_range(w, "temperature", self.temperature, 0.0, 2.0, lo_open=True)
        _in_range(w, "top_p", self.top_p, 0.0, 1.0, lo_open=True)
        _in_range(w, "lr", self.lr, 0.0, 1.0, lo_open=True)
        _in_range(w, "batch_size", self.batch_size, 1, 4096, integer=True)
        _in_range(w, "max_steps", self.max_steps, 0, 10000, integer=True)
        _in_range(w, "kl_coef", self.kl_coef, 0.0, 100.0)
        _in_range(w, "kl_cap", self.kl_cap, 0.0, 100.0, lo_open=True)
        _in_range(w, "stats_window", self.stats_window, 1, 1000, integer=True)
        _in_range(w, "static_variations", self.static_variations, 1, 1000, integer=True)
        _in_range(w, "teacher_data_multiplier", self.teacher_data_multiplier, 0.0, 1000.0, lo_open=True)


@dataclass(frozen=True)
class AgentConfig:
    """The agent π_agent: rollouts and its GRPO update through TRL's GRPOTrainer."""

    num_generations: int = 5
    """G, rollouts per task. G=5 keeps p̂ ∈ {0.4, 0.6} in the default band (G=8 keeps only 0.5)."""
    max_completion_length: int = 32
    """Most tokens of one agent completion."""
    temperature: float = 1.0
    """Sampling temperature of the agent's G rollouts."""
    lr: float = 5e-5
    """Learning rate of the agent's GRPO steps."""
    prompts_per_step: int = 2
    """Tasks per GRPO optimiser step (each with G completions)."""
    kl_beta: float = 0.0
    """GRPO KL coefficient to the base (adapter off); TRL's default 0.0 skips the reference pass."""
    replay_size: int = 2
    """Tasks replayed from the pool (earlier epochs' valid tasks) in each epoch's GRPO batch."""
    base_seeds: int = 1
    """Base seed tasks mixed into each epoch's GRPO batch."""
    success_threshold: float = 1.0
    """Reward at or above which a rollout counts as a success (1.0 for exact-match domains)."""
    loss_type: str = "dapo"
    """The RL objective (TRL's ``loss_type``): dapo (TRL's default: token-level, normalised over the batch), grpo
    (per-sequence length normalisation), dr_grpo (Dr. GRPO: a constant normaliser), bnpo, cispo, sapo, luspo, vespo."""
    importance_sampling_level: str = "token"
    """``token``: one importance ratio per token (GRPO); ``sequence``: one per completion (GSPO)."""
    scale_rewards: str = "group"
    """Advantages divided by the reward std of the ``group`` (GRPO), of the ``batch``, or ``none`` (Dr. GRPO)."""
    epsilon: float = 0.2
    """Lower clipping bound of the importance ratio (1 − ε)."""
    epsilon_high: float = 0.0
    """Upper clipping bound (1 + ε_high); 0 means the same as ``epsilon`` (DAPO recommends 0.28)."""
    num_iterations: int = 1
    """μ: optimiser passes over each batch of rollouts (more learning per rollout; ratios are then clipped)."""
    mask_truncated_completions: bool = False
    """Leave completions cut at ``max_completion_length`` out of the loss (DAPO)."""

    def __post_init__(self) -> None:
        w = "AgentConfig"
        _require(self.loss_type in LOSS_TYPES, w, "loss_type", self.loss_type, f"one of {LOSS_TYPES}")
        _require(self.importance_sampling_level in IMPORTANCE_SAMPLING_LEVELS, w, "importance_sampling_level",
                 self.importance_sampling_level, f"one of {IMPORTANCE_SAMPLING_LEVELS}")
        _require(self.scale_rewards in REWARD_SCALINGS, w, "scale_rewards", self.scale_rewards,
                 f"one of {REWARD_SCALINGS}")
        _in_range(w, "epsilon", self.epsilon, 0.0, 1.0, lo_open=True)
        _in_range(w, "epsilon_high", self.epsilon_high, 0.0, 10.0)
        _in_range(w, "num_iterations", self.num_iterations, 1, 64, integer=True)
        _require(isinstance(self.mask_truncated_completions, bool), w, "mask_truncated_completions",
                 self.mask_truncated_completions, "true or false")
        _in_range(w, "num_generations", self.num_generations, 2, 256, integer=True)
        _in_range(w, "max_completion_length", self.max_completion_length, 4, 32768, integer=True)
        _in_range(w, "temperature", self.temperature, 0.0, 2.0, lo_open=True)
        _in_range(w, "lr", self.lr, 0.0, 1.0, lo_open=True)
        _in_range(w, "prompts_per_step", self.prompts_per_step, 1, 4096, integer=True)
        _in_range(w, "kl_beta", self.kl_beta, 0.0, 10.0)
        _in_range(w, "replay_size", self.replay_size, 0, 100000, integer=True)
        _in_range(w, "base_seeds", self.base_seeds, 0, 100000, integer=True)
        _in_range(w, "success_threshold", self.success_threshold, 0.0, 1.0, lo_open=True)


@dataclass(frozen=True)
class CurriculumConfig:
    """The α-Curriculum Reward, the band filter and the RWR weights."""

    alpha: float = 0.5
    """Target success rate α: the α-Curriculum Reward peaks when the agent solves a task this often."""
    beta: float = 2.0
    """Sharpness of exp(-β (p̂-α)²); the paper never states it, method.md's default is 2."""
    k_min: float = 0.1
    """Band half-width: generations with |p̂-α| > k_min are left out of the env update."""
    shape: str = "gaussian"
    """Env reward shape: ``gaussian`` (the paper's exp(-β(p̂-α)²)), ``learnability`` (p̂(1-p̂)), ``min`` or
    ``azr``."""
    rwr_lambda: float = 1.0
    """Temperature λ of the RWR weights ∝ exp(λ·R_env) (normalised to mean 1)."""

    def __post_init__(self) -> None:
        w = "CurriculumConfig"
        _in_range(w, "alpha", self.alpha, 0.0, 1.0)
        _in_range(w, "beta", self.beta, 0.0, 1000.0)
        _in_range(w, "k_min", self.k_min, 0.0, 1.0)
        _require(self.shape in ENV_REWARD_SHAPES, w, "shape", self.shape, f"one of {ENV_REWARD_SHAPES}")
        _in_range(w, "rwr_lambda", self.rwr_lambda, 0.0, 100.0)


def _task_file_exists(value: str) -> bool:
    """A seed or held-out file given as a path, or as the name of a file in the project's ``data/`` folder, resolved
    as the domain resolves it (:func:`~genenv_lab.domains.base.task_file`)."""
    from .domains.base import task_file

    return Path(task_file(value)).is_file()


@dataclass(frozen=True)
class LoopConfig:
    """The co-evolution loop (Algorithm 1)."""

    epochs: int = 3
    """Co-evolution epochs (Algorithm 1's outer loop)."""
    domain: str = "arith"
    """Task domain the simulator writes for and the agent solves: a shipped one (genenv_lab.domains), a class as
    ``package.module:Class``, or a name an installed package registers (docs/domains.md)."""
    seeds: str = ""
    """A JSONL file of ``{"id", "text"}`` seed tasks instead of the domain's shipped seeds (a path, or the name of a
    file in the project's ``data/`` folder, as ``cpu-dry``'s ``count_easy_seeds.jsonl``)."""
    heldout: str = ""
    """A JSONL file of held-out tasks (never trained on) instead of the domain's shipped held-out set (path)."""
    variant: str = "genenv"
    """``genenv`` (full method) or a baseline of method.md §7, same agent optimiser and budget:
    ``random_env`` (the simulator generates every epoch, never updated), ``static`` (variations generated once
    before training, ``env.static_variations`` per seed), ``filter_only`` (the authors' released behaviour: frozen
    simulator without statistics, one variation per parent, rank filter, pool of the last epoch only),
    ``offline_teacher`` (``env.teacher_model`` writes a fixed set once), ``online_filter`` (static's fixed set,
    each epoch's tasks screened by G agent rollouts and kept only at 0 < p̂ < 1; tasks at p̂ = 1 are used up)."""
    screen_factor: int = 4
    """``online_filter``: at most ``screen_factor × budget`` candidate tasks are screened per epoch (G agent
    rollouts each, no update, counted in ``cumulative/agent_rollouts``). It bounds an epoch's screening cost at
    ``screen_factor × budget × G`` rollouts when informative tasks are rare; 1 screens no more than the budget."""
    reference_tasks: int = 0
    """Counterfactual: tasks written once by the untrained simulator; each epoch's agent is measured on them
    (``extra["p_hat_reference"]``), next to p̂ on the simulator's current tasks."""
    seed: int = 0
    """Seed of everything random in the run (sampling, data order, initialisation of the adapters)."""
    save_adapters: bool = True
    """Save both adapters after every epoch under ``adapters/epoch_NNN/``."""
    report_to: str = "none"
    """Also log each epoch's record to a tracker: ``tensorboard`` (event files under ``<run>/tensorboard/``),
    ``wandb`` or ``trackio`` (genenv_lab/trackers.py)."""
    eval_every: int = 0
    """Evaluate the agent on ``eval_benchmark`` every this many epochs (0: never); the score is logged in
    ``epochs.jsonl`` as ``extra["eval/<benchmark>"]``."""
    eval_benchmark: str = "bamboogle"
    """A benchmark name, or ``domain``: the domain's held-out set (``data/<domain>_heldout.jsonl``), greedy."""
    eval_category: str = ""
    """Benchmark category (empty: all covered ones)."""
    eval_limit: int = 20
    """Items per category in each evaluation (0: all)."""
    eval_data_dir: str = ""
    """Benchmark data folder (empty: ``$GENENV_LAB_DATA`` or the cache; see genenv_lab.evaluation)."""
    eval_max_new_tokens: int = 64
    """Generation budget per item of the held-out evaluation (per model step, for BFCL multi-turn)."""
    eval_protocol: str = "per-turn"
    """BFCL multi-turn categories only: ``per-turn`` (each turn from the answer key's state, the paper's reading;
    the share of turns right) or ``official`` (BFCL's: the model's own history, an entry right only if every turn
    is). See genenv_lab/evaluation/bfcl_multi_turn.py."""

    def __post_init__(self) -> None:
        w = "LoopConfig"
        _require(self.eval_protocol in ("official", "per-turn"), w, "eval_protocol", self.eval_protocol,
                 "'official' or 'per-turn'")
        _in_range(w, "eval_every", self.eval_every, 0, 100000, integer=True)
        _in_range(w, "eval_limit", self.eval_limit, 0, 10**7, integer=True)
        _in_range(w, "eval_max_new_tokens", self.eval_max_new_tokens, 1, 32768, integer=True)
        if self.eval_every and self.eval_benchmark != "domain":
            from .evaluation.runner import BENCHMARKS, get_benchmark

            try:
                get_benchmark(self.eval_benchmark)
            except ValueError:
                _require(False, w, "eval_benchmark", self.eval_benchmark,
                         f"'domain' (the domain's held-out set) or one of {sorted(BENCHMARKS)}")
        _require(not self.eval_category or self.eval_benchmark != "domain", w, "eval_category", self.eval_category,
                 "empty with eval_benchmark='domain' (the domain's held-out set has no categories)")
        _in_range(w, "epochs", self.epochs, 1, 100000, integer=True)
        _require(isinstance(self.domain, str) and self.domain != "", w, "domain", self.domain, "a domain name")
        for name in ("seeds", "heldout"):
            value = getattr(self, name)
            _require(isinstance(value, str) and (not value or _task_file_exists(value)), w, name, value,
                     "the path of an existing JSONL file of {\"id\", \"text\"} tasks, the name of one in the "
                     "project's data/ folder (e.g. count_easy_seeds.jsonl), or empty: the domain's own")
        _require(self.variant in VARIANTS, w, "variant", self.variant, f"one of {VARIANTS}")
        _require(self.report_to in TRACKERS, w, "report_to", self.report_to, f"one of {TRACKERS}")
        _in_range(w, "seed", self.seed, 0, MAX_SEED, integer=True)
        _in_range(w, "reference_tasks", self.reference_tasks, 0, 100000, integer=True)
        _in_range(w, "screen_factor", self.screen_factor, 1, 1000, integer=True)


@dataclass(frozen=True)
class RunConfig:
    """Everything a run needs; written resolved to ``config.json``."""

    preset: str = "custom"
    model: ModelConfig = field(default_factory=ModelConfig)
    env: EnvConfig = field(default_factory=EnvConfig)
    agent: AgentConfig = field(default_factory=AgentConfig)
    curriculum: CurriculumConfig = field(default_factory=CurriculumConfig)
    loop: LoopConfig = field(default_factory=LoopConfig)

    def __post_init__(self) -> None:
        from .domains import domain_class  # late import: domains import config-free modules only

        try:
            domain_class(self.loop.domain)
        except ValueError as exc:
            raise ConfigError(f"LoopConfig.domain={self.loop.domain!r} is invalid: {exc}") from None
        # vLLM cannot serve the tiny models (head size 16); Unsloth loads them as any local directory
        _require(not (self.model.name_or_path in ("tiny", "tiny-world") and self.model.engine == "vllm"),
                 "ModelConfig", "engine", self.model.engine,
                 f"'hf' or 'unsloth' with the locally built model {self.model.name_or_path!r}")
        if self.model.name_or_path == "tiny-world":
            from .models.world import world_class

            try:
                world_class(self.loop.domain)
            except ValueError as exc:
                raise ConfigError(f"ModelConfig.name_or_path='tiny-world' is invalid here: {exc}") from None
        _require(self.loop.variant != "offline_teacher" or bool(self.env.teacher_model), "EnvConfig",
                 "teacher_model", self.env.teacher_model, "a model id or directory when loop.variant is "
                 "'offline_teacher'")

    @property
    def budget(self) -> int:
        """Tasks the simulator generates per epoch (seeds_per_epoch × n_variations): every variant's per-epoch
        number of fresh training tasks."""
        return self.env.seeds_per_epoch * self.env.n_variations

    @property
    def is_gpu(self) -> bool:
        return self.model.engine in ("unsloth", "vllm")

    def warnings(self) -> list[str]:
        """Cross-field checks that do not make the configuration invalid but probably not what was meant (the run
        logs them as events and Python warnings): the band's resolution for G (``curriculum.band_warning``)."""
        from .curriculum import band_warning

        found = band_warning(self.agent.num_generations, self.curriculum.alpha, self.curriculum.k_min)
        return [found] if found else []

    @property
    def variant(self) -> Variant:
        """What ``loop.variant`` changes in the loop (:data:`VARIANT_TABLE`)."""
        return VARIANT_TABLE[self.loop.variant]

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "RunConfig":
        """Rebuild a config from ``to_dict`` output (e.g. a run's ``config.json``); unknown keys are errors."""
        parts = {"model": ModelConfig, "env": EnvConfig, "agent": AgentConfig,
                 "curriculum": CurriculumConfig, "loop": LoopConfig}
        kwargs: dict[str, Any] = {}
        for key, value in data.items():
            if key == "preset":
                if not isinstance(value, str) or len(value) > 100:
                    raise ConfigError(f"preset={json.dumps(value, default=str)[:60]} is invalid: accepted a "
                                      "preset's name (a string of at most 100 characters)")
                kwargs[key] = value
            elif key in parts:
                kwargs[key] = _build(parts[key], value)
            else:
                raise ConfigError(f"unknown config section {key!r}; accepted: preset, {', '.join(parts)}")
        return cls(**kwargs)

    def replace(self, **sections: Mapping[str, Any]) -> "RunConfig":
        """A copy with some fields of some sections changed, validated again: ``cfg.replace(loop={"epochs": 5})``."""
        kwargs: dict[str, Any] = {}
        for name, changes in sections.items():
            if name == "preset":
                kwargs[name] = changes
                continue
            current = getattr(self, name, None)
            if current is None or not dataclasses.is_dataclass(current):
                raise ConfigError(f"unknown config section {name!r}")
            kwargs[name] = _replace(current, changes)
        return dataclasses.replace(self, **kwargs)


def _build(cls: type, values: Mapping[str, Any]) -> Any:
    if not isinstance(values, Mapping):
        raise ConfigError(f"the {cls.__name__} section is {type(values).__name__}, not a mapping of its fields")
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = set(values) - known
    if unknown:
        raise ConfigError(f"{cls.__name__} has no field(s) {sorted(unknown)}; accepted: {sorted(known)}")
    values = {k: tuple(v) if isinstance(v, list) else v for k, v in values.items()}
    for name, value in values.items():
        _check_type(cls, name, value)
    return cls(**values)


def _check_type(cls: type, name: str, value: Any) -> None:
    """A field's value has the field's type, however it arrived (a flag, ``--set``, a config file, a run's
    config.json, ``replace``): ``"false"`` is no boolean, ``True`` no number, a string no list of module names. The
    ranges are the dataclasses' own checks."""
    import typing

    want = typing.get_type_hints(cls)[name]
    if want is bool:
        ok = isinstance(value, bool)
    elif want is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif want is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif want is str:
        ok = isinstance(value, str)
    elif typing.get_origin(want) is tuple:
        ok = isinstance(value, tuple) and all(isinstance(v, str) for v in value)
    else:
        ok = True
    if not ok:
        kind = {bool: "true or false", int: "a whole number", float: "a number", str: "a string"}.get(
            want, "a list of strings")
        raise ConfigError(f"{cls.__name__}.{name}={json.dumps(value, default=str)[:60]} is invalid: accepted "
                          f"{kind}")


def _replace(obj: Any, changes: Mapping[str, Any]) -> Any:
    merged = {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
    known = set(merged)
    unknown = set(changes) - known
    if unknown:
        raise ConfigError(f"{type(obj).__name__} has no field(s) {sorted(unknown)}; accepted: {sorted(known)}")
    merged.update(changes)
    return _build(type(obj), merged)


# ----------------------------------------------------------------------------------------------------------- presets

def _tiny() -> RunConfig:
    # A random agent solves nothing, so the α band would keep no generation; tiny widens the band (k_min=0.5)
    # so that the env update runs and the machinery is exercised. Numbers from this preset mean nothing.
    return RunConfig(
        preset="tiny",
        model=ModelConfig(name_or_path="tiny", lora_r=4, lora_alpha=8, max_seq_length=1024),
        env=EnvConfig(seeds_per_epoch=2, n_variations=3, max_new_tokens=32, lr=5e-3, batch_size=4, max_steps=2,
                      kl_cap=5.0),
        agent=AgentConfig(num_generations=4, max_completion_length=12, lr=1e-3, prompts_per_step=2,
                          replay_size=1, base_seeds=1),
        curriculum=CurriculumConfig(k_min=0.5),
        loop=LoopConfig(epochs=3),
    )


def _cpu_demo() -> RunConfig:
    # The world where the curriculum pays: a tiny model pre-trained once on the counting world, whose steps must be
    # learnt in order (docs/curriculum_cpu.md, "A world where the curriculum pays").
    return RunConfig(
        preset="cpu-demo",
        model=ModelConfig(name_or_path="tiny-world", lora_r=8, lora_alpha=16, max_seq_length=256),
        env=EnvConfig(seeds_per_epoch=10, n_variations=4, max_new_tokens=10, temperature=0.6, lr=1e-3,
                      batch_size=16, max_steps=4, kl_coef=1.0, kl_cap=0.4),
        agent=AgentConfig(num_generations=8, max_completion_length=64, temperature=1.0, lr=1e-3,
                          prompts_per_step=8, replay_size=4, base_seeds=4),
        curriculum=CurriculumConfig(alpha=0.5, k_min=0.125),
        loop=LoopConfig(epochs=16, domain="count", reference_tasks=32, eval_every=1, eval_benchmark="domain",
                        eval_limit=0),
    )


def _cpu_dry() -> RunConfig:
    # The run-dry world (docs/curriculum_cpu.md, "The run-dry world"): cpu-demo's counting world and model with its
    # seeds at the easy end (counts to 3-8, which the untrained agent mostly solves), so that the untrained
    # simulator's fixed set is soon solved while the held-out counts reach 24: a baseline that keeps serving it runs
    # dry, and only a simulator that climbs past the seeds keeps the agent at its frontier.
    return _cpu_demo().replace(preset="cpu-dry", model={"world_anchor": "task"},
                               loop={"seeds": "count_easy_seeds.jsonl"})


def _cpu_times() -> RunConfig:
    # The times-tables world (docs/curriculum_cpu.md, rounds one to four): the curriculum calibrates there, but a
    # fixed set teaches the agent as much, since one shared slip is unlearnt on any task.
    return _cpu_demo().replace(preset="cpu-times", env={"temperature": 1.0},
                               agent={"max_completion_length": 6, "lr": 1e-4}, loop={"domain": "times"})


def _cpu_smollm2() -> RunConfig:
    # SmolLM2-135M-Instruct on times99, a one-digit number times one up to 99 (docs/curriculum_cpu.md, "SmolLM2"):
    # the times tables up to 15 were too easy for it (p̂ 0.88 → 0.99 on the untrained simulator's tasks), times99's
    # difficulty runs well past what it solves, and its seeds stay at the easy end. The simulator's tokens are held
    # to the task's alphabet and stop where the task ends (TimesDomain.env_alphabet, env_stop), sampled at
    # temperature 0.6 (~80 % valid on the times tables before any training; 0.31 at 1.0 without the constraint).
    # Epochs: what encoding each prompt once (docs/prefix_sharing.md) lets a 3-variant, 3-seed comparison fit in an
    # hour on 2 cores (3 epochs before it).
    return RunConfig(
        preset="cpu-smollm2",
        model=ModelConfig(name_or_path="smollm2-135m", lora_r=8, lora_alpha=16, max_seq_length=512),
        env=EnvConfig(seeds_per_epoch=6, n_variations=4, max_new_tokens=10, temperature=0.6, lr=2e-4,
                      batch_size=8, max_steps=2),
        agent=AgentConfig(num_generations=8, max_completion_length=6, temperature=1.0, lr=1e-4,
                          prompts_per_step=8, replay_size=2, base_seeds=2),
        curriculum=CurriculumConfig(alpha=0.5, k_min=0.125),
        loop=LoopConfig(epochs=8, domain="times99", reference_tasks=16, eval_every=1, eval_benchmark="domain",
                        eval_limit=0),
    )


def _gpu(preset: str, model: str, *, four_bit: bool, seeds: int, variations: int, g: int, prompts: int,
         completion: int, mem: float) -> RunConfig:
    return RunConfig(
        preset=preset,
        model=ModelConfig(name_or_path=model, engine="unsloth", dtype="bfloat16", lora_r=16, lora_alpha=32,
                          load_in_4bit=four_bit, max_seq_length=1024, gpu_memory_utilization=mem),
        env=EnvConfig(seeds_per_epoch=seeds, n_variations=variations, max_new_tokens=128, lr=5e-5,
                      batch_size=16, max_steps=8),
        agent=AgentConfig(num_generations=g, max_completion_length=completion, lr=5e-6,
                          prompts_per_step=prompts, replay_size=8, base_seeds=4),
        loop=LoopConfig(epochs=6),
    )


PRESETS = {
    "tiny": _tiny,
    "cpu-demo": _cpu_demo,
    "cpu-dry": _cpu_dry,
    "cpu-times": _cpu_times,
    "cpu-smollm2": _cpu_smollm2,
    # GPU presets: Unsloth (4-bit or 16-bit base, both LoRA adapters, vLLM fast inference); see docs/gpu.md.
    "colab-t4": lambda: _gpu("colab-t4", "Qwen/Qwen2.5-0.5B-Instruct", four_bit=True, seeds=16, variations=4,
                             g=5, prompts=4, completion=256, mem=0.4),
    "colab-l4": lambda: _gpu("colab-l4", "Qwen/Qwen2.5-1.5B-Instruct", four_bit=True, seeds=32, variations=4,
                             g=10, prompts=4, completion=384, mem=0.45),
    "a100": lambda: _gpu("a100", "Qwen/Qwen2.5-3B-Instruct", four_bit=False, seeds=64, variations=4,
                         g=10, prompts=8, completion=512, mem=0.5),
}
CPU_PRESETS = ("tiny", "cpu-demo", "cpu-dry", "cpu-times", "cpu-smollm2")


def load_config(path: str | Path) -> RunConfig:
    """A :class:`RunConfig` from a JSON or YAML file holding config.json's sections (a run's ``config.json``, a file
    for ``run --config``), read as an untrusted file (a regular file of at most 4 MB); one ConfigError otherwise."""
    from .safe_io import MB, loads_json, read_regular

    path = Path(path)
    yaml_file = path.suffix.lower() in (".yaml", ".yml")
    try:
        raw = read_regular(path, 4 * MB, "config file")
        if not yaml_file:
            data = loads_json(raw)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path} cannot be read as a configuration ({exc})") from None
    if yaml_file:
        try:
            import yaml
        except ImportError:
            raise ConfigError(f"{path}: reading YAML needs PyYAML (pip install pyyaml), or give JSON") from None
        try:
            data = _load_yaml(yaml, raw)
        except yaml.YAMLError as exc:
            raise ConfigError(f"{path} cannot be read as YAML ({str(exc).splitlines()[0]})") from None
        except ValueError as exc:
            raise ConfigError(f"{path}: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path} is not a configuration (a mapping of sections: model, env, agent, curriculum, "
                          "loop)")
    try:
        return RunConfig.from_dict(data)
    except (ConfigError, TypeError) as exc:
        raise ConfigError(f"{path}: {exc}") from None


def _load_yaml(yaml, raw):
    """YAML read as a configuration: PyYAML's safe loader, with no anchors or aliases (a 1 kB file of nested aliases
    expands to gigabytes) and numbers read as YAML 1.2 and JSON read them (``010`` is 10, not octal 8; ``1:20`` is a
    string, not 80; ``5e-5`` is a number)."""
    text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    if any(isinstance(event, yaml.AliasEvent) for event in yaml.parse(text, Loader=yaml.SafeLoader)):
        raise ValueError("YAML anchors and aliases (*name) are not accepted in a configuration; write the values out")

    class Loader(yaml.SafeLoader):
        pass

    Loader.yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers if tag not in ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
    Loader.add_implicit_resolver("tag:yaml.org,2002:int", re.compile(r"^[-+]?[0-9]+$"), list("-+0123456789"))
    Loader.add_implicit_resolver(
        "tag:yaml.org,2002:float",
        re.compile(r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)"
                   r"|\.(?:nan|NaN|NAN))$"), list("-+.0123456789"))
    Loader.add_constructor("tag:yaml.org,2002:int", lambda loader, node: int(loader.construct_scalar(node)))
    return yaml.load(text, Loader=Loader)  # noqa: S506 - a SafeLoader subclass


def for_domain(cfg: RunConfig, domain: str) -> RunConfig:
    """``cfg`` switched to ``domain``, with the domain's recommended settings (a field only grows, e.g. token
    budgets, or takes the domain's success threshold). A per-epoch held-out score on the domain's own set
    (``eval_benchmark="domain"``) is turned off when the new domain ships none (``tools``, ``qa``); choose a
    benchmark with ``--eval-every N --eval-benchmark NAME`` instead."""
    from .domains import domain_class

    try:
        cls = domain_class(domain)
    except ValueError as exc:
        raise ConfigError(f"LoopConfig.domain={domain!r} is invalid: {exc}") from None
    changes: dict[str, dict[str, Any]] = {"loop": {"domain": domain}}
    if cfg.loop.eval_every and cfg.loop.eval_benchmark == "domain" and not cfg.loop.heldout \
            and not cls().heldout_tasks():
        changes["loop"]["eval_every"] = 0
    for section, fields in cls.recommended.items():
        current = getattr(cfg, section)
        for name, value in fields.items():
            old = getattr(current, name)
            grow = name.startswith("max_") and isinstance(old, int)
            changes.setdefault(section, {})[name] = max(old, value) if grow else value
    return cfg.replace(**changes)


def preset(name: str) -> RunConfig:
    """The preset called ``name``: one of :data:`PRESETS`."""
    if name not in PRESETS:
        raise ConfigError(f"unknown preset {name!r}; choose one of {sorted(PRESETS)}")
    return PRESETS[name]()


def notebook_preset(environ: Mapping[str, str] | None = None) -> str:
    """The preset a notebook runs: ``$GENENV_LAB_PRESET`` when set; else, with a CUDA GPU visible, a GPU preset
    sized by its memory (``colab-t4`` below 20 GiB, ``colab-l4`` below 40 GiB, ``a100`` above) when the Unsloth
    stack is installed, or ``cpu-smollm2`` (the ``hf`` engine then uses the GPU) when it is not; else ``cpu-demo``.

    >>> notebook_preset({"GENENV_LAB_PRESET": "tiny"})
    'tiny'
    """
    import importlib.util
    import os

    environ = os.environ if environ is None else environ
    chosen = environ.get("GENENV_LAB_PRESET", "").strip()
    if chosen:
        preset(chosen)  # an unknown name fails here, listing the presets
        return chosen
    import torch

    if not torch.cuda.is_available():
        return "cpu-demo"
    if importlib.util.find_spec("unsloth") is None:
        return "cpu-smollm2"
    gib = torch.cuda.get_device_properties(0).total_memory / 2**30
    return "colab-t4" if gib < 20 else "colab-l4" if gib < 40 else "a100"


# ----------------------------------------------------------------------------------------------- fields, for the CLI

SECTIONS = ("model", "env", "agent", "curriculum", "loop")


def field_docs(cls: type) -> dict[str, str]:
    """The attribute docstrings of a config dataclass (the string literal under each field), by field name."""
    import ast
    import inspect
    import textwrap

    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError):  # installed without sources: the flags just have no help text
        return {}
    body = tree.body[0].body
    docs = {}
    for node, nxt in zip(body, body[1:]):
        if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and isinstance(nxt, ast.Expr)
                and isinstance(nxt.value, ast.Constant) and isinstance(nxt.value.value, str)):
            docs[node.target.id] = " ".join(nxt.value.value.split())
    return docs


def field_choices() -> dict[tuple[str, str], tuple[str, ...]]:
    """The fields whose values come from a fixed list, with that list (the CLI shows it as choices; a domain is
    not one: it may be a class from outside the package)."""
    return {("model", "engine"): ENGINES, ("model", "dtype"): DTYPES, ("curriculum", "shape"): ENV_REWARD_SHAPES,
            ("agent", "loss_type"): LOSS_TYPES, ("agent", "importance_sampling_level"): IMPORTANCE_SAMPLING_LEVELS,
            ("agent", "scale_rewards"): REWARD_SCALINGS, ("loop", "variant"): VARIANTS,
            ("loop", "report_to"): TRACKERS}


def config_fields() -> list[tuple[str, str, type, str]]:
    """Every settable field as ``(section, field, type, docstring)``, in declaration order."""
    import typing

    out = []
    hints = typing.get_type_hints(RunConfig)
    for section in SECTIONS:
        cls = hints[section]
        types = typing.get_type_hints(cls)
        docs = field_docs(cls)
        for f in dataclasses.fields(cls):
            out.append((section, f.name, types[f.name], docs.get(f.name, "")))
    return out
