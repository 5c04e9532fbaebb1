"""The simulator's side of an epoch (Algorithm 1, phases 1 and 2 for π_env): each parent's context (seed task and
lineage statistics), the variations the simulator writes, their parsing into tasks, the counterfactual set the
untrained simulator writes once, and the weighted batch of in-band generations for the RWR update.
:func:`genenv_lab.coevolution.loop.plan_epoch` and :func:`~genenv_lab.coevolution.loop.finish_epoch` call these steps
by name (the loop's
epoch and :class:`genenv_lab.trl.GenEnvCurriculum` both run those two); notebook 03 walks through them one by one.
"""

from __future__ import annotations

import dataclasses
import json
import math
import random
from typing import Sequence

from genenv_lab.backends.base import Backend, EnvExample
from genenv_lab.config import RunConfig
from genenv_lab.core.seeds import epoch_seed
from genenv_lab.backends.distributed import processes
from genenv_lab.domains import Domain, LineageStats, SeedTask
from genenv_lab.domains.base import reply_prefill
from genenv_lab.core.curriculum import nearest_band
from genenv_lab.core.types import GeneratedTask, LoopState, Parent, PoolTask


def generate_tasks(state: LoopState, generator: Backend, domain: Domain, seeds: Sequence[SeedTask], cfg: RunConfig,
                   rng: random.Random, epoch: int) -> list[GeneratedTask]:
    """This epoch's generations: n variations of each chosen parent (genenv, random_env; ``loop.screen_factor`` × n
    for random_env_select, which screens them); one variation each of
    ``budget`` parents without statistics (filter_only); the whole fixed set in epoch 1 and nothing after
    (static, online_filter, offline_teacher)."""
    v = cfg.variant
    if v.fixed_set:
        if state.epoch > 0:
            return []
        per_seed = cfg.env.static_variations if v.fixed_set == "untrained" else math.ceil(
            cfg.env.teacher_data_multiplier * cfg.loop.epochs * cfg.budget / len(seeds))
        parents = [Parent(s.seed_id, s.seed_id, s.spec) for s in seeds]
        n = per_seed
    elif v.one_variation_each:
        parents, n = choose_parents(state, seeds, cfg, rng, count=cfg.budget), 1
    else:  # an oversampling variant writes screen_factor× as many, to choose among (random_env_select)
        parents = choose_parents(state, seeds, cfg, rng)
        n = cfg.env.n_variations * (cfg.loop.screen_factor if v.oversamples else 1)
    contexts = build_env_contexts(parents, state, domain, cfg)
    raw = generator.generate("env", contexts, n=n, **env_sampling(cfg, domain))
    return parse_generations(raw, parents, contexts, domain, epoch, state.env_version)


def env_sampling(cfg: RunConfig, domain: Domain) -> dict:
    """The simulator's sampling settings for ``generate``: the config's budget and temperature, and the domain's
    format constraint (stop strings, task alphabet)."""
    e = cfg.env
    return {"max_new_tokens": e.max_new_tokens, "temperature": e.temperature, "top_p": e.top_p,
            "stop": domain.env_stop, "alphabet": domain.env_alphabet}


