"""The co-evolution loop: one epoch reads like Algorithm 1 of GenEnv (arXiv 2512.19682).

Phase 1  generate and interact: env contexts (seed + lineage statistics) → π_env variations → parse/validate →
         agent rollouts (inside the GRPO pass) → p̂ and R_env per generated task.
Phase 2  dual update: π_agent by its trainer (:func:`.agent_trainers.update_agent`, GRPO by default; the same
         rollouts), π_env by RWR on in-band generations.
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

``run()`` is a generator of :class:`EpochRecord` that the CLI, the notebooks and the app all drive. Around it:
the simulator's steps (:mod:`.simulator`), the pool across epochs and resume (:mod:`.state`), the rollouts' reward
log (:mod:`.rewards`), the epoch's statistics (:mod:`.epoch_stats`), what each baseline changes
(``config.VARIANT_TABLE``), the held-out evaluation (:mod:`.heldout`), the screening of ``online_filter``
(:mod:`.screening`).
"""

from __future__ import annotations

import dataclasses
import math
import random
import shutil
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterator, Sequence

from tqdm.auto import tqdm

from genenv_lab.core import curriculum as cur
from genenv_lab.trainers.agent import update_agent
from genenv_lab.trainers.env import update_env
from genenv_lab.backends.base import AgentPrompt, AgentUpdate, Backend
from genenv_lab.backends.factory import check_engine, make_backend
from genenv_lab.config import ConfigError, RunConfig
from genenv_lab.core.seeds import epoch_seed
from genenv_lab.domains import Domain, SeedTask, domain_of
from genenv_lab.rundir.trackers import check_tracker, open_tracker, scalars
from genenv_lab.core.dryrun import FRONTIER_KEY
from genenv_lab.core.efficiency import Consumption
from genenv_lab.coevolution.epoch_stats import PhaseTimer, epoch_record
from genenv_lab.coevolution.heldout import check_eval_data, evaluate_epoch
from genenv_lab.backends.distributed import ADAPTER_HASHES, Processes, processes
from genenv_lab.rundir.layout import BASELINE, adapter_dir
from genenv_lab.rundir.read import BASELINE_PREFIXES, read_baseline, read_state
from genenv_lab.rundir.write import open_run
from genenv_lab.coevolution.rewards import RewardLog
from genenv_lab.core.screening import Screening, screen
from genenv_lab.coevolution.simulator import (contexts_by_id, env_update_batch, generate_reference, generate_tasks,
    seed_torch)
from genenv_lab.coevolution.state import next_pool, restore_state
from genenv_lab.core.types import (Attempt, BatchTask, EpochRecord, EpochResult, GeneratedTask, LoopState, Measured,
    PoolTask, TaskSpec)


# ------------------------------------------------------------------------------------------------ Algorithm 1

