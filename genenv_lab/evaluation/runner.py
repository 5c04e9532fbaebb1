"""Score a predictions file against a benchmark and write per-item results and a summary.

A predictions file is JSONL, one ``{"id": ..., "prediction": "<raw model output>"}`` per line (a BFCL multi-turn
entry, ``multi_turn_base_0`` …: ``"prediction"`` is a list per turn of the model's raw outputs per step,
``[["[cd(folder='document')]", "Done."], [...]]``; genenv_lab.evaluation.bfcl_multi_turn). Item ids:

==============  ==================================================================  ==========================
benchmark       ids                                                                 categories
==============  ==================================================================  ==========================
bfcl            the dataset's own (``simple_python_0``, ``parallel_12``, ...)        simple_python, simple_java,
                                                                                    simple_javascript, multiple,
                                                                                    parallel, parallel_multiple,
                                                                                    irrelevance, live_* if present,
                                                                                    multi_turn_base, _miss_func,
                                                                                    _miss_param, _long_context
api-bank        ``level-1-<row>``, ``level-2-<row>`` (row index in test-data)       level-1, level-2
bamboogle       ``bamboogle-<index>``                                               test
alfworld        ``<category>/<task folder>/<trial>#<step>``                         plan_steps, observed_steps
                                                                                    (only when named)
travelplanner   ``train-<row>``, ``validation-<idx>``                               train, validation
==============  ==================================================================  ==========================

With ``category=None`` the categories scored are those with at least one prediction id (ALFWorld's
``observed_steps``, which replays every game in the engine, only when named); inside a scored category,
items without a prediction count as wrong (reason ``no prediction``); ``limit`` keeps the first N items of each
category. Outputs (when ``out_dir`` is given): ``results.jsonl`` (id, category, prediction, correct, score, reason
and benchmark-specific fields) and ``summary.json`` (metric name and value, n, per-category numbers, covered / not
covered / approximated).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from genenv_lab.evaluation import alfworld, api_bank, bamboogle, bfcl, travelplanner
from genenv_lab.safe_io import MB, loads_json, read_regular
from genenv_lab.core.types import jsonable
from genenv_lab.evaluation.common import BenchmarkSpec, ItemResult, resolve_data_dir

BENCHMARKS: dict[str, BenchmarkSpec] = {s.name: s for s in (bfcl.SPEC, api_bank.SPEC, bamboogle.SPEC, alfworld.SPEC,
                                                           travelplanner.SPEC)}
_ALIASES = {"api_bank": "api-bank", "apibank": "api-bank", "travel_planner": "travelplanner", "bfcl_v4": "bfcl"}


def get_benchmark(name: str) -> BenchmarkSpec:
    key = _ALIASES.get(name.lower(), name.lower())
    if key not in BENCHMARKS:
        raise ValueError(f"unknown benchmark {name!r}; choose one of {sorted(BENCHMARKS)}")
    return BENCHMARKS[key]


MAX_PREDICTIONS_BYTES = 1024 * MB
"""The largest predictions file read (a regular file only: ``/dev/zero`` or a FIFO is refused at once)."""


def read_predictions(path: str | os.PathLike) -> dict[str, str]:
    """``{id: prediction}`` from a JSONL file; an id given on two lines is refused (naming both), since which of
    two answers a score should count cannot be guessed."""
    out: dict[str, str] = {}
    first_line: dict[str, int] = {}
    try:
        text = read_regular(path, MAX_PREDICTIONS_BYTES, "predictions file").decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = loads_json(line)
        except ValueError as exc:
            raise ValueError(f"{path}:{lineno}: not JSON ({exc})") from None
        if not isinstance(row, dict) or "id" not in row or "prediction" not in row:
            raise ValueError(f"{path}:{lineno}: expected an object with 'id' and 'prediction'")
        pred, item_id = row["prediction"], str(row["id"])
        if item_id in first_line:
            raise ValueError(f"{path}:{lineno}: id {item_id[:80]!r} was already given on line {first_line[item_id]}; "
                             "keep one prediction per id")
        first_line[item_id] = lineno
        out[item_id] = pred if isinstance(pred, str) else json.dumps(pred, ensure_ascii=False)
    return out


def chosen_categories(spec: BenchmarkSpec, data_dir: Path, category: str | list[str] | None) -> list[str]:
    """The categories an evaluation scores: ``category`` (one or several), each checked against those whose files
    ``data_dir`` holds (:class:`ValueError` naming them), or with ``None`` every available one not named only
    explicitly."""
    available = spec.categories(data_dir)
    if category is None:
        return [c for c in available if c not in spec.explicit_only]
    wanted = [category] if isinstance(category, str) else list(category)
    for c in wanted:
        if c not in available:
            raise ValueError(f"{spec.name}: category {c!r} is not available in {data_dir}; available: {available}")
    return wanted


def load_items(benchmark: str, data_dir: str | os.PathLike | None = None, category: str | list[str] | None = None,
               limit: int | None = None) -> dict[str, list[Any]]:
    """``{category: items}`` of a benchmark (each item has an ``id``), e.g. to build prompts for a model."""
    spec = get_benchmark(benchmark)
    root = resolve_data_dir(spec, data_dir)
    return {c: spec.load(root, c)[:limit] if limit else spec.load(root, c)
            for c in chosen_categories(spec, root, category)}


def score_safely(spec: BenchmarkSpec, item: Any, category: str, prediction: str,
                 scoring: str | None = None, protocol: str | None = None) -> ItemResult:
    """``spec.score`` for one prediction, where whatever a hostile prediction makes the scorer raise (a JSON number
    of 20,000 digits, say) is that item's verdict, incorrect with the exception named, instead of aborting the
    whole evaluation. Never more lenient: an exception only ever scores 0."""
    try:
        return spec.scorer(scoring, protocol)(item, prediction)
    except Exception as exc:  # noqa: BLE001 - a model wrote the prediction; one item may not stop the others
        return ItemResult(item.id, category, False, 0.0, f"unscorable prediction ({type(exc).__name__})")


def score_predictions(benchmark: str, predictions_path: str | os.PathLike, data_dir: str | os.PathLike | None = None,
                      category: str | list[str] | None = None, limit: int | None = None,
                      out_dir: str | os.PathLike | None = None, scoring: str | None = None,
                      protocol: str | None = None) -> dict[str, Any]:
    """Score a predictions JSONL file; returns the summary dict (also written to ``out_dir/summary.json``).
    ``scoring``: ``official`` (default) or one of the benchmark's ``other_scorings`` (bfcl: ``lenient``);
    ``protocol``: ``official`` (default) or one of the benchmark's ``protocols`` (bfcl multi-turn: ``per-turn``)."""
    spec = get_benchmark(benchmark)
    spec.scorer(scoring, protocol)  # an unknown name fails before any work
    root = resolve_data_dir(spec, data_dir)
    predictions = read_predictions(predictions_path)
    cats = chosen_categories(spec, root, category)

    loaded = {c: spec.load(root, c) for c in cats}
    if category is None:
        loaded = {c: items for c, items in loaded.items() if any(it.id in predictions for it in items)}
        if not loaded:
            raise ValueError(f"{predictions_path}: no prediction id matches any {spec.name} item "
                             f"(categories {cats}); see genenv_lab.evaluation.runner for the id formats")
    if spec.check is not None:
        spec.check(list(loaded), scoring, protocol)
    results: dict[str, list[ItemResult]] = {}
    rows: list[dict[str, Any]] = []
    known: set[str] = set()
    for c, items in loaded.items():
        if limit:
            items = items[:limit]
        results[c] = []
        for item in items:
            known.add(item.id)
            pred = predictions.get(item.id)
            if pred is None and spec.scores_missing:
                r = spec.scorer(scoring, protocol)(item, None)
            elif pred is None:
                r = ItemResult(item.id, c, False, 0.0, "no prediction")
            else:
                r = score_safely(spec, item, c, pred, scoring, protocol)
            results[c].append(r)
            rows.append(r.row(pred))
    summary = spec.summarize(results)
    summary = {"benchmark": spec.name, "scoring": scoring or "official",
               "official_metric": scoring in (None, "official") and protocol in (None, "official"),
               **summary,
               "n_predictions": len(predictions),
               "n_missing_predictions": sum(1 for rs in results.values() for r in rs if r.reason == "no prediction"),
               "n_unmatched_prediction_ids": sum(1 for i in predictions if i not in known),
               "data_dir": str(root), "predictions": str(predictions_path),
               "categories_scored": list(results), "limit": limit}
    summary = jsonable(summary)
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        # A model can write any text, lone surrogates included: those are written as JSON's own \\udXXX escapes
        # (errors="backslashreplace"), so every row is valid JSON that reads back as the prediction it was.
        (out / "summary.json").write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8",
                                          errors="backslashreplace")
        with open(out / "results.jsonl", "w", encoding="utf-8", errors="backslashreplace") as fh:
            for row in rows:
                fh.write(json.dumps(jsonable(row), ensure_ascii=False) + "\n")
    return summary


def gold_predictions(benchmark: str, data_dir: str | os.PathLike | None = None,
                     category: str | list[str] | None = None, out_path: str | os.PathLike | None = None,
                     limit: int | None = None) -> list[dict[str, str]]:
    """Gold answers as prediction rows (``{"id", "prediction"}``) for every item that has one; written as JSONL
    to ``out_path`` when given. Scoring them must give 100% on every covered category (the sanity check)."""
    spec = get_benchmark(benchmark)
    rows = []
    for items in load_items(benchmark, data_dir, category, limit).values():
        for item in items:
            g = spec.gold(item)
            if g is not None:
                rows.append({"id": item.id, "prediction": g})
    if out_path is not None:
        path = Path(out_path)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            for row in rows:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    return rows


def prompt_messages(benchmark: str, item: Any) -> list[dict[str, str]]:
    """Chat messages posing one item to a model (the lab's default wording for each benchmark)."""
    module = {"bfcl": bfcl, "api-bank": api_bank, "bamboogle": bamboogle, "alfworld": alfworld,
              "travelplanner": travelplanner}[get_benchmark(benchmark).name]
    return module.prompt_messages(item)
