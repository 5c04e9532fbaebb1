"""Evaluate a model (a hub id, a local directory, or a run directory's agent adapter) on a benchmark: the model-side
half of evaluation, beside the loop (``genenv_lab.evaluation`` holds the pure scorers it calls).

The model answers every item greedily with the ``agent`` adapter; its raw outputs become a predictions JSONL file,
which :func:`genenv_lab.evaluation.score_predictions` scores with the benchmark's official metric (or the
approximation its summary names). So a model evaluated here and predictions produced anywhere else are scored by
the same code. During a run, :func:`evaluate_epoch` is the held-out score logged per epoch (``eval/*``; a domain's
held-out set with levels adds its frontier, ``heldout/frontier_level``), :func:`seed_probe` the greedy answers to the
run's seed tasks and a probe file (``loop.seed_probe``, ``loop.probe``; training-side readings), and
:func:`check_eval_data` fails at once when its benchmark data is missing.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Sequence

from genenv_lab.core import curriculum as cur
from genenv_lab.backends.base import Backend
from genenv_lab.config import RunConfig
from genenv_lab.domains import Domain, domain_of
from genenv_lab.core.dryrun import frontier_level, level_of
from genenv_lab.evaluation import bfcl_multi_turn as mt
from genenv_lab.evaluation.common import resolve_data_dir
from genenv_lab.evaluation.runner import (chosen_categories, get_benchmark, load_items, prompt_messages,
    score_predictions)
from genenv_lab.core.types import TaskSpec
from genenv_lab.core.metrics import (EVAL, EVAL_DOMAIN, HELDOUT_FRONTIER_LEVEL, PROBE_REFERENCE_GREEDY,
                                     PROBE_SEEDS_GREEDY, PROBE_SEEDS_MISSED, PROBE_SET_GREEDY,
                                     PROBE_SET_MISSED)


def predict(backend, benchmark: str, *, data_dir=None, category=None, limit: int | None = None,
            max_new_tokens: int = 128, batch_size: int = 8, out_path: str | Path, progress: bool = True,
            protocol: str = "official") -> Path:
    """Greedy answers of ``backend``'s agent adapter to each item, written as ``{"id", "prediction"}`` JSONL. A BFCL
    multi-turn entry is a conversation (:class:`~genenv_lab.evaluation.bfcl_multi_turn.Conversation`, under
    ``protocol``) whose prediction is its per-turn lists of raw replies."""
    from tqdm.auto import tqdm

    items = [it for group in load_items(benchmark, data_dir, category, limit).values() for it in group]
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    room = getattr(backend, "prompt_room", None)
    too_long: list[str] = []
    single = [it for it in items if not isinstance(it, mt.MultiTurnItem)]
    multi = [it for it in items if isinstance(it, mt.MultiTurnItem)]
    with open(out, "w", encoding="utf-8") as fh, tqdm(total=len(items), desc=f"eval {benchmark}",
                                                       disable=not progress) as bar:
        for start in range(0, len(single), batch_size):
            chunk = single[start:start + batch_size]
            fits = []
            for it in chunk:
                messages = prompt_messages(benchmark, it)
                if room is None or room(messages) >= max_new_tokens:
                    fits.append((it, messages))
                else:
                    too_long.append(it.id)
            replies = backend.generate("agent", [m for _, m in fits], n=1, max_new_tokens=max_new_tokens,
                                       temperature=0.0) if fits else []
            for (it, _), reply in zip(fits, replies):
                fh.write(json.dumps({"id": it.id, "prediction": reply[0]}, ensure_ascii=False) + "\n")
            bar.update(len(chunk))
        for start in range(0, len(multi), batch_size):
            chunk = [mt.Conversation(it, protocol) for it in multi[start:start + batch_size]]
            too_long += converse(backend, chunk, max_new_tokens)
            for conv in chunk:
                fh.write(json.dumps({"id": conv.item.id, "prediction": conv.prediction}, ensure_ascii=False) + "\n")
            bar.update(len(chunk))
    if too_long:  # no prediction (or a conversation cut where it stopped fitting): counted in the summary
        (out.parent / "too_long.json").write_text(json.dumps(too_long))
    return out


def converse(backend, conversations: list, max_new_tokens: int) -> list[str]:
    """Run multi-turn conversations to their end, one model step for all unfinished ones at a time (one batched
    ``generate`` per step); a conversation whose next prompt no longer fits the model's context is cut there.
    Returns the ids of those cut."""
    room = getattr(backend, "prompt_room", None)
    cut: list[str] = []
    while True:
        waiting = [(c, c.messages()) for c in conversations if not c.finished]
        if not waiting:
            return cut
        fits = []
        for conv, messages in waiting:
            if room is None or room(messages) >= max_new_tokens:
                fits.append((conv, messages))
            else:
                conv.cut()
                cut.append(conv.item.id)
        if not fits:
            continue
        replies = backend.generate("agent", [m for _, m in fits], n=1, max_new_tokens=max_new_tokens,
                                   temperature=0.0)
        for (conv, _), reply in zip(fits, replies):
            conv.reply(reply[0])


def evaluate_backend(backend, benchmark: str, *, out_dir: str | Path, data_dir=None, category=None,
                     limit: int | None = None, max_new_tokens: int = 128, progress: bool = True,
                     scoring: str | None = None, protocol: str | None = None) -> dict[str, Any]:
    """Predict, then score: writes ``predictions.jsonl``, ``results.jsonl`` and ``summary.json`` in ``out_dir``.
    The summary's ``scoring`` says which verdict was used (``official`` unless ``scoring`` names another)."""
    start = time.perf_counter()
    out = Path(out_dir)
    preds = predict(backend, benchmark, data_dir=data_dir, category=category, limit=limit,
                    max_new_tokens=max_new_tokens, out_path=out / "predictions.jsonl", progress=progress,
                    protocol=protocol or "official")
    gen_s = time.perf_counter() - start
    if category is None:  # the categories predicted, named: an item without a prediction (too long) scores 0
        spec = get_benchmark(benchmark)
        category = chosen_categories(spec, resolve_data_dir(spec, data_dir), None)
    summary = score_predictions(benchmark, preds, data_dir=data_dir, category=category, limit=limit, out_dir=out,
                                scoring=scoring, protocol=protocol)
    summary["generation_s"] = round(gen_s, 2)
    too_long = out / "too_long.json"
    summary["n_prompt_longer_than_context"] = len(json.loads(too_long.read_text())) if too_long.is_file() else 0
    (out / "summary.json").write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return summary


