"""Java and JavaScript argument values for BFCL's ``simple_java`` / ``simple_javascript`` categories.

In those categories a model passes every argument as a *string of Java or JavaScript source* (``"true"``,
``"42L"``, ``"new int[]{1, 2}"``, ``"{key: 'v'}"``), and the checker converts the string to a Python value by the
declared parameter type before comparing it with the answer key. This module does that conversion with a small
quote- and bracket-aware splitter (no ``eval``), and renders Python values back to such strings (used to turn the
answer key into gold predictions).

Conversion rules (following BFCL's documented behaviour; written independently):

- Java ``integer``/``byte``/``short``: ``-?\\d+``; ``long``: needs the ``L`` suffix (``42L``); ``float``: needs
  ``f`` (``3.5f``); ``double``: a plain decimal; ``boolean``: ``true``/``false``; ``char``, ``String``, ``any``:
  the string unchanged. A value that does not fit its pattern stays a string (and then fails the type check).
- Java ``Array`` (``new T[]{...}``), ``ArrayList`` (``new ArrayList<>(Arrays.asList(...))``,
  ``new ArrayList<>() {{ add(..); }}``, ``new ArrayList<>()``) and ``HashMap``
  (``new HashMap<..>() {{ put("k", v); }}``, ``new HashMap<>()``): elements converted by the ``items`` type.
- JavaScript ``String``: surrounding quotes removed; ``integer``: ``-?\\d+``; ``float``: ``-?\\d+(\\.\\d+)?``;
  ``Bigint``: ``123n``; ``Boolean``; ``array``: ``[...]`` or ``new Array(...)``; ``dict``: ``{k: v, ...}``
  (values parsed recursively); ``any``: unchanged.

Deliberate differences from the upstream converter: elements are split at top-level commas only (upstream splits
at every comma, breaking strings that contain one), and quoted string elements inside Java arrays lose their quotes
(upstream keeps them, which makes a ``String[]`` answer unattainable).

>>> convert_java("42L", "long"), convert_java("42", "long")
(42, '42')
>>> convert_java('new HashMap<String, Object>() {{ put("limit", 50); put("schema", "public"); }}', "HashMap")
{'limit': 50, 'schema': 'public'}
>>> convert_js("[1, 'two', true]", "array"), convert_js("{a: 1, b: [x, 'y']}", "dict")
([1, 'two', True], {'a': 1, 'b': ['x', 'y']})
"""

from __future__ import annotations

import json
import re
from typing import Any, Iterator

_INT = re.compile(r"^-?\d+$")
_JAVA_LONG = re.compile(r"^-?\d+[lL]$")
_JAVA_FLOAT = re.compile(r"^-?\d+(\.\d+)?([eE][+-]?\d+)?[fF]$")
_JAVA_DOUBLE = re.compile(r"^-?\d+(\.\d+)?([eE][+-]?\d+)?$")
_JS_FLOAT = re.compile(r"^-?\d+(\.\d+)?$")
_JS_BIGINT = re.compile(r"^-?\d+n$")
_ANY_FLOAT = re.compile(r"^-?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?[fFdD]?$")

_JAVA_ARRAY = re.compile(r"^new\s+[\w.$]+(?:\s*<[^>]*>)?\s*(?:\[\s*\]\s*)+\{(.*)\}$", re.DOTALL)
_JAVA_ARRAYLIST_ASLIST = re.compile(
    r"^new\s+(?:Array|Linked)List\s*(?:<[^>]*>)?\s*\(\s*(?:Arrays\.asList|List\.of)\s*\((.*)\)\s*\)$", re.DOTALL)
_JAVA_ASLIST = re.compile(r"^(?:Arrays\.asList|List\.of|Set\.of)\s*\((.*)\)$", re.DOTALL)
_JAVA_ARRAYLIST_INIT = re.compile(
    r"^new\s+(?:Array|Linked)List\s*(?:<[^>]*>)?\s*\(\s*\)\s*(?:\{\s*\{(.*)\}\s*\}|\{\s*\})?\s*$", re.DOTALL)
_JAVA_HASHMAP = re.compile(
    r"^new\s+(?:Hash|LinkedHash|Tree)?Map\s*(?:<.*?>)?\s*\(\s*\)\s*(?:\{\s*\{(.*)\}\s*\}|\{\s*\})?\s*$", re.DOTALL)
_JAVA_MAP_OF = re.compile(r"^Map\.of\s*\((.*)\)$", re.DOTALL)
_JS_NEW_ARRAY = re.compile(r"^new\s+Array\s*\((.*)\)$", re.DOTALL)

JAVA_TYPES = {"byte": int, "short": int, "integer": int, "float": float, "double": float, "long": int,
              "boolean": bool, "char": str, "Array": list, "ArrayList": list, "Set": set, "HashMap": dict,
              "Hashtable": dict, "Queue": list, "Stack": list, "String": str, "any": str}
