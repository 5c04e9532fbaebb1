"""The registry of what an epoch logs: every key of ``epochs.jsonl`` once, with its one-line meaning, its range and the
lab panel that draws it. Pure: no I/O.

A metric is one line here (:func:`_metric`), and the name it returns is how code says the key: the loop writes
``extra[REFERENCE_P_HAT]``, the lab and ``compare`` read ``record[P_HAT_MEAN]``, so a typo is a NameError at import,
not an empty curve. Families whose members are open-ended (``grpo/*``: whatever TRL logs; ``features/*``: a domain's
difficulty features; ``eval/*``: one per benchmark) are registered by their prefix (a key ending in ``/``).
:class:`~genenv_lab.core.types.EpochRecord` checks every key it reads back against :func:`metric`;
docs/run_directory.md's key table is :func:`markdown_table`; the trackers log what :func:`numbers` gives.

Written by hand: the record is this project's own format, and no library holds a schema of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

KINDS = ("count", "number", "fraction", "flag", "text", "map", "list")
"""What a value is: a whole number ≥ 0, a real number, a number in [0, 1], 0/1 (or a boolean), a string, a JSON object,
a JSON array. Every number may be ``null`` (NaN is written as null)."""


@dataclass(frozen=True)
class Metric:
    """One key of an epoch record: ``key`` (top-level, or in ``extra``), or a family (``key`` ends in ``/``)."""

    key: str
    doc: str
    kind: str = "number"
    panel: str | None = None
    """The lab panel that draws it (``genenv_lab.lab.figures``), or None."""
    top: bool = False
    """A field of the record itself; every other key sits in its ``extra``."""

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"metric {self.key!r}: kind {self.kind!r} is not one of {KINDS}")

    @property
    def family(self) -> bool:
        return self.key.endswith("/")

    def problem(self, value: Any) -> str | None:
        """Why ``value`` cannot be this metric's value (one phrase), or None."""
        if value is None:
            return None if self.kind not in ("map", "list") else "null where an object or array belongs"
        if self.kind == "text":
            return None if isinstance(value, str) else "not a string"
        if self.kind == "map":
            return None if isinstance(value, dict) else "not a JSON object"
        if self.kind == "list":
            return None if isinstance(value, list) else "not a JSON array"
        if isinstance(value, bool):
            return None if self.kind == "flag" else "a boolean where a number belongs"
        if not isinstance(value, (int, float)):
            return "not a number"
        if self.kind == "count" and (value < 0 or value != int(value)):
            return f"{value} is not a whole number ≥ 0"
        if self.kind in ("fraction", "flag") and not 0 <= value <= 1:
            return f"{value} is outside [0, 1]"
        return None


_REGISTRY: dict[str, Metric] = {}


def _metric(key: str, doc: str, kind: str = "number", panel: str | None = None, *, top: bool = False) -> str:
    if key in _REGISTRY:
        raise ValueError(f"metric {key!r} is registered twice")
    _REGISTRY[key] = Metric(key, doc, kind, panel, top)
    return key


# ---------------------------------------------------------------------------------------------- the record itself
EPOCH = _metric("epoch", "1-based epoch number", "count", top=True)
N_GENERATED = _metric("n_generated", "generations of the simulator this epoch (`seeds_per_epoch × n_variations`; the "
                      "fixed-set baselines: the whole fixed set in epoch 1, 0 afterwards)", "count", top=True)
N_VALID = _metric("n_valid", "of those, the ones the domain parsed and validated", "count", top=True)
VALID_FRAC = _metric("valid_frac", "`n_valid / n_generated`", "fraction", "valid", top=True)
P_HAT_MEAN = _metric("p_hat_mean", "mean empirical success rate p̂ of the agent on this epoch's fresh tasks, G rollouts "
                     "each (the valid generations; the fixed-set baselines: the tasks drawn from the fixed set; "
                     "`online_filter`: the screened tasks it trained on, measured again by the GRPO pass)", "fraction",
                     "p_hat", top=True)
IN_BAND_FRAC = _metric("in_band_frac", "fraction of those tasks with abs(p̂ − α) ≤ k_min (the band filter)",
                       "fraction", "in_band", top=True)
ENV_REWARD_MEAN = _metric("env_reward_mean", "mean α-Curriculum Reward R_env(p̂) of those tasks", "number",
                          "env_reward", top=True)
FRAC_ZERO_STD = _metric("frac_zero_std", "fraction of GRPO groups (all tasks of the agent batch) whose G rewards are "
                        "all equal (no signal); `1 − frac_zero_std` is the comparison's `informative_frac`",
                        "fraction", "zero_std", top=True)
