"""The statistics of one epoch: its :class:`~genenv_lab.core.types.EpochRecord` (one line of ``epochs.jsonl``, every
key documented in docs/run_directory.md), the env update's ``rwr/*``, the tasks' ``features/*`` means, what the
agent has consumed so far (``cumulative/*``), ``online_filter``'s screening (``screen/*``), the dry-run instrument
(``dry/*``, ``levels/*``: :mod:`genenv_lab.core.dryrun`), and the per-phase timer. Pure: no model, no I/O."""

from __future__ import annotations

import math
import time
from contextlib import contextmanager
from types import MappingProxyType
from typing import Any, Mapping, Sequence

from genenv_lab.core import curriculum as cur
from genenv_lab.core.dryrun import dry_metrics, frontier_share, level_of
from genenv_lab.core.diversity import entropy_bits
from genenv_lab.core.niches import top_share
from genenv_lab.config import RunConfig
from genenv_lab.coevolution.rewards import RewardLog
from genenv_lab.core.screening import Screening
from genenv_lab.core.types import EpochRecord, GeneratedTask, LoopState, Measured
from genenv_lab.core.metrics import (AGENT_SCORE_ERRORS, FRESH_P_HAT_GAP, FRESH_TASKS, GRPO, GRPO_LOSS,
    REFERENCE_FRONTIER_SHARE, REFERENCE_IN_BAND_FRAC, REFERENCE_P_HAT, REFERENCE_P_HAT_GAP, RWR_KL, RWR_KL_CAPPED,
    RWR_LOSS, RWR_RAN, RWR_STEPS,
    SCREEN_FILL, SCREEN_KEPT, SCREEN_P_HAT_MEAN, SCREEN_ROLLOUTS, SCREEN_SCREENED, SCREEN_SOLVED, SCREEN_UNSOLVED,
    SCREEN_USED_UP, FEATURES, DIVERSITY_ENTROPY, DIVERSITY_NICHES, DIVERSITY_TOP_SHARE, metric)


class PhaseTimer:
    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def __call__(self, phase: str):
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[phase] = self.seconds.get(phase, 0.0) + time.perf_counter() - start


