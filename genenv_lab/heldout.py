"""Evaluate a model (a hub id, a local directory, or a run directory's agent adapter) on a benchmark: the model-side
half of evaluation, beside the loop (``genenv_lab.evaluation`` holds the pure scorers it calls).

The model answers every item greedily with the ``agent`` adapter; its raw outputs become a predictions JSONL file,
which :func:`genenv_lab.evaluation.score_predictions` scores with the benchmark's official metric (or the
approximation its summary names). So a model evaluated here and predictions produced anywhere else are scored by
the same code. During a run, :func:`evaluate_epoch` is the held-out score logged per epoch (``eval/*``) and
:func:`check_eval_data` fails at once when its benchmark data is missing.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from . import curriculum as cur
from .backends.base import Backend
from .config import RunConfig
from .domains import Domain, domain_of
from .evaluation.common import resolve_data_dir
from .evaluation.runner import get_benchmark, load_items, prompt_messages, score_predictions


def predict(backend, benchmark: str, *, data_dir=None, category=None, limit: int | None = None,
            max_new_tokens: int = 128, batch_size: int = 8, out_path: str | Path, progress: bool = True) -> Path:
    """Greedy answers of ``backend``'s agent adapter to each item, written as ``{"id", "prediction"}`` JSONL."""
    from tqdm.auto import tqdm

    items = [it for group in load_items(benchmark, data_dir, category, limit).values() for it in group]
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    room = getattr(backend, "prompt_room", None)
    too_long = []
    with open(out, "w", encoding="utf-8") as fh, tqdm(total=len(items), desc=f"eval {benchmark}",
                                                       disable=not progress) as bar:
        for start in range(0, len(items), batch_size):
            chunk = items[start:start + batch_size]
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
    if too_long:  # no prediction: scored as wrong ("no prediction") and counted in the summary
        (out.parent / "too_long.json").write_text(json.dumps(too_long))
    return out


def evaluate_backend(backend, benchmark: str, *, out_dir: str | Path, data_dir=None, category=None,
                     limit: int | None = None, max_new_tokens: int = 128, progress: bool = True,
                     scoring: str | None = None) -> dict[str, Any]:
    """Predict, then score: writes ``predictions.jsonl``, ``results.jsonl`` and ``summary.json`` in ``out_dir``.
    The summary's ``scoring`` says which verdict was used (``official`` unless ``scoring`` names another)."""
    start = time.perf_counter()
    out = Path(out_dir)
    preds = predict(backend, benchmark, data_dir=data_dir, category=category, limit=limit,
                    max_new_tokens=max_new_tokens, out_path=out / "predictions.jsonl", progress=progress)
    gen_s = time.perf_counter() - start
    summary = score_predictions(benchmark, preds, data_dir=data_dir, category=category, limit=limit, out_dir=out,
                                scoring=scoring)
    summary["generation_s"] = round(gen_s, 2)
    too_long = out / "too_long.json"
    summary["n_prompt_longer_than_context"] = len(json.loads(too_long.read_text())) if too_long.is_file() else 0
    (out / "summary.json").write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return summary


def backend_for(model: str, *, preset_name: str | None = None):
    """A backend for ``model``: a run directory (its config and last epoch's adapters) or a model id/directory."""
    from .config import preset
    from .backends.factory import make_backend
    from .runlog import adapter_dir, read_config, read_state

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
    canonical source) when the held-out evaluation needs benchmark files that are not there, rather than after the
    model has loaded."""
    lp = cfg.loop
    if lp.eval_every and lp.eval_benchmark != "domain":
        resolve_data_dir(get_benchmark(lp.eval_benchmark), lp.eval_data_dir or None)


def evaluate_epoch(backend: Backend, cfg: RunConfig, run_dir: Path, epoch: int) -> dict[str, float]:
    """Held-out benchmark score of the agent after ``epoch`` (files under ``eval/epoch_NNN/``)."""
    lp = cfg.loop
    if lp.eval_benchmark == "domain":
        return {"eval/domain": heldout_score(backend, domain_of(cfg), cfg)}
    summary = evaluate_backend(backend, lp.eval_benchmark, out_dir=Path(run_dir) / "eval" / f"epoch_{epoch:03d}",
                               data_dir=lp.eval_data_dir or None, category=lp.eval_category or None,
                               limit=lp.eval_limit or None, max_new_tokens=lp.eval_max_new_tokens, progress=False)
    out = {f"eval/{lp.eval_benchmark}": summary["value"]}
    if "f1" in summary:
        out[f"eval/{lp.eval_benchmark}_f1"] = summary["f1"]
    return out


def heldout_score(backend: Backend, domain: Domain, cfg: RunConfig) -> float:
    """Mean greedy reward of the agent on the domain's held-out tasks (the first ``eval_limit`` of them)."""
    items = domain.heldout_tasks()
    if not items:
        raise ValueError(f"domain {domain.name!r} ships no held-out set (data/{domain.name}_heldout.jsonl); "
                         "set loop.eval_benchmark to a benchmark instead")
    items = items[: cfg.loop.eval_limit or None]
    outs = backend.generate("agent", [domain.agent_messages(s.spec) for s in items], n=1,
                            max_new_tokens=cfg.agent.max_completion_length, temperature=0.0)
    return cur.mean_or_nan(domain.safe_score(s.spec, o[0])[0] for s, o in zip(items, outs))