AGENT_REWARD_MEAN = _metric("agent_reward_mean", "mean reward over all agent rollouts of the epoch (generated, "
                            "replayed and seed tasks)", "fraction", "agent_reward", top=True)
WALL_S = _metric("wall_s", "wall time of the epoch in seconds (without the final commit)", top=True)
N_AGENT_PROMPTS = _metric("n_agent_prompts", "tasks in the GRPO batch (each rolled out G times)", "count", top=True)
POOL_SIZE = _metric("pool_size", "size of the task pool D_train after the epoch (`online_filter`: the fixed set less "
                    "the tasks it has used up)", "count", top=True)
ENV_VERSION = _metric("env_version", "env updates applied after this epoch", "count", top=True)
REJECT_REASONS = _metric("reject_reasons", "`{reason: count}` of this epoch's rejected generations", "map", top=True)
PHASE_S = _metric("phase_s", "seconds per phase: `generate`, `screen`, `rollouts` (GRPO generation + scoring), "
                  "`agent_update`, `env_update`, `reference`, `logging` (commit of tables and adapters)", "map",
                  top=True)
EXTRA = _metric("extra", "every key below", "map", top=True)

# ---------------------------------------------------------------------------------------------- extra: the curriculum
FRESH_TASKS = _metric("fresh/tasks", "tasks whose p̂ was measured this epoch (the fixed-set baselines: `budget`; "
                      "`online_filter`: `screen/kept + screen/fill`)", "count")
FRESH_P_HAT_GAP = _metric("fresh/p_hat_gap", "mean abs(p̂ − α) on this epoch's fresh tasks", "fraction", "p_hat_gap")
REFERENCE_P_HAT = _metric("reference/p_hat", "with `loop.reference_tasks`: mean p̂ of the same epoch's agent on the "
                          "untrained simulator's tasks (sampled rollouts, no update)", "fraction", "reference")
REFERENCE_IN_BAND_FRAC = _metric("reference/in_band_frac", "with `loop.reference_tasks`: the share of the untrained "
                                 "simulator's tasks in band for this epoch's agent (its supply of calibrated tasks)",
                                 "fraction", "supply")
REFERENCE_FRONTIER_SHARE = _metric("reference/frontier_share", "with `loop.reference_tasks` and a held-out frontier: "
                                   "the share of the untrained simulator's tasks at or above the level this epoch's "
                                   "agent trained against (`dry/frontier_level`): its supply of tasks the agent has "
                                   "still to learn", "fraction", "supply")
REFERENCE_P_HAT_GAP = _metric("reference/p_hat_gap", "with `loop.reference_tasks`: mean abs(p̂ − α) on the untrained "
                              "simulator's tasks (the simulator tracking the agent shows as `fresh/p_hat_gap` staying "
                              "small while this grows)", "fraction", "p_hat_gap")
FEATURES = _metric("features/", "mean of each numeric difficulty feature over the epoch's valid generations (e.g. "
                   "`features/level`): where the simulator's difficulty went", "number", "difficulty")
DIVERSITY_ENTROPY = _metric("diversity/entropy", "the entropy (bits) of the questions the epoch's valid generated "
                            "tasks pose (`genenv_lab.core.diversity`): log2 of their number when every task differs, "
                            "0 when one task fills the epoch; low where the simulator's update narrows what it writes",
                            "number", "diversity")
DIVERSITY_NICHES = _metric("diversity/niches", "the distinct niches (`Domain.niche`: counting's (start, end), else the "
                           "canonical question) among the simulator's valid generations from epoch 1 to this one: the "
                           "niche penalty's memory (`env.niche_gamma`, `genenv_lab.core.niches`)", "count",
                           "niches")
DIVERSITY_TOP_SHARE = _metric("diversity/top_share", "the share of the run's valid generations so far in its most "
                              "written niche: 1 when the simulator writes one kind of task, 1/k when it spreads over k",
                              "fraction")
FEATURES_LEVEL = _metric("features/level", "the mean level of the epoch's valid generations (a domain with levels)",
                         "number", "difficulty")
LEVELS_COUNTS = _metric("levels/counts", "`{level: tasks}` of the epoch's valid generations (a domain with levels)",
                        "map")
LEVELS_MAX = _metric("levels/max", "the highest level among the epoch's valid generations", "number", "levels")

# ---------------------------------------------------------------------------------------------- extra: consumption
CUMULATIVE_AGENT_ROLLOUTS = _metric("cumulative/agent_rollouts", "agent completions sampled for training from epoch 1 "
                                    "to this one: the GRPO pass's G per task and `online_filter`'s screening "
                                    "rollouts (not reference or held-out rollouts); across `--resume`", "count")
