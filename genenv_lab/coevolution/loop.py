"""The co-evolution loop: one epoch reads like Algorithm 1 of GenEnv (arXiv 2512.19682).

Phase 1  generate and interact: env contexts (seed + lineage statistics) → π_env variations → parse/validate →
         agent rollouts (inside the GRPO pass) → p̂ and R_env per generated task.
Phase 2  dual update: π_agent by its trainer (:func:`genenv_lab.trainers.agent.update_agent`, GRPO by default; the
         same rollouts), π_env by RWR on in-band generations (:func:`genenv_lab.trainers.env.update_env`).
Phase 3  aggregate: valid tasks join the pool D_train; env records are kept in the run directory (D_env).

Deliberate choices (method.md where the paper is silent):
- One rollout pass serves both p̂ and the GRPO update: rewards are recorded per task id inside the reward function.
- The agent batch is fresh valid tasks + ``replay_size`` pool tasks + ``base_seeds`` seeds, padded with seeds to a
  multiple of ``prompts_per_step``.
- Parents of new variations alternate between base seeds and pool tasks; lineage statistics are per base seed.
- Baselines (method.md §7) change named steps only, never the agent optimiser or the per-epoch budget of fresh
  tasks (``RunConfig.budget``): ``random_env`` skips the env update; ``static`` and ``offline_teacher`` generate a
  fixed set in epoch 1 (with the untrained simulator, or a teacher model) and sample each epoch's fresh tasks from
  it; ``filter_only`` reproduces the authors' release (:func:`.state.next_pool`); ``online_filter`` samples static's
  fixed set and screens each candidate with G agent rollouts first, training only on informative ones
  (:func:`screen_fresh`, :mod:`.screening`).
- What the agent's training consumes (agent rollouts including screening, completion tokens, distinct tasks) is
  counted cumulatively in the loop state and every record (:class:`.efficiency.Consumption`).
- Counterfactual (``loop.reference_tasks``): tasks written once by the untrained simulator, on which every epoch's
  agent is measured, so that "the simulator calibrates difficulty" can be told apart from "the agent improves".

Under ``torchrun``/``accelerate launch`` with several processes every process runs this loop on the same inputs;
the backend splits the model work between them and the main process writes the run (:mod:`.distributed`).

:func:`genenv_lab.coevolution.session.run` runs one epoch after another and yields their records. Around the epoch:
the simulator's steps (:mod:`.simulator`), the pool across epochs and resume (:mod:`.state`), the rollouts' reward
log (:mod:`.rewards`), the epoch's statistics (:mod:`.epoch_stats`), what each baseline changes
(``config.VARIANT_TABLE``), the held-out evaluation (:mod:`.heldout`), the screening of ``online_filter``
(:mod:`.screening`).
"""

from __future__ import annotations

import dataclasses
import random
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence


from genenv_lab.core import curriculum as cur
from genenv_lab.trainers.agent import update_agent
from genenv_lab.trainers.env import update_env
from genenv_lab.backends.base import AgentPrompt, AgentUpdate, Backend
from genenv_lab.config import RunConfig
from genenv_lab.core.seeds import epoch_seed
from genenv_lab.domains import Domain, SeedTask
from genenv_lab.core.efficiency import Consumption
from genenv_lab.core.niches import add_counts, niche_weights
from genenv_lab.coevolution.epoch_stats import PhaseTimer, epoch_record
from genenv_lab.coevolution.rewards import RewardLog
from genenv_lab.core.screening import Screening, informative, screen
from genenv_lab.coevolution.simulator import (contexts_by_id, env_update_batch, generate_reference, generate_tasks,
    seed_torch)
from genenv_lab.coevolution.state import next_pool
from genenv_lab.core.types import (Attempt, BatchTask, EpochResult, GeneratedTask, LoopState, Measured,
    PoolTask, TaskSpec)

AfterUpdates = Callable[[LoopState], tuple[LoopState, Mapping[str, Any]]]
"""What reads the models once an epoch's updates are done (:func:`finish_epoch`'s ``after``): given the epoch's
state, the state to go on with and the registered keys the epoch's record holds besides its own figures."""


# ------------------------------------------------------------------------------------------------ Algorithm 1

