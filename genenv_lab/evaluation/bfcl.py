"""BFCL V4 single-turn AST categories: loaders, the AST checker, gold predictions and the category summaries.

Covered categories: ``simple_python``, ``simple_java``, ``simple_javascript``, ``multiple``, ``parallel``,
``parallel_multiple``, ``irrelevance``, and ``live_simple``, ``live_multiple``, ``live_parallel``,
``live_parallel_multiple``, ``live_irrelevance``, ``live_relevance`` where their files exist in the data folder
(they ship in the ``bfcl-eval`` wheel, not in the offline copy). Not covered: multi-turn (needs the simulated
backends), web search and memory (agentic), format sensitivity.

The checker follows BFCL's definition (``bfcl_eval/eval_checker/ast_eval``, re-implemented here):

- the number of calls must equal the answer key's (1 for simple and multiple);
- per call: the function name matches; every ``required`` parameter is present; no parameter outside both the
  schema and the answer key; each value type-checks against the schema (Python types; an ``int`` is accepted
  where a ``float`` is expected; a value of the answer key's own type is accepted as a "variable" when the key's
  type differs from the schema's; arrays/tuples get a one-level element type check, as upstream, without the
  int-to-float allowance, and none for ``any`` elements); each value equals one of the allowed values: strings
  after :func:`standardize_string`, lists and dicts recursively (dict keys must be allowed, missing keys must be
  optional); a parameter absent from the call is fine only when ``""`` is among its allowed values;
- ``parallel``/``parallel_multiple``: calls and answers are matched order-free (a perfect bipartite matching, so
  never stricter than upstream's greedy pass);
- ``irrelevance``: correct iff no call is decoded; ``live_relevance``: correct iff at least one call is decoded;
- ``simple_java``/``simple_javascript``: every value must be a string of Java/JavaScript source, converted by the
  declared type before the checks (see :mod:`genenv_lab.evaluation.literals`).

Small differences from upstream, all in the lenient direction except the first: booleans never equal numbers
(Python's ``True == 1`` is not used); strings nested inside lists are standardized too; parallel matching is exact
rather than greedy; elements of ``any``-typed collections are not type-checked (upstream stringifies them, which
makes two ``simple_java`` answer keys unattainable). Java/JavaScript conversion differences are listed in
:mod:`genenv_lab.evaluation.literals`. Function names are compared exactly (no ``.`` -> ``_`` rewriting, which
upstream applies only to some API models).

>>> fn = {"name": "area", "parameters": {"type": "dict", "properties": {"base": {"type": "float"},
...       "unit": {"type": "string"}}, "required": ["base"]}}
>>> key = [{"area": {"base": [10.0], "unit": ["cm", ""]}}]
>>> ast_check([fn], decode_calls("area(base=10)"), key, "simple_python")
(True, 'ok')
>>> ast_check([fn], decode_calls("area(base=10, unit='CM.')"), key, "simple_python")
(True, 'ok')
>>> ast_check([fn], decode_calls("area(base=10, height=2)"), key, "simple_python")
(False, "unexpected parameter 'height'")
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .calls import DecodedCalls, FunctionCall, decode_calls, format_calls_json, format_calls_python
from .common import BenchmarkSpec, ItemResult, accuracy
from .literals import JAVA_TYPES, JS_TYPES, convert_java, convert_js, render_java, render_js

NON_LIVE = ["simple_python", "simple_java", "simple_javascript", "multiple", "parallel", "parallel_multiple",
            "irrelevance"]
LIVE = ["live_simple", "live_multiple", "live_parallel", "live_parallel_multiple", "live_irrelevance",
        "live_relevance"]
CATEGORIES = NON_LIVE + LIVE
NOT_COVERED = ["multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param", "multi_turn_long_context",
               "web_search", "memory", "format_sensitivity"]
SOURCES = ("ShishirPatil/gorilla, berkeley-function-call-leaderboard/bfcl_eval/data/ (also inside the PyPI wheel "
           "'bfcl-eval', bfcl_eval/data/): the BFCL_v4_<category>.json files and possible_answer/")

PY_TYPES: dict[str, type] = {"string": str, "integer": int, "float": float, "boolean": bool, "array": list,
                             "tuple": list, "dict": dict, "any": str}


def language(category: str) -> str:
    if category.endswith("java"):
        return "java"
    if category.endswith("javascript"):
        return "javascript"
    return "python"


def checker_kind(category: str) -> str:
    if "irrelevance" in category:
        return "irrelevance"
    if "relevance" in category:
        return "relevance"
    if "parallel" in category:
        return "parallel"
    if "multiple" in category:
        return "multiple"
    return "simple"


def standardize_string(text: str) -> str:
    """BFCL's string normalisation: drop spaces and ``,./-_*^``, lowercase, ``'`` -> ``"``.

    >>> standardize_string("April 1, 2024"), standardize_string("New_York-City.")
    ('april12024', 'newyorkcity')
    """
    return re.sub(r"[ ,./\-_*^]", "", text).lower().replace("'", '"')


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
    folder = data_dir / "possible_answer" if answers else data_dir
    found = sorted(folder.glob(f"BFCL_v*_{category}.json"),
                   key=lambda p: int(re.search(r"BFCL_v(\d+)_", p.name).group(1)))
    return found[-1] if found else None


def _read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def available_categories(data_dir: Path) -> list[str]:
    """Covered categories whose question file (and answer key, where one is needed) exists in ``data_dir``."""
    out = []
    for cat in CATEGORIES:
        if _find(data_dir, cat) is None:
            continue
        if checker_kind(cat) not in ("irrelevance", "relevance") and _find(data_dir, cat, answers=True) is None:
            continue
        out.append(cat)
    return out


def load_category(data_dir: Path, category: str) -> list[BFCLItem]:
    if category not in CATEGORIES:
        raise ValueError(f"BFCL category {category!r} is not covered; covered: {CATEGORIES}")
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


# ------------------------------------------------------------------------------------------------- checking


def _answer_type(allowed: list) -> type | None:
    for a in allowed:
        if not (isinstance(a, str) and a == ""):
            return type(a)
    return None


def _eq(a: Any, b: Any, standardize: bool) -> bool:
    """Equality for the value checks: strings standardized (when asked), lists/dicts recursively, bools distinct."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, str) and isinstance(b, str):
        return standardize_string(a) == standardize_string(b) if standardize else a == b
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_eq(x, y, standardize) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_eq(a[k], b[k], standardize) for k in a)
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return type(a) is type(b) and a == b


