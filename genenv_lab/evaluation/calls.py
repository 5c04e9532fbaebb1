"""Decode an agent's raw output into function calls, without ever evaluating it.

Accepted formats (tried in this order; the first that yields calls wins):

1. ``<tool_call>...</tool_call>`` blocks (Qwen / Hermes; also ``<function_call>``, ``<functioncall>``,
   ``<tool_calls>`` and BFCL's ``<TOOLCALL>``; an unclosed last block is read to the end of the text). Each block
   holds JSON or a Python-style call.
2. The whole text (after dropping ``<think>...</think>`` and code fences) as JSON:
   ``{"name": ..., "arguments": {...}}``, ``{"name": ..., "parameters": {...}}``, OpenAI's
   ``{"function": {"name": ..., "arguments": "<json string>"}}``, ``{"tool_calls": [...]}``, or a list of those.
3. The whole text as Python: ``f(a=1, b="x")``, ``[f(a=1), g(b=2)]``, ``mod.f(a=1)``; parsed with :mod:`ast`
   (keyword arguments named like Python keywords, e.g. ``from=``, are accepted) and resolved by walking literal
   nodes with BFCL's conventions: a bare name becomes its identifier string, a nested call without keywords its
   source text, ``-3`` a number, tuples stay tuples; small arithmetic on literals is folded, nothing is evaluated.
4. Embedded in prose: every JSON object or array that decodes to calls, and every Python call (or bracketed list of
   calls) with at least one keyword argument, left to right; identical repeated calls are kept once.
   A bare ``f(x)`` inside prose is *not* taken for a call (refusals often name functions).

Nothing decoded gives a :class:`DecodedCalls` with no calls and a ``reason``; it is falsy.

>>> list(decode_calls('[get_weather(city="Paris", days=3)]'))
[('get_weather', {'city': 'Paris', 'days': 3})]
>>> list(decode_calls('<tool_call>{"name": "f", "arguments": {"x": 1.5}}</tool_call>'))
[('f', {'x': 1.5})]
>>> r = decode_calls("None of the functions can answer this."); bool(r), r.reason
(False, 'no function call found')
"""

from __future__ import annotations

import ast
import json
import keyword
import math
import re
from dataclasses import dataclass, field
from typing import Any, Iterator

from genenv_lab.evaluation.literals import iter_quoted, quoted_mask

MAX_TEXT_CHARS = 50_000
MAX_SCAN_CHARS = 20_000
"""Prose longer than this is scanned for embedded calls only in its first and last halves of this size."""
_NAME = re.compile(r"^[A-Za-z_][\w\-]*(?:\.[A-Za-z_][\w\-]*)*$")
_TAGS = ("tool_call", "tool_calls", "function_call", "functioncall", "toolcall")
_TAG_BLOCK = re.compile(r"<(" + "|".join(_TAGS) + r")>\s*(.*?)\s*(?:</\1>|(?=<(?:" + "|".join(_TAGS) + r")>)|\Z)",
                        re.IGNORECASE | re.DOTALL)
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"```[\w+-]*[ \t]*\n?(.*?)```", re.DOTALL)
_CALL_START = re.compile(r"(?<![\w.])(?:\[\s*)?[A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)*\s*\(")  # never mid-name
# (a match starts at ``[`` or at the name, never on whitespace: ``\[?\s*`` let every position of a run of blanks scan
# to its end, which made decoding quadratic in the text's length: 2.2 s for 16,000 newlines)


@dataclass(frozen=True)
class FunctionCall:
    name: str
    arguments: dict[str, Any]
    positional: tuple = ()
    """Positional arguments of a Python-style call (BFCL ignores them; kept for error messages)."""


@dataclass(frozen=True)
class DecodedCalls:
    """The calls found in a text (possibly none, then ``reason`` says why). Iterates as ``(name, args)`` pairs."""

    calls: tuple[FunctionCall, ...] = ()
    format: str = "none"
    """``tool_call``, ``json``, ``python``, ``embedded`` or ``none``."""
    reason: str = ""
    notes: tuple[str, ...] = field(default=(), compare=False)

    def __bool__(self) -> bool:
        return bool(self.calls)

    def __len__(self) -> int:
        return len(self.calls)

    def __iter__(self) -> Iterator[tuple[str, dict[str, Any]]]:
        return ((c.name, c.arguments) for c in self.calls)


class _NotACall(ValueError):
    pass


# --------------------------------------------------------------------------------------------- JSON


