"""BFCL's official AST checker and its Java/JavaScript value converters, re-implemented for parity.

The verdict on one decoded reply (``[{function_name: {param: value}}]``, see :mod:`.bfcl_decode`) against one
answer key, as ``bfcl_eval/eval_checker/ast_eval`` gives it, written independently (no upstream code is imported
or copied) and compared with the official package by ``tests/test_bfcl_parity.py``. Every quirk below is the
official behaviour and is kept so that a number reported here means what the leaderboard's number means:

- **Equality is Python's.** Values are compared with ``in`` on the answer key's list, so ``True == 1``,
  ``1 == 1.0`` and ``(1, 2) != [1, 2]`` hold as in Python, also inside dicts and lists.
- **Strings** of type ``string`` (and ``any``) are compared after :func:`standardize_string` (no spaces or
  ``,./-_*^``, lower case, ``'`` -> ``"``); strings directly inside a list are standardized too; strings inside a
  dict value are standardized one level deep; nothing deeper.
- **Types.** The value's type must be the schema's exactly (``bool`` is not ``int``); an ``int`` becomes a
  ``float`` where the schema says float (Python only); a tuple becomes a list where it says tuple. A value whose
  type is the answer key's type instead of the schema's is accepted as a "variable" and then compared without any
  standardization. Arrays get a one-level element check, skipped altogether when ``""`` (optional) is among the
  allowed values; an element also passes when its type is that of the first element of one allowed list.
- **Optional parameters.** A parameter may be left out when ``""`` is allowed; for a list-typed parameter ``""``
  also matches an empty list (upstream turns ``""`` into ``[]`` while standardizing); a dict with only ``""``
  allowed never matches a dict value.
- **Dicts.** Every key given must be in one allowed dict, every key left out must allow ``""``; dicts inside lists
  are checked position by position.
- **Counts and matching.** simple: exactly one call, checked against the first function of the item; multiple:
  as many calls as answers, and only the first call is checked; parallel: as many calls as answers, matched
  greedily in answer order (each answer takes the first unmatched call that passes, so an order exists where a
  correct set of calls fails). The function's name is compared exactly (no ``.`` -> ``_`` rewriting; upstream
  applies it to some API models only).
- **Java / JavaScript.** Every value must be a string of source text, converted by the declared type first
  (:func:`java_value`, :func:`js_value`): numbers by regular expressions (a value that does not match stays a
  string and fails the type check), collections by upstream's regular expressions, which split at every comma (a
  string holding one breaks) and keep the quotes of ``String`` elements in Java arrays (those answers cannot be
  matched). ``char`` values stay strings; ``Set``, ``Hashtable``, ``Queue``, ``Stack`` are not implemented.
- **Errors.** Where upstream raises (an answer naming a function missing from the item, a Java type outside its
  table, an element that is not a dict in a list of dicts) this module raises too; the evaluation runner turns it
  into an incorrect verdict with the exception named (upstream's run stops).
"""

from __future__ import annotations

import re
from typing import Any

PY_TYPES: dict[str, type] = {"string": str, "integer": int, "float": float, "boolean": bool, "array": list,
                             "tuple": list, "dict": dict, "any": str}
JAVA_TYPES: dict[str, type] = {"byte": int, "short": int, "integer": int, "float": float, "double": float,
                               "long": int, "boolean": bool, "char": str, "Array": list, "ArrayList": list,
                               "Set": set, "HashMap": dict, "Hashtable": dict, "Queue": list, "Stack": list,
                               "String": str, "any": str}
JS_TYPES: dict[str, type] = {"String": str, "integer": int, "float": float, "Bigint": int, "Boolean": bool,
                             "dict": dict, "array": list, "any": str}
_COLLECTIONS = ("Array", "ArrayList", "array")
"""Declared types whose ``items`` type is read (Java/JavaScript); Python reads it for ``array`` and ``tuple``."""


