"""Every benchmark scorer survives hostile predictions: one item's verdict (incorrect, with a reason), never an
exception that stops the evaluation. Uses a few real items of each benchmark from the offline copy."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import pytest

from tools.hostile import hostile_cases, random_hostile
from genenv_lab.evaluation.common import ItemResult
from genenv_lab.evaluation.runner import BENCHMARKS, get_benchmark, load_items, score_safely

SHARED = Path(__file__).resolve().parents[2] / "shared" / "benchmarks"
pytestmark = pytest.mark.skipif(not SHARED.is_dir(),
                                reason="the offline benchmark copy (../shared/benchmarks) is absent")


@pytest.mark.parametrize("benchmark", sorted(BENCHMARKS))
def test_hostile_predictions_get_a_verdict(benchmark):
    spec = get_benchmark(benchmark)
    try:
        items = load_items(benchmark, SHARED, None, 2)
    except (FileNotFoundError, RuntimeError) as exc:
        pytest.skip(f"{benchmark}: {exc}")
    rng = random.Random(0)
    texts = hostile_cases() + [random_hostile(rng) for _ in range(40)]
    for category, its in items.items():
        for item in its:
            for text in texts:
                result = score_safely(spec, item, category, text)
                assert isinstance(result, ItemResult) and 0.0 <= result.score <= 1.0
                if not result.correct:
                    assert isinstance(result.reason, str)


def test_an_exception_is_that_item_incorrect():
    spec = get_benchmark("bamboogle")

    class Item:
        id = "x"

    def boom(item, prediction):
        raise ValueError("Exceeds the limit (4300 digits)")

    broken = dataclasses.replace(spec, score=boom)
    result = score_safely(broken, Item(), "test", "9" * 5000)
    assert (result.correct, result.score) == (False, 0.0) and "ValueError" in result.reason
