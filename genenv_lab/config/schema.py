"""The configuration's schema: one frozen dataclass per component, each field typed, documented and validated at
construction (:class:`ConfigError` naming the field, the value and what is accepted), as TRL's ``GRPOConfig`` is:
each field's bounds and the checks between the config's own fields only. Names checked against a registry (a
domain, a world recipe, a benchmark, a task file) and a domain's recommended settings are resolved at the edge
(:mod:`genenv_lab.coevolution.resolve`), so this package imports no domain, model or engine."""


from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any, Mapping

from genenv_lab.core.curriculum import ENV_REWARD_SHAPES
from genenv_lab.config.checks import ConfigError, bounded, build, check_bounds, replace_fields, require
from genenv_lab.config.spellings import old_layout_error
from genenv_lab.config.variants import VARIANT_TABLE, VARIANTS, Variant

TRACKERS = ("none", "tensorboard", "wandb", "trackio")
"""``loop.report_to``'s choices; :mod:`genenv_lab.rundir.trackers` opens each."""


ENGINES = ("hf", "unsloth", "vllm")
LOSS_TYPES = ("dapo", "grpo", "dr_grpo", "bnpo", "cispo", "sapo", "luspo", "vespo")
"""TRL's GRPO loss formulations (``GRPOConfig.loss_type``; TRL's default ``dapo`` first)."""
IMPORTANCE_SAMPLING_LEVELS = ("token", "sequence")
AGENT_TRAINERS = ("grpo", "high_entropy")
"""The agent's trainers by name: genenv_lab/trainers/agent.py holds them (``TRAINERS``; a test keeps the two equal)."""
REWARD_SCALINGS = ("group", "batch", "none")


DTYPES = ("float32", "bfloat16", "float16", "auto")
EVAL_PROTOCOLS = ("per-turn", "official")
"""BFCL multi-turn's protocols of a run's held-out score (genenv_lab/evaluation/bfcl_multi_turn.py)."""
WORLD_ANCHORS = ("newest", "seed", "task")
ENV_PARENTS = ("seeds_and_pool", "band")
"""Where the simulator's parents come from (``EnvConfig.parents``)."""
MAX_SEED = 2**32 - 1  # numpy and torch take seeds below 2**32
TASK_FILE = ("the path of an existing JSONL file of {\"id\", \"text\"} tasks, the name of one in the project's "
             "data/ folder (e.g. count_easy_seeds.jsonl), or empty: the domain's own")
"""What ``loop.seeds`` and ``loop.heldout`` accept (the file's existence is checked by coevolution.resolve)."""


@dataclass(frozen=True)
class ModelConfig:
    """The base model and the two LoRA adapters (``agent`` and ``env``) on it."""

    name_or_path: str = "tiny"
    """``tiny`` (random tiny Qwen2 built locally), ``smollm2-135m`` (packaged GGUF), a hub id or a local directory."""
    engine: str = "hf"
    """``hf`` (transformers + peft + TRL, CPU or GPU), ``unsloth`` or ``vllm`` (GPU)."""
    dtype: str = "float32"
    """Floating-point type of the base model's weights (``auto``: what the checkpoint says)."""
    lora_r: int = bounded(8, 1, 1024, integer=True)
    """LoRA rank of each adapter."""
    lora_alpha: int = bounded(16, 1, 4096, integer=True)
    """LoRA scaling α (the update is scaled by lora_alpha / lora_r)."""
    lora_dropout: float = bounded(0.0, 0.0, 0.9)
    """Dropout on the LoRA input."""
    target_modules: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
    """Module names that get LoRA (comma-separated on the command line)."""
    load_in_4bit: bool = False
    """Load the base in 4 bits (bitsandbytes / Unsloth; GPU only)."""
    max_seq_length: int = bounded(512, 64, 131072, integer=True)
    """Longest prompt + completion, in tokens."""
    gpu_memory_utilization: float = bounded(0.5, 0.05, 0.95)
    """Share of GPU memory vLLM may take (GPU engines only)."""
    shared_prefix: bool = True
    """``hf`` engine: encode each distinct prompt once, in generation (a prompt's n samples share its cache) and in
    the GRPO update's log-prob forwards (a task's G completions run against one encoding of its prompt); same
    numbers as the full rows, faster (docs/prefix_sharing.md). False: every row encodes its prompt (TRL's path).
    ``epochs.jsonl`` records the path taken as ``extra.agent/prefix_path``."""
    separate_adapters: bool = True
    """True: two LoRA adapters (``agent``, ``env``). False: one shared adapter plays both roles (an ablation, and
    the single-adapter reference of the memory benchmark)."""
    tiny_warmup_steps: int = bounded(300, 0, 100000, integer=True)
    """``tiny`` only: steps of format warm-up on the domain's seed texts, so a random model writes parseable tasks."""
    @property
    def targets_chosen(self) -> bool:
        """Whether ``target_modules`` is a list of the user's own (then every name must be a linear layer of the
        model) rather than the default (whose names the model lacks are left out)."""
        return tuple(self.target_modules) != ModelConfig.__dataclass_fields__["target_modules"].default

    def __post_init__(self) -> None:
        check_bounds(self)  # the ranges declared on the fields (bounded(...))
        w = "ModelConfig"
        require(isinstance(self.name_or_path, str) and self.name_or_path.strip() != "", w, "name_or_path",
                 self.name_or_path,
                 "'tiny', 'tiny-world', 'smollm2-135m', a Hugging Face model id or a local directory")
        require(self.engine in ENGINES, w, "engine", self.engine, f"one of {ENGINES}")
        require(self.dtype in DTYPES, w, "dtype", self.dtype, f"one of {DTYPES}")
        require(isinstance(self.shared_prefix, bool), w, "shared_prefix", self.shared_prefix, "true or false")
        require(len(self.target_modules) > 0, w, "target_modules", self.target_modules, "at least one module name")