def generate_reference(state: LoopState, backend: Backend, domain: Domain, seeds: Sequence[SeedTask],
                       cfg: RunConfig, epoch: int) -> list[GeneratedTask]:
    """The counterfactual set, written in epoch 1 by the untrained simulator (before any env update), with its own
    random stream (that of "epoch 0") so that every variant of a comparison measures the same tasks for a seed."""
    if not cfg.loop.reference_tasks or state.epoch > 0 or state.reference:
        return []
    seed_torch(epoch_seed(cfg.loop.seed, 0))
    n = cfg.env.n_variations
    parents = [Parent(s.seed_id, s.seed_id, s.spec) for s in
               (list(seeds) * (cfg.loop.reference_tasks // len(seeds) + 1))][: math.ceil(cfg.loop.reference_tasks / n)]
    contexts = build_env_contexts(parents, LoopState(), domain, cfg)
    raw = backend.generate("env", contexts, n=n, **env_sampling(cfg, domain))
    tasks = parse_generations(raw, parents, contexts, domain, epoch, 0)[: cfg.loop.reference_tasks]
    return [dataclasses.replace(t, task_id="ref-" + t.task_id) for t in tasks]


def choose_parents(state: LoopState, seeds: Sequence[SeedTask], cfg: RunConfig, rng: random.Random,
                   count: int | None = None) -> list[Parent]:
    """This epoch's parents (``env.parents``): base seeds, every other one from the pool when it has tasks; or
    (``band``) each from the recently measured pool tasks at the agent's frontier (:func:`band_parents`), as
    ``seeds_and_pool`` until one is measured."""
    frontier = band_parents(state, cfg) if cfg.env.parents == "band" else []
    out = []
    for k in range(cfg.env.seeds_per_epoch if count is None else count):
        if frontier or (state.pool and k % 2 == 1):
            t = rng.choice(frontier or state.pool)
            out.append(Parent(t.task_id, t.root_id, t.spec))
        else:
            s = rng.choice(seeds)
            out.append(Parent(s.seed_id, s.seed_id, s.spec))
    return out


def band_parents(state: LoopState, cfg: RunConfig) -> list[PoolTask]:
    """The pool tasks measured in the last ``env.stats_window`` epochs whose p̂ is in the band, or, when none is,
    those nearest α (:func:`~genenv_lab.core.curriculum.nearest_band`); [] when none was measured. A variation
    stays near its parent's difficulty more reliably than it follows the hint, so parents at p̂ ≈ α keep the
    simulator's tasks at the agent's frontier as it moves."""
    recent = [t for t in state.pool if t.epoch > state.epoch - cfg.env.stats_window]
    c = cfg.curriculum
    return [recent[i] for i in nearest_band([t.p_hat for t in recent], c.alpha, c.k_min)]


def lineage_stats(state: LoopState, root_id: str, cfg: RunConfig, domain: Domain | None = None) -> LineageStats:
    """Successes/rollouts of the last ``stats_window`` epochs of tasks generated in this seed's lineage, and the
    difficulty summaries and p̂ of its ``RECENT_SHOWN`` newest measured tasks (with ``domain``)."""
    g = cfg.agent.num_generations
    recent = [t for t in state.pool if t.root_id == root_id and t.epoch > state.epoch - cfg.env.stats_window
              and not math.isnan(t.p_hat)]
    successes = sum(round(t.p_hat * g) for t in recent)
    shown = tuple((domain.describe(t.spec.features), t.p_hat) for t in recent[-RECENT_SHOWN:]) if domain else ()
    return LineageStats(successes=successes, rollouts=len(recent) * g, recent=shown)


RECENT_SHOWN = 3
"""Recent tasks of a lineage listed in the simulator's context."""


def build_env_contexts(parents: Sequence[Parent], state: LoopState, domain: Domain,
                       cfg: RunConfig) -> list[list[dict[str, str]]]:
    """Seed task + lineage statistics (``filter_only``: no statistics, as in the authors' release)."""
    blind = not cfg.variant.shows_statistics
    c = cfg.curriculum
    return [domain.env_messages(p.spec, LineageStats() if blind else lineage_stats(state, p.root_id, cfg, domain),
                                c.alpha, c.k_min) for p in parents]


def parse_generations(raw: list[list[str]], parents: Sequence[Parent], contexts, domain: Domain, epoch: int,
                      env_version: int) -> list[GeneratedTask]:
    """Every generation becomes a GeneratedTask: valid with its spec, or rejected with the domain's reason."""
    tasks = []
    for i, (parent, context, outs) in enumerate(zip(parents, contexts, raw)):
        for j, text in enumerate(outs):
            text = reply_prefill(context) + text
            parsed = domain.safe_parse(text)
            s = parsed.spec if parsed.valid else None
            found = dict(question=s.question, answer=s.answer, text=s.text, features=dict(s.features)) if s else {}
            tasks.append(GeneratedTask(task_id=f"e{epoch:03d}-s{i:02d}-v{j:02d}", epoch=epoch,
                                       env_version=env_version, parent_id=parent.parent_id, root_id=parent.root_id,
                                       context=json.dumps(context), raw=text, valid=parsed.valid,
                                       reject_reason=parsed.reason, **found))
    return tasks


def contexts_by_id(tasks: list[GeneratedTask]) -> dict[str, list[dict[str, str]]]:
    return {t.task_id: json.loads(t.context) for t in tasks}


def env_update_batch(tasks: list[GeneratedTask], contexts: dict[str, list[dict[str, str]]],
                     cfg: RunConfig) -> list[EnvExample]:
    """Weighted (context → canonical task text) pairs of the in-band generations (none for ``random_env``).

    When the context prefills the reply's start, the target is the rest of the canonical text.
    """
    out = []
    for t in tasks:
        if t.weight > 0:
            start = reply_prefill(contexts[t.task_id])
            target = t.text[len(start):] if start and t.text.startswith(start) else t.text
            out.append(EnvExample(contexts[t.task_id], target, t.weight))
    return out


def seed_torch(seed: int) -> None:
    """Seed this process's sampling (each process of a data-parallel job its own stream; process 0 ``seed``)."""
    import torch

    torch.manual_seed(processes().seed(seed))