JS_TYPES = {"String": str, "integer": int, "float": float, "Bigint": int, "Boolean": bool, "dict": dict,
            "array": list, "any": str}


def iter_quoted(text: str, quotes: str = "\"'") -> Iterator[bool]:
    """Per character of ``text``, lazily: whether it belongs to a string literal (its quotes and backslash
    escapes included). An unterminated literal runs to the end."""
    quote, escaped = None, False
    for ch in text:
        if quote:
            yield True
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = None
        else:
            if ch in quotes:
                quote = ch
            yield quote is not None


def quoted_mask(text: str, quotes: str = "\"'") -> list[bool]:
    """:func:`iter_quoted` as a list.

    >>> ''.join('q' if q else '.' for q in quoted_mask("f('a,b', c)"))
    '..qqqqq....'
    """
    return list(iter_quoted(text, quotes))


def split_top_level(text: str, sep: str = ",") -> list[str]:
    """Split at ``sep`` outside quotes and brackets; empty trailing parts are dropped.

    >>> split_top_level('"a,b", [1, 2], f(x, y)')
    ['"a,b"', '[1, 2]', 'f(x, y)']
    """
    parts, depth, cur = [], 0, []
    for ch, quoted in zip(text, quoted_mask(text, "\"'`")):
        if quoted:
            cur.append(ch)
        elif ch == sep and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            depth += (ch in "([{") - (ch in ")]}")
            cur.append(ch)
    parts.append("".join(cur).strip())
    return [p for p in parts if p]


def _unquote(text: str) -> str | None:
    """The content of a single- or double-quoted literal spanning the whole text, else None."""
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'`":
        body = text[1:-1]
        if text[0] == '"':
            try:
                return json.loads(text)
            except json.JSONDecodeError:
                pass
        return re.sub(r"\\(.)", r"\1", body)
    return None


def parse_literal(text: str) -> Any:
    """A Java/JavaScript literal as a Python value without type information; unknown syntax stays a string."""
    text = text.strip()
    s = _unquote(text)
    if s is not None:
        return s
    if text in ("true", "false"):
        return text == "true"
    if _INT.match(text) or _JAVA_LONG.match(text) or _JS_BIGINT.match(text):
        return int(text.rstrip("lLn"))
    if _ANY_FLOAT.match(text):
        return float(text.rstrip("fFdD"))
    parts = _collection_parts(text)
    if isinstance(parts, list):
        return [parse_literal(p) for p in parts]
    if isinstance(parts, dict):
        return {k: parse_literal(v) for k, v in parts.items()}
    return text


def _key(text: str) -> str:
    s = _unquote(text.strip())
    return s if s is not None else text.strip()


def _collection_parts(text: str) -> list[str] | dict[str, str] | None:
    """Raw element (or key -> value) texts of a Java/JS collection literal, or None if ``text`` is not one."""
    text = text.strip()
    if text.startswith("[") and text.endswith("]"):
        return split_top_level(text[1:-1])
    for pattern in (_JS_NEW_ARRAY, _JAVA_ARRAY, _JAVA_ARRAYLIST_ASLIST, _JAVA_ASLIST):
        m = pattern.match(text)
        if m:
            return split_top_level(m.group(1))
    m = _JAVA_ARRAYLIST_INIT.match(text)
    if m:
        out = []
        for stmt in split_top_level(m.group(1) or "", ";"):
            am = re.match(r"^add\s*\((.*)\)$", stmt.strip(), re.DOTALL)
            if am:
                out.append(am.group(1).strip())
        return out
    m = _JAVA_HASHMAP.match(text)
    if m:
        out_d: dict[str, str] = {}
        for stmt in split_top_level(m.group(1) or "", ";"):
            pm = re.match(r"^put\s*\((.*)\)$", stmt.strip(), re.DOTALL)
            if pm:
                kv = split_top_level(pm.group(1))
                if len(kv) == 2:
                    out_d[_key(kv[0])] = kv[1]
        return out_d
    m = _JAVA_MAP_OF.match(text)
    if m:
        items = split_top_level(m.group(1))
        if len(items) % 2 == 0:
            return {_key(items[i]): items[i + 1] for i in range(0, len(items), 2)}
    if text.startswith("{") and text.endswith("}"):
        out_d = {}
        for item in split_top_level(text[1:-1]):
            kv = split_top_level(item, ":")
            if len(kv) < 2:
                return None
            out_d[_key(kv[0])] = ":".join(kv[1:]).strip()
        return out_d
    return None


def convert_java(value: str, type_name: str, items_type: str | None = None) -> Any:
    """Convert a Java source string to a Python value by its declared BFCL type (see the module docstring)."""
    v = value.strip()
    if type_name in ("integer", "byte", "short"):
        return int(v) if _INT.match(v) else value
    if type_name == "long":
        return int(v[:-1]) if _JAVA_LONG.match(v) else value
    if type_name == "float":
        return float(v[:-1]) if _JAVA_FLOAT.match(v) else value
    if type_name == "double":
        return float(v) if _JAVA_DOUBLE.match(v) else value
    if type_name == "boolean":
        return v == "true" if v in ("true", "false") else value
    if type_name in ("Array", "ArrayList"):
        parts = _collection_parts(v)
        if not isinstance(parts, list):
            return value
        return [_java_element(p, items_type) for p in parts]
    if type_name == "HashMap":
        parts = _collection_parts(v)
        if not isinstance(parts, dict):
            return value
        return {k: parse_literal(p) for k, p in parts.items()}
    return value  # char, String, any and the unsupported collection types stay strings


