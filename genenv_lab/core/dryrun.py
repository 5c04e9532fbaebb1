"""The dry-run instrument: whether an epoch's GRPO update still had anything to learn from, and where. Pure: no
model, no I/O.

A curriculum can only pay where the baseline's data *runs dry* (issue 38; docs/research/curriculum_cpu.md, "The dry-run
instrument"): GRPO learns only from a group whose G rewards are not all equal (an *informative* group; a prompt of
pass rate p gives one with probability 1 − pᴳ − (1 − p)ᴳ), and an optimiser step none of whose groups is informative
moves nothing but AdamW's moments. So each epoch's record carries (``extra`` of ``epochs.jsonl``, every key in
docs/run_directory.md):

- ``dry/step_frac``: the share of the epoch's GRPO optimiser steps with no informative group
  (:func:`dry_step_frac`). The share of informative groups itself is ``1 − frac_zero_std`` (already in the record,
  not repeated here).
- ``dry/frontier_level``, ``dry/frontier_groups``, ``dry/frontier_informative``: the held-out frontier the epoch
  trained against (the lowest level of the held-out set the agent did not solve at the latest evaluation before the
  epoch, :func:`frontier_level`), and the epoch's GRPO groups whose task is *at* it (level equal to the frontier)
  with how many of them were informative (:func:`frontier_counts`).
- ``levels/counts``, ``levels/max``: the level distribution of the simulator's valid tasks of the epoch
  (:func:`level_counts`; their mean is ``features/level``), so that one sees whether the simulator climbs past the
  seeds and the fixed set.

A task's *level* is its difficulty feature named ``level`` (:data:`LEVEL`; ``count``: the end number, ``times``:
the larger operand). A domain whose tasks have no such feature (``arith``, ``tools``, ``qa``) has no frontier and
no level distribution: those keys are absent from its records, and ``dry/step_frac`` is there for every domain.
"""

from __future__ import annotations
from genenv_lab.core.metrics import (DRY_FRONTIER_GROUPS, DRY_FRONTIER_INFORMATIVE, DRY_FRONTIER_LEVEL, DRY_STEP_FRAC,
    LEVELS_COUNTS, LEVELS_MAX)

import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

LEVEL = "level"
"""The difficulty feature read as a task's level (an unbounded, compositional knob: level d needs level d − 1)."""
RAN_DRY_STEP_FRAC = 0.5
"""An epoch *ran dry* when at least this share of its GRPO optimiser steps had no informative group
(:func:`ran_dry`): most of its updates carried no signal."""
_EQUAL = 1e-12  # rewards closer than this are equal, as curriculum.frac_zero_std reads them


def informative(group: Sequence[float]) -> bool:
    """Whether a GRPO group (the G rewards of one task) carries signal: its rewards are not all equal.

    >>> informative([1.0, 0.0, 1.0]), informative([1.0, 1.0]), informative([0.5]), informative([])
    (True, False, False, False)
    """
    return len(group) > 0 and max(group) - min(group) >= _EQUAL


def dry_step_frac(groups: Sequence[Sequence[float]], prompts_per_step: int) -> float:
    """The share of optimiser steps none of whose groups is informative, the groups taken in the order they were
    trained and cut into steps of ``prompts_per_step`` (the batching rule of the agent's update: one step takes the G
    completions of ``prompts_per_step`` tasks, gradient accumulation 1, and the loop pads each batch to a multiple of
    it, so the last step is full too). NaN without groups.

    >>> dry_step_frac([[1, 1], [0, 0], [1, 0], [0, 0]], 2)   # steps [[1,1],[0,0]] dry, [[1,0],[0,0]] not
    0.5
    >>> dry_step_frac([[1, 1], [0, 0], [1, 1]], 1), dry_step_frac([], 4)
    (1.0, nan)
    """
    if prompts_per_step < 1:
        raise ValueError(f"prompts_per_step must be ≥ 1, got {prompts_per_step}")
    steps = [groups[i:i + prompts_per_step] for i in range(0, len(groups), prompts_per_step)]
    if not steps:
        return math.nan
    return sum(1 for step in steps if not any(informative(g) for g in step)) / len(steps)


def level_of(features: Mapping[str, Any]) -> float | None:
    """A task's level (its :data:`LEVEL` feature) as a number, or None when it has none.

    >>> level_of({"level": 7, "start": 2}), level_of({"n_operands": 3}), level_of({"level": True})
    (7.0, None, None)
    """
    value = features.get(LEVEL)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def frontier_level(results: Iterable[tuple[float | None, bool]]) -> float | None:
    """The held-out frontier: the lowest level with an item the agent did not solve, from (level, solved) per
    evaluated held-out item (solved: greedy reward ≥ ``agent.success_threshold``). Every level solved: one past the
    highest (the set cannot say how far the agent reaches; integer levels). Items without a level are left out;
    None when no item has one (the domain has no levels).

    >>> frontier_level([(3, True), (4, True), (5, False), (6, True), (7, False)])
    5.0
    >>> frontier_level([(3, True), (4, True)]), frontier_level([(None, False)])
    (5.0, None)
    """
    levelled = [(float(lv), ok) for lv, ok in results if lv is not None]
    if not levelled:
        return None
    unsolved = [lv for lv, ok in levelled if not ok]
    return min(unsolved) if unsolved else max(lv for lv, _ in levelled) + 1.0


