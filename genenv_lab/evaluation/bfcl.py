"""BFCL V4 single-turn AST categories: loaders, the AST checker, gold predictions and the category summaries.

Covered categories: ``simple_python``, ``simple_java``, ``simple_javascript``, ``multiple``, ``parallel``,
``parallel_multiple``, ``irrelevance``, and ``live_simple``, ``live_multiple``, ``live_parallel``,
``live_parallel_multiple``, ``live_irrelevance``, ``live_relevance`` where their files exist in the data folder
(they ship in the ``bfcl-eval`` wheel, not in the offline copy), and the four multi-turn categories
(``multi_turn_base``, ``multi_turn_miss_func``, ``multi_turn_miss_param``, ``multi_turn_long_context``) where the
``bfcl-eval`` package is installed: they run on BFCL's own backends, under BFCL's protocol or the paper's per-turn
reading (:mod:`.bfcl_multi_turn`). Not covered: web search and memory (agentic), format sensitivity.

Scoring (``scoring="official"``, the default) is BFCL's own for a prompting model: the reply is decoded as
``bfcl_eval``'s ``default_decode_ast_prompting`` decodes it (:mod:`.bfcl_decode`: bare Python-style calls, Java and
JavaScript through tree-sitter) and judged by its AST checker (:mod:`.bfcl_checker`, quirks included and named
there); irrelevance is correct when nothing decodes to a call, live_relevance when something does. Parity with the
official package is tested on synthetic predictions (``tests/test_bfcl_parity.py``, ``benchmarks/bfcl_parity.py``).
``scoring="lenient"`` reads calls also from prose, code fences, JSON and tool-call tags (:func:`decode_calls`) and
applies the same checker; its summary says it is not the official metric.

>>> fn = {"name": "area", "parameters": {"type": "dict", "properties": {"base": {"type": "float"},
...       "unit": {"type": "string"}}, "required": ["base"]}}
>>> key = [{"area": {"base": [10.0], "unit": ["cm", ""]}}]
>>> item = BFCLItem("simple_0", "simple_python", [], [fn], key)
>>> score_item(item, "[area(base=10, unit='CM.')]").correct
True
>>> score_item(item, "area(base=10, height=2)").reason
"unexpected parameter 'height'"
>>> (score_item(item, "```python\\n[area(base=10)]\\n```").correct,
...  score_item_lenient(item, "Sure: area(base=10)").correct)
(False, True)
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from genenv_lab.evaluation.bfcl_checker import check
from genenv_lab.evaluation.bfcl_decode import TREE_SITTER_HINT, decode, has_call, is_call_list, tree_sitter_available
from genenv_lab.evaluation.calls import DecodedCalls, FunctionCall, decode_calls, format_calls_json, format_calls_python
from genenv_lab.evaluation import bfcl_multi_turn as mt
from genenv_lab.evaluation.common import BenchmarkSpec, ItemResult, accuracy
from genenv_lab.evaluation.literals import render_java, render_js
from genenv_lab.safe_io import read_text

NON_LIVE = ["simple_python", "simple_java", "simple_javascript", "multiple", "parallel", "parallel_multiple",
            "irrelevance"]
LIVE = ["live_simple", "live_multiple", "live_parallel", "live_parallel_multiple", "live_irrelevance",
        "live_relevance"]
MULTI_TURN = list(mt.CATEGORIES)
CATEGORIES = NON_LIVE + LIVE + MULTI_TURN
NOT_COVERED = ["web_search", "memory", "format_sensitivity"]
SOURCES = ("ShishirPatil/gorilla, berkeley-function-call-leaderboard/bfcl_eval/data/ (also inside the PyPI wheel "
           "'bfcl-eval', bfcl_eval/data/): the BFCL_v4_<category>.json files and possible_answer/")

def language(category: str) -> str:
    if category.endswith("java"):
        return "java"
    if category.endswith("javascript"):
        return "javascript"
    return "python"


def checker_kind(category: str) -> str:
    if mt.is_multi_turn(category):
        return "multi_turn"
    if "irrelevance" in category:
        return "irrelevance"
    if "relevance" in category:
        return "relevance"
    if "parallel" in category:
        return "parallel"
    if "multiple" in category:
        return "multiple"
    return "simple"


# ------------------------------------------------------------------------------------------------- loading


@dataclass(frozen=True)
class BFCLItem:
    id: str
    category: str
    messages: list[dict[str, str]]
    """The (single) turn's messages."""
    functions: list[dict[str, Any]]
    ground_truth: list[dict[str, dict[str, list]]] | None
    """``[{func_name: {param: [allowed values]}}]``; None for the relevance categories (no answer key)."""