def run_epoch(state: LoopState, backend: Backend, domain: Domain, seeds: Sequence[SeedTask], cfg: RunConfig,
              on_phase=lambda phase: None, generator: Backend | None = None) -> tuple[LoopState, EpochResult]:
    """One co-evolution epoch: generate and interact (:func:`plan_epoch`), the agent's update, dual update and
    aggregate (:func:`finish_epoch`). ``genenv_lab.trl.GenEnvCurriculum`` runs the same two halves around a TRL
    trainer's epoch.

    ``generator`` writes the tasks when it is not the simulator itself (the ``offline_teacher`` baseline).
    """
    plan = plan_epoch(state, backend, domain, seeds, cfg, on_phase, generator)
    on_phase("rollouts + agent update")
    agent_update = update_agent(backend, cfg, agent_prompts(plan, domain), plan.rewards)
    plan.timer.seconds["rollouts"] = agent_update.rollout_s
    plan.timer.seconds["agent_update"] = agent_update.update_s
    return finish_epoch(plan, backend, domain, cfg, agent_update, on_phase)


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
                 on_phase=lambda phase: None) -> tuple[LoopState, EpochResult]:
    """The epoch after its rollouts (recorded in ``plan.rewards``) and the agent's update: scoring and the band
    (:func:`score_generations`), the RWR batch (:func:`.simulator.env_update_batch`) and the simulator's update,
    the pool (:func:`aggregate`), the counterfactual's p̂ and the epoch's record."""
    state, rewards, timer, screening = plan.state, plan.rewards, plan.timer, plan.screening
    epoch = state.epoch + 1
    tasks, measured = score_generations(plan.tasks, plan.fresh, rewards, cfg)
    attempts = rewards.attempts(epoch, cfg.agent.success_threshold)
    consumed = consume(state, backend, rewards, attempts, plan.screen_outs)
    on_phase("env update")
    with timer("env_update"):
        env_examples = env_update_batch(tasks, contexts_by_id(tasks), cfg)
        env_update = update_env(backend, cfg, env_examples) if env_examples else None
    env_version = state.env_version + (1 if env_update and env_update.steps > 0 else 0)
    new_state = aggregate(state, tasks, measured, epoch, env_version, cfg, plan.reference,
                          used_up=screening.used_up if screening else (), consumed=consumed)
    if new_state.reference:
        on_phase("reference rollouts")
        with timer("reference"):
            reference_p_hats = measure_reference(backend, domain, new_state.reference, cfg)
    else:
        reference_p_hats = []
    record = epoch_record(epoch, tasks, measured, rewards, agent_update, env_update, new_state, timer,
                          time.perf_counter() - plan.start, reference_p_hats, cfg, screening=screening,
                          screen_rollouts=sum(len(group) for group in plan.screen_outs))
    return new_state, EpochResult(record, tasks, attempts, plan.reference)


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
    """``online_filter``'s fresh tasks: the fixed set in a random order, screened by G sampled agent rollouts per
    candidate without an update (as :func:`measure_reference` measures), in rounds, until ``budget`` tasks at
    0 < p̂ < 1 are found or ``loop.screen_factor × budget`` candidates are screened (:func:`.screening.screen`,
    which also says how a short batch is topped up). Returns the batch's tasks, the screening and its completions
    (they count as agent rollouts). The order comes from the epoch's random stream and the rollouts from its torch
    seed, so a resumed epoch screens as the uninterrupted one did."""
    fixed = fixed_set(tasks, state)
    by_id = {b.task_id: b for b in fixed}
    order = [b.task_id for b in rng.sample(fixed, len(fixed))]
    outs: list[list[str]] = []

    def measure(ids):
        p_hats, completions = sample_p_hats(backend, domain, [by_id[i].spec for i in ids], cfg)
        outs.extend(completions)
        return p_hats

    screening = screen(order, measure, cfg.budget, cfg.budget * cfg.loop.screen_factor)
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


def score_generations(tasks: list[GeneratedTask], fresh: list[BatchTask], rewards: RewardLog,
                      cfg: RunConfig) -> tuple[list[GeneratedTask], dict[str, Measured]]:
    """p̂, R_env and band membership of every fresh task, and the epoch's generations with them (copies: ``tasks``
    is left as it was); the in-band generations carry their RWR weights (``genenv`` only: the baselines never update
    the simulator)."""
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
    for i, w in zip(kept, cur.rwr_weights([scored[i].env_reward for i in kept], c.rwr_lambda)):
        scored[i] = dataclasses.replace(scored[i], weight=w)
    return scored, measured


def aggregate(state: LoopState, tasks: list[GeneratedTask], measured: dict[str, Measured], epoch: int,
              env_version: int, cfg: RunConfig, reference: Sequence[GeneratedTask] = (), *,
              used_up: Sequence[str] = (), consumed: Consumption | None = None) -> LoopState:
    """D_train ← D_train ∪ valid generated tasks (tasks, not frozen traces: GRPO re-rolls them).

    ``filter_only`` reproduces the authors' release: the epoch's tasks ranked by p̂ lose their easiest and hardest
    10 % by rank (``k = int(0.1·n)``, slicing ``[k:-k]``, so that fewer than 10 tasks leave nothing, as in the
    release), and the pool keeps only the last epoch's tasks. ``online_filter``'s ``used_up`` tasks leave it.
    """
    new = [PoolTask(t.task_id, t.root_id, t.epoch, _spec(t), t.p_hat) for t in tasks if t.valid]
    pool = next_pool(state.pool, [t for t in new if t.task_id in measured], new, cfg, used_up=used_up)
    ref = state.reference or [PoolTask(t.task_id, t.root_id, t.epoch, _spec(t)) for t in reference if t.valid]
    return LoopState(epoch=epoch, env_version=env_version, pool=pool, reference=ref,
                     consumed=state.consumed if consumed is None else consumed, frontier=state.frontier)


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


# ------------------------------------------------------------------------------------------------------- run()

def make_teacher(cfg: RunConfig, domain: Domain) -> Backend | None:
    """The ``offline_teacher`` baseline's generator: the teacher model with fresh (identity) adapters."""
    if cfg.variant.fixed_set != "teacher":
        return None
    return make_backend(cfg.replace(model={"name_or_path": cfg.env.teacher_model}), domain)