@dataclass(frozen=True)
class WorldConfig:
    """The world model (``model.name_or_path = "tiny-world"`` only): a tiny model built for the domain's world and
    pre-trained on it once (genenv_lab.models.world), cached by these settings."""

    steps: int = bounded(450, 1, 10**6, integer=True)
    """Pre-training steps of the agent role on the domain's world."""
    env_steps: int = bounded(200, 0, 10**6, integer=True)
    """Then rounds of one simulator batch and one agent batch."""
    hidden_size: int = bounded(128, 16, 4096, integer=True)
    """Hidden size of the model built for the world."""
    layers: int = bounded(3, 1, 64, integer=True)
    """Number of its decoder layers."""
    lr: float = bounded(2e-3, 1e-5, 1e-1)
    """The builder's learning rate: the agent role's first phase runs at it, the rounds with the simulator at half
    of it."""
    anchor: str = "newest"
    """Where the world's teacher starts the simulator's next task in the pre-training corpus: ``newest`` (the newest
    recent task's level; the seed's when the context has none), ``seed`` (always the seed task's level, the hint
    only moving it) or ``task`` (as ``seed``, keeping the rest of the seed task where the world can: a count keeps
    its start), genenv_lab/domains/worlds.py."""
    seed: int = bounded(0, 0, MAX_SEED, integer=True)
    """Seed of the world corpus and the model's initialisation (one model serves every loop seed, so a comparison's
    seeds differ in the loop only)."""

    def __post_init__(self) -> None:
        check_bounds(self)  # the ranges declared on the fields (bounded(...))
        w = "WorldConfig"
        require(self.hidden_size % 4 == 0, w, "hidden_size", self.hidden_size, "a multiple of 4 (4 attention heads)")
        require(self.anchor in WORLD_ANCHORS, w, "anchor", self.anchor, f"one of {WORLD_ANCHORS}")


