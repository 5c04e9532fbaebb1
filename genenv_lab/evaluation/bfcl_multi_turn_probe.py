"""Synthetic multi-turn predictions for the parity test against BFCL's own checker (``benchmarks/bfcl_parity.py
--multi-turn``, ``tests/test_bfcl_parity.py``): each entry's answer key written as a prediction, then mutated in
each of the ways a model goes wrong (or harmlessly differs). Deterministic: the mutations of an entry are drawn
from a generator seeded with its id.

Kinds (``MUTATIONS``): ``gold`` (the key as is), ``drop_call``, ``add_call`` (a call of another turn inserted),
``duplicate_call``, ``reorder`` (a turn's calls reversed), ``change_argument`` (one value changed: a string gets a
suffix, a number +1, a boolean flipped, a list loses its last element), ``remove_argument``, ``wrong_function``
(another method of the entry's classes under the same arguments), ``empty_turn``, ``split_step`` (a turn's calls
over two steps), ``prose_step`` (a plain-text step before the calls, which the checker skips) and ``positional``
(the key's calls verbatim, positional arguments included, which BFCL's prompting decoder drops).
"""

from __future__ import annotations

import ast
import random
import zlib
from typing import Any, Callable

from genenv_lab.evaluation.bfcl_multi_turn import Backends, MultiTurnItem, _positional_to_keywords

MUTATIONS = ("gold", "drop_call", "add_call", "duplicate_call", "reorder", "change_argument", "remove_argument",
             "wrong_function", "empty_turn", "split_step", "prose_step", "positional")

Turns = list[list[str]]


def _steps(turns: Turns) -> list[list[str]]:
    return [["[" + ", ".join(calls) + "]"] if calls else [] for calls in turns]


def _pick(rng: random.Random, turns: Turns, at_least: int = 1) -> int | None:
    choices = [t for t, calls in enumerate(turns) if len(calls) >= at_least]
    return rng.choice(choices) if choices else None


def _changed(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, str):
        return value + "_x"
    if isinstance(value, list):
        return value[:-1] if value else ["x"]
    if isinstance(value, dict):
        return {**value, "extra": 1}
    return "changed"


def _edit_call(call: str, rng: random.Random, how: str, names: list[str]) -> str | None:
    node = ast.parse(call, mode="eval").body
    if not isinstance(node, ast.Call):
        return None
    if how == "wrong_function":
        others = [n for n in names if n != getattr(node.func, "id", None)]
        node.func = ast.Name(id=rng.choice(others)) if others else node.func
        return ast.unparse(node)
    if not node.keywords:
        return None
    kw = rng.choice(node.keywords)
    if how == "remove_argument":
        node.keywords = [k for k in node.keywords if k is not kw]
    else:
        try:
            value = ast.literal_eval(kw.value)
        except (ValueError, SyntaxError):
            return None
        kw.value = ast.parse(repr(_changed(value)), mode="eval").body
    return ast.unparse(node)


def mutate(item: MultiTurnItem, kind: str, rng: random.Random, keyed: Turns, names: list[str]) -> list | None:
    """One prediction of ``kind`` for ``item`` (None where the entry cannot take it, e.g. no turn with two calls to
    reorder). ``keyed``: the answer key with positional arguments named."""
    turns = [list(t) for t in keyed]
    if kind == "gold":
        return _steps(turns)
    if kind == "positional":
        return _steps([list(t) for t in item.ground_truth])
    need = 2 if kind in ("reorder", "split_step") else 1
    t = _pick(rng, turns, need)
    if t is None:
        return None
    calls = turns[t]
    i = rng.randrange(len(calls))
    if kind == "drop_call":
        del calls[i]
    elif kind == "add_call":
        pool = [c for u, cs in enumerate(turns) if u != t for c in cs] or calls
        calls.insert(rng.randrange(len(calls) + 1), rng.choice(pool))
    elif kind == "duplicate_call":
        calls.insert(i, calls[i])
    elif kind == "reorder":
        calls.reverse()
    elif kind in ("change_argument", "remove_argument", "wrong_function"):
        edited = _edit_call(calls[i], rng, kind, names)
        if edited is None:
            return None
        calls[i] = edited
    elif kind == "empty_turn":
        turns[t] = []
    steps = _steps(turns)
    if kind == "split_step":
        cut = rng.randrange(1, len(calls))
        steps[t] = ["[" + ", ".join(calls[:cut]) + "]", "[" + ", ".join(calls[cut:]) + "]"]
    elif kind == "prose_step":
        steps[t] = ["I will take care of that now."] + steps[t]
    return steps


def probe_predictions(items: list[MultiTurnItem], kinds: tuple[str, ...] = MUTATIONS,
                      on_item: Callable[[], None] | None = None) -> list[dict]:
    """Rows ``{"id", "category", "kind", "prediction"}`` (the prediction as per-turn lists of raw steps)."""
    rows = []
    for item in items:
        rng = random.Random(zlib.crc32(item.id.encode()))
        backends = Backends(item)
        names = sorted(backends.methods)
        keyed = [[_positional_to_keywords(backends, c) for c in key] for key in item.ground_truth]
        for kind in kinds:
            pred = mutate(item, kind, rng, keyed, names)
            if pred is not None:
                rows.append({"id": item.id, "category": item.category, "kind": kind, "prediction": pred})
        if on_item:
            on_item()
    return rows