def backend_for(model: str, *, preset_name: str | None = None):
    """A backend for ``model``: a run directory (its config and last epoch's adapters) or a model id/directory."""
    from genenv_lab.config import preset
    from genenv_lab.backends.factory import make_backend
    from genenv_lab.rundir.layout import adapter_dir
    from genenv_lab.rundir.read import read_config, read_state

    path = Path(model)
    if (path / "config.json").is_file() and (path / "state.json").is_file():
        cfg = read_config(path)
        backend = make_backend(cfg, domain_of(cfg))
        last = int(read_state(path).get("last_complete_epoch", 0))
        if last:
            backend.load_adapters(adapter_dir(path, last))
        return backend
    cfg = preset(preset_name or ("tiny" if model == "tiny" else "cpu-smollm2")).replace(model={"name_or_path": model})
    return make_backend(cfg, domain_of(cfg))


# ------------------------------------------------------------------------------------------- during a run

def check_eval_data(cfg: RunConfig) -> None:
    """Fail at once (:class:`~genenv_lab.evaluation.common.BenchmarkDataMissing`, naming where it looked and the
    canonical source) when the held-out evaluation needs benchmark files that are not there, and
    (:class:`ValueError`) when ``eval.category`` is not one of the categories they hold, rather than after the
    model has loaded."""
    ev = cfg.eval
    if ev.every and ev.benchmark != "domain":
        spec = get_benchmark(ev.benchmark)
        root = resolve_data_dir(spec, ev.data_dir or None)
        if ev.category:
            chosen_categories(spec, root, ev.category)