def _find(data_dir: Path, category: str, answers: bool = False) -> Path | None:
    """``BFCL_v<version>_<category>.json`` by exact name (``multiple`` never matches ``parallel_multiple``), the
    newest version when several are present."""
    folder = data_dir / "possible_answer" if answers else data_dir
    pattern = re.compile(rf"BFCL_v(\d+)_{re.escape(category)}\.json")
    found = [(int(m.group(1)), p) for p in folder.glob("BFCL_v*.json") if (m := pattern.fullmatch(p.name))]
    return max(found)[1] if found else None


def _read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in read_text(path, "BFCL file").splitlines() if line.strip()]


def available_categories(data_dir: Path) -> list[str]:
    """Covered categories whose question file (and answer key, where one is needed) exists in ``data_dir``."""
    out = []
    for cat in CATEGORIES:
        if _find(data_dir, cat) is None or (language(cat) != "python" and not tree_sitter_available()):
            continue
        if mt.is_multi_turn(cat) and not (mt.available() and (data_dir / "multi_turn_func_doc").is_dir()):
            continue
        if checker_kind(cat) not in ("irrelevance", "relevance") and _find(data_dir, cat, answers=True) is None:
            continue
        out.append(cat)
    return out


def load_category(data_dir: Path, category: str) -> list[BFCLItem] | list[mt.MultiTurnItem]:
    if category not in CATEGORIES:
        raise ValueError(f"BFCL category {category!r} is not covered; available in {data_dir}: "
                         f"{available_categories(data_dir)} (covered when their files exist: {CATEGORIES})")
    if mt.is_multi_turn(category):
        if not mt.available():
            raise ValueError(f"BFCL {category} runs on BFCL's own backends: {mt.INSTALL}")
        qpath, apath = _find(data_dir, category), _find(data_dir, category, answers=True)
        if qpath is None or apath is None:
            raise FileNotFoundError(f"no BFCL_v*_{category}.json (and possible_answer/ of it) in {data_dir}")
        return mt.load_multi_turn(data_dir, category, qpath, apath)
    if language(category) != "python" and not tree_sitter_available():
        raise ValueError(f"BFCL {category} needs tree-sitter 0.21 to decode replies: {TREE_SITTER_HINT}")
    qpath = _find(data_dir, category)
    if qpath is None:
        raise FileNotFoundError(f"no BFCL_v*_{category}.json in {data_dir}")
    answers: dict[str, list] = {}
    if checker_kind(category) not in ("irrelevance", "relevance"):
        apath = _find(data_dir, category, answers=True)
        if apath is None:
            raise FileNotFoundError(f"no possible_answer/BFCL_v*_{category}.json in {data_dir}")
        answers = {row["id"]: row["ground_truth"] for row in _read_jsonl(apath)}
    items = []
    for row in _read_jsonl(qpath):
        turns = row["question"]
        messages = turns[0] if turns and isinstance(turns[0], list) else turns
        gt = answers.get(row["id"]) if answers else None
        if answers and gt is None:
            raise ValueError(f"{category}: item {row['id']} has no answer key")
        items.append(BFCLItem(id=row["id"], category=category, messages=list(messages),
                              functions=list(row["function"]), ground_truth=gt))
    return items


# ------------------------------------------------------------------------------------------------- scoring

SCORINGS = ("official", "lenient")
"""``official``: BFCL's prompting decoder and AST checker (:mod:`.bfcl_decode`, :mod:`.bfcl_checker`), the default.
``lenient``: the same checker on calls found by :func:`decode_calls` as well (prose, code fences, JSON, tool-call
tags), for models that do not answer in BFCL's bare format; its numbers are not comparable with the leaderboard."""