@dataclass(frozen=True)
class EnvConfig:
    """The environment simulator π_env: generation and its RWR update."""

    seeds_per_epoch: int = bounded(4, 1, 10000, integer=True)
    """Seed tasks the simulator varies each epoch."""
    n_variations: int = bounded(4, 1, 64, integer=True)
    """Variations generated per seed (method.md default 4)."""
    max_new_tokens: int = bounded(64, 8, 8192, integer=True)
    """Most tokens of one simulator generation."""
    temperature: float = bounded(1.0, 0.0, 2.0, lo_open=True)
    """Sampling temperature of the simulator."""
    top_p: float = bounded(1.0, 0.0, 1.0, lo_open=True)
    """Nucleus sampling of the simulator (1.0: off)."""
    lr: float = bounded(1e-4, 0.0, 1.0, lo_open=True)
    """RWR learning rate of the ``env`` adapter (LoRA on a small model needs more than the paper's 5e-7)."""
    batch_size: int = bounded(8, 1, 4096, integer=True)
    """Examples per RWR optimiser step."""
    max_steps: int = bounded(4, 0, 10000, integer=True)
    """Most optimiser steps of the env update per epoch (fewer when the KL cap is reached)."""
    kl_coef: float = bounded(0.05, 0.0, 100.0)
    """Weight of the KL penalty to the initial simulator (the base with the env adapter off)."""
    kl_cap: float = bounded(0.5, 0.0, 100.0, lo_open=True)
    """Per-token KL to the initial simulator (nats) at which the epoch's env steps stop."""
    stats_window: int = bounded(3, 1, 1000, integer=True)
    """Epochs of a lineage's success statistics shown in the env context."""
    parents: str = "seeds_and_pool"
    """The tasks the simulator varies each epoch: ``seeds_and_pool`` (method.md: base seeds, every other slot a
    random pool task) or ``band`` (a labelled extension: every slot a task measured in the last ``stats_window``
    epochs in the band, else nearest α; ``seeds_and_pool`` until one is measured), coevolution/simulator.py."""
    niche_gamma: float = bounded(0.0, 0.0, 8.0)
    """A labelled extension beyond the paper (0: off, the paper's RWR): each in-band generation's RWR weight is
    divided by (1 + n)^γ, n = the simulator's valid generations so far in the run in the same niche (the domain's
    ``niche``: counting's (start, end), else the canonical question), so that the update stops sharpening the
    simulator onto the kinds of task it already writes most (genenv_lab/core/niches.py; docs/method.md, "Keeping the
    simulator's tasks varied"). Try 0.5–1; variant ``genenv_placebo`` shuffles the multipliers across niches."""
    static_variations: int = bounded(5, 1, 1000, integer=True)
    """``static`` baseline: variations per base seed generated once before training (the paper: 5)."""
    teacher_model: str = ""
    """``offline_teacher`` baseline: the stronger model that writes the variations once (hub id or directory)."""
    teacher_data_multiplier: float = bounded(1.0, 0.0, 1000.0, lo_open=True)
    """``offline_teacher``: its fixed set holds this many times the tasks GenEnv generates over the run
    (the paper compares 1.8× and 3.3×)."""

    def __post_init__(self) -> None:
        check_bounds(self)  # the ranges declared on the fields (bounded(...))
        require(self.parents in ENV_PARENTS, "EnvConfig", "parents", self.parents, f"one of {ENV_PARENTS}")