def _json_calls(obj: Any, *, lenient_name_only: bool = False) -> list[FunctionCall]:
    """Calls from a decoded JSON value, or :class:`_NotACall`."""
    if isinstance(obj, list):
        if not obj:
            raise _NotACall("empty list")
        out: list[FunctionCall] = []
        for item in obj:
            out.extend(_json_calls(item, lenient_name_only=lenient_name_only))
        return out
    if not isinstance(obj, dict):
        raise _NotACall("not an object")
    for key in ("tool_calls", "function_calls", "calls"):
        if key in obj and isinstance(obj[key], list):
            return _json_calls(obj[key], lenient_name_only=True)
    if isinstance(obj.get("function"), dict):  # OpenAI tool_calls item
        return _json_calls(obj["function"], lenient_name_only=True)
    name = obj.get("name", obj.get("function", obj.get("tool_name")))
    if not isinstance(name, str) or not _NAME.match(name.strip()):
        raise _NotACall("no function name")
    args: Any = None
    for key in ("arguments", "parameters", "args", "params", "input"):
        if key in obj:
            args = obj[key]
            break
    else:
        if not lenient_name_only:
            raise _NotACall("no arguments")
        args = {}
    if isinstance(args, str):
        text = args.strip()
        if not text:
            args = {}
        else:
            try:
                args = json.loads(text)
            except json.JSONDecodeError:
                raise _NotACall("arguments string is not JSON") from None
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise _NotACall("arguments are not an object")
    return [FunctionCall(name=name.strip(), arguments=dict(args))]


# --------------------------------------------------------------------------------------------- Python

_BINOPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
           ast.Div: lambda a, b: a / b, ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b,
           ast.Pow: lambda a, b: a ** b}


def _dotted(node: ast.AST) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(_unescape(p) for p in reversed(parts))


def _unescape(name: str) -> str:
    """A name as written before :func:`_escape_keywords` made it parseable."""
    return name[: -len(_KW_SUFFIX)] if name.endswith(_KW_SUFFIX) else name


def _number(node: ast.AST) -> int | float | None:
    """A numeric literal or a small arithmetic expression of them, computed without eval; else None."""
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _number(node.operand)
        return None if v is None else (-v if isinstance(node.op, ast.USub) else v)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        a, b = _number(node.left), _number(node.right)
        if a is None or b is None:
            return None
        if isinstance(node.op, ast.Pow) and (abs(b) > 64 or abs(a) > 1e6):
            return None
        try:
            v = _BINOPS[type(node.op)](a, b)
        except (ZeroDivisionError, OverflowError, ValueError):
            return None
        if isinstance(v, complex) or (isinstance(v, float) and not math.isfinite(v)):
            return None
        return v
    return None


def _value(node: ast.AST) -> Any:
    """Resolve an argument node to a Python value the way BFCL's AST decoder does, with no eval."""
    if isinstance(node, ast.Constant):
        return "..." if node.value is Ellipsis else node.value
    num = _number(node)
    if num is not None:
        return num
    if isinstance(node, ast.List):
        return [_value(v) for v in node.elts]
    if isinstance(node, ast.Tuple):
        return tuple(_value(v) for v in node.elts)
    if isinstance(node, ast.Set):
        return [_value(v) for v in node.elts]
    if isinstance(node, ast.Dict):
        out = {}
        for k, v in zip(node.keys, node.values):
            if k is None:  # {**x}
                return ast.unparse(node)
            key = _value(k)
            try:
                hash(key)
            except TypeError:
                return ast.unparse(node)
            out[key] = _value(v)
        return out
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Call):
        if node.keywords and all(k.arg for k in node.keywords):
            name = _dotted(node.func)
            if name:
                return {name: {k.arg: _value(k.value) for k in node.keywords}}
        return ast.unparse(node)
    return ast.unparse(node)


def _call(node: ast.AST) -> FunctionCall:
    if not isinstance(node, ast.Call):
        raise _NotACall("not a call")
    name = _dotted(node.func)
    if not name:
        raise _NotACall("call target is not a (dotted) name")
    args: dict[str, Any] = {}
    for kw in node.keywords:
        if kw.arg is None:
            raise _NotACall("**kwargs in call")
        args[_unescape(kw.arg)] = _value(kw.value)
    return FunctionCall(name=name, arguments=args, positional=tuple(_value(a) for a in node.args))


_KW_SUFFIX = "__kw__"


def _escape_keywords(text: str) -> str:
    """Rename Python keywords used as argument names (``from=``, ``class=``...) or in function names (``if(``,
    ``api.import(``, ``if.run(``) outside string literals, so that ``ast`` parses the call; :func:`_unescape`
    undoes it."""
    out, i, quoted = [], 0, quoted_mask(text)
    while i < len(text):
        m = None if quoted[i] else _KW_USE.match(text, i)
        if m and (not out or not (out[-1][-1].isalnum() or out[-1][-1] == "_")):
            out.append(m.group(1) + _KW_SUFFIX + m.group(2))
            i = m.end()
            continue
        out.append(text[i])
        i += 1
    return "".join(out)