def _java_element(text: str, items_type: str | None) -> Any:
    if items_type in (None, "any", "Object"):
        return parse_literal(text)
    if items_type in ("String", "char"):
        s = _unquote(text.strip())
        return s if s is not None else text.strip()
    return convert_java(text, items_type)


def convert_js(value: str, type_name: str, items_type: str | None = None) -> Any:
    """Convert a JavaScript source string to a Python value by its declared BFCL type (see the module docstring)."""
    v = value.strip()
    if type_name == "String":
        s = _unquote(v)
        return s if s is not None else value
    if type_name == "integer":
        return int(v) if _INT.match(v) else value
    if type_name == "float":
        return float(v) if _JS_FLOAT.match(v) else value
    if type_name == "Bigint":
        return int(v[:-1]) if _JS_BIGINT.match(v) else value
    if type_name == "Boolean":
        return v == "true" if v in ("true", "false") else value
    if type_name == "array":
        if not (v.startswith("[") or _JS_NEW_ARRAY.match(v)):
            return value
        parts = _collection_parts(v)
        if not isinstance(parts, list):
            return value
        return [_js_element(p, items_type) for p in parts]
    if type_name == "dict":
        if not v.startswith("{"):
            return value
        parts = _collection_parts(v)
        if not isinstance(parts, dict):
            return value
        return {k: parse_literal(p) for k, p in parts.items()}
    return value


def _js_element(text: str, items_type: str | None) -> Any:
    t = text.strip()
    if _unquote(t) is not None:
        return _unquote(t)
    if items_type in (None, "any", "String", "dict", "array"):
        return parse_literal(t)
    return convert_js(t, items_type)


# ----------------------------------------------------------------------------------------------- rendering

_JAVA_ELEMENT_TYPE = {"String": "String", "integer": "int", "long": "long", "double": "double", "float": "float",
                      "boolean": "boolean", "char": "char", "byte": "byte", "short": "short"}


def render_java(value: Any, type_name: str, items_type: str | None = None) -> str:
    """A Java source string that :func:`convert_java` turns back into ``value`` (strings pass through as-is)."""
    if isinstance(value, str):
        return value
    if type_name == "boolean" or isinstance(value, bool):
        return "true" if value else "false"
    if type_name == "long":
        return f"{int(value)}L"
    if type_name == "float":
        return f"{float(value)!r}f"
    if type_name == "double":
        return repr(float(value))
    if type_name == "Array" and isinstance(value, list):
        elem = _JAVA_ELEMENT_TYPE.get(items_type or "", "Object")
        return f"new {elem}[]{{" + ", ".join(_java_elem(v, items_type) for v in value) + "}"
    if type_name == "ArrayList" and isinstance(value, list):
        if not value:
            return "new ArrayList<>()"
        return "new ArrayList<>(Arrays.asList(" + ", ".join(_java_elem(v, items_type) for v in value) + "))"
    if type_name == "HashMap" and isinstance(value, dict):
        puts = "".join(f"put({json.dumps(str(k))}, {_java_elem(v, None)}); " for k, v in value.items())
        return "new HashMap<String, Object>() {{ " + puts + "}}"
    return str(value)


def _java_elem(v: Any, items_type: str | None) -> str:
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, bool):
        return "true" if v else "false"
    if items_type == "long" and isinstance(v, int):
        return f"{v}L"
    if items_type == "float" and isinstance(v, (int, float)):
        return f"{float(v)!r}f"
    if isinstance(v, list):
        return "new Object[]{" + ", ".join(_java_elem(x, None) for x in v) + "}"
    return repr(v) if isinstance(v, float) else str(v)


def render_js(value: Any, type_name: str, items_type: str | None = None) -> str:
    """A JavaScript source string that :func:`convert_js` turns back into ``value``."""
    if isinstance(value, str):
        return value
    if type_name == "Boolean" or isinstance(value, bool):
        return "true" if value else "false"
    if type_name == "Bigint":
        return f"{int(value)}n"
    if type_name == "float":
        return _js_number(float(value))
    return _js_elem(value)


def _js_number(x: float) -> str:
    text = repr(x)
    if "e" in text or "E" in text:
        text = f"{x:.12f}".rstrip("0")
        text = text + "0" if text.endswith(".") else text
    return text


def _js_elem(v: Any) -> str:
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return _js_number(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_js_elem(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {_js_elem(x)}" for k, x in v.items()) + "}"
    if v is None:
        return "null"
    return str(v)
