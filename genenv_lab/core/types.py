"""Typed, JSON-serialisable records that cross stage boundaries (no bare tuples or anonymous dicts).

- :class:`TaskSpec`: what a domain parsed out of a generation (or a seed): the agent-facing question, the gold
  answer the domain computed or checked, difficulty features and a canonical text (what the simulator is trained
  to write).
- :class:`GeneratedTask`: one generation of the simulator, valid or rejected, with its lineage and, after the
  rollouts, its p̂, R_env, band membership and RWR weight. One row of the ``tasks`` table.
- :class:`Attempt`: one agent completion of a task with its reward. One row of the ``attempts`` table.
- :class:`EpochRecord`: one line of ``epochs.jsonl``.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

from genenv_lab.core.efficiency import Consumption
from genenv_lab.core.metrics import metric


@dataclass(frozen=True)
class TaskSpec:
    question: str
    """What the agent is asked."""
    answer: str
    """The gold answer the domain computed (or checked) for the question."""
    text: str
    """Canonical task text in the simulator's output format."""
    features: dict[str, Any] = field(default_factory=dict)
    """Difficulty features (domain-specific, e.g. operand count, digits, operators)."""


@dataclass(frozen=True)
class Parent:
    """A task the simulator writes variations of this epoch: its id (a seed's or an earlier generation's), the base
    seed of its lineage, and its spec."""

    parent_id: str
    root_id: str
    spec: TaskSpec


@dataclass(frozen=True)
class BatchTask:
    """One task of the agent's GRPO batch: its id (unique in the batch), its spec, and where it came from
    (``generated``, ``fixed``, ``replay`` or ``seed``)."""

    task_id: str
    spec: TaskSpec
    source: str


@dataclass(frozen=True)
class GeneratedTask:
    """One generation of the simulator, valid or rejected, with what the epoch measured of it (p̂, R_env, band,
    RWR weight: set by copying, :func:`dataclasses.replace`, never by assignment)."""

    task_id: str
    epoch: int
    env_version: int
    """Number of env updates applied before this generation (0 = the initial simulator)."""
    parent_id: str
    """The task this one varies (a seed id or an earlier generated task)."""
    root_id: str
    """The base seed of the lineage."""
    context: str
    """The env prompt (seed task + success statistics) the generation came from."""
    raw: str
    """The simulator's raw output text."""
    valid: bool
    reject_reason: str = ""
    question: str = ""
    answer: str = ""
    text: str = ""
    features: dict[str, Any] = field(default_factory=dict)
    p_hat: float = math.nan
    env_reward: float = math.nan
    in_band: bool = False
    weight: float = 0.0
    """RWR weight in the env update (0 when the task was not used)."""

    def to_row(self) -> dict[str, Any]:
        row = dataclasses.asdict(self)
        row["features"] = dict(self.features)
        return row