def frontier_counts(groups: Iterable[tuple[float | None, Sequence[float]]], frontier: float) -> tuple[int, int]:
    """Of (level, rewards) groups, how many are at the frontier (level == ``frontier``) and how many of those are
    informative. *At* is equality: a task one level below is solved greedily already, one level above needs the
    frontier's step first.

    >>> frontier_counts([(5, [1, 0]), (5, [1, 1]), (4, [1, 0]), (None, [0, 1])], 5.0)
    (2, 1)
    """
    at = [g for lv, g in groups if lv is not None and lv == frontier]
    return len(at), sum(1 for g in at if informative(g))


def frontier_share(levels: Iterable[float | None], frontier: float | None) -> float | None:
    """The share of tasks at or above the ``frontier`` level (the level the agent does not yet solve: what it has
    still to learn), among the tasks with a level; None without a frontier or a levelled task. The supply
    instrument reads it off the untrained simulator's tasks each epoch.

    >>> frontier_share([3, 5, 6, None, 9], 6.0), frontier_share([3, 4], 6.0), frontier_share([3], None)
    (0.5, 0.0, None)
    """
    levelled = [lv for lv in levels if lv is not None]
    if frontier is None or not levelled:
        return None
    return sum(1 for lv in levelled if lv >= frontier) / len(levelled)


def level_counts(levels: Iterable[float | None]) -> dict[int | float, int]:
    """How many tasks are at each level (ascending; integral levels as ints); tasks without a level left out.

    >>> level_counts([5, 3, 5.0, None, 7])
    {3: 1, 5: 2, 7: 1}
    """
    counts: dict[int | float, int] = {}
    for lv in levels:
        if lv is None:
            continue
        key = int(lv) if float(lv).is_integer() else float(lv)
        counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items()))


@dataclass(frozen=True)
class TrainedGroup:
    """One GRPO group of an epoch's agent update: its task's difficulty features and its G rewards."""

    features: Mapping[str, Any]
    rewards: tuple[float, ...]


def dry_metrics(trained: Sequence[TrainedGroup], prompts_per_step: int, frontier: float | None,
                valid_features: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The record's ``dry/*`` and ``levels/*`` keys of one epoch, from its GRPO groups in the order they were
    trained, ``prompts_per_step``, the frontier of the latest held-out evaluation before the epoch (None: no
    evaluation, or a domain without levels), and the features of the simulator's valid tasks.

    >>> groups = [TrainedGroup({"level": lv}, g) for lv, g in ((4, (1, 1)), (5, (1, 0)), (5, (0, 0)), (6, (0, 0)))]
    >>> dry_metrics(groups, 2, 5.0, [{"level": 5}, {"level": 6}, {"level": 6}])
    {'dry/step_frac': 0.5, 'dry/frontier_level': 5.0, 'dry/frontier_groups': 2, 'dry/frontier_informative': 1, \
'levels/counts': {5: 1, 6: 2}, 'levels/max': 6}
    >>> dry_metrics([TrainedGroup({"n_operands": 2}, (1, 0))], 1, None, [{"n_operands": 2}])
    {'dry/step_frac': 0.0}
    """
    out: dict[str, Any] = {DRY_STEP_FRAC: dry_step_frac([g.rewards for g in trained], prompts_per_step)}
    if frontier is not None:
        at, useful = frontier_counts(((level_of(g.features), g.rewards) for g in trained), frontier)
        out.update({DRY_FRONTIER_LEVEL: frontier, DRY_FRONTIER_GROUPS: at, DRY_FRONTIER_INFORMATIVE: useful})
    counts = level_counts(level_of(f) for f in valid_features)
    if counts:
        out.update({LEVELS_COUNTS: counts, LEVELS_MAX: max(counts)})
    return out


def ran_dry(step_frac: float | None, threshold: float = RAN_DRY_STEP_FRAC) -> bool | None:
    """Whether an epoch ran dry (``dry/step_frac`` ≥ ``threshold``); None when the record has no reading (a run
    written before the instrument).

    >>> ran_dry(0.75), ran_dry(0.25), ran_dry(None), ran_dry(float("nan"))
    (True, False, None, None)
    """
    if step_frac is None or not math.isfinite(step_frac):
        return None
    return step_frac >= threshold - 1e-12