def run_epoch(state: LoopState, backend: Backend, domain: Domain, seeds: Sequence[SeedTask], cfg: RunConfig,
              on_phase=lambda phase: None, generator: Backend | None = None,
              after: AfterUpdates | None = None) -> tuple[LoopState, EpochResult]:
    """One co-evolution epoch: generate and interact (:func:`plan_epoch`), the agent's update, dual update and
    aggregate (:func:`finish_epoch`). ``genenv_lab.trl.GenEnvCurriculum`` runs the same two halves around a TRL
    trainer's epoch.

    ``generator`` writes the tasks when it is not the simulator itself (the ``offline_teacher`` baseline); ``after``
    as in :func:`finish_epoch`.
    """
    plan = plan_epoch(state, backend, domain, seeds, cfg, on_phase, generator)
    on_phase("rollouts + agent update")
    agent_update = update_agent(backend, cfg, agent_prompts(plan, domain), plan.rewards)
    plan.timer.seconds["rollouts"] = agent_update.rollout_s
    plan.timer.seconds["agent_update"] = agent_update.update_s
    return finish_epoch(plan, backend, domain, cfg, agent_update, on_phase, after)


@dataclass
class EpochPlan:
    """An epoch up to the agent's update: the simulator's generations (and, in epoch 1, the counterfactual set),
    the fresh tasks whose p̂ it measures, the agent's batch and the reward log its rollouts fill."""

    state: LoopState
    tasks: list[GeneratedTask]
    reference: list[GeneratedTask]
    fresh: list[BatchTask]
    batch: list[BatchTask]
    rewards: RewardLog
    timer: PhaseTimer
    start: float
    screening: Screening | None = None
    screen_outs: list = dataclasses.field(default_factory=list)


def plan_epoch(state: LoopState, backend: Backend, domain: Domain, seeds: Sequence[SeedTask], cfg: RunConfig,
               on_phase=lambda phase: None, generator: Backend | None = None, size: int | None = None) -> EpochPlan:
    """Phase 1 up to the rollouts: contexts, generation and validation (:func:`.simulator.generate_tasks`), the
    fresh tasks (screened for ``online_filter``) and the agent's batch (:func:`agent_batch`; ``size``: exactly that
    many tasks). Sampling comes from the epoch's seeds, so a resumed epoch plans what the uninterrupted one did."""
    epoch = state.epoch + 1
    rng = random.Random(epoch_seed(cfg.loop.seed, epoch))
    timer = PhaseTimer()
    start = time.perf_counter()
    on_phase("generate")
    with timer("generate"):
        reference = generate_reference(state, backend, domain, seeds, cfg, epoch)
        seed_torch(epoch_seed(cfg.loop.seed, epoch))  # sampling differs per epoch and a resumed epoch replays it
        tasks = generate_tasks(state, generator or backend, domain, seeds, cfg, rng, epoch)
    screening, screen_outs = None, []
    if cfg.variant.screens:
        on_phase("screening")
        with timer("screen"):
            fresh, screening, screen_outs = screen_fresh(tasks, state, backend, domain, cfg, rng)
    else:
        fresh = fresh_tasks(tasks, state, cfg, rng)
    batch = agent_batch(fresh, state, seeds, cfg, rng, size=size)
    return EpochPlan(state, tasks, reference, fresh, batch, RewardLog(domain, batch), timer, start, screening,
                     screen_outs)


def agent_prompts(plan: EpochPlan, domain: Domain) -> list[AgentPrompt]:
    """The agent's batch as the prompts of its update (each task keyed by its id)."""
    return [AgentPrompt(b.task_id, domain.agent_messages(b.spec)) for b in plan.batch]