def _upstream_form(calls: DecodedCalls | list) -> list[dict]:
    """Calls as BFCL's checker takes them, ``[{name: {param: value}}]`` (already in that form: unchanged)."""
    items = calls.calls if isinstance(calls, DecodedCalls) else calls
    return [{c.name: dict(c.arguments)} if isinstance(c, FunctionCall) else c for c in items]


LENIENT_MAX_CHARS = 16_384
"""The longest reply the lenient scoring searches for calls (as a domain's ``max_text_chars``); a longer one gets
the official reading only."""


def _decode(text: str, lang: str, scoring: str) -> tuple[Any, str, str]:
    """``(decoded, format, failure)``: decoded is None when the text did not decode (failure says why)."""
    if scoring not in SCORINGS:
        raise ValueError(f"BFCL scoring {scoring!r} is unknown; choose one of {list(SCORINGS)}")
    try:
        decoded = decode(text, lang)
        failure = ""
    except Exception as exc:  # noqa: BLE001 - upstream counts any decoder exception as "did not decode"
        decoded, failure = None, f"did not decode as BFCL reads replies ({exc})"
    if scoring == "official" or (decoded is not None and has_call(decoded)):
        return decoded, "bfcl", failure
    if len(text) > LENIENT_MAX_CHARS:  # read as BFCL reads it, nothing more
        return [], "none", failure or f"longer than {LENIENT_MAX_CHARS} characters: not searched for calls"
    found = decode_calls(text)
    if found:
        return _upstream_form(found), found.format, ""
    return [], "none", found.reason or failure


def _verdict(functions: list[dict], decoded: Any, ground_truth: list | None, category: str) -> tuple[bool, str]:
    kind = checker_kind(category)
    if kind in ("irrelevance", "relevance"):
        called = decoded is not None and has_call(decoded)
        if kind == "irrelevance":
            return (False, "a call was decoded where no function is relevant") if called else (True, "ok (no call)")
        return (True, "ok (a call was decoded)") if called else (False, "no call was decoded")
    if decoded is None:
        return False, "no call decoded"
    if not is_call_list(decoded):
        return False, "decoded, but not a list of calls"
    return check(functions, decoded, ground_truth, category, language(category))


def ast_check(functions: list[dict], calls: DecodedCalls | list, ground_truth: list | None,
              category: str) -> tuple[bool, str]:
    """BFCL's verdict ``(correct, reason)`` on calls already decoded (e.g. by :func:`decode_calls`), for scorers
    that choose their own decoding (the ``tools`` training domain)."""
    return _verdict(functions, _upstream_form(calls), ground_truth, category)


def score_item(item: BFCLItem | mt.MultiTurnItem, prediction: str, scoring: str = "official",
               protocol: str = "official") -> ItemResult:
    """The verdict on one raw reply (a multi-turn entry: its per-turn lists of raw replies, as JSON text or lists);
    ``scoring`` is one of :data:`SCORINGS`, ``protocol`` (multi-turn only) one of ``bfcl_multi_turn.PROTOCOLS``."""
    if prediction is None and not isinstance(item, mt.MultiTurnItem):
        return ItemResult(item.id, item.category, False, 0.0, "no prediction")
    if isinstance(item, mt.MultiTurnItem):
        if scoring != "official":
            raise ValueError(f"BFCL multi-turn is scored only as BFCL decodes replies (scoring {scoring!r} is "
                             "single-turn only)")
        return mt.score(item, prediction, protocol)
    kind = checker_kind(item.category)
    lang = "python" if kind in ("irrelevance", "relevance") else language(item.category)
    decoded, fmt, failure = _decode(prediction, lang, scoring)
    ok, why = _verdict(item.functions, decoded, item.ground_truth, item.category)
    if not ok and failure and kind not in ("irrelevance", "relevance"):
        why = f"{why}: {failure}"
    n_calls = len(decoded) if isinstance(decoded, list) else 0
    return ItemResult(id=item.id, category=item.category, correct=ok, score=float(ok), reason=why,
                      extra={"n_calls": n_calls, "call_format": fmt, "scoring": scoring})


