"""Synthetic BFCL predictions built from the answer keys, to compare a scorer with the official one.

:func:`probe_predictions` writes, for every item, the gold calls and variations of them that a model could
produce: every output format (bare list, no brackets, surrounding whitespace and backticks, code fences, prose,
JSON, tool-call tags, a quoted list, a tuple), every allowed alternative of every parameter, one-field
perturbations by type (case and punctuation of strings, ints as floats and strings, booleans as numbers, lists
shortened, extended, reversed or as tuples, dict keys dropped or added), dropped, extra, positional and repeated
parameters, wrong and dotted function names, dropped and duplicated calls, every order of parallel calls (up to
24), Java and JavaScript values in each writing style (double- and single-quoted source strings, bare source,
escaped quotes, numeric suffixes, spacing of collections, other collection constructors), and for irrelevance
refusals, empty lists and calls in every format. ``tests/test_bfcl_parity.py`` and ``benchmarks/bfcl_parity.py``
score them here and with the official package, and count the disagreements per category.

Nothing here is tuned on results: the variations are fixed rules applied to every item.
"""

from __future__ import annotations

import itertools
import json
import random
from typing import Any, Iterator

from genenv_lab.evaluation.bfcl import BFCLItem, checker_kind, language
from genenv_lab.evaluation.literals import render_java, render_js

MAX_PERMUTATIONS = 24


# ------------------------------------------------------------------------------------------------- rendering

