"""Shared pieces of the benchmark scorers: per-item results, benchmark descriptors, data-folder resolution."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

DATA_ENV = "GENENV_LAB_DATA"
"""Environment variable naming a folder that holds one sub-folder per benchmark (like ``shared/benchmarks``)."""


@dataclass
class ItemResult:
    """The verdict on one prediction. ``score`` is 1.0/0.0 for exact-match metrics, a fraction for soft ones."""

    id: str
    category: str
    correct: bool
    score: float
    reason: str
    extra: dict[str, Any] = field(default_factory=dict)

    def row(self, prediction: str | None) -> dict[str, Any]:
        row = {"id": self.id, "category": self.category, "prediction": prediction, "correct": self.correct,
               "score": self.score, "reason": self.reason}
        row.update(self.extra)
        return row


@dataclass(frozen=True)
class BenchmarkSpec:
    """What the runner needs from one benchmark module."""

    name: str
    folder: str
    """Sub-folder name under ``$GENENV_LAB_DATA`` or the cache."""
    markers: tuple[str, ...]
    """Paths inside the benchmark folder, any of which identifies it (to accept either the folder or its parent)."""
    sources: str
    """Where to get the data, for the error message."""
    categories: Callable[[Path], list[str]]
    """The covered categories whose files exist in the data folder."""
    load: Callable[[Path, str], list[Any]]
    """Items of one category; each has an ``id`` attribute."""
    score: Callable[[Any, str], ItemResult]
    gold: Callable[[Any], str | None]
    """A prediction that must score 100% (None where the benchmark has no gold for the item)."""
    summarize: Callable[[dict[str, list[ItemResult]]], dict[str, Any]]
    """Official metric name/value, per-category numbers, covered / not covered / approximated."""
    explicit_only: tuple[str, ...] = ()
    """Categories scored only when asked for by name (costly to load)."""
    other_scorings: tuple[tuple[str, Callable[[Any, str], ItemResult]], ...] = ()
    """Named alternatives to ``score`` (``--scoring NAME``), none of them the official metric; the summary says
    which one was used."""
    protocols: tuple[str, ...] = ()
    """Named ways to run and score an item (``--protocol NAME``, passed to ``score`` as ``protocol=``); empty: the
    benchmark has one (bfcl: ``official`` and ``per-turn`` for its multi-turn categories)."""
    scores_missing: bool = False
    """An item without a prediction goes to ``score`` with prediction None (which must give reason ``no
    prediction``), so that its result carries what the summary needs (bfcl multi-turn: the turns it counts)."""
    installed: Callable[[], Path | None] | None = None
    """A data folder an installed package ships (bfcl: the ``bfcl-eval`` wheel's ``bfcl_eval/data``), tried last."""
    check: Callable[[list[str], str | None, str | None], None] | None = None
    """Refuses, before any work, a scoring or protocol the chosen categories cannot take (raises ValueError)."""

    def scorer(self, scoring: str | None, protocol: str | None = None) -> Callable[[Any, str], ItemResult]:
        if protocol not in (None, "official") and protocol not in self.protocols:
            raise ValueError(f"{self.name}: protocol {protocol!r} is unknown; choose one of "
                             f"{list(self.protocols) or ['official']}")
        if scoring in (None, "official"):
            base = self.score
        else:
            named = dict(self.other_scorings)
            if scoring not in named:
                raise ValueError(f"{self.name}: scoring {scoring!r} is unknown; choose one of "
                                 f"{['official'] + list(named)}")
            base = named[scoring]
        if protocol in (None, "official"):
            return base
        return lambda item, prediction: base(item, prediction, protocol=protocol)


class BenchmarkDataMissing(FileNotFoundError):
    """The benchmark's data folder was not found; the message says where to get it."""


def cache_root() -> Path:
    return Path.home() / ".cache" / "genenv_lab" / "benchmarks"


def resolve_data_dir(spec: BenchmarkSpec, data_dir: str | os.PathLike | None = None) -> Path:
    """The benchmark's folder: ``data_dir`` (the folder itself or its parent), else ``$GENENV_LAB_DATA/<folder>``,
    else ``~/.cache/genenv_lab/benchmarks/<folder>``, else the data an installed package ships (``spec.installed``);
    otherwise :class:`BenchmarkDataMissing`. Never downloads."""
    tried: list[str] = []
    candidates: list[Path] = []
    if data_dir is not None:
        base = Path(data_dir).expanduser()
        candidates += [base, base / spec.folder]
    else:
        env = os.environ.get(DATA_ENV)
        if env:
            candidates += [Path(env).expanduser() / spec.folder, Path(env).expanduser()]
        candidates.append(cache_root() / spec.folder)
        shipped = spec.installed() if spec.installed is not None else None
        if shipped is not None:
            candidates.append(shipped)
    for c in candidates:
        tried.append(str(c))
        if any((c / m).exists() for m in spec.markers):
            return c
    raise BenchmarkDataMissing(
        f"{spec.name} data not found (looked for {' or '.join(spec.markers)} in: {', '.join(tried)}). "
        f"Pass data_dir=..., set ${DATA_ENV} to a folder holding '{spec.folder}/', or place the files in "
        f"{cache_root() / spec.folder}. Canonical source: {spec.sources}")


def accuracy(results: list[ItemResult]) -> float:
    return sum(r.correct for r in results) / len(results) if results else float("nan")