@dataclass
class Attempt:
    task_id: str
    epoch: int
    source: str
    """``generated`` (a fresh task), ``replay`` (from the pool) or ``seed`` (a base seed)."""
    prompt: str
    completion: str
    reward: float
    success: bool
    advantage: float = math.nan
    """Group-relative advantage of this completion among the G rollouts of its task."""

    def to_row(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class EpochRecord:
    """One line of ``epochs.jsonl``, built once an epoch is evaluated and in sync, and read back by
    :meth:`from_dict`. Every key is registered in :mod:`genenv_lab.core.metrics` (one line each: its meaning, kind and
    lab panel); the updates' own figures are namespaced in ``extra`` (``rwr/*``, ``grpo/*``, ...). Frozen, its maps
    read-only. The held-out scores and the processes' adapter hashes go in when it is built
    (:func:`genenv_lab.coevolution.epoch_stats.epoch_record`'s ``later``); only the commit's own seconds, measured
    while it is written, make a new record (:meth:`with_phase`).

    ``record[key]`` and ``record.get(key)`` read any registered key, top-level or in ``extra``; a key the registry
    does not hold is a KeyError (a typo fails, it does not read as "absent")."""

    epoch: int
    n_generated: int
    n_valid: int
    valid_frac: float
    p_hat_mean: float
    in_band_frac: float
    env_reward_mean: float
    frac_zero_std: float
    agent_reward_mean: float
    wall_s: float
    n_agent_prompts: int = 0
    pool_size: int = 0
    env_version: int = 0
    reject_reasons: Mapping[str, int] = field(default_factory=dict)
    phase_s: Mapping[str, float] = field(default_factory=dict)
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        for name in _MAPS:
            object.__setattr__(self, name, MappingProxyType(dict(getattr(self, name))))

    def __getstate__(self):  # a mappingproxy does not pickle: the record does, as plain dicts
        return self.to_dict()

    def __setstate__(self, state):
        for name, value in state.items():
            object.__setattr__(self, name, MappingProxyType(dict(value)) if name in _MAPS else value)

    def to_dict(self) -> dict[str, Any]:
        return {f.name: jsonable(dict(v) if isinstance(v, Mapping) else v)
                for f in dataclasses.fields(self) for v in [getattr(self, f.name)]}

    def __getitem__(self, key: str) -> Any:
        if metric(key).top:
            return getattr(self, key)
        return self.extra[key]

    def get(self, key: str, default: Any = None) -> Any:
        metric(key)  # an unregistered key is an error, not a default
        try:
            return self[key]
        except KeyError:
            return default

    def __contains__(self, key: str) -> bool:
        return metric(key).top or key in self.extra

    def keys(self) -> list[str]:
        """Every key the record holds: its fields, then the keys of its ``extra``."""
        return [f.name for f in dataclasses.fields(self)] + list(self.extra)

    def __iter__(self):
        return iter(self.keys())

    def with_phase(self, phase: str, seconds: float) -> "EpochRecord":
        return dataclasses.replace(self, phase_s={**self.phase_s, phase: seconds})

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "EpochRecord":
        """The record of one parsed ``epochs.jsonl`` line, or a ValueError in one phrase: a key the registry does not
        hold (a run written by another version: ``genenv-lab upgrade RUN_DIR`` reads an older one), a value of the
        wrong kind or out of its range, a field missing."""
        if not isinstance(data, Mapping):
            raise ValueError(f"a JSON {type(data).__name__}, not an epoch record")
        extra = data.get("extra", {})
        if not isinstance(extra, Mapping):
            raise ValueError("'extra' is not a JSON object")
        for key, value, top in [*((k, v, True) for k, v in data.items() if k != "extra"),
                                *((k, v, False) for k, v in extra.items())]:
            try:
                found = metric(key)
            except KeyError:
                raise ValueError(f"key {key!r} is not one this version writes (a run of an older genenv_lab: "
                                 "genenv-lab upgrade RUN_DIR)") from None
            if found.top != top:
                raise ValueError(f"key {key!r} belongs {'at the top level' if found.top else 'in extra'}")
            why = found.problem(value)
            if why:
                raise ValueError(f"{key!r}: {why}")
        missing = [f.name for f in dataclasses.fields(cls)
                   if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
                   and f.name not in data]
        if missing:
            raise ValueError(f"no {', '.join(missing)}")
        floats = {f.name for f in dataclasses.fields(cls) if f.type in ("float", float)}
        values = {k: (math.nan if v is None and k in floats else v) for k, v in data.items()}
        return cls(**values)


_MAPS = ("reject_reasons", "phase_s", "extra")


def jsonable(value: Any) -> Any:
    """NaN and infinities become None (and dict keys strings), so that ``epochs.jsonl`` and the evaluation's
    ``summary.json``/``results.jsonl`` are strict JSON.

    >>> jsonable({"a": float("nan"), 1: [float("inf"), 2.5]})
    {'a': None, '1': [None, 2.5]}
    """
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return value


# ------------------------------------------------------------------------------------------- loop state

@dataclass
class PoolTask:
    task_id: str
    root_id: str
    epoch: int
    spec: TaskSpec
    p_hat: float = math.nan


@dataclass
class LoopState:
    """What one epoch hands to the next (all of it recoverable from the run directory)."""

    epoch: int = 0
    env_version: int = 0
    pool: list[PoolTask] = field(default_factory=list)
    """D_train: valid generated tasks of earlier epochs (``online_filter``: less the tasks it used up)."""
    reference: list[PoolTask] = field(default_factory=list)
    """Counterfactual tasks of the untrained simulator (``loop.reference_tasks``)."""
    consumed: Consumption = field(default_factory=Consumption)
    """What the agent's training has consumed so far (agent rollouts, tokens, distinct tasks): ``cumulative/*``."""
    frontier: float | None = None
    """The held-out frontier of the latest evaluation (the lowest level the agent did not solve,
    :func:`genenv_lab.core.dryrun.frontier_level`); None without one. The next epoch's ``dry/frontier_*`` count at
    it."""
    niches: dict[str, int] = field(default_factory=dict)
    """The simulator's valid generations so far per niche (``Domain.niche``): the niche penalty's memory
    (``env.niche_gamma``), rebuilt from the tasks table on ``--resume``."""


@dataclass(frozen=True)
class Measured:
    """p̂, R_env and band membership of one fresh task this epoch."""

    p_hat: float
    env_reward: float
    in_band: bool


@dataclass
class EpochResult:
    record: EpochRecord
    tasks: list[GeneratedTask]
    attempts: list[Attempt]
    reference: list[GeneratedTask] = field(default_factory=list)
    """Generations of the counterfactual set, written in epoch 1."""