def py_source(value: Any, quote: str = "'") -> str:
    """Python source of a value, strings in the given quote style (``repr`` for ``'``, JSON escapes for ``"``)."""
    if isinstance(value, str):
        return repr(value) if quote == "'" else json.dumps(value, ensure_ascii=False)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{py_source(k, quote)}: {py_source(v, quote)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(py_source(v, quote) for v in value) + "]"
    if isinstance(value, tuple):
        return "(" + ", ".join(py_source(v, quote) for v in value) + ("," if len(value) == 1 else "") + ")"
    return repr(value)


Call = tuple[str, list[tuple[str, str]]]
"""A call as source pieces: the name and ``(param, argument source)`` pairs in order."""


def _call_text(call: Call) -> str:
    name, args = call
    return f"{name}(" + ", ".join(a if p is None else f"{p}={a}" for p, a in args) + ")"


def _list_text(calls: list[Call], sep: str = ", ") -> str:
    return "[" + sep.join(_call_text(c) for c in calls) + "]"


def _formats(calls: list[Call], json_calls: list[dict] | None) -> Iterator[tuple[str, str]]:
    listed = _list_text(calls)
    yield "bracket", listed
    yield "bare", ", ".join(_call_text(c) for c in calls)
    yield "whitespace", f"\n  {listed}  \n\n"
    yield "tab", f"\t{listed}"
    yield "backticks", f"`{listed}`"
    yield "fence_python", f"```python\n{listed}\n```"
    yield "fence_plain", f"```\n{listed}\n```"
    yield "prose_before", f"Sure, here is the call: {listed}"
    yield "prose_after", f"{listed}\nThis calls the function."
    yield "quoted", f"'{listed}'"
    yield "tuple", "(" + ", ".join(_call_text(c) for c in calls) + ")"
    yield "newlines", _list_text(calls, sep=",\n ")
    yield "think", f"<think>The user wants a call.</think>{listed}"
    yield "toolcall_tag", f"<TOOLCALL>{listed}</TOOLCALL>"
    yield "nested_list", f"[{listed}]"
    if json_calls is not None:
        yield "json", json.dumps(json_calls, ensure_ascii=False)
        yield "json_fence", "```json\n" + json.dumps(json_calls, ensure_ascii=False) + "\n```"
        yield "tool_call", "".join(f"<tool_call>{json.dumps(c, ensure_ascii=False)}</tool_call>" for c in json_calls)
        yield "json_object", json.dumps({c["name"]: c["arguments"] for c in json_calls}, ensure_ascii=False)


# ------------------------------------------------------------------------------------------------- values

def _alternatives(allowed: list) -> list:
    return [a for a in allowed if not (isinstance(a, str) and a == "")]


def _mutations(value: Any) -> list[Any]:
    """One-field perturbations of a Python value, by type."""
    out: list[Any] = []
    if isinstance(value, bool):
        out += [not value, int(value), str(value), str(value).lower()]
    elif isinstance(value, int):
        out += [value + 1, float(value), str(value), -value if value else 1, value * 10]
        if value in (0, 1):
            out.append(bool(value))
    elif isinstance(value, float):
        out += [value + 0.5, str(value), round(value, 1) + 0.01]
        if value.is_integer():
            out.append(int(value))
    elif isinstance(value, str):
        out += [value.upper(), value + ".", value.replace(" ", "_"), value + " extra", "", value[:-1] if value else "x",
                f" {value} ", value.replace("'", '"')]
        if value.strip().lstrip("-").isdigit():
            out.append(int(value))
    elif isinstance(value, list):
        out += [value[:-1], value + value[-1:], list(reversed(value)), tuple(value), [],
                [str(v) if not isinstance(v, str) else v.upper() for v in value]]
        if value and isinstance(value[0], dict):
            out.append([dict(list(value[0].items())[:-1])] + value[1:])
    elif isinstance(value, dict):
        items = list(value.items())
        out += [dict(items[:-1]), {**value, "extra_key": 1}, list(value.items())]
        if items:
            k, v = items[0]
            out += [{**value, k: (v + 1) if isinstance(v, (int, float)) and not isinstance(v, bool) else str(v) + "x"},
                    {**value, k: str(v).upper() if isinstance(v, str) else v}]
    elif value is None:
        out += ["None", 0]
    return [m for m in out if m != value or type(m) is not type(value)]


def _swap_bools(value: Any) -> Any:
    """``value`` with booleans inside containers written as 1/0 and 1/0 as booleans; None when nothing changes."""
    def swap(v: Any) -> Any:
        if isinstance(v, bool):
            return int(v)
        if isinstance(v, int) and v in (0, 1):
            return bool(v)
        if isinstance(v, list):
            return [swap(x) for x in v]
        if isinstance(v, dict):
            return {k: swap(x) for k, x in v.items()}
        return v
    if not isinstance(value, (list, dict)):
        return None
    out = swap(value)
    return out if repr(out) != repr(value) else None


def _concrete(value: Any) -> Any:
    """A concrete value from an answer-key alternative: dict entries hold lists of allowed values."""
    if isinstance(value, dict):
        out = {}
        for k, opts in value.items():
            if isinstance(opts, list):
                alts = _alternatives(opts)
                if alts:
                    out[k] = _concrete(alts[0])
            else:
                out[k] = opts
        return out
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return [_concrete(v) for v in value]
    return value


def _schema(item: BFCLItem, name: str) -> dict:
    doc = next((f for f in item.functions if f.get("name") == name), None) or {}
    return (doc.get("parameters") or {}).get("properties", {}) or {}


# ------------------------------------------------------------------------------------------------- per language

def _source_styles(value: Any, schema: dict, lang: str) -> list[tuple[str, str]]:
    """Ways to write one Java/JavaScript argument: ``(style, argument source)``."""
    type_name = schema.get("type")
    items = schema.get("items") if isinstance(schema.get("items"), dict) else {}
    render = render_java if lang == "java" else render_js
    src = render(value, type_name, items.get("type"))
    out = [("double", f'"{src}"'), ("single", f"'{src}'"), ("escaped", json.dumps(src)), ("bare", src)]
    if isinstance(value, str):
        out.append(("bare_quoted", json.dumps(value)))
    if lang == "java":
        if type_name in ("integer", "long", "short", "byte") and isinstance(value, int) and not isinstance(value, bool):
            out += [("java_long_suffix", f'"{value}L"'), ("java_plain", f'"{value}"'), ("java_double", f'"{value}.0"')]
        if type_name in ("float", "double") and isinstance(value, (int, float)):
            out += [("java_f", f'"{float(value)}f"'), ("java_d", f'"{float(value)}d"'), ("java_plain", f'"{value}"'),
                    ("java_exp", f'"{float(value):e}"')]
        if type_name == "boolean":
            out += [("java_caps", f'"{str(value)}"')]
        if type_name == "Array" and isinstance(value, list):
            inner = ", ".join(render_java(v, items.get("type") or "any") if not isinstance(v, str) else json.dumps(v)
                              for v in value)
            out += [("java_array_spaces", f'"new {items.get("type") or "Object"}[] {{ {inner} }}"'),
                    ("java_array_bare", f"new Object[]{{{inner}}}"),
                    ("java_list_of", f'"List.of({inner})"')]
        if type_name == "ArrayList" and isinstance(value, list):
            inner = ", ".join(json.dumps(v) if isinstance(v, str) else render_java(v, items.get("type") or "any")
                              for v in value)
            adds = " ".join(f"add({json.dumps(v) if isinstance(v, str) else v});" for v in value)
            out += [("java_add_block", f"'new ArrayList<String>() {{{{ {adds} }}}}'"),
                    ("java_aslist_typed", f"'new ArrayList<Object>(Arrays.asList({inner}))'"),
                    ("java_aslist_bare", f"new ArrayList<>(Arrays.asList({inner}))")]
        if type_name == "HashMap" and isinstance(value, dict):
            puts = " ".join(f"put({json.dumps(str(k))}, {json.dumps(v) if isinstance(v, str) else v});"
                            for k, v in value.items())
            out += [("java_map_bare", f"new HashMap<String, Object>() {{{{ {puts} }}}}"),
                    ("java_map_of", "'Map.of(" + ", ".join(f'"{k}", {json.dumps(v)}' for k, v in value.items()) + ")'")]
    else:
        if type_name == "float" and isinstance(value, (int, float)):
            out += [("js_int", f'"{int(value)}"'), ("js_decimal", f'"{float(value)}"')]
        if type_name == "integer" and isinstance(value, int):
            out += [("js_float", f'"{value}.0"'), ("js_bigint", f'"{value}n"')]
        if type_name == "array" and isinstance(value, list):
            inner = ", ".join(json.dumps(v) if isinstance(v, str) else str(v).lower() if isinstance(v, bool) else str(v)
                              for v in value)
            out += [("js_new_array", f"'new Array({inner})'"), ("js_array_single", "'[" + ", ".join(
                f"'{v}'" if isinstance(v, str) else str(v) for v in value) + "]'"), ("js_array_bare", f"[{inner}]")]
        if type_name == "dict" and isinstance(value, dict):
            out += [("js_object_quoted_keys", json.dumps(json.dumps(value))),
                    ("js_object_bare", "{" + ", ".join(f"{k}: {json.dumps(v)}" for k, v in value.items()) + "}")]
    return out


def _python_arg(value: Any) -> list[tuple[str, str]]:
    out = [("repr", py_source(value)), ("double", py_source(value, '"'))]
    if isinstance(value, int) and not isinstance(value, bool):
        out += [("unary_plus", f"+{value}"), ("product", f"{value} * 1"), ("sum", f"{value - 1} + 1")]
    if isinstance(value, str):
        out += [("name", value if value.isidentifier() else "some_variable"), ("str_call", f"str({value!r})"),
                ("fstring", f"f{value!r}"), ("concat", f"{value[:1]!r} + {value[1:]!r}")]
    if isinstance(value, list):
        out += [("set", "{" + ", ".join(py_source(v) for v in value) + "}" if value else "set()"),
                ("list_call", f"list({py_source(tuple(value))})")]
    if isinstance(value, float):
        out += [("division", f"{value * 2!r} / 2")]
    return out


# ------------------------------------------------------------------------------------------------- probes

def _gold_values(item: BFCLItem) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for answer in item.ground_truth or []:
        (name, params), = answer.items()
        values = {}
        for p, allowed in params.items():
            alts = _alternatives(allowed)
            if alts:
                values[p] = _concrete(alts[0])
        out.append((name, values))
    return out


def _encode(item: BFCLItem, calls: list[tuple[str, dict[str, Any]]]) -> list[Call]:
    lang = language(item.category)
    out = []
    for name, values in calls:
        args = []
        for p, v in values.items():
            if lang == "python":
                args.append((p, py_source(v)))
            else:
                styles = dict(_source_styles(v, _schema(item, name).get(p, {}), lang))
                args.append((p, styles["double"] if '"' not in styles["bare"] else styles["single"]))
        out.append((name, args))
    return out


def _ast_probes(item: BFCLItem, rng: random.Random) -> Iterator[tuple[str, str]]:
    """Every probe of an AST item: output formats, per-parameter values and writings, call names, call counts and
    orders, Python-side oddities, booleans as numbers, non-ASCII before a value, and plain text."""
    gold = _gold_values(item)
    encoded = _encode(item, gold)
    json_calls = [{"name": n, "arguments": v} for n, v in gold]
    for fmt, text in _formats(encoded, json_calls):
        yield f"format:{fmt}", text
    for ci, answer in enumerate(item.ground_truth or []):
        (name, params), = answer.items()
        for p, allowed in params.items():
            yield from _parameter_probes(item, gold, ci, name, p, allowed)
        yield from _call_name_probes(item, gold, ci)
    yield from _call_count_probes(encoded, rng)
    yield from _python_probes(item, gold, encoded)
    yield from _bool_number_probes(item, gold)
    if language(item.category) != "python" and encoded and encoded[0][1]:
        # non-ASCII text before a Java/JavaScript value (upstream's Java decoder slices by byte offsets)
        enc = _encode(item, gold)
        enc[0] = (enc[0][0], [("note", '"café"')] + enc[0][1])
        yield "unicode_before", _list_text(enc)
    yield "text:refusal", "I cannot help with that using these functions."
    yield "text:empty", ""


def _parameter_probes(item: BFCLItem, gold: list, ci: int, name: str, p: str,
                      allowed: Any) -> Iterator[tuple[str, str]]:
    """One parameter of call ``ci``: every allowed alternative and one-field mutations, the gold value's writing
    styles, and the parameter dropped, given positionally and given twice."""
    lang = language(item.category)
    candidates: list[tuple[str, Any]] = [(f"alt{k}", _concrete(a)) for k, a in enumerate(_alternatives(allowed))]
    base = candidates[0][1] if candidates else None
    if candidates:
        candidates += [(f"mut{k}", m) for k, m in enumerate(_mutations(base))]
    for tag, value in candidates:
        calls = [(n, dict(v)) for n, v in gold]
        calls[ci][1][p] = value
        yield f"value:{p}:{tag}", _list_text(_encode(item, calls))
    if base is not None:
        styles = _python_arg(base) if lang == "python" else _source_styles(base, _schema(item, name).get(p, {}), lang)
        for style, src in styles:
            enc = _encode(item, gold)
            enc[ci] = (enc[ci][0], [(q, src if q == p else a) for q, a in enc[ci][1]])
            yield f"style:{p}:{style}", _list_text(enc)
    enc = _encode(item, gold)
    name_, args = enc[ci]
    rest = [(q, a) for q, a in args if q != p]
    own = [a for q, a in args if q == p]
    enc[ci] = (name_, rest)
    yield f"drop:{p}", _list_text(enc)
    if own:
        enc[ci] = (name_, [(None, own[0])] + rest)
        yield f"positional:{p}", _list_text(enc)
        enc[ci] = (name_, args + [(p, own[0])])
        yield f"twice:{p}", _list_text(enc)


def _call_name_probes(item: BFCLItem, gold: list, ci: int) -> Iterator[tuple[str, str]]:
    """Call ``ci`` with an unexpected parameter, and under wrong names (a suffix, dots as underscores, the last
    dotted part, another function of the item)."""
    lang = language(item.category)
    enc = _encode(item, gold)
    name_, args = enc[ci]
    enc[ci] = (name_, args + [("unexpected_param", "1" if lang == "python" else '"1"')])
    yield "extra_param", _list_text(enc)
    for tag, other in (("wrong_name", name_ + "_v2"), ("dots_to_underscores", name_.replace(".", "_")),
                       ("last_part", name_.rsplit(".", 1)[-1])):
        if other != name_:
            enc = _encode(item, gold)
            enc[ci] = (other, enc[ci][1])
            yield f"name:{tag}", _list_text(enc)
    for f in item.functions:
        if f.get("name") != name_:
            enc = _encode(item, gold)
            enc[ci] = (f["name"], enc[ci][1])
            yield "name:other_function", _list_text(enc)
            break


def _call_count_probes(encoded: list, rng: random.Random) -> Iterator[tuple[str, str]]:
    """No call, a call duplicated, dropped or unknown, every order (up to ``MAX_PERMUTATIONS``), two calls'
    arguments swapped."""
    yield "calls:none", "[]"
    yield "calls:duplicated_first", _list_text(encoded + encoded[:1])
    yield "calls:dropped_last", _list_text(encoded[:-1])
    yield "calls:extra_unknown", _list_text(encoded + [("unknown_function", [("x", "1")])])
    perms = list(itertools.islice(itertools.permutations(range(len(encoded))), MAX_PERMUTATIONS + 1))[1:]
    for k, order in enumerate(perms):
        yield f"order:{k}", _list_text([encoded[i] for i in order])
    if len(encoded) > 1:
        a, b = rng.sample(range(len(encoded)), 2)
        swapped = list(encoded)
        swapped[a], swapped[b] = (encoded[a][0], encoded[b][1]), (encoded[b][0], encoded[a][1])
        yield "calls:swapped_arguments", _list_text(swapped)


PYTHON_ODDITIES = (("lambda", "lambda: 1"), ("subscript", "data[0]"), ("ellipsis", "..."), ("none", "None"),
                   ("kwargs", None), ("nested_call_kw", "outer(inner=1)"), ("power", "2 ** 70"),
                   ("big_power", "2 ** 200000"), ("zero_division", "1 / 0"), ("list_concat", "[1] + [2]"),
                   ("unary_not", "not True"), ("negated_name", "-x"), ("double_negation", "--1"),
                   ("comparison", "1 < 2"), ("bool_op", "True and False"), ("attribute", "math.pi"),
                   ("dict_splat", "{**a}"), ("set_literal", "{1, 2}"), ("bytes", "b'x'"), ("complex", "1j"),
                   ("builtin_in_arithmetic", "round(2.5) * 2"), ("compare_in_arithmetic", "(1 < 2) + 1"),
                   ("index_in_arithmetic", "[5, 6][0] + 0"), ("name_in_arithmetic", "x + 1"),
                   ("string_format", "'%d items' % 3"))
"""Python-side writings of the first call's first parameter (``kwargs``: a ``**extra`` splat instead)."""


def _python_probes(item: BFCLItem, gold: list, encoded: list) -> Iterator[tuple[str, str]]:
    if language(item.category) != "python" or not encoded or not encoded[0][1]:
        return
    p0 = encoded[0][1][0][0]
    for tag, src in PYTHON_ODDITIES:
        enc = _encode(item, gold)
        args = [("**", "extra") if tag == "kwargs" and q == p0 else (q, src if q == p0 else a) for q, a in enc[0][1]]
        text = _list_text([(enc[0][0], [(q, a) for q, a in args if q != "**"])] + enc[1:])
        if tag == "kwargs":
            text = text.replace("(", "(**extra, ", 1)
        yield f"python:{tag}", text


def _bool_number_probes(item: BFCLItem, gold: list) -> Iterator[tuple[str, str]]:
    """Booleans and numbers swapped inside dict and list values (Python's True == 1)."""
    for ci, (_name, values) in enumerate(gold):
        for p, v in values.items():
            swapped = _swap_bools(v)
            if swapped is not None:
                calls = [(n, dict(vals)) for n, vals in gold]
                calls[ci][1][p] = swapped
                yield f"bool_number:{p}", _list_text(_encode(item, calls))


def _irrelevance_probes(item: BFCLItem) -> Iterator[tuple[str, str]]:
    yield "refusal", "None of the provided functions can be used for this request."
    yield "empty", ""
    yield "empty_list", "[]"
    yield "empty_list_spaces", "  [ ]  "
    yield "none", "None"
    yield "python_expression", "[1, 2, 3]"
    yield "sentence_with_parens", "I would call (if I could) nothing here."
    for f in item.functions[:2]:
        props = (f.get("parameters") or {}).get("properties", {}) or {}
        args = {p: ("x" if (s or {}).get("type") == "string" else 1) for p, s in list(props.items())[:2]}
        call = f"{f['name']}(" + ", ".join(f"{p}={py_source(v)}" for p, v in args.items()) + ")"
        yield "call", f"[{call}]"
        yield "call_bare", call
        yield "call_no_args", f"[{f['name']}()]"
        yield "call_in_prose", f"You could use {call} for this."
        yield "call_fenced", f"```python\n[{call}]\n```"
        yield "call_json", json.dumps([{"name": f["name"], "arguments": args}])
        yield "call_tool_tag", f"<tool_call>{json.dumps({'name': f['name'], 'arguments': args})}</tool_call>"
        yield "call_positional", f"[{f['name']}(1)]"


def probe_predictions(items: list[BFCLItem], seed: int = 0) -> list[dict[str, str]]:
    """Prediction rows ``{"id", "category", "probe", "prediction"}`` for every item (see the module docstring)."""
    rng = random.Random(seed)
    rows = []
    for item in items:
        kind = checker_kind(item.category)
        if kind == "relevance":
            probes = _irrelevance_probes(item)
        elif kind == "irrelevance":
            probes = _irrelevance_probes(item)
        else:
            probes = _ast_probes(item, rng)
        for probe, text in probes:
            rows.append({"id": item.id, "category": item.category, "probe": probe, "prediction": text})
    return rows


# ------------------------------------------------------------------------------------------------- parity

def official_verdicts(rows: list[dict], data_dir: str, python: str, driver: str, work_dir: str) -> list[dict]:
    """The official package's verdicts on ``rows``, computed by ``driver`` (``tests/bfcl_official_driver.py``)
    inside the official package's venv (``python``); one row per prediction, in order."""
    import subprocess
    from pathlib import Path

    work = Path(work_dir)
    work.mkdir(parents=True, exist_ok=True)
    preds, out = work / "predictions.jsonl", work / "official.jsonl"
    with open(preds, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps({k: row[k] for k in ("id", "category", "prediction")}, ensure_ascii=False) + "\n")
    subprocess.run([python, str(Path(driver).resolve()), str(Path(data_dir).resolve()), str(preds.resolve()),
                    str(out.resolve())], check=True, cwd=str(work))
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines() if line.strip()]


def agreement(rows: list[dict], ours: list[bool], theirs: list[dict]) -> dict[str, dict[str, Any]]:
    """Per category (and ``all``): n, agreeing verdicts, rate, both-correct counts and the disagreeing rows."""
    table: dict[str, dict[str, Any]] = {}
    for row, mine, official in zip(rows, ours, theirs, strict=True):
        for key in (row["category"], "all"):
            t = table.setdefault(key, {"n": 0, "agree": 0, "official_correct": 0, "ours_correct": 0,
                                       "official_errors": 0, "disagreements": []})
            t["n"] += 1
            t["official_correct"] += official["valid"]
            t["ours_correct"] += mine
            t["official_errors"] += "error" in official
            if mine == official["valid"]:
                t["agree"] += 1
            elif key == "all":
                t["disagreements"].append({**row, "ours": mine, "official": official["valid"],
                                           "official_error": official.get("error")})
    for t in table.values():
        t["rate"] = t["agree"] / t["n"] if t["n"] else float("nan")
    return table