@dataclass(frozen=True)
class AgentConfig:
    """The agent π_agent: rollouts and its GRPO update through TRL's GRPOTrainer."""

    num_generations: int = bounded(5, 2, 256, integer=True)
    """G, rollouts per task. G=5 keeps p̂ ∈ {0.4, 0.6} in the default band (G=8 keeps only 0.5)."""
    max_completion_length: int = bounded(32, 4, 32768, integer=True)
    """Most tokens of one agent completion."""
    temperature: float = bounded(1.0, 0.0, 2.0, lo_open=True)
    """Sampling temperature of the agent's G rollouts."""
    lr: float = bounded(5e-5, 0.0, 1.0, lo_open=True)
    """Learning rate of the agent's GRPO steps."""
    prompts_per_step: int = bounded(2, 1, 4096, integer=True)
    """Tasks per GRPO optimiser step (each with G completions)."""
    kl_beta: float = bounded(0.0, 0.0, 10.0)
    """GRPO KL coefficient to the base (adapter off); TRL's default 0.0 skips the reference pass."""
    replay_size: int = bounded(2, 0, 100000, integer=True)
    """Tasks replayed from the pool (earlier epochs' valid tasks) in each epoch's GRPO batch."""
    base_seeds: int = bounded(1, 0, 100000, integer=True)
    """Base seed tasks mixed into each epoch's GRPO batch."""
    success_threshold: float = bounded(1.0, 0.0, 1.0, lo_open=True)
    """Reward at or above which a rollout counts as a success (1.0 for exact-match domains)."""
    loss_type: str = "dapo"
    """The RL objective (TRL's ``loss_type``): dapo (TRL's default: token-level, normalised over the batch), grpo
    (per-sequence length normalisation), dr_grpo (Dr. GRPO: a constant normaliser), bnpo, cispo, sapo, luspo, vespo."""
    importance_sampling_level: str = "token"
    """``token``: one importance ratio per token (GRPO); ``sequence``: one per completion (GSPO)."""
    scale_rewards: str = "group"
    """Advantages divided by the reward std of the ``group`` (GRPO), of the ``batch``, or ``none`` (Dr. GRPO)."""
    epsilon: float = bounded(0.2, 0.0, 1.0, lo_open=True)
    """Lower clipping bound of the importance ratio (1 − ε)."""
    epsilon_high: float = bounded(0.0, 0.0, 10.0)
    """Upper clipping bound (1 + ε_high); 0 means the same as ``epsilon`` (DAPO recommends 0.28)."""
    num_iterations: int = bounded(1, 1, 64, integer=True)
    """μ: optimiser passes over each batch of rollouts (more learning per rollout; ratios are then clipped)."""
    mask_truncated_completions: bool = False
    """Leave completions cut at ``max_completion_length`` out of the loss (DAPO)."""
    trainer: str = "grpo"
    """The agent's trainer (genenv_lab/trainers/agent.py): ``grpo`` (TRL's GRPOTrainer with the objective above) or
    ``high_entropy`` (the same, its loss on the 20 % highest-entropy tokens of each batch)."""

    def __post_init__(self) -> None:
        check_bounds(self)  # the ranges declared on the fields (bounded(...))
        w = "AgentConfig"
        require(self.loss_type in LOSS_TYPES, w, "loss_type", self.loss_type, f"one of {LOSS_TYPES}")
        require(self.importance_sampling_level in IMPORTANCE_SAMPLING_LEVELS, w, "importance_sampling_level",
                 self.importance_sampling_level, f"one of {IMPORTANCE_SAMPLING_LEVELS}")
        require(self.scale_rewards in REWARD_SCALINGS, w, "scale_rewards", self.scale_rewards,
                 f"one of {REWARD_SCALINGS}")
        require(isinstance(self.mask_truncated_completions, bool), w, "mask_truncated_completions",
                 self.mask_truncated_completions, "true or false")
        require(self.trainer in AGENT_TRAINERS, w, "trainer", self.trainer,
                f"one of {AGENT_TRAINERS} (a new trainer goes into genenv_lab/trainers/agent.py and AGENT_TRAINERS)")


@dataclass(frozen=True)
class CurriculumConfig:
    """The α-Curriculum Reward, the band filter and the RWR weights."""

    alpha: float = bounded(0.5, 0.0, 1.0)
    """Target success rate α: the α-Curriculum Reward peaks when the agent solves a task this often."""
    beta: float = bounded(2.0, 0.0, 1000.0)
    """Sharpness of exp(-β (p̂-α)²); the paper never states it, method.md's default is 2."""
    k_min: float = bounded(0.1, 0.0, 1.0)
    """Band half-width: generations with |p̂-α| > k_min are left out of the env update."""
    shape: str = "gaussian"
    """Env reward shape: ``gaussian`` (the paper's exp(-β(p̂-α)²)), ``learnability`` (p̂(1-p̂)), ``min`` or
    ``azr``."""
    rwr_lambda: float = bounded(1.0, 0.0, 100.0)
    """Temperature λ of the RWR weights ∝ exp(λ·R_env) (normalised to mean 1)."""

    def __post_init__(self) -> None:
        check_bounds(self)  # the ranges declared on the fields (bounded(...))
        w = "CurriculumConfig"
        require(self.shape in ENV_REWARD_SHAPES, w, "shape", self.shape, f"one of {ENV_REWARD_SHAPES}")