CUMULATIVE_AGENT_TOKENS = _metric("cumulative/agent_tokens", "completion tokens of those rollouts (re-encoded by the "
                                  "agent's tokenizer); null when the backend cannot count", "count")
CUMULATIVE_DISTINCT_TASKS = _metric("cumulative/distinct_tasks", "distinct non-seed task ids that entered a GRPO batch "
                                    "so far: the comparison's `tasks_consumed`", "count")
CUMULATIVE_DISTINCT_QUESTIONS = _metric("cumulative/distinct_questions", "distinct prompts among those tasks (two ids "
                                        "with the same text count once)", "count")
SCREEN_SCREENED = _metric("screen/screened", "`online_filter`: candidates of the fixed set screened this epoch (G "
                          "rollouts each, no update)", "count")
SCREEN_ROLLOUTS = _metric("screen/rollouts", "`online_filter`: the screening rollouts (also in "
                          "`cumulative/agent_rollouts`)", "count")
SCREEN_KEPT = _metric("screen/kept", "`online_filter`: screened tasks at 0 < p̂ < 1 that went into the GRPO batch",
                      "count")
SCREEN_FILL = _metric("screen/fill", "`online_filter`: other screened tasks added to reach `budget` (p̂ = 0 first, "
                      "then p̂ = 1)", "count")
SCREEN_UNSOLVED = _metric("screen/unsolved", "`online_filter`: screened tasks at p̂ = 0 (they stay in the pool)",
                          "count")
SCREEN_SOLVED = _metric("screen/solved", "`online_filter`: screened tasks at p̂ = 1 (used up)", "count")
SCREEN_P_HAT_MEAN = _metric("screen/p_hat_mean", "`online_filter`: the mean screened p̂", "fraction")
SCREEN_USED_UP = _metric("screen/used_up", "`online_filter`: the ids of the tasks screened at p̂ = 1 this epoch; they "
                         "leave the pool for good, and `--resume` rebuilds the pool from this list", "list")

# ---------------------------------------------------------------------------------------------- extra: the updates
GRPO = _metric("grpo/", "TRL's GRPO log of the epoch's agent update, mean over its optimiser steps (`loss`, `reward`, "
               "`frac_reward_zero_std`, `entropy`, `clip_ratio/region_mean`, `completions/mean_length`, "
               "`completions/clipped_ratio`, `grad_norm`, `learning_rate`, ...; null when TRL logs none)")
GRPO_LOSS = _metric("grpo/loss", "the agent update's loss (TRL's log; an engine without it: the loss it returns)")
GRPO_REWARD_STD = _metric("grpo/reward_std", "TRL's mean within-group reward standard deviation", "number", "grpo")
GRPO_KL = _metric("grpo/kl", "TRL's KL to the reference (only with `agent.kl_beta > 0`, else null)", "number", "grpo")
AGENT_SCORE_ERRORS = _metric("agent/score_errors", "agent completions whose scorer raised or returned a reward outside "
                             "[0, 1]: scored 0 and counted, the run goes on", "count")
AGENT_PREFIX_PATH = _metric("agent/prefix_path", "the path the agent update took: `shared-prefix`, `full-rows` or "
                            "`unsloth-prefix-grouper` (docs/prefix_sharing.md)", "text")
AGENT_GRADIENT_CHECKPOINTING = _metric("agent/gradient_checkpointing", "whether the agent update trained with gradient "
                                       "checkpointing (false on hf, true on unsloth)", "flag")
AGENT_TRAINER = _metric("agent/trainer", "the trainer class the update ran (`trl.GRPOTrainer` or Unsloth's)", "text")
AGENT_ROLLOUTS = _metric("agent/rollouts", "what generated the GRPO rollouts: `transformers` or `vllm`", "text")
RWR_RAN = _metric("rwr/ran", "1 when the env (RWR) update ran, 0 when no generation was in band", "flag")
RWR_LOSS = _metric("rwr/loss", "the env update's mean loss (weighted NLL + kl_coef · KL over its steps); null "
                   "without an update")
RWR_KL = _metric("rwr/kl", "per-token KL of the simulator to its initial self after the update; null without one",
                 "number", "env_kl")
RWR_STEPS = _metric("rwr/steps", "the env update's optimiser steps (fewer than `env.max_steps` when the KL cap stopped "
                    "it)", "count")
RWR_KL_CAPPED = _metric("rwr/kl_capped", "1 when the KL cap stopped the env update; null without one", "flag")

# ---------------------------------------------------------------------------------------------- extra: evaluation
EVAL = _metric("eval/", "with `eval.every`: the held-out score after the epoch (`eval/domain`: mean greedy reward on "
               "the domain's held-out set; a benchmark: its official metric)", "number", "validation")