def score_item_lenient(item: BFCLItem, prediction: str, protocol: str = "official") -> ItemResult:
    return score_item(item, prediction, "lenient", protocol)


def check_scoring(categories: list[str], scoring: str | None, protocol: str | None) -> None:
    """Lenient decoding is single-turn only; a protocol other than ``official`` applies to multi-turn only."""
    multi = [c for c in categories if mt.is_multi_turn(c)]
    if multi and scoring not in (None, "official"):
        raise ValueError(f"bfcl: scoring {scoring!r} is single-turn only; {multi} are scored as BFCL decodes replies")
    if protocol not in (None, "official") and len(multi) < len(categories):
        raise ValueError(f"bfcl: protocol {protocol!r} applies to the multi-turn categories only "
                         f"({', '.join(mt.CATEGORIES)}); drop the others or the protocol")


# ------------------------------------------------------------------------------------------------- gold


def _first(allowed: list) -> tuple[bool, Any]:
    for a in allowed:
        if not (isinstance(a, str) and a == ""):
            return True, a
    return False, None


def _concrete(value: Any, schema: dict) -> Any:
    """One concrete value from an answer-key alternative (dicts in the key hold lists of allowed values)."""
    type_name = schema.get("type")
    items = schema.get("items") if isinstance(schema.get("items"), dict) else {}

    def pick_dict(d: dict) -> dict:
        out = {}
        for k, opts in d.items():
            has, v = _first(opts) if isinstance(opts, list) else (True, opts)
            if has:
                out[k] = v
        return out

    if type_name in ("dict", "HashMap") and isinstance(value, dict):
        return pick_dict(value)
    if items.get("type") == "dict" and isinstance(value, list) and all(isinstance(d, dict) for d in value):
        return [pick_dict(d) for d in value]
    return value


def gold_calls(item: BFCLItem) -> list[tuple[str, dict[str, Any]]]:
    """The first allowed alternative of every answer-key call, rendered for the item's language."""
    lang = language(item.category)
    out = []
    for answer in item.ground_truth or []:
        (name, params), = answer.items()
        doc = next((f for f in item.functions if f.get("name") == name), {})
        props = (doc.get("parameters") or {}).get("properties", {}) or {}
        args = {}
        for p, allowed in params.items():
            has, v = _first(allowed)
            if not has or p not in props:
                continue
            schema = props[p]
            v = _concrete(v, schema)
            items = schema.get("items") if isinstance(schema.get("items"), dict) else {}
            if lang == "java":
                v = render_java(v, schema.get("type"), items.get("type"))
            elif lang == "javascript":
                v = render_js(v, schema.get("type"), items.get("type"))
            args[p] = v
        out.append((name, args))
    return out


def _source_literal(text: str) -> str:
    """A Java/JavaScript argument holding ``text`` verbatim: BFCL's decoders strip one pair of quotes and keep
    escapes, so the text goes in unescaped, between double quotes, else single quotes (tree-sitter reads a
    multi-character ``'...'`` in Java as a character literal, which the decoder treats alike), else bare."""
    if '"' not in text:
        return f'"{text}"'
    return f"'{text}'" if "'" not in text else text


def format_calls_source(calls: list[tuple[str, dict[str, Any]]]) -> str:
    """Calls whose argument values are Java/JavaScript source strings, written as BFCL's decoders read them."""
    return "[" + ", ".join(f"{name}(" + ", ".join(f"{k}={_source_literal(str(v))}" for k, v in args.items()) + ")"
                           for name, args in calls) + "]"


