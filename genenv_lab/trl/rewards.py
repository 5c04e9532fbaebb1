"""The reward functions a curriculum hands a ``trl.GRPOTrainer`` (:func:`reward_functions`): the domain's verifier,
or the user's own functions wrapped, each rollout's total reward kept under its task's id in the epoch's reward log.

Written by hand: TRL calls each reward function with the batch's dataset columns and sums their weighted rewards
itself; the curriculum needs that same total per rollout, so the wrapper computes it as TRL does (:func:`totals`).
"""

from __future__ import annotations

import functools
import math
from typing import Any, Callable, Sequence


def reward_functions(funcs: Sequence[Callable[..., Sequence[float | None]]], *, verifier_name: str,
                     weights: Sequence[float] | None, plan: Callable[[], Any],
                     check_group: Callable[[Sequence[str]], None]) -> list[Callable[..., list]]:
    """The trainer's ``reward_funcs``. With no ``funcs``, the domain's verifier (named ``verifier_name``) scores
    each rollout through the current epoch's reward log (``plan().rewards``). Else each of ``funcs`` (TRL's
    signature, ``f(prompts, completions, **columns)``) returns its rewards unchanged to TRL, and once the last has
    run the rollouts' totals (``weights``, TRL's ``reward_weights``, applied) are recorded under their task ids.
    ``check_group`` refuses a batch whose GRPO groups mix tasks, or hold a task of another epoch."""
    if not funcs:
        def verifier(completions, task_id, **_: Any) -> list[float]:
            check_group(task_id)
            return plan().rewards(list(task_id), texts(completions))

        verifier.__name__ = verifier_name
        return [verifier]
    parts: list[list[float]] = []
    weights = list(weights or [1.0] * len(funcs))

    def wrap(index: int, func):
        @functools.wraps(func)
        def recorded(prompts=None, completions=None, task_id=None, **kwargs: Any):
            rewards = func(prompts=prompts, completions=completions, task_id=task_id, **kwargs)
            if index == 0:
                parts.clear()
                check_group(task_id)
            parts.append([math.nan if r is None else float(r) for r in rewards])
            if len(parts) == len(funcs):
                plan().rewards.record(list(task_id), texts(completions), totals(parts, weights))
            return rewards

        return recorded

    return [wrap(i, f) for i, f in enumerate(funcs)]


def totals(parts: Sequence[Sequence[float]], weights: Sequence[float]) -> list[float]:
    """Each rollout's total reward, TRL's way (the weighted sum of the functions' rewards, NaN ones skipped); NaN
    for a rollout that no function gave a finite reward, so that the reward log counts it as a score error instead
    of a failure.

    >>> totals([[1.0, math.nan, math.nan], [0.5, 0.5, math.inf]], [1.0, 2.0])
    [2.0, 1.0, nan]
    """
    out = []
    for rewards in zip(*parts):
        given = [w * r for w, r in zip(weights, rewards) if not math.isnan(r)]
        total = sum(given) if given else math.nan
        out.append(total if math.isfinite(total) else math.nan)
    return out


def texts(completions) -> list[str]:
    """The completions' texts (a conversational completion's last message)."""
    return [c[-1]["content"] if isinstance(c, list) else c for c in completions]