def _is_blank(a: Any) -> bool:
    return isinstance(a, str) and a == ""


def _nested_types_ok(value: list, allowed: list, nested: type) -> bool:
    for a in allowed:
        if not isinstance(a, list):
            return True  # upstream: an optional ("") or variable alternative skips the element check
        a_type = _answer_type(a)
        if all(type(v) is nested or (a_type is not None and type(v) is a_type) for v in value):
            return True
    return False


def _dict_check(param: str, value: dict, allowed: list) -> tuple[bool, str]:
    reason = f"invalid value for {param!r}: {value!r}; allowed {allowed!r}"
    for a in allowed:
        if _is_blank(a) or not isinstance(a, dict):
            continue
        bad = None
        for k, v in value.items():
            if k not in a:
                bad = f"unexpected key {k!r} in {param!r}"
                break
            opts = a[k] if isinstance(a[k], list) else [a[k]]
            if not any(_eq(v, o, True) for o in opts):
                bad = f"invalid value for {param!r}[{k!r}]: {v!r}; allowed {opts!r}"
                break
        if bad is None:
            for k, opts in a.items():
                if k not in value and not (isinstance(opts, list) and "" in opts):
                    bad = f"missing key {k!r} in {param!r}"
                    break
        if bad is None:
            return True, "ok"
        reason = bad
    return False, reason


def _list_dict_check(param: str, value: list, allowed: list) -> tuple[bool, str]:
    reason = f"wrong number of dicts in {param!r}"
    for a in allowed:
        if not isinstance(a, list) or len(a) != len(value):
            continue
        for v, d in zip(value, a):
            ok, why = _dict_check(param, v, [d])
            if not ok:
                reason = why
                break
        else:
            return True, "ok"
    return False, reason