def standardize_string(text: str) -> str:
    """BFCL's string normalisation: drop spaces and ``,./-_*^``, lowercase, ``'`` -> ``"``.

    >>> standardize_string("April 1, 2024"), standardize_string("New_York-City.")
    ('april12024', 'newyorkcity')
    """
    return re.sub(r"[ ,./\-_*^]", "", text).lower().replace("'", '"')


# ------------------------------------------------------------------------------------------------- Java values
# Each pattern is the official one: ``re.match`` with ``$`` (so one trailing newline is tolerated), ``\d`` with
# Unicode digits, Python's int()/float() afterwards.
_J_INT = r"^-?\d+$"
_J_FLOAT = r"^-?\d+(\.\d+)?([eE][+-]?\d+)?[fF]$"
_J_DOUBLE = r"^-?\d+(\.\d+)?([eE][+-]?\d+)?$"
_J_LONG = r"^-?\d+[lL]$"
_J_ASLIST = r"new\s+ArrayList<\w*>\(Arrays\.asList\((.+?)\)\)"
_J_ADD_BLOCK = r"new\s+ArrayList<\w*>\(\)\s*\{\{\s*(.+?)\s*\}\}"
_J_EMPTY_LIST = r"new\s+ArrayList<\w*>\(\)"
_J_ARRAY = r"new\s+\w+\[\]\s*\{(.*?)\}"
_J_MAP = r"new\s+HashMap<.*?>\s*\(\)\s*\{\s*\{?\s*(.*?)\s*\}?\s*\}"
_J_PUT = r"put\(\"(.*?)\",\s*(.*?)\)"
_J_EMPTY_MAP = r"new\s+HashMap<.*?>\s*\(\)"


def _number_or_text(text: str) -> Any:
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text


def _java_untyped(text: str) -> Any:
    """A Java element with no declared type: boolean, "string", 5L, 2.5f, else Python's int/float, else text."""
    if text in ("true", "false"):
        return text == "true"
    if text.startswith('"') and text.endswith('"'):
        return text[1:-1]
    if re.match(_J_LONG, text):
        return int(text[:-1])
    if re.match(_J_FLOAT, text):
        return float(re.sub(r"[fF]$", "", text))
    return _number_or_text(text)


def _java_element(text: str, items_type: str | None) -> Any:
    if items_type in ("char", "String"):
        return text[1:-1]
    return java_value(text, items_type) if items_type else _java_untyped(text)


def java_value(value: str, type_name: str, items_type: str | None = None) -> Any:
    """A Java source string converted by its declared type, as BFCL converts it (a mismatch stays a string).

    >>> java_value("42L", "long"), java_value("42", "long"), java_value("2.5f", "float")
    (42, '42', 2.5)
    >>> java_value('new String[]{"a","b"}', "Array", "String")
    ['"a"', '"b"']
    >>> java_value('new ArrayList<>(Arrays.asList("a", "b"))', "ArrayList", "String")
    ['a', 'b']
    """
    if type_name not in JAVA_TYPES:
        raise ValueError(f"Java type {type_name!r} is not in BFCL's table")
    if type_name in ("byte", "short", "integer"):
        return int(value) if re.match(_J_INT, value) else str(value)
    if type_name == "float":
        return float(re.sub(r"[fF]$", "", value)) if re.match(_J_FLOAT, value) else str(value)
    if type_name == "double":
        return float(value) if re.match(_J_DOUBLE, value) else str(value)
    if type_name == "long":
        return int(re.sub(r"[lL]$", "", value)) if re.match(_J_LONG, value) else str(value)
    if type_name == "boolean":
        return value == "true" if value in ("true", "false") else str(value)
    if type_name == "ArrayList":
        found = re.search(_J_ASLIST, value)
        if found:
            return [_java_element(e.strip(), items_type) for e in found.group(1).split(",")]
        found = re.search(_J_ADD_BLOCK, value, re.DOTALL)
        if found:
            return [_java_element(e.strip(), items_type) for e in re.findall(r"add\((.+?)\)", found.group(1))]
        return [] if re.search(_J_EMPTY_LIST, value) else value
    if type_name == "Array":
        found = re.search(_J_ARRAY, value)
        if not found:
            return value
        parts = [p.strip() for p in found.group(1).split(",") if p.strip()]
        return [java_value(p, items_type) if items_type else _java_untyped(p) for p in parts]
    if type_name == "HashMap":
        found = re.search(_J_MAP, value, re.DOTALL)
        if found:
            body = found.group(1)
            if not body.strip():
                return {}
            return {k: _java_untyped(v.strip()) for k, v in re.findall(_J_PUT, body)}
        return {} if re.search(_J_EMPTY_MAP, value) else value
    if type_name in ("Set", "Hashtable", "Queue", "Stack"):
        raise NotImplementedError(f"BFCL does not convert Java {type_name} values")
    return str(value)  # char (upstream's char pattern can never match), String, any