def gold_prediction(item: BFCLItem | mt.MultiTurnItem, style: str = "python") -> str | list | None:
    """A raw output built from the answer key: its first allowed alternatives as calls in BFCL's format (``python``;
    Java/JavaScript values as source strings) or as JSON (``json``: only the lenient scoring reads it), or a
    plain-text refusal for irrelevance; None for ``live_relevance`` (no answer key). Under the official checker a
    few answers cannot be written at all (Java ``String`` arrays keep their quotes, values with a comma inside a
    JavaScript array are split): those gold predictions score incorrect, as they would upstream."""
    if isinstance(item, mt.MultiTurnItem):
        return mt.gold_prediction(item)
    kind = checker_kind(item.category)
    if kind == "irrelevance":
        return "None of the provided functions can be used for this request, so I will not call any of them."
    if kind == "relevance":
        return None
    calls = gold_calls(item)
    if style == "json":
        return format_calls_json(calls)
    return format_calls_source(calls) if language(item.category) != "python" else format_calls_python(calls)


# ------------------------------------------------------------------------------------------------- prompt

SYSTEM_PROMPT = (
    "You can call functions. Below are the available functions as JSON schemas. If the request can be served with "
    "them, reply with only the call(s), in Python syntax: [func_name(param=value, ...), ...] (one list, several "
    "calls allowed). If none of the functions fits the request, reply in plain text without any call.")


def prompt_messages(item: BFCLItem | mt.MultiTurnItem) -> list[dict[str, str]]:
    """Chat messages posing an item to a model (the lab's own wording, not BFCL's prompt); a multi-turn entry's
    first step (its later steps depend on the replies: :class:`~.bfcl_multi_turn.Conversation`)."""
    if isinstance(item, mt.MultiTurnItem):
        return mt.Conversation(item).messages()
    system = SYSTEM_PROMPT
    lang = language(item.category)
    if lang == "java":
        system += (" The functions are Java methods: give every argument value as a string holding Java source, "
                   "e.g. flag=\"true\", n=\"5\", id=\"42L\", xs=\"new int[]{1, 2}\".")
    elif lang == "javascript":
        system += (" The functions are JavaScript functions: give every argument value as a string holding "
                   "JavaScript source, e.g. flag=\"true\", xs=\"[1, 2]\", obj=\"{key: 'v'}\".")
    system += "\n\nFunctions:\n" + json.dumps(item.functions, ensure_ascii=False)
    return [{"role": "system", "content": system}] + [dict(m) for m in item.messages]


# ------------------------------------------------------------------------------------------------- summary


def _multi_turn_summary(results: dict[str, list[ItemResult]]) -> dict[str, Any]:
    """Per multi-turn category: the official accuracy (entries right) and the per-turn score (turns right over all
    turns); ``value`` is the protocol's."""
    cats = {}
    for c, rs in results.items():
        protocol = rs[0].extra.get("protocol", "official") if rs else "official"
        n_turns = sum(r.extra.get("n_turns", 0) for r in rs)
        turns_right = sum(r.extra.get("n_turns_correct", 0) for r in rs)
        per_turn = turns_right / n_turns if n_turns else float("nan")
        cats[c] = {"metric": "accuracy" if protocol == "official" else "per_turn_accuracy",
                   "value": accuracy(rs) if protocol == "official" else per_turn, "protocol": protocol,
                   "correct": sum(x.correct for x in rs), "n": len(rs), "official_accuracy": accuracy(rs),
                   "per_turn_accuracy": per_turn, "n_turns": n_turns, "n_turns_correct": turns_right}
    return cats