@dataclass(frozen=True)
class LoopConfig:
    """The co-evolution loop (Algorithm 1)."""

    epochs: int = bounded(3, 1, 100000, integer=True)
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
    screen_factor: int = bounded(4, 1, 1000, integer=True)
    """``online_filter``: at most ``screen_factor × budget`` candidate tasks are screened per epoch (G agent
    rollouts each, no update, counted in ``cumulative/agent_rollouts``). It bounds an epoch's screening cost at
    ``screen_factor × budget × G`` rollouts when informative tasks are rare; 1 screens no more than the budget."""
    reference_tasks: int = bounded(0, 0, 100000, integer=True)
    """Counterfactual: tasks written once by the untrained simulator; each epoch's agent is measured on them
    (``extra["reference/p_hat"]``), next to p̂ on the simulator's current tasks."""
    seed: int = bounded(0, 0, MAX_SEED, integer=True)
    """Seed of everything random in the run (sampling, data order, initialisation of the adapters)."""
    save_adapters: bool = True
    """Save both adapters after every epoch under ``adapters/epoch_NNN/``."""
    seed_probe: bool = False
    """After every epoch, the agent's greedy answers to the run's seed tasks (``extra["probe/seeds_greedy"]``,
    ``probe/seeds_missed``) and to the counterfactual set (``probe/reference_greedy``): a training-side reading of
    what it keeps of the easy end, for choices made on training seeds where the held-out score may not be read."""
    probe: str = ""
    """With ``seed_probe``: a JSONL file of more training items (a name in ``data/`` or a path; ``count_probe.jsonl``
    for the counting presets) the agent answers greedily after every epoch (``probe/set_greedy``,
    ``probe/set_missed``). A file that poses a held-out item is refused: a choice is made on these."""
    report_to: str = "none"
    """Also log each epoch's record to a tracker: ``tensorboard`` (event files under ``<run>/tensorboard/``),
    ``wandb`` or ``trackio`` (genenv_lab/rundir/trackers.py)."""
    def __post_init__(self) -> None:
        check_bounds(self)  # the ranges declared on the fields (bounded(...))
        w = "LoopConfig"
        require(isinstance(self.domain, str) and self.domain != "", w, "domain", self.domain, "a domain name")
        for name in ("seeds", "heldout", "probe"):  # that the file exists: genenv_lab.coevolution.resolve
            require(isinstance(getattr(self, name), str), w, name, getattr(self, name), TASK_FILE)
        require(not self.probe or self.seed_probe, w, "probe", self.probe,
                "empty, or given with seed_probe=true (the probe set is read with the seeds, after every epoch)")
        require(self.variant in VARIANTS, w, "variant", self.variant, f"one of {VARIANTS}")
        require(self.report_to in TRACKERS, w, "report_to", self.report_to, f"one of {TRACKERS}")


@dataclass(frozen=True)
class EvalConfig:
    """The agent's held-out evaluation during a run (genenv_lab.coevolution.heldout): what it is scored on, and how
    often."""

    every: int = bounded(0, 0, 100000, integer=True)
    """Evaluate the agent on ``benchmark`` every this many epochs (0: never); the score is logged in
    ``epochs.jsonl`` as ``extra["eval/<benchmark>"]``."""
    benchmark: str = "bamboogle"
    """A benchmark name, or ``domain``: the domain's held-out set (``data/<domain>_heldout.jsonl``), greedy."""
    category: str = ""
    """Benchmark category (empty: all covered ones)."""
    limit: int = bounded(20, 0, 10**7, integer=True)
    """Items per category in each evaluation (0: all)."""
    data_dir: str = ""
    """Benchmark data folder (empty: ``$GENENV_LAB_DATA`` or the cache; see genenv_lab.evaluation)."""
    max_new_tokens: int = bounded(64, 1, 32768, integer=True)
    """Generation budget per item of the held-out evaluation (per model step, for BFCL multi-turn)."""
    protocol: str = "per-turn"
    """BFCL multi-turn categories only: ``per-turn`` (each turn from the answer key's state, the paper's reading;
    the share of turns right) or ``official`` (BFCL's: the model's own history, an entry right only if every turn
    is). See genenv_lab/evaluation/bfcl_multi_turn.py."""

    def __post_init__(self) -> None:
        check_bounds(self)  # the ranges declared on the fields (bounded(...))
        w = "EvalConfig"
        require(self.protocol in EVAL_PROTOCOLS, w, "protocol", self.protocol, f"one of {EVAL_PROTOCOLS}")
        require(isinstance(self.benchmark, str) and self.benchmark != "", w, "benchmark", self.benchmark,
                "'domain' (the domain's held-out set) or a benchmark's name")  # which: coevolution.resolve
        require(not self.category or self.benchmark != "domain", w, "category", self.category,
                 "empty with benchmark='domain' (the domain's held-out set has no categories)")