# ------------------------------------------------------------------------------------------------- JavaScript values
_JS_INT = r"^-?\d+$"
_JS_FLOAT = r"^-?\d+(\.\d+)?$"
_JS_BIGINT = r"^-?\d+n$"
_JS_ARRAY_2D = r"\[\s*\[.*?\]\s*(,\s*\[.*?\]\s*)*\]|\bnew\s+Array\(\s*\[.*?\]\s*(,\s*\[.*?\]\s*)*\)"
_JS_ARRAY = r"\[(.*?)\]|\bnew\s+Array\((.*?)\)"
_JS_OBJECT = r"\{(.*?)\}"
_JS_PAIR = r"([^:]+):\s*(.*?)(?:,\s*(?=[^,]+:)|$)"


def _quoted(text: str) -> bool:
    return (text.startswith('"') and text.endswith('"')) or (text.startswith("'") and text.endswith("'"))


def _js_untyped(text: str) -> Any:
    text = text.strip()
    if text in ("true", "false"):
        return text == "true"
    return text[1:-1] if _quoted(text) else _number_or_text(text)


def _js_array(code: str, items_type: str | None) -> Any:
    two_d = re.match(_JS_ARRAY_2D, code)
    if two_d:
        rows = []
        for i, inner in enumerate(re.findall(r"\[(.*?)\]", two_d.group(0))):
            inner = inner.strip()
            if i == 0 and inner.startswith("["):
                inner = inner[1:]
            rows.append([_js_untyped(e.strip()) for e in inner.split(",")])
        return rows
    one_d = re.match(_JS_ARRAY, code)
    if not one_d:
        return code
    body = next((g for g in one_d.groups() if g is not None), None)
    parts = body.strip().split(",") if body is not None and body.strip() else []
    if items_type:
        return [js_value(p.strip(), items_type) for p in parts]
    return [_js_untyped(p.strip()) for p in parts]


def _js_object(code: str) -> Any:
    if code == "{}":
        return {}
    found = re.match(_JS_OBJECT, code)
    if not found:
        return code
    out: dict[str, Any] = {}
    try:
        for key, val in re.findall(_JS_PAIR, found.group(1)):
            key, val = key.strip().strip("'\""), val.strip()
            if val.startswith("[") and val.endswith("]"):
                out[key] = _js_collection(val, "array")
            elif val.startswith("{") and val.endswith("}"):
                out[key] = _js_collection(val, "dict")
            else:
                out[key] = _js_untyped(val.strip("'\""))
    except Exception:  # noqa: BLE001 - upstream returns the text on any failure
        return code
    return out


def _js_collection(code: str, kind: str, items_type: str | None = None) -> Any:
    code = code.strip()
    if kind == "dict":
        return _js_object(code)
    try:
        return _js_array(code, items_type)
    except Exception:  # noqa: BLE001 - upstream returns the text on any failure
        return code