STOP_REQUESTED = threading.Event()
"""Set by the CLI's SIGINT/SIGTERM handler; :func:`run` stops (as ``interrupted``) before its next phase even if
the KeyboardInterrupt raised by the handler was swallowed by library code."""


def stop_on_signals(*, once: bool = False) -> None:
    """Ctrl-C, SIGTERM (the lab's stop escalates to it) and SIGHUP end a run as ``interrupted`` between two writes:
    each sets :data:`STOP_REQUESTED` and raises KeyboardInterrupt (with ``once``, only the first does: a run of
    ``compare --jobs`` is signalled by the terminal and by its comparison, and the second must not break the first's
    clean stop).

    Python leaves SIGINT ignored when the process started with it ignored, as every job a non-interactive shell
    puts in the background does (``cmd &``); a run started that way could not be stopped cleanly."""
    import signal

    def _stop(signum, frame):
        # Also remembered: a library that swallows KeyboardInterrupt (a bare ``except:`` in an import) would
        # otherwise lose the request; the loop checks the flag before every phase and stops there.
        if once and STOP_REQUESTED.is_set():
            return
        STOP_REQUESTED.set()
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
    # a closed terminal or SSH session (SIGHUP) ends the run the same way, unless started under nohup (ignored)
    if signal.getsignal(signal.SIGHUP) is not signal.SIG_IGN:
        signal.signal(signal.SIGHUP, _stop)


def _stop_if_requested(procs: Processes) -> None:
    """Stop (as ``interrupted``) when a stop was requested, here or (several processes) in any process, so that all
    stop at the same phase."""
    if procs.any(STOP_REQUESTED.is_set()):
        raise KeyboardInterrupt("stop requested")


def preflight(cfg: RunConfig, *, models: bool = True) -> None:
    """Everything that can fail in seconds, checked before the run folder is written or a model loads: the engine,
    the models' sources and the LoRA targets (``models``: unless a backend is given), the held-out data, the
    tracker's package."""
    if models:
        from genenv_lab.models.loading import check_model_source, check_target_modules  # torch: only when a model loads

        check_engine(cfg)
        check_model_source(cfg.model.name_or_path)
        if cfg.loop.variant == "offline_teacher":
            check_model_source(cfg.env.teacher_model)
    try:  # a setting the model or the data cannot take: one line, as a bad config value is
        if models:
            check_target_modules(cfg.model.name_or_path, cfg.model.target_modules, cfg.model.targets_chosen)
        check_eval_data(cfg)
    except ConfigError:
        raise
    except (ValueError, TypeError) as exc:
        raise ConfigError(str(exc)) from None
    check_tracker(cfg.loop.report_to)


@dataclass
class _Session:
    """What a run holds from set-up to finish: the domain and its seeds, the engine, the writer, the tracker, the
    progress bar and where held-out evaluation writes."""

    cfg: RunConfig
    writer: Any
    procs: Processes
    domain: Domain
    seeds: list[SeedTask]
    backend: Backend
    bar: Any
    tracker: Any
    eval_dir: Path

    def on_phase(self, state: LoopState, phase: str) -> None:
        _stop_if_requested(self.procs)
        self.bar.set_postfix_str(f"epoch {state.epoch + 1}: {phase}")


def run(cfg: RunConfig, out: str | Path, *, resume: bool = False, backend: Backend | None = None,
        progress: bool = True) -> Iterator[EpochRecord]:
    """Run (or resume) co-evolution, yielding one EpochRecord per completed epoch: set-up, epochs, finish."""
    preflight(cfg, models=backend is None)
    procs = processes()
    writer = open_run(out, cfg, resume, procs)
    saved_env_version = int(read_state(writer.dir).get("env_version", 0)) if writer.last_epoch else 0
    # held-out evaluation files: the main process's go into the run, the others' (the same) into a scratch folder
    eval_dir = writer.dir if procs.is_main else Path(tempfile.mkdtemp(prefix="genenv-eval-"))
    state: LoopState | None = None
    session: _Session | None = None
    try:  # from here on an interrupt (Ctrl-C, the lab's Stop) leaves the run marked "interrupted"
        session, state = set_up(cfg, writer, procs, backend, eval_dir, saved_env_version, progress)
        while state.epoch < cfg.loop.epochs:
            state, record = next_epoch(session, state)
            yield record
        writer.finish(state.env_version)
    except KeyboardInterrupt:
        writer.finish(saved_env_version if state is None else state.env_version, status="interrupted")
        raise
    except Exception as exc:
        writer.fail(exc, saved_env_version if state is None else state.env_version)
        raise
    finally:
        writer.release()
        if eval_dir != writer.dir:
            shutil.rmtree(eval_dir, ignore_errors=True)
        if session is not None:
            session.bar.close()
            if session.tracker is not None:
                session.tracker.close()