_KW_USE = re.compile(r"(" + "|".join(sorted(keyword.kwlist, key=len, reverse=True))
                     + r")(\s*=(?!=)|\s*\(|\.(?=[A-Za-z_]))")  # keyword=, keyword( and keyword.name


def _python_calls(text: str) -> list[FunctionCall]:
    """The calls of a Python-style call or list of calls; a text that only parses (or only reads as calls) once
    keywords in names are escaped (``[if(a=1)]``, ``[not()]``) is read escaped."""
    text = text.strip()
    if text.endswith(";"):
        text = text[:-1]
    try:
        return _calls_of(_parse(text))
    except _NotACall:
        escaped = _escape_keywords(text)
        if escaped == text:
            raise
        return _calls_of(_parse(escaped))


def _parse(text: str) -> ast.AST:
    try:
        return ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise _NotACall("not Python syntax") from None


def _calls_of(body: ast.AST) -> list[FunctionCall]:
    if isinstance(body, (ast.List, ast.Tuple, ast.Set)):
        if not body.elts:
            raise _NotACall("empty list")
        return [_call(e) for e in body.elts]
    return [_call(body)]


# --------------------------------------------------------------------------------------------- scanning


def matching_end(text: str, start: int) -> int | None:
    """Index just past the bracket that closes the one at ``start``, skipping string literals."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    stack = [pairs[text[start]]]
    tail = text[start:]
    for i, (ch, quoted) in enumerate(zip(tail, iter_quoted(tail)), start):
        if quoted or i == start:
            continue
        if ch in pairs:
            stack.append(pairs[ch])
        elif ch in ")]}":
            if ch != stack[-1]:
                return None
            stack.pop()
            if not stack:
                return i + 1
    return None


MAX_START_DEPTH = 6
"""A call is looked for only where a span starts at most this many unclosed brackets deep: a real call sits in prose,
a fence or a JSON wrapper a few levels down at most, and trying every start inside deep nesting made decoding
quadratic in the text's length (a 6,000-character ``[[[…]]]`` took 11 s; now milliseconds)."""


MAX_FAILED_STARTS = 16
"""After this many span starts that decode to nothing, the rest of the text is not searched: each failed start can
cost a scan to the end of the text (an unterminated quote hides the nesting from :data:`MAX_START_DEPTH`), and a
completion with more than this many non-call brackets before its call is not one the verdict should hinge on."""


def _depths(text: str) -> list[int]:
    """Per character, how many brackets outside string literals are open before it (one linear pass)."""
    depths, depth = [], 0
    for ch, quoted in zip(text, iter_quoted(text)):
        depths.append(depth)
        if quoted:
            continue
        if ch in "([{":
            depth += 1
        elif ch in ")]}" and depth:
            depth -= 1
    return depths


def _embedded(text: str) -> list[tuple[int, int, list[FunctionCall]]]:
    """Non-overlapping spans of ``text`` that decode to calls, left to right (starting at most
    :data:`MAX_START_DEPTH` brackets deep, giving up after :data:`MAX_FAILED_STARTS` starts that decode to nothing)."""
    found: list[tuple[int, int, list[FunctionCall]]] = []
    pos = 0
    decoder = json.JSONDecoder()
    depths = _depths(text)
    m = _CALL_START.search(text, 0)
    failed = 0
    brace, bracket = text.find("{"), text.find("[")
    while pos < len(text) and failed < MAX_FAILED_STARTS:
        candidates = []
        if 0 <= brace < pos:  # search again only past the last hit: each find scans forward once in all
            brace = text.find("{", pos)
        if 0 <= bracket < pos:
            bracket = text.find("[", pos)
        j = min((k for k in (brace, bracket) if k >= 0), default=-1)
        if j >= 0:
            candidates.append(("json", j))
        if m and m.start() < pos:  # search again only past the last match: no match now means none later
            m = _CALL_START.search(text, pos)
        if m:
            candidates.append(("python", m.start()))
        if not candidates:
            break
        kind, start = min(candidates, key=lambda c: c[1])
        if depths[start] > MAX_START_DEPTH:
            pos = start + 1
            continue
        span = None
        if kind == "json" or text[start] == "[":
            try:
                obj, end = decoder.raw_decode(text, start)
                span = (start, end, _json_calls(obj))
            except (json.JSONDecodeError, _NotACall, RecursionError):
                span = None
        if span is None and (kind == "python" or text[start] == "["):
            open_at = start if text[start] == "[" else text.index("(", start)
            end = matching_end(text, open_at)
            if end is not None:
                try:
                    calls = _python_calls(text[start:end])
                    if text[start] == "[" or any(c.arguments for c in calls):
                        span = (start, end, calls)
                except _NotACall:
                    span = None
        if span:
            found.append(span)
            pos = span[1]
        else:
            failed += 1
            pos = start + 1
    return found