def js_value(value: str, type_name: str, items_type: str | None = None) -> Any:
    """A JavaScript source string converted by its declared type, as BFCL converts it.

    >>> js_value("'Paris'", "String"), js_value("3", "float"), js_value("12n", "Bigint")
    ('Paris', 3.0, 12)
    >>> js_value("['a', 'b, c']", "array", "String")
    ['a', "'b", "c'"]
    >>> js_value("{limit: 5, tags: ['x']}", "dict")
    {'limit': 5, 'tags': ['x']}
    """
    if type_name not in JS_TYPES:
        raise ValueError(f"JavaScript type {type_name!r} is not in BFCL's table")
    if type_name == "String":
        return value[1:-1] if _quoted(value) else str(value)
    if type_name == "integer":
        return int(value) if re.match(_JS_INT, value) else str(value)
    if type_name == "float":
        return float(value) if re.match(_JS_FLOAT, value) else str(value)
    if type_name == "Bigint":
        return int(value[:-1]) if re.match(_JS_BIGINT, value) else str(value)
    if type_name == "Boolean":
        return value == "true" if value in ("true", "false") else str(value)
    if type_name in ("dict", "array"):
        return _js_collection(value, type_name, items_type)
    return str(value)  # any


# ------------------------------------------------------------------------------------------------- checks


class Verdict(tuple):
    """``(correct, reason)``."""

    def __new__(cls, ok: bool, reason: str = "ok") -> "Verdict":
        return super().__new__(cls, (bool(ok), reason))


def _answer_type(allowed: Any) -> type | None:
    for a in allowed:
        if a != "":
            return type(a)
    return None


def _type_ok(value: Any, allowed: Any, expected: type, nested: type | None) -> tuple[bool, bool]:
    """``(valid, is_variable)`` of upstream's one-level type check."""
    a_type = _answer_type(allowed)
    is_variable = a_type is not None and a_type != expected
    if type(value) == expected:
        if nested is None:
            return True, is_variable
        for alternative in allowed:
            if type(alternative) != list or all(_type_ok(v, alternative, nested, None)[0] for v in value):
                return True, is_variable
        return False, is_variable
    if a_type is not None and type(value) == a_type:
        return True, True
    return False, is_variable


def _standardized(values: Any) -> list:
    return [standardize_string(values[j]) if type(values[j]) == str else values[j] for j in range(len(values))]


def _dict_ok(value: dict, allowed: Any) -> Verdict:
    why = "no allowed dict"
    for alternative in allowed:
        if alternative == "":
            continue
        ok = True
        for k, v in value.items():
            if k not in alternative:
                why, ok = f"unexpected dict key {k!r}", False
                break
            std = standardize_string(v) if type(v) == str else v
            if std not in _standardized(alternative[k]):
                why, ok = f"invalid value for dict key {k!r}: {v!r}", False
                break
        for k, opts in alternative.items():
            if k not in value and "" not in opts:
                why, ok = why if not ok else f"missing dict key {k!r}", False
                break
        if ok:
            return Verdict(True)
    return Verdict(False, why)


def _list_of_dicts_ok(value: list, allowed: Any) -> Verdict:
    why = "wrong number of dicts in the list"
    for alternative in allowed:
        if len(value) != len(alternative):
            why = "wrong number of dicts in the list"
            continue
        for i in range(len(value)):
            ok, why = _dict_ok(value[i], [alternative[i]])
            if not ok:
                break
        else:
            return Verdict(True)
    return Verdict(False, why)