EVAL_DOMAIN = _metric("eval/domain", "the mean greedy reward on the domain's own held-out set", "fraction",
                      "validation")
HELDOUT_FRONTIER_LEVEL = _metric("heldout/frontier_level", "the lowest level with a held-out item the agent did not "
                                 "solve greedily after the epoch (one past the highest when it solved them all)",
                                 "number", "frontier")
PROBE_SEEDS_GREEDY = _metric("probe/seeds_greedy", "with `loop.seed_probe`: the mean greedy reward of the epoch's "
                             "agent on the run's seed tasks (training items, so a training-side reading: what the "
                             "agent keeps of the easy end while its tasks move on), every epoch whatever `eval.every` "
                             "says", "fraction")
PROBE_SEEDS_MISSED = _metric("probe/seeds_missed", "with `loop.seed_probe`: how many of those seed tasks the greedy "
                             "answer got wrong", "count")
PROBE_REFERENCE_GREEDY = _metric("probe/reference_greedy", "with `loop.seed_probe` and `loop.reference_tasks`: the "
                                 "mean greedy reward of the epoch's agent on the untrained simulator's tasks (the "
                                 "counterfactual set, training-side too; `reference/p_hat` is its sampled reading)",
                                 "fraction")
PROBE_SET_GREEDY = _metric("probe/set_greedy", "with `loop.probe`: the mean greedy reward of the epoch's agent on the "
                           "probe file's training items (for the counting presets, `count_probe.jsonl`: short counts "
                           "off the held-out set, where forgetting shows first)", "fraction")
PROBE_SET_MISSED = _metric("probe/set_missed", "with `loop.probe`: how many of the probe file's items the greedy "
                           "answer got wrong", "count")
DRY_STEP_FRAC = _metric("dry/step_frac", "the share of the epoch's GRPO optimiser steps none of whose groups was "
                        "informative (the dry-run instrument, `genenv_lab.core.dryrun`)", "fraction", "dry_run")
DRY_FRONTIER_LEVEL = _metric("dry/frontier_level", "the held-out frontier the epoch trained against (the previous "
                             "evaluation's `heldout/frontier_level`)", "number", "frontier")
DRY_FRONTIER_INFORMATIVE = _metric("dry/frontier_informative", "the informative ones among `dry/frontier_groups`",
                                   "count", "frontier_groups")
DRY_FRONTIER_GROUPS = _metric("dry/frontier_groups", "the epoch's GRPO groups whose task level equals "
                              "`dry/frontier_level`", "count", "frontier_groups")

# ---------------------------------------------------------------------------------------------- extra: the run's job
PROCESSES_ADAPTER_SHA256 = _metric("processes/adapter_sha256", "only under N > 1 processes: each process's SHA-256 of "
                                   "its adapters after the epoch, in process order (all equal, or the run stops)",
                                   "list")
TRL_GLOBAL_STEP = _metric("trl/global_step", "only in a `GenEnvCurriculum` run: the TRL trainer's global step at the "
                          "end of the epoch (docs/trl.md)", "count")

METRICS: tuple[Metric, ...] = tuple(_REGISTRY.values())
"""Every metric, in the order docs/run_directory.md lists them."""


def metric(key: str) -> Metric:
    """The registered metric of ``key`` (a family's member by its prefix), or a KeyError that says where to add it.

    >>> metric("grpo/entropy").key, metric("p_hat_mean").panel
    ('grpo/', 'p_hat')
    """
    if not isinstance(key, str):
        raise KeyError(f"{key!r} is not a metric key (a string)")
    found = _REGISTRY.get(key)
    if found is None and "/" in key:
        found = _REGISTRY.get(key.split("/", 1)[0] + "/")
        if found is not None and found.key == key:  # a family is not itself a key
            found = None
    if found is None:
        raise KeyError(f"{key!r} is not a registered metric: add one line for it to genenv_lab/core/metrics.py")
    return found


PANELS = tuple(dict.fromkeys(m.panel for m in METRICS if m.panel))
"""The lab panels the registry names, in order; ``genenv_lab.lab.panels`` has an entry for each."""


def markdown_table() -> str:
    """docs/run_directory.md's table of the ``epochs.jsonl`` keys, one row per metric."""
    rows = ["| key | kind | lab panel | meaning |", "|---|---|---|---|"]
    for m in METRICS:
        shown = (m.key if m.top else f"extra.{m.key}") + ("<name>" if m.family else "")
        rows.append(f"| `{shown}` | {m.kind} | {m.panel or ''} | {m.doc} |")
    return "\n".join(rows)