@dataclass(frozen=True)
class RunConfig:
    """Everything a run needs; written resolved to ``config.json``."""

    preset: str = "custom"
    model: ModelConfig = field(default_factory=ModelConfig)
    world: WorldConfig = field(default_factory=WorldConfig)
    env: EnvConfig = field(default_factory=EnvConfig)
    agent: AgentConfig = field(default_factory=AgentConfig)
    curriculum: CurriculumConfig = field(default_factory=CurriculumConfig)
    loop: LoopConfig = field(default_factory=LoopConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)

    def __post_init__(self) -> None:
        # vLLM cannot serve the tiny models (head size 16); Unsloth loads them as any local directory
        require(not (self.model.name_or_path in ("tiny", "tiny-world") and self.model.engine == "vllm"),
                 "ModelConfig", "engine", self.model.engine,
                 f"'hf' or 'unsloth' with the locally built model {self.model.name_or_path!r}")
        require(self.loop.variant != "offline_teacher" or bool(self.env.teacher_model), "EnvConfig",
                 "teacher_model", self.env.teacher_model, "a model id or directory when loop.variant is "
                 "'offline_teacher'")
        require(self.variant.niches != "placebo" or self.env.niche_gamma > 0, "EnvConfig", "niche_gamma",
                self.env.niche_gamma, f"> 0 with loop.variant {self.loop.variant!r} (its placebo shuffles the niche "
                "penalty's multipliers; at 0 there are none)")

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
        from genenv_lab.core.curriculum import band_warning

        found = band_warning(self.agent.num_generations, self.curriculum.alpha, self.curriculum.k_min)
        return [found] if found else []

    @property
    def niche_gamma(self) -> float:
        """The niche penalty's γ this run applies: ``env.niche_gamma``, or 0 for a variant that runs the paper's RWR
        (``genenv_paper``) or never updates the simulator."""
        v = self.variant
        return self.env.niche_gamma if v.trains_env and v.niches != "off" else 0.0

    @property
    def variant(self) -> Variant:
        """What ``loop.variant`` changes in the loop (:data:`VARIANT_TABLE`)."""
        return VARIANT_TABLE[self.loop.variant]

    def identity(self) -> dict[str, Any]:
        """What makes two runs one run: the configuration as JSON holds it, less its number of epochs (``loop.epochs``
        is None), which a resume or a comparison asked for more may raise. The run writer's resume, ``compare``'s
        reuse of a run folder and the TRL checkpoints' run identity all compare this.

        >>> a = RunConfig()
        >>> a.identity() == a.replace(loop={"epochs": 99}).identity() != a.replace(loop={"seed": 1}).identity()
        True
        """
        out = json.loads(json.dumps(self.to_dict()))
        out["loop"]["epochs"] = None
        return out

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "RunConfig":
        """Rebuild a config from ``to_dict`` output (e.g. a run's ``config.json``); unknown keys are errors, and a
        config in the layout before fields moved section is refused in one line that says to run ``genenv-lab
        upgrade RUN_DIR`` (it is not read in two layouts)."""
        import typing

        problem = old_layout_error(data)
        if problem:
            raise ConfigError(problem)
        parts = {name: kind for name, kind in typing.get_type_hints(cls).items() if name != "preset"}
        kwargs: dict[str, Any] = {}
        for key, value in data.items():
            if key == "preset":
                if not isinstance(value, str) or len(value) > 100:
                    raise ConfigError(f"preset={json.dumps(value, default=str)[:60]} is invalid: accepted a "
                                      "preset's name (a string of at most 100 characters)")
                kwargs[key] = value
            elif key in parts:
                kwargs[key] = build(parts[key], value)
            else:
                raise ConfigError(f"unknown config section {key!r}; accepted: preset, {', '.join(parts)}")
        return cls(**kwargs)

    def replace(self, **sections: Mapping[str, Any]) -> "RunConfig":
        """A copy with some fields of some sections changed, validated again: ``cfg.replace(loop={"epochs": 5})``.
        Only the fields named change (a new ``loop.domain`` brings no settings of its own here: that is
        :func:`genenv_lab.coevolution.resolve.for_domain`)."""
        kwargs: dict[str, Any] = {}
        for name, changes in sections.items():
            if name == "preset":
                kwargs[name] = changes
                continue
            current = getattr(self, name, None)
            if current is None or not dataclasses.is_dataclass(current):
                raise ConfigError(f"unknown config section {name!r}")
            kwargs[name] = replace_fields(current, changes)
        return dataclasses.replace(self, **kwargs)