def _param_ok(name: str, value: Any, schema: dict, allowed: Any, lang: str) -> Verdict:
    declared = schema["type"]
    nested = None
    if lang in ("java", "javascript"):
        table, convert = (JAVA_TYPES, java_value) if lang == "java" else (JS_TYPES, js_value)
        expected = table[declared]
        if type(value) != str:
            return Verdict(False, f"{name!r}: {lang} values are strings of source text, got {type(value).__name__}")
        if declared in _COLLECTIONS:
            items_type = schema["items"]["type"]
            nested = table[items_type]
            value = convert(value, declared, items_type)
        else:
            value = convert(value, declared)
    else:
        expected = PY_TYPES[declared]
        if declared in ("array", "tuple"):
            nested = PY_TYPES[schema["items"]["type"]]
    if declared == "tuple" and type(value) == tuple:
        value = list(value)
    if lang == "python" and declared == "float" and type(value) == int:
        value = float(value)

    valid, is_variable = _type_ok(value, allowed, expected, nested)
    if not valid:
        return Verdict(False, f"wrong type for {name!r}: expected {declared}, got {type(value).__name__} {value!r}")
    if not is_variable:
        if expected == dict or (expected == list and nested == dict):
            ok, why = _dict_ok(value, allowed) if expected == dict else _list_of_dicts_ok(value, allowed)
            return Verdict(True) if ok else Verdict(False, f"{name!r}: {why}")
        if expected == str:
            if standardize_string(value) in [standardize_string(a) for a in allowed if type(a) == str]:
                return Verdict(True)
            return Verdict(False, f"invalid value for {name!r}: {value!r}; allowed {allowed!r}")
        if expected == list:
            if [standardize_string(v) if type(v) == str else v for v in value] in [_standardized(a) for a in allowed]:
                return Verdict(True)
            return Verdict(False, f"invalid value for {name!r}: {value!r}; allowed {allowed!r}")
    if value not in allowed:
        return Verdict(False, f"invalid value for {name!r}: {value!r}; allowed {allowed!r}")
    return Verdict(True)


def check_call(function: dict, call: dict, answer: dict, lang: str = "python") -> Verdict:
    """One decoded call ``{name: params}`` against one answer ``{name: {param: [allowed]}}`` and its schema.

    The answer's own function name is not read (upstream checks the call's name against the schema's).
    """
    allowed_by_param = next(iter(answer.values()))
    name = function["name"]
    if name not in call:
        return Verdict(False, f"wrong function: expected {name!r}, got {', '.join(map(repr, call)) or 'none'}")
    params = call[name]
    schema = function["parameters"]["properties"]
    for p in function["parameters"]["required"]:
        if p not in params:
            return Verdict(False, f"missing required parameter {p!r}")
    for p, value in params.items():
        if p not in schema or p not in allowed_by_param:
            return Verdict(False, f"unexpected parameter {p!r}")
        verdict = _param_ok(p, value, schema[p], allowed_by_param[p], lang)
        if not verdict[0]:
            return verdict
    for p, allowed in allowed_by_param.items():
        if p not in params and "" not in allowed:
            return Verdict(False, f"missing parameter {p!r} (not optional in the answer key)")
    return Verdict(True)


def _function_doc(functions: Any, name: str) -> dict | None:
    if type(functions) != list:
        return functions
    return next((f for f in functions if f["name"] == name), None)


def _require(doc: dict | None, name: str) -> dict:
    if doc is None:
        raise KeyError(f"the answer key names {name!r}, which is not among the item's functions")
    return doc


def check(functions: list[dict], calls: list[dict], answers: list[dict], category: str, lang: str) -> Verdict:
    """BFCL's AST verdict on decoded, well-formed ``calls`` (simple, multiple or parallel by ``category``)."""
    expected = len(answers) if "parallel" in category or "multiple" in category else 1
    if len(calls) != expected:
        return Verdict(False, f"wrong number of calls: expected {expected}, got {len(calls)}")
    if "parallel" in category:
        taken: list[int] = []
        for i, answer in enumerate(answers):
            name = next(iter(answer))
            doc = _require(_function_doc(functions, name), name)
            why = ""
            for j, call in enumerate(calls):
                if j in taken:
                    continue
                ok, why = check_call(doc, call, answer, lang)
                if ok:
                    taken.append(j)
                    break
            else:
                return Verdict(False, f"no remaining call matches answer {i} ({name}): {why}")
        return Verdict(True)
    if "multiple" in category:
        name = next(iter(answers[0]))
        return check_call(_require(_function_doc(functions, name), name), calls[0], answers[0], lang)
    return check_call(functions[0], calls[0], answers[0], lang)