def evaluate_epoch(backend: Backend, cfg: RunConfig, run_dir: Path, epoch: int) -> dict[str, float]:
    """Held-out benchmark score of the agent after ``epoch`` (files under ``eval/epoch_NNN/``)."""
    ev = cfg.eval
    if ev.benchmark == "domain":
        return domain_scores(heldout_rewards(backend, domain_of(cfg), cfg), cfg.agent.success_threshold)
    summary = evaluate_backend(backend, ev.benchmark, out_dir=Path(run_dir) / "eval" / f"epoch_{epoch:03d}",
                               data_dir=ev.data_dir or None, category=ev.category or None,
                               limit=ev.limit or None, max_new_tokens=ev.max_new_tokens, progress=False,
                               protocol=_eval_protocol(ev))
    out = {f"{EVAL}{ev.benchmark}": summary["value"]}
    if "f1" in summary:
        out[f"{EVAL}{ev.benchmark}_f1"] = summary["f1"]
    return out


def _eval_protocol(ev) -> str | None:
    """The protocol of a run's held-out evaluation: ``eval.protocol`` for BFCL's multi-turn categories (the
    per-turn reading by default, as the paper's validation score), BFCL's only protocol otherwise."""
    return ev.protocol if ev.benchmark == "bfcl" and mt.is_multi_turn(ev.category) else None


def heldout_score(backend: Backend, domain: Domain, cfg: RunConfig) -> float:
    """Mean greedy reward of the agent on the domain's held-out tasks (the first ``eval.limit`` of them)."""
    return cur.mean_or_nan(r for _, r in heldout_rewards(backend, domain, cfg))


def domain_scores(results: list[tuple[TaskSpec, float]], threshold: float) -> dict[str, float]:
    """``eval/domain`` (the mean greedy reward over the held-out items) and, where the items have levels, the
    held-out frontier ``heldout/frontier_level``: the lowest level with an item whose reward is below ``threshold``
    (:func:`genenv_lab.core.dryrun.frontier_level`), which the next epoch's dry-run counts are read at."""
    out = {EVAL_DOMAIN: cur.mean_or_nan(r for _, r in results)}
    frontier = frontier_level((level_of(spec.features), r >= threshold) for spec, r in results)
    if frontier is not None:
        out[HELDOUT_FRONTIER_LEVEL] = frontier
    return out


def heldout_rewards(backend: Backend, domain: Domain, cfg: RunConfig) -> list[tuple[TaskSpec, float]]:
    """(task, greedy reward) of the agent on each of the domain's held-out tasks (the first ``eval.limit``)."""
    items = domain.heldout_tasks()
    if not items:
        raise ValueError(f"domain {domain.name!r} ships no held-out set (data/{domain.name}_heldout.jsonl); "
                         "set eval.benchmark to a benchmark instead")
    return greedy_rewards(backend, domain, items[: cfg.eval.limit or None], cfg)


def greedy_rewards(backend: Backend, domain: Domain, items: Sequence, cfg: RunConfig) -> list[tuple[TaskSpec, float]]:
    """(task, reward) of the agent's greedy answer to each of ``items`` (held-out or seed tasks, each with a
    ``spec``)."""
    outs = backend.generate("agent", [domain.agent_messages(s.spec) for s in items], n=1,
                            max_new_tokens=cfg.agent.max_completion_length, temperature=0.0)
    return [(s.spec, domain.safe_score(s.spec, o[0])[0]) for s, o in zip(items, outs)]


def seed_probe(backend: Backend, domain: Domain, seeds: Sequence, reference: Sequence, cfg: RunConfig,
               probe: Sequence = ()) -> dict[str, float]:
    """``loop.seed_probe``'s readings after an epoch: the agent's mean greedy reward on the run's seed tasks and how
    many of them it got wrong; when the run has a counterfactual set (``reference``), its mean greedy reward there;
    with a probe file (``loop.probe``), the same two readings on its items. All training items: a choice may be
    made on them, unlike the held-out score."""
    results = [r for _, r in greedy_rewards(backend, domain, [*seeds, *probe, *reference], cfg)]
    on_seeds, on_probe = results[: len(seeds)], results[len(seeds): len(seeds) + len(probe)]
    missed = cfg.agent.success_threshold
    out = {PROBE_SEEDS_GREEDY: cur.mean_or_nan(on_seeds), PROBE_SEEDS_MISSED: sum(r < missed for r in on_seeds)}
    if probe:
        out |= {PROBE_SET_GREEDY: cur.mean_or_nan(on_probe), PROBE_SET_MISSED: sum(r < missed for r in on_probe)}
    if reference:
        out[PROBE_REFERENCE_GREEDY] = cur.mean_or_nan(results[len(seeds) + len(probe):])
    return out