def strip_reasoning(text: str) -> str:
    """Drop ``<think>...</think>`` blocks, and an unclosed ``<think>`` with everything after it."""
    text = _THINK.sub("", text)
    lower = text.lower()
    if "<think>" in lower:
        text = text[: lower.index("<think>")]
    elif "</think>" in lower:  # the opening tag was in the prompt (prefilled)
        text = text[lower.rindex("</think>") + len("</think>"):]
    return text


def _whole(text: str) -> tuple[list[FunctionCall], str] | None:
    stripped = text.strip()
    if not stripped:
        return None
    try:
        return _json_calls(json.loads(stripped)), "json"
    except (json.JSONDecodeError, _NotACall, RecursionError):
        pass
    try:
        return _python_calls(stripped), "python"
    except _NotACall:
        return None


def _dedupe(calls: list[FunctionCall]) -> list[FunctionCall]:
    out: list[FunctionCall] = []
    seen: list[str] = []
    for c in calls:
        key = json.dumps([c.name, c.arguments], sort_keys=True, default=repr)
        if key not in seen:
            seen.append(key)
            out.append(c)
    return out


def decode_calls(text: str) -> DecodedCalls:
    """Decode the function calls in a raw model output (see the module docstring for the accepted formats)."""
    if not isinstance(text, str):
        return DecodedCalls(reason="prediction is not a string")
    if len(text) > MAX_TEXT_CHARS:
        text = text[:MAX_TEXT_CHARS]
    text = strip_reasoning(text)
    blocks = _TAG_BLOCK.findall(text)
    if blocks:
        calls: list[FunctionCall] = []
        failed = 0
        for _, body in blocks:
            body = _FENCE.sub(lambda m: m.group(1), body)
            got = _whole(body)
            if got is None:
                try:
                    got = (_json_calls(json.loads(body.strip()), lenient_name_only=True), "json")
                except (json.JSONDecodeError, _NotACall, RecursionError):
                    failed += 1
                    continue
            calls.extend(got[0])
        if calls:
            notes = (f"{failed} tool_call block(s) did not parse",) if failed else ()
            return DecodedCalls(calls=tuple(calls), format="tool_call", notes=notes)
        return DecodedCalls(reason="tool_call block(s) found but none parsed as a call")
    fences = [m.group(1) for m in _FENCE.finditer(text)]
    for candidate in fences + [_FENCE.sub(lambda m: m.group(1), text)]:
        got = _whole(candidate)
        if got:
            return DecodedCalls(calls=tuple(got[0]), format=got[1])
    if len(text) > MAX_SCAN_CHARS:
        half = MAX_SCAN_CHARS // 2
        text = text[:half] + "\n" + text[-half:]
    spans = _embedded(text)
    if spans:
        calls = _dedupe([c for _, _, cs in spans for c in cs])
        return DecodedCalls(calls=tuple(calls), format="embedded")
    return DecodedCalls(reason="no function call found")


def format_calls_json(calls: list[tuple[str, dict[str, Any]]] | DecodedCalls) -> str:
    """Render calls as a JSON list of ``{"name", "arguments"}`` (what the lab's agents are asked to write)."""
    return json.dumps([{"name": n, "arguments": a} for n, a in calls], ensure_ascii=False)


def format_calls_python(calls: list[tuple[str, dict[str, Any]]] | DecodedCalls) -> str:
    """Render calls in BFCL's Python style, ``[f(a=1, b='x')]``, which :func:`decode_calls` reads back."""
    parts = []
    for name, args in calls:
        parts.append(f"{name}(" + ", ".join(f"{k}={_py_literal(v)}" for k, v in args.items()) + ")")
    return "[" + ", ".join(parts) + "]"


def _py_literal(v: Any) -> str:
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_py_literal(k)}: {_py_literal(x)}" for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(_py_literal(x) for x in v) + "]"
    if isinstance(v, tuple):
        return "(" + ", ".join(_py_literal(x) for x in v) + ("," if len(v) == 1 else "") + ")"
    return repr(v)