def _check_param(param: str, value: Any, schema: dict, allowed: list, lang: str) -> tuple[bool, str]:
    type_name = schema.get("type")
    items = schema.get("items")
    items_type = items.get("type") if isinstance(items, dict) else None
    if lang == "java":
        expected = JAVA_TYPES.get(type_name)
        nested = JAVA_TYPES.get(items_type) if type_name in ("Array", "ArrayList") and items_type else None
        if expected is not None:
            if not isinstance(value, str):
                return False, (f"wrong type for {param!r}: Java values are strings of Java source, "
                               f"got {type(value).__name__} {value!r}")
            value = convert_java(value, type_name, items_type)
    elif lang == "javascript":
        expected = JS_TYPES.get(type_name)
        nested = JS_TYPES.get(items_type) if type_name == "array" and items_type else None
        if expected is not None:
            if not isinstance(value, str):
                return False, (f"wrong type for {param!r}: JavaScript values are strings of JavaScript source, "
                               f"got {type(value).__name__} {value!r}")
            value = convert_js(value, type_name, items_type)
    else:
        expected = PY_TYPES.get(type_name)
        nested = PY_TYPES.get(items_type) if type_name in ("array", "tuple") and items_type else None
        if type_name == "tuple" and isinstance(value, tuple):
            value = list(value)
        if type_name == "float" and type(value) is int:
            value = float(value)

    if items_type == "any":
        nested = None  # elements of an ``any`` collection may have any type (upstream stringifies them)
    is_variable = False
    if expected is not None:
        a_type = _answer_type(allowed)
        is_variable = a_type is not None and a_type is not expected
        if type(value) is expected:
            if nested is not None and isinstance(value, list) and not _nested_types_ok(value, allowed, nested):
                return False, (f"wrong element type in {param!r}: expected {type_name} of {items_type}, "
                               f"got {value!r}")
        elif a_type is not None and type(value) is a_type:
            is_variable = True
        else:
            return False, (f"wrong type for {param!r}: expected {type_name}, got {type(value).__name__} "
                           f"{value!r}")

    if not is_variable and expected is not None:
        if expected is dict:
            return _dict_check(param, value, allowed)
        if expected is list and nested is dict:
            return _list_dict_check(param, value, allowed)
        if expected is str or expected is list:
            if any(_eq(value, a, True) for a in allowed if not _is_blank(a)):
                return True, "ok"
            return False, f"invalid value for {param!r}: {value!r}; allowed {allowed!r}"
    if any(_eq(value, a, expected is None) for a in allowed if not _is_blank(a)):
        return True, "ok"
    return False, f"invalid value for {param!r}: {value!r}; allowed {allowed!r}"


def check_call(function: dict, call: FunctionCall, answer: dict[str, dict[str, list]],
               lang: str = "python") -> tuple[bool, str]:
    """BFCL's single-call check of ``call`` against one answer-key entry ``{name: {param: [allowed]}}``."""
    (gold_name, gold_params), = answer.items()
    if call.name != gold_name:
        return False, f"wrong function: expected {gold_name!r}, got {call.name!r}"
    params = function.get("parameters", {}) or {}
    props = params.get("properties", {}) or {}
    for p in params.get("required", []) or []:
        if p not in call.arguments:
            extra = " (positional arguments are not read)" if call.positional else ""
            return False, f"missing required parameter {p!r}{extra}"
    for p, value in call.arguments.items():
        if p not in props or p not in gold_params:
            return False, f"unexpected parameter {p!r}"
        ok, why = _check_param(p, value, props[p], gold_params[p], lang)
        if not ok:
            return False, why
    for p, allowed in gold_params.items():
        if p not in call.arguments and "" not in allowed:
            return False, f"missing parameter {p!r} (not optional in the answer key)"
    return True, "ok"


def _function_doc(functions: list[dict], name: str) -> dict | None:
    for f in functions:
        if f.get("name") == name:
            return f
    return None


def _matching(compatible: list[list[bool]]) -> list[int] | None:
    """A perfect matching answers -> calls (Kuhn's augmenting paths), or None."""
    n = len(compatible)
    match_of_call: dict[int, int] = {}

    def try_assign(i: int, seen: set[int]) -> bool:
        for j, ok in enumerate(compatible[i]):
            if ok and j not in seen:
                seen.add(j)
                if j not in match_of_call or try_assign(match_of_call[j], seen):
                    match_of_call[j] = i
                    return True
        return False

    for i in range(n):
        if not try_assign(i, set()):
            return None
    out = [0] * n
    for j, i in match_of_call.items():
        out[i] = j
    return out


def ast_check(functions: list[dict], calls: DecodedCalls | list[FunctionCall], ground_truth: list | None,
              category: str) -> tuple[bool, str]:
    """Verdict ``(correct, reason)`` of decoded calls on one BFCL item of ``category``."""
    calls = list(calls.calls) if isinstance(calls, DecodedCalls) else list(calls)
    kind = checker_kind(category)
    lang = language(category)
    if kind == "irrelevance":
        if calls:
            return False, f"a call was made ({calls[0].name}) where no function is relevant"
        return True, "ok (no call)"
    if kind == "relevance":
        return (True, "ok (a call was made)") if calls else (False, "no call was made")
    if not calls:
        return False, "no function call decoded"
    if len(calls) != len(ground_truth):
        return False, f"wrong number of calls: expected {len(ground_truth)}, got {len(calls)}"
    if kind in ("simple", "multiple"):
        gold_name = next(iter(ground_truth[0]))
        doc = functions[0] if kind == "simple" and len(functions) == 1 else _function_doc(functions, gold_name)
        if doc is None:
            return False, f"answer key names {gold_name!r}, which is not among the functions"
        return check_call(doc, calls[0], ground_truth[0], lang)
    reasons: list[str] = []
    compatible: list[list[bool]] = []
    for answer in ground_truth:
        gold_name = next(iter(answer))
        doc = _function_doc(functions, gold_name)
        if doc is None:
            return False, f"answer key names {gold_name!r}, which is not among the functions"
        row = []
        first_reason = None
        for call in calls:
            ok, why = check_call(doc, call, answer, lang)
            row.append(ok)
            if not ok and (first_reason is None or (call.name == gold_name and first_reason.startswith("wrong f"))):
                first_reason = why
        compatible.append(row)
        if not any(row):
            reasons.append(f"no call matches answer {gold_name!r}: {first_reason}")
    if reasons:
        return False, reasons[0]
    if _matching(compatible) is None:
        return False, "calls cannot be matched one-to-one with the answers"
    return True, "ok"