def finish_epoch(plan: EpochPlan, backend: Backend, domain: Domain, cfg: RunConfig, agent_update: AgentUpdate,
                 on_phase=lambda phase: None, after: AfterUpdates | None = None) -> tuple[LoopState, EpochResult]:
    """The epoch after its rollouts (recorded in ``plan.rewards``) and the agent's update: scoring and the band
    (:func:`score_generations`), the RWR batch (:func:`.simulator.env_update_batch`) and the simulator's update,
    the pool (:func:`aggregate`), the counterfactual's p̂ and the epoch's record. ``after`` (the session's held-out
    evaluation and the processes' check, :func:`genenv_lab.coevolution.session.after_updates`) reads the updated
    models before the record is built, so the record is built once, with what it returns in it; the epoch's
    seconds (``wall_s``) stop before it."""
    state, rewards, timer, screening = plan.state, plan.rewards, plan.timer, plan.screening
    epoch = state.epoch + 1
    niches = task_niches(plan.tasks, domain)
    counts = add_counts(state.niches, list(niches.values()))
    tasks, measured = score_generations(plan.tasks, plan.fresh, rewards, cfg, niches, counts)
    attempts = rewards.attempts(epoch, cfg.agent.success_threshold)
    consumed = consume(state, backend, rewards, attempts, plan.screen_outs)
    on_phase("env update")
    with timer("env_update"):
        env_examples = env_update_batch(tasks, contexts_by_id(tasks), cfg)
        env_update = update_env(backend, cfg, env_examples) if env_examples else None
    env_version = state.env_version + (1 if env_update and env_update.steps > 0 else 0)
    new_state = aggregate(state, tasks, measured, epoch, env_version, cfg, plan.reference,
                          used_up=screening.used_up if screening else (), consumed=consumed, niches=counts)
    if new_state.reference:
        on_phase("reference rollouts")
        with timer("reference"):
            reference_p_hats = measure_reference(backend, domain, new_state.reference, cfg)
    else:
        reference_p_hats = []
    wall_s = time.perf_counter() - plan.start
    # the record reads the epoch's own state (its dry-run counts at the frontier the epoch trained at); the state
    # ``after`` returns (with this epoch's held-out frontier) is the next epoch's
    next_state, later = after(new_state) if after is not None else (new_state, {})
    record = epoch_record(epoch, tasks, measured, rewards, agent_update, env_update, new_state, timer, wall_s,
                          reference_p_hats, cfg, screening=screening,
                          screen_rollouts=sum(len(group) for group in plan.screen_outs), later=later)
    return next_state, EpochResult(record, tasks, attempts, plan.reference)


# ----------------------------------------------------------------------------------------------- named steps


def fresh_tasks(tasks: list[GeneratedTask], state: LoopState, cfg: RunConfig,
                rng: random.Random) -> list[BatchTask]:
    """The tasks whose p̂ this epoch measures: the new valid generations, or (fixed-set variants) ``budget`` tasks
    drawn from the fixed set."""
    if cfg.variant.fixed_set:
        fixed = fixed_set(tasks, state)
        return rng.sample(fixed, min(cfg.budget, len(fixed)))
    return [BatchTask(t.task_id, _spec(t), "generated") for t in tasks if t.valid]


def fixed_set(tasks: list[GeneratedTask], state: LoopState) -> list[BatchTask]:
    """A fixed-set variant's tasks to draw from: the pool (the set written in epoch 1; ``online_filter``: less the
    tasks it used up) and, in epoch 1, the set just written."""
    return [BatchTask(t.task_id, t.spec, "fixed") for t in state.pool] + \
        [BatchTask(t.task_id, _spec(t), "fixed") for t in tasks if t.valid]


def screen_fresh(tasks: list[GeneratedTask], state: LoopState, backend: Backend, domain: Domain, cfg: RunConfig,
                 rng: random.Random) -> tuple[list[BatchTask], Screening, list[list[str]]]:
    """A screening variant's fresh tasks: the candidates (``online_filter``: the fixed set;
    ``random_env_select``: the epoch's valid generations, ``loop.screen_factor`` × the usual number) in a random
    order, screened by G sampled agent rollouts per candidate without an update (as :func:`measure_reference`
    measures), in rounds, until ``budget`` tasks the variant keeps are found (``informative``: 0 < p̂ < 1;
    ``in_band``: abs(p̂ − α) ≤ k_min) or ``loop.screen_factor × budget`` candidates are screened
    (:func:`.screening.screen`, which also says how a short batch is topped up). Returns the batch's tasks, the
    screening and its completions (they count as agent rollouts). The order comes from the epoch's random stream
    and the rollouts from its torch seed, so a resumed epoch screens as the uninterrupted one did."""
    c = cfg.curriculum
    candidates = fixed_set(tasks, state) if cfg.variant.fixed_set else fresh_tasks(tasks, state, cfg, rng)
    by_id = {b.task_id: b for b in candidates}
    order = [b.task_id for b in rng.sample(candidates, len(candidates))]
    outs: list[list[str]] = []

    def measure(ids):
        p_hats, completions = sample_p_hats(backend, domain, [by_id[i].spec for i in ids], cfg)
        outs.extend(completions)
        return p_hats

    in_band = cfg.variant.keeps == "in_band"
    screening = screen(order, measure, cfg.budget, cfg.budget * cfg.loop.screen_factor,
                       keep=(lambda p: cur.in_band(p, c.alpha, c.k_min)) if in_band else informative,
                       alpha=c.alpha if in_band else None)
    return [by_id[tid] for tid in screening.batch], screening, outs