def set_up(cfg: RunConfig, writer, procs: Processes, backend: Backend | None, eval_dir: Path,
           saved_env_version: int, progress: bool) -> tuple[_Session, LoopState]:
    """The domain and seeds, the engine (its adapters as the last committed epoch left them, on a resume), the
    loop state, the tracker and the progress bar; the untrained agent's held-out score (epoch 0) once."""
    domain = domain_of(cfg)
    for warning in cfg.warnings():
        writer.event("warning: " + warning)
        warnings.warn(warning, stacklevel=3)
    backend = backend or make_backend(cfg, domain)
    state = restore_state(writer.dir, writer.last_epoch, saved_env_version, cfg) if writer.last_epoch else LoopState()
    if writer.last_epoch:
        backend.load_adapters(adapter_dir(writer.dir, writer.last_epoch))
    tracker = open_tracker(cfg.loop.report_to, writer.dir, cfg.to_dict()) if procs.is_main else None
    bar = tqdm(total=cfg.loop.epochs, initial=state.epoch, desc="co-evolution", unit="epoch",
               disable=not (progress and procs.is_main))
    session = _Session(cfg, writer, procs, domain, domain.seed_tasks(), backend, bar, tracker, eval_dir)
    if cfg.eval.every and state.epoch == 0 and (writer.dir / BASELINE).is_file():
        state = with_frontier(state, read_baseline(writer.dir, BASELINE_PREFIXES))  # resumed before epoch 1
    elif cfg.eval.every and state.epoch == 0:
        bar.set_postfix_str(f"epoch 0: eval {cfg.eval.benchmark} (untrained agent)")
        scores = evaluate_epoch(backend, cfg, eval_dir, 0)
        writer.write_baseline(scores)
        state = with_frontier(state, scores)
    return session, state


def next_epoch(s: _Session, state: LoopState) -> tuple[LoopState, EpochRecord]:
    """One epoch (:func:`run_epoch`), its held-out score when due, and its commit (records, tables, adapters)."""
    cfg, backend = s.cfg, s.backend
    _stop_if_requested(s.procs)
    teacher = make_teacher(cfg, s.domain) if state.epoch == 0 else None
    state, result = run_epoch(state, backend, s.domain, s.seeds, cfg, generator=teacher,
                              on_phase=lambda phase: s.on_phase(state, phase))
    del teacher
    if cfg.eval.every and state.epoch % cfg.eval.every == 0:
        s.bar.set_postfix_str(f"epoch {state.epoch}: eval {cfg.eval.benchmark}")
        scores = evaluate_epoch(backend, cfg, s.eval_dir, state.epoch)
        result.record.extra.update(scores)
        state = with_frontier(state, scores)
    if s.procs.world_size > 1:  # every process must hold the same adapters before the epoch is committed
        result.record.extra[ADAPTER_HASHES] = s.procs.check_in_sync(backend, backend.adapters)
    s.writer.commit_epoch(result.record, result.tasks, result.attempts,
                          backend.save_adapters if cfg.loop.save_adapters else None, reference=result.reference)
    if s.tracker is not None:
        s.tracker.log(state.epoch, scalars(result.record.to_dict()))  # nothing once the tracker stopped
        if (why := s.tracker.new_failure()) is not None:  # never the run's failure: said once, the run goes on
            s.writer.event(f"warning: tracker {s.tracker.kind} stopped ({why}); the run goes on, "
                           "epochs.jsonl holds every record")
            warnings.warn(f"tracker {s.tracker.kind} stopped: {why}", stacklevel=2)
    s.bar.update(1)
    s.bar.set_postfix(valid=f"{result.record.valid_frac:.2f}", p_hat=_f(result.record.p_hat_mean),
                      in_band=_f(result.record.in_band_frac))
    return state, result.record


def with_frontier(state: LoopState, scores: dict) -> LoopState:
    """The state carrying the held-out frontier of an evaluation's ``scores`` (``heldout/frontier_level``), which
    the next epoch's dry-run counts are read at; unchanged when the evaluation has none (a benchmark, a domain
    without levels)."""
    frontier = scores.get(FRONTIER_KEY)
    return state if frontier is None else replace(state, frontier=float(frontier))


def _f(x: float) -> str:
    return "n/a" if x is None or math.isnan(x) else f"{x:.2f}"