def score_item(item: BFCLItem, prediction: str) -> ItemResult:
    decoded = decode_calls(prediction)
    ok, why = ast_check(item.functions, decoded, item.ground_truth, item.category)
    if not decoded and not ok and decoded.reason:
        why = f"{why} ({decoded.reason})"
    return ItemResult(id=item.id, category=item.category, correct=ok, score=float(ok), reason=why,
                      extra={"n_calls": len(decoded), "call_format": decoded.format})


# ------------------------------------------------------------------------------------------------- gold


def _first(allowed: list) -> tuple[bool, Any]:
    for a in allowed:
        if not _is_blank(a):
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
        doc = _function_doc(item.functions, name) or {}
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


def gold_prediction(item: BFCLItem, style: str = "python") -> str | None:
    """A raw output that scores correct: the answer key's calls (``python`` or ``json`` style), or a plain-text
    refusal for irrelevance; None for ``live_relevance`` (no answer key)."""
    kind = checker_kind(item.category)
    if kind == "irrelevance":
        return "None of the provided functions can be used for this request, so I will not call any of them."
    if kind == "relevance":
        return None
    calls = gold_calls(item)
    return format_calls_json(calls) if style == "json" else format_calls_python(calls)


# ------------------------------------------------------------------------------------------------- prompt

SYSTEM_PROMPT = (
    "You can call functions. Below are the available functions as JSON schemas. If the request can be served with "
    "them, reply with only the call(s), in Python syntax: [func_name(param=value, ...), ...] (one list, several "
    "calls allowed). If none of the functions fits the request, reply in plain text without any call.")


def prompt_messages(item: BFCLItem) -> list[dict[str, str]]:
    """Chat messages posing an item to a model (the lab's own wording, not BFCL's prompt)."""
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


def summarize(results: dict[str, list[ItemResult]]) -> dict[str, Any]:
    cats = {c: {"metric": "accuracy", "value": accuracy(r), "correct": sum(x.correct for x in r), "n": len(r)}
            for c, r in results.items()}
    out: dict[str, Any] = {"categories": cats}
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
    ast_cats = [c for c in cats if checker_kind(c) not in ("irrelevance", "relevance")]
    n_ast = sum(cats[c]["n"] for c in ast_cats)
    if "non_live_ast_summary" in out:
        metric, value = "non_live_ast_accuracy (BFCL non-live AST summary: mean of simple[mean of 3], multiple, "\
                        "parallel, parallel_multiple)", out["non_live_ast_summary"]
    elif len(cats) == 1:
        (c, v), = cats.items()
        metric = "relevance_accuracy" if checker_kind(c) in ("irrelevance", "relevance") else "ast_accuracy"
        value = v["value"]
    else:
        metric = "ast_accuracy (micro over the evaluated AST categories)"
        value = sum(cats[c]["correct"] for c in ast_cats) / n_ast if n_ast else float("nan")
    out.update({
        "metric": metric, "value": value, "n": sum(v["n"] for v in cats.values()),
        "covered": [f"{c}: AST checker" if checker_kind(c) not in ("irrelevance", "relevance")
                    else f"{c}: relevance (call / no call)" for c in cats],
        "not_covered": [f"{c} (multi-turn state checks / agentic / non-scoring)" for c in NOT_COVERED]
        + [f"{c} (file not in the data folder)" for c in CATEGORIES if c not in cats],
        "approximated": ["Java/JavaScript argument strings are converted by this package's own converter; quoted "
                         "strings inside Java arrays are unquoted (upstream keeps the quotes)",
                         "parallel categories use an exact one-to-one matching (upstream: greedy first match)",
                         "strings nested in lists are standardized too; booleans never equal numbers"],
    })
    return out


SPEC = BenchmarkSpec(name="bfcl", folder="bfcl", markers=("possible_answer",), sources=SOURCES,
                     categories=available_categories, load=load_category, score=score_item, gold=gold_prediction,
                     summarize=summarize)