def agent_batch(fresh: list[BatchTask], state: LoopState, seeds: Sequence[SeedTask], cfg: RunConfig,
                rng: random.Random, size: int | None = None) -> list[BatchTask]:
    """The agent's batch: fresh tasks, replay from the pool, base seeds, padded with seeds to a multiple of
    ``prompts_per_step`` (``size``: to exactly that many tasks, a multiple of it no smaller than the batch)."""
    batch = list(fresh)
    taken = {b.task_id for b in fresh}
    candidates = [t for t in state.pool if t.task_id not in taken]
    replay = rng.sample(candidates, min(cfg.agent.replay_size, len(candidates)))
    batch += [BatchTask(t.task_id, t.spec, "replay") for t in replay]
    seed_order = rng.sample(list(seeds), len(seeds))
    n_seeds = cfg.agent.base_seeds
    step = cfg.agent.prompts_per_step
    while (len(batch) + n_seeds) % step or len(batch) + n_seeds == 0 or len(batch) + n_seeds < (size or 0):
        n_seeds += 1
    if size is not None and len(batch) + n_seeds != size:
        raise ValueError(f"an agent batch of {len(batch) + n_seeds} tasks does not fit size {size}")
    batch += [BatchTask(s.seed_id, s.spec, "seed") for s in (seed_order * (n_seeds // len(seeds) + 1))[:n_seeds]]
    seen: dict[str, int] = {}
    unique = []
    for b in batch:  # a seed drawn twice gets a distinct id per occurrence
        seen[b.task_id] = seen.get(b.task_id, 0) + 1
        unique.append(b if seen[b.task_id] == 1 else dataclasses.replace(b, task_id=f"{b.task_id}#{seen[b.task_id]}"))
    return unique


def task_niches(tasks: Sequence[GeneratedTask], domain: Domain) -> dict[str, str]:
    """The niche (:meth:`~genenv_lab.domains.Domain.niche`) of each valid generation, by task id: the niche
    penalty's memory counts them (``LoopState.niches``)."""
    return {t.task_id: domain.niche(_spec(t)) for t in tasks if t.valid}


def score_generations(tasks: list[GeneratedTask], fresh: list[BatchTask], rewards: RewardLog, cfg: RunConfig,
                      niches: Mapping[str, str] | None = None,
                      counts: Mapping[str, int] | None = None) -> tuple[list[GeneratedTask], dict[str, Measured]]:
    """p̂, R_env and band membership of every fresh task, and the epoch's generations with them (copies: ``tasks``
    is left as it was); the in-band generations carry their RWR weights (``genenv`` only: the baselines never update
    the simulator), with the niche penalty where ``cfg.niche_gamma`` > 0 (a labelled extension,
    :func:`genenv_lab.core.niches.niche_weights`: ``niches`` maps task ids to niches, ``counts`` holds the run's
    valid generations per niche, this epoch's included; ``genenv_placebo`` shuffles the multipliers with the
    epoch's own random stream, so a resumed epoch weighs as the uninterrupted one did)."""
    c = cfg.curriculum
    measured = {}
    for b in fresh:
        rs = rewards.rewards(b.task_id)
        if rs:
            p = cur.success_rate(rs, cfg.agent.success_threshold)
            measured[b.task_id] = Measured(p, cur.env_reward(p, c.alpha, c.beta, c.shape),
                                           cur.in_band(p, c.alpha, c.k_min))
    scored = [dataclasses.replace(t, p_hat=m.p_hat, env_reward=m.env_reward, in_band=m.in_band)
              if (m := measured.get(t.task_id)) else t for t in tasks]
    kept = [i for i, t in enumerate(scored) if t.in_band] if cfg.variant.trains_env else []
    gamma = cfg.niche_gamma if niches is not None else 0.0
    placebo = random.Random(f"niche-placebo:{cfg.loop.seed}:{tasks[0].epoch}") \
        if tasks and gamma and cfg.variant.niches == "placebo" else None
    weights = niche_weights([scored[i].env_reward for i in kept],
                            [niches.get(scored[i].task_id, "") for i in kept] if niches else [""] * len(kept),
                            counts or {}, c.rwr_lambda, gamma, placebo)
    for i, w in zip(kept, weights):
        scored[i] = dataclasses.replace(scored[i], weight=w)
    return scored, measured


def aggregate(state: LoopState, tasks: list[GeneratedTask], measured: dict[str, Measured], epoch: int,
              env_version: int, cfg: RunConfig, reference: Sequence[GeneratedTask] = (), *,
              used_up: Sequence[str] = (), consumed: Consumption | None = None,
              niches: Mapping[str, int] | None = None) -> LoopState:
    """D_train ← D_train ∪ valid generated tasks (tasks, not frozen traces: GRPO re-rolls them).

    ``filter_only`` reproduces the authors' release: the epoch's tasks ranked by p̂ lose their easiest and hardest
    10 % by rank (``k = int(0.1·n)``, slicing ``[k:-k]``, so that fewer than 10 tasks leave nothing, as in the
    release), and the pool keeps only the last epoch's tasks. ``online_filter``'s ``used_up`` tasks leave it.
    ``niches``: the run's valid generations per niche after this epoch (the state's, when not given).
    """
    new = [PoolTask(t.task_id, t.root_id, t.epoch, _spec(t), t.p_hat) for t in tasks if t.valid]
    pool = next_pool(state.pool, [t for t in new if t.task_id in measured], new, cfg, used_up=used_up)
    ref = state.reference or [PoolTask(t.task_id, t.root_id, t.epoch, _spec(t)) for t in reference if t.valid]
    return LoopState(epoch=epoch, env_version=env_version, pool=pool, reference=ref,
                     consumed=state.consumed if consumed is None else consumed, frontier=state.frontier,
                     niches=dict(state.niches if niches is None else niches))


def consume(state: LoopState, backend: Backend, rewards: RewardLog, attempts: Sequence[Attempt],
            screen_outs: Sequence[Sequence[str]]) -> Consumption:
    """The state's consumption plus this epoch's: every completion of the GRPO pass (the reward log holds every
    process's) and of the screening, their tokens (:func:`completion_tokens`), and the non-seed tasks of the GRPO
    batch with their prompts (the attempts table's rows, from which a resume rebuilds the same sets)."""
    texts = [c for recs in rewards.records.values() for c, _ in recs] + [c for group in screen_outs for c in group]
    return state.consumed.add(len(texts), completion_tokens(backend, texts),
                              [(a.task_id, a.prompt) for a in attempts if a.source != "seed"])


def completion_tokens(backend: Backend, texts: Sequence[str]) -> int | None:
    """Tokens of the agent's completions ``texts`` as the backend's tokenizer counts them, or None when the backend
    cannot count (it has no ``completion_tokens``): a count it cannot make honestly is left unknown."""
    count = getattr(backend, "completion_tokens", None)
    if count is None:
        return None
    return int(sum(count(list(texts)))) if texts else 0


def sample_p_hats(backend: Backend, domain: Domain, specs: Sequence[TaskSpec],
                  cfg: RunConfig) -> tuple[list[float], list[list[str]]]:
    """p̂ of the current agent on each task, G sampled rollouts each and no update, with the completions: the
    counterfactual's measurement and ``online_filter``'s screening."""
    if not specs:
        return [], []
    a = cfg.agent
    outs = backend.generate("agent", [domain.agent_messages(s) for s in specs], n=a.num_generations,
                            max_new_tokens=a.max_completion_length, temperature=a.temperature)
    return [cur.success_rate([domain.safe_score(s, o)[0] for o in group], a.success_threshold)
            for s, group in zip(specs, outs)], outs


def measure_reference(backend: Backend, domain: Domain, reference: Sequence[PoolTask], cfg: RunConfig) -> list[float]:
    """p̂ of the current agent on the counterfactual tasks: G sampled rollouts each, no update."""
    return sample_p_hats(backend, domain, [t.spec for t in reference], cfg)[0]


def _spec(t: GeneratedTask) -> TaskSpec:
    return TaskSpec(question=t.question, answer=t.answer, text=t.text, features=dict(t.features))