def summarize(results: dict[str, list[ItemResult]]) -> dict[str, Any]:
    multi = {c: r for c, r in results.items() if mt.is_multi_turn(c)}
    cats = {c: {"metric": "accuracy", "value": accuracy(r), "correct": sum(x.correct for x in r), "n": len(r)}
            for c, r in results.items() if c not in multi}
    cats.update(_multi_turn_summary(multi))
    out: dict[str, Any] = {"categories": cats}
    lenient = any(r.extra.get("scoring") == "lenient" for rs in results.values() for r in rs)
    acc = {c: v["value"] for c, v in cats.items()}
    simple = ["simple_python", "simple_java", "simple_javascript"]
    if all(c in acc for c in simple + ["multiple", "parallel", "parallel_multiple"]):
        simple_mean = sum(acc[c] for c in simple) / 3
        out["non_live_ast_summary"] = (simple_mean + acc["multiple"] + acc["parallel"]
                                       + acc["parallel_multiple"]) / 4
        out["non_live_simple_summary"] = simple_mean
    live = [c for c in ("live_simple", "live_multiple", "live_parallel", "live_parallel_multiple") if c in cats]
    if live:
        n = sum(cats[c]["n"] for c in live)
        out["live_ast_summary_weighted"] = sum(cats[c]["correct"] for c in live) / n if n else float("nan")
    protocol = next((v["protocol"] for v in cats.values() if "protocol" in v), None)
    if multi:
        out["protocol"] = protocol
        out["multi_turn_summary"] = sum(cats[c]["value"] for c in multi) / len(multi)
        if protocol == "per-turn":
            out["protocol_note"] = ("per-turn: each turn scored on its own from the state the answer key's earlier "
                                    "turns leave (GenEnv's reading of BFCL multi-turn); NOT BFCL's leaderboard metric")
    ast_cats = [c for c in cats if checker_kind(c) not in ("irrelevance", "relevance", "multi_turn")]
    n_ast = sum(cats[c]["n"] for c in ast_cats)
    if "non_live_ast_summary" in out:
        metric, value = "non_live_ast_accuracy (BFCL non-live AST summary: mean of simple[mean of 3], multiple, "\
                        "parallel, parallel_multiple)", out["non_live_ast_summary"]
    elif multi and not ast_cats:
        metric = ("multi_turn_accuracy (BFCL's multi-turn checker on its own backends; mean over categories)"
                  if protocol == "official" else
                  "multi_turn_per_turn_accuracy (share of turns right, each from the answer key's state; mean over "
                  "categories; the paper's reading, NOT BFCL's leaderboard metric)")
        value = out["multi_turn_summary"]
    elif len(cats) == 1:
        (c, v), = cats.items()
        metric = "relevance_accuracy" if checker_kind(c) in ("irrelevance", "relevance") else "ast_accuracy"
        value = v["value"]
    else:
        metric = "ast_accuracy (micro over the evaluated AST categories)"
        value = sum(cats[c]["correct"] for c in ast_cats) / n_ast if n_ast else float("nan")
    if lenient:
        metric += " [lenient decoding: calls also read from prose, fences, JSON and tags; NOT BFCL's official metric]"

    def covered(c: str) -> str:
        kind = checker_kind(c)
        if kind == "multi_turn":
            return f"{c}: BFCL's backends and multi-turn checker ({cats[c]['protocol']} protocol)"
        return f"{c}: AST checker" if kind not in ("irrelevance", "relevance") else f"{c}: relevance (call / no call)"

    def missing(c: str) -> str:
        if mt.is_multi_turn(c) and not mt.available():
            return f"{c} (bfcl-eval not installed: {mt.INSTALL})"
        if language(c) == "python" or tree_sitter_available():
            return f"{c} (file not in the data folder)"
        return f"{c} (tree-sitter 0.21 not installed: {TREE_SITTER_HINT})"

    out.update({
        "metric": metric, "value": value, "n": sum(v["n"] for v in cats.values()),
        "covered": [covered(c) for c in cats],
        "not_covered": [f"{c} (agentic / non-scoring)" for c in NOT_COVERED]
        + [missing(c) for c in CATEGORIES if c not in cats],
        "approximated": ["arithmetic inside an argument is evaluated over literals only (upstream evaluates any "
                         "expression with eval); otherwise BFCL's prompting decoder and AST checker, quirks included "
                         "(genenv_lab.evaluation.bfcl_checker)"]
        + (["multi-turn calls run by a dispatcher that evaluates no text (upstream runs each call string with "
            "eval): a Python builtin called by a model is refused here (genenv_lab.evaluation.bfcl_multi_turn)"]
           if multi else []),
    })
    return out


SPEC = BenchmarkSpec(name="bfcl", folder="bfcl", markers=("possible_answer",), sources=SOURCES,
                     categories=available_categories, load=load_category, score=score_item, gold=gold_prediction,
                     summarize=summarize, other_scorings=(("lenient", score_item_lenient),),
                     protocols=mt.PROTOCOLS, check=check_scoring, scores_missing=True,
                     installed=lambda: mt.wheel_data())