def epoch_record(epoch, tasks, measured: dict[str, Measured], rewards: RewardLog, agent_update, env_update,
                 state: LoopState, timer: PhaseTimer, wall_s: float, reference_p_hats: Sequence[float],
                 cfg: RunConfig, screening: Screening | None = None, screen_rollouts: int = 0,
                 later: Mapping[str, Any] = MappingProxyType({})) -> EpochRecord:
    """The epoch's record, built once: its figures, and ``later`` (registered keys read after the updates: the
    held-out scores, the processes' adapter hashes)."""
    valid = [t for t in tasks if t.valid]
    scored = list(measured.values())
    c = cfg.curriculum
    extra: dict = {FRESH_TASKS: len(measured), FRESH_P_HAT_GAP: cur.mean_or_nan(abs(m.p_hat - c.alpha)
                                                                                  for m in scored),
                   AGENT_SCORE_ERRORS: rewards.score_errors}
    if reference_p_hats:
        extra[REFERENCE_P_HAT] = cur.mean_or_nan(reference_p_hats)
        extra[REFERENCE_IN_BAND_FRAC] = cur.mean_or_nan(1.0 if cur.in_band(p, c.alpha, c.k_min) else 0.0
                                                          for p in reference_p_hats)
        extra[REFERENCE_P_HAT_GAP] = cur.mean_or_nan(abs(p - c.alpha) for p in reference_p_hats)
        supply = frontier_share((level_of(t.spec.features) for t in state.reference), state.frontier)
        if supply is not None:  # the untrained simulator's tasks the agent has still to learn
            extra[REFERENCE_FRONTIER_SHARE] = supply
    extra[GRPO_LOSS] = agent_update.loss  # the trainer's own log replaces it where it has one
    extra.update({k: v for k, v in agent_update.metrics.items() if k.startswith((GRPO, "agent/"))})
    extra.update(rwr_metrics(env_update))
    extra.update(feature_means(valid))
    extra[DIVERSITY_ENTROPY] = entropy_bits(t.question for t in valid)
    extra[DIVERSITY_NICHES] = len(state.niches)
    extra[DIVERSITY_TOP_SHARE] = top_share(state.niches)
    extra.update(state.consumed.metrics())
    extra.update(dry_metrics(rewards.trained_groups(), cfg.agent.prompts_per_step, state.frontier,
                             (t.features for t in valid)))
    if screening is not None:
        extra.update(screen_metrics(screening, screen_rollouts))
    for key in later:
        metric(key)  # a key the registry does not hold fails here, not when the run is read
    extra.update(later)
    all_rewards = [r for g in rewards.groups() for r in g]
    reasons: dict[str, int] = {}
    for t in tasks:
        if not t.valid:
            reasons[t.reject_reason] = reasons.get(t.reject_reason, 0) + 1
    return EpochRecord(
        epoch=epoch, n_generated=len(tasks), n_valid=len(valid),
        valid_frac=len(valid) / len(tasks) if tasks else math.nan,
        p_hat_mean=cur.mean_or_nan(t.p_hat for t in scored),
        in_band_frac=cur.mean_or_nan(1.0 if t.in_band else 0.0 for t in scored),
        env_reward_mean=cur.mean_or_nan(t.env_reward for t in scored),
        frac_zero_std=cur.frac_zero_std(rewards.groups()),
        agent_reward_mean=cur.mean_or_nan(all_rewards),
        wall_s=wall_s,
        n_agent_prompts=len(rewards.specs),
        pool_size=len(state.pool),
        env_version=state.env_version,
        reject_reasons=reasons,
        phase_s={k: round(v, 4) for k, v in timer.seconds.items()},
        extra=extra,
    )


def rwr_metrics(update) -> dict[str, float]:
    """``rwr/*``: the env update's loss, KL to the initial simulator, steps and whether the KL cap stopped it
    (``rwr/ran`` 0 when no generation was in band, the other keys then NaN)."""
    if update is None:
        return {RWR_RAN: 0.0, RWR_LOSS: math.nan, RWR_KL: math.nan, RWR_STEPS: 0.0,
                RWR_KL_CAPPED: math.nan}
    return {RWR_RAN: 1.0, RWR_LOSS: update.loss, RWR_KL: update.kl, RWR_STEPS: float(update.steps),
            RWR_KL_CAPPED: 1.0 if update.stopped_by_kl_cap else 0.0}


def screen_metrics(screening: Screening, rollouts: int) -> dict:
    """``screen/*``: how many candidates ``online_filter`` screened with how many agent ``rollouts``, how many it
    kept (0 < p̂ < 1) and added as fill-up, how many it found at p̂ = 0 and at p̂ = 1, their mean screened p̂, and
    the ids of the p̂ = 1 ones (``screen/used_up``: the run directory's record of the tasks that leave the pool)."""
    return {SCREEN_SCREENED: len(screening.screened), SCREEN_ROLLOUTS: rollouts,
            SCREEN_KEPT: len(screening.kept), SCREEN_FILL: len(screening.fill),
            SCREEN_UNSOLVED: len(screening.unsolved), SCREEN_SOLVED: len(screening.used_up),
            SCREEN_P_HAT_MEAN: cur.mean_or_nan(s.p_hat for s in screening.screened),
            SCREEN_USED_UP: list(screening.used_up)}


def feature_means(valid: Sequence[GeneratedTask]) -> dict[str, float]:
    """``features/<name>``: the mean of each numeric (or boolean) difficulty feature over the epoch's valid tasks."""
    values: dict[str, list[float]] = {}
    for t in valid:
        for k, v in t.features.items():
            if isinstance(v, (int, float)):
                values.setdefault(k, []).append(float(v))
    return {f"{FEATURES}{k}": sum(vs) / len(vs) for k, vs in sorted(values.items())}
