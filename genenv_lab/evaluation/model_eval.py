"""Evaluate a model (a hub id, a local directory, or a run directory's agent adapter) on a benchmark.

The model answers every item greedily with the ``agent`` adapter; its raw outputs become a predictions JSONL file,
which :func:`genenv_lab.evaluation.score_predictions` scores with the benchmark's official metric (or the
approximation its summary names). So a model evaluated here and predictions produced anywhere else are scored by
the same code.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from .runner import load_items, prompt_messages, score_predictions


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
    from ..config import preset
    from ..domains import get_domain
    from ..backends.factory import make_backend
    from ..runlog import adapter_dir, read_config, read_state

    path = Path(model)
    if (path / "config.json").is_file() and (path / "state.json").is_file():
        cfg = read_config(path)
        backend = make_backend(cfg, get_domain(cfg.loop.domain))
        last = int(read_state(path).get("last_complete_epoch", 0))
        if last:
            backend.load_adapters(adapter_dir(path, last))
        return backend
    cfg = preset(preset_name or ("tiny" if model == "tiny" else "cpu-smollm2")).replace(model={"name_or_path": model})
    return make_backend(cfg, get_domain(cfg.loop.domain))
