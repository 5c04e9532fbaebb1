"""Offline scorers for the paper's benchmarks (BFCL, API-Bank, Bamboogle, ALFWorld, TravelPlanner). Pure Python.

Entry points: :func:`score_predictions` (a predictions JSONL -> ``results.jsonl`` + ``summary.json``),
:func:`gold_predictions` (the answer keys as predictions, for the sanity check), :func:`load_items` and
:func:`prompt_messages` (to pose the items to a model), and :func:`decode_calls` (function calls in a raw output).
Each benchmark module's docstring says what it covers, what it does not, and what it approximates.
"""

from genenv_lab.evaluation.calls import DecodedCalls, FunctionCall, decode_calls
from genenv_lab.evaluation.common import DATA_ENV, BenchmarkDataMissing, ItemResult
from genenv_lab.evaluation.runner import (BENCHMARKS, get_benchmark, gold_predictions, load_items, prompt_messages,
    score_predictions)

__all__ = ["BENCHMARKS", "DATA_ENV", "BenchmarkDataMissing", "DecodedCalls", "FunctionCall", "ItemResult",
           "decode_calls", "get_benchmark", "gold_predictions", "load_items", "prompt_messages",
           "score_predictions"]
