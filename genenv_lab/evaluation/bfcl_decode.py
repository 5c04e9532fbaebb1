"""BFCL's official prompting decoder: what the leaderboard reads out of a prompting model's raw text.

BFCL scores a prompting (non function-calling) model by decoding its whole reply as one list of calls
(``bfcl_eval.model_handler.utils.default_decode_ast_prompting`` and the Java/JavaScript parsers beside it). This
module reproduces that behaviour, written independently (no upstream code is imported or copied); the parity test
(``tests/test_bfcl_parity.py``) compares it with the official package on tens of thousands of predictions. The
result has upstream's shape, ``[{function_name: {param: value}}]``; :class:`DecodeError` means "did not decode",
which the checker turns into an incorrect verdict (or a correct one on irrelevance).

What it accepts, and the quirks it keeps on purpose (each is the official behaviour):

- The reply is stripped of backticks, newlines and spaces at both ends (not tabs), then wrapped in ``[`` ``]``
  where it does not already start/end with one. Prose, a ```` ```python ```` fence with its language tag, JSON,
  ``<tool_call>`` tags: none of them decodes (a fence's tag is read as a name and fails).
- Python: one expression that is a call or a list/tuple/set of calls (anything else fails). Keyword arguments
  only; positional arguments are dropped silently; ``**kw`` becomes a parameter named ``None``. A dotted name is
  kept whole (``math.factorial``); a callee that is not a name (``f()(x=1)``) keeps only its attribute parts.
- Python values: constants as written (``...`` -> ``"..."``); a bare name -> its text (``x=foo`` gives ``"foo"``);
  a call with no keywords -> its source text (``"foo(1)"``); a call with keywords -> a nested ``{name: {...}}``;
  tuples stay tuples; ``a[b]`` -> its source text. Any unary operator negates its operand's constant
  (``+5`` -> ``-5``, ``not True`` -> ``-1``; a non-constant operand fails). Binary operators are evaluated
  (``2**3`` -> ``8``, ``'a' + 'b'`` -> ``'ab'``); upstream hands them to ``eval``, here they are evaluated over
  literals, containers, operators, comparisons and a few pure builtins, with bounded sizes; any other name or call
  inside arithmetic fails here (upstream resolves it in its own module, where nearly every name fails too). Sets,
  comparisons, boolean operators, f-strings, lambdas, attributes, comprehensions: fail.
- Java and JavaScript: the text between the outer brackets is parsed with tree-sitter (the grammar versions
  ``bfcl-eval`` pins) and rejected when the tree holds an ``ERROR`` node (a ``MISSING`` node passes). Only the
  first call is read.
- Java values are source text: a string literal loses its quotes, escapes kept verbatim (``"a\\"b"`` ->
  ``a\\"b``); nested in a collection it keeps them; ``new T[]{...}`` and ``new T<..>(args)`` are rebuilt from their
  parts with no spaces inside the braces and ``", "`` between constructor arguments; an anonymous class body
  (``new HashMap<>() {{ put(..); }}``) is dropped; any other construct is the concatenation of its tokens without
  spaces (``1 + 2`` -> ``1+2``). Upstream slices the text by tree-sitter's *byte* offsets, so after a non-ASCII
  character the slices shift; reproduced. Positional identifiers and class literals are kept under the name
  ``None``; other positional values are dropped; a parameter given twice fails.
- JavaScript values: the argument's source text, with one pair of matching outer quotes removed; positional
  identifiers and ``true`` are kept under the name ``None``; a parameter given twice fails; no call -> ``None``
  (not a list: the format check fails).
"""

from __future__ import annotations

import ast
import operator
import warnings
from functools import lru_cache
from typing import Any

MAX_POWER_BITS = 1_000_000
"""Largest ``a ** b`` result (in bits) evaluated; beyond it the value does not decode (upstream would hang)."""
MAX_SEQUENCE = 1_000_000
"""Largest string/list built by ``*`` or ``+`` in an argument value."""


class DecodeError(ValueError):
    """The reply is not in the format BFCL's prompting decoder reads."""


# ------------------------------------------------------------------------------------------------- python


def _pow(a: Any, b: Any) -> Any:
    if isinstance(a, (int, float)) and isinstance(b, int) and not isinstance(b, bool) and b > 0 and a not in (0, 1, -1):
        if isinstance(a, int) and abs(a).bit_length() * b > MAX_POWER_BITS:
            raise DecodeError("power too large to evaluate")
    return operator.pow(a, b)


def _checked(result: Any) -> Any:
    if isinstance(result, (str, bytes, list, tuple)) and len(result) > MAX_SEQUENCE:
        raise DecodeError("value too large to evaluate")
    return result


def _mul(a: Any, b: Any) -> Any:
    for seq, n in ((a, b), (b, a)):
        if isinstance(seq, (str, bytes, list, tuple)) and isinstance(n, int) and len(seq) * max(n, 0) > MAX_SEQUENCE:
            raise DecodeError("value too large to evaluate")
    return operator.mul(a, b)


def _lshift(a: Any, b: Any) -> Any:
    if isinstance(b, int) and b > MAX_POWER_BITS:
        raise DecodeError("shift too large to evaluate")
    return operator.lshift(a, b)


_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: _mul, ast.Div: operator.truediv,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: _pow, ast.LShift: _lshift,
           ast.RShift: operator.rshift, ast.BitOr: operator.or_, ast.BitXor: operator.xor,
           ast.BitAnd: operator.and_, ast.MatMult: operator.matmul}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_, ast.Invert: operator.invert}


_COMPARE = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
            ast.Gt: operator.gt, ast.GtE: operator.ge, ast.In: lambda a, b: a in b,
            ast.NotIn: lambda a, b: a not in b, ast.Is: operator.is_, ast.IsNot: operator.is_not}
_PURE_BUILTINS = {"abs": abs, "round": round, "min": min, "max": max, "len": len, "int": int, "float": float,
                  "str": str, "bool": bool, "sum": sum, "list": list, "tuple": tuple, "sorted": sorted}
"""Builtins evaluated when called on literals inside arithmetic (``round(2.5) * 2``), as ``eval`` would."""


def _evaluate(node: ast.AST) -> Any:
    """Python's own evaluation of an expression over literals (what upstream's ``eval`` computes for them):
    constants, containers, operators, comparisons, ``and``/``or``, ``x if c else y``, indexing and a few pure
    builtins; any other name or call is refused (upstream resolves it in its own module and usually fails)."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        elts = [_evaluate(e) for e in node.elts]
        return {ast.List: list, ast.Tuple: tuple, ast.Set: set}[type(node)](elts)
    if isinstance(node, ast.Dict) and None not in node.keys:
        return {_evaluate(k): _evaluate(v) for k, v in zip(node.keys, node.values)}
    if isinstance(node, ast.UnaryOp):
        return _checked(_UNARY[type(node.op)](_evaluate(node.operand)))
    if isinstance(node, ast.BinOp):
        return _checked(_BINARY[type(node.op)](_evaluate(node.left), _evaluate(node.right)))
    if isinstance(node, ast.Compare):
        left = _evaluate(node.left)
        for op, right_node in zip(node.ops, node.comparators):
            right = _evaluate(right_node)
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.BoolOp):
        value = None
        for v in node.values:
            value = _evaluate(v)
            if (not value) if isinstance(node.op, ast.And) else value:
                return value
        return value
    if isinstance(node, ast.IfExp):
        return _evaluate(node.body) if _evaluate(node.test) else _evaluate(node.orelse)
    if isinstance(node, ast.Subscript) and not isinstance(node.slice, ast.Slice):
        return _evaluate(node.value)[_evaluate(node.slice)]
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _PURE_BUILTINS
            and not node.keywords and not any(isinstance(a, ast.Starred) for a in node.args)):
        return _checked(_PURE_BUILTINS[node.func.id](*[_evaluate(a) for a in node.args]))
    raise DecodeError(f"cannot evaluate {type(node).__name__} inside an arithmetic expression")


def _py_value(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant):
        return "..." if node.value is Ellipsis else node.value
    if isinstance(node, ast.UnaryOp):
        # Upstream negates the operand's ``.value`` whatever the operator: only constants have one.
        if not isinstance(node.operand, ast.Constant):
            raise DecodeError(f"unary operator on {type(node.operand).__name__}")
        try:
            return -node.operand.value
        except TypeError as exc:
            raise DecodeError(str(exc)) from None
    if isinstance(node, ast.List):
        return [_py_value(v) for v in node.elts]
    if isinstance(node, ast.Dict):
        if None in node.keys:
            raise DecodeError("'**' inside a dict value")
        return {_py_value(k): _py_value(v) for k, v in zip(node.keys, node.values)}
    if isinstance(node, ast.BinOp):
        try:
            return _evaluate(node)
        except DecodeError:
            raise
        except Exception as exc:  # noqa: BLE001 - Python's own arithmetic errors (ZeroDivisionError, TypeError, ...)
            raise DecodeError(f"{type(exc).__name__} evaluating an argument") from None
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Call):
        return ast.unparse(node) if not node.keywords else _py_call(node)
    if isinstance(node, ast.Tuple):
        return tuple(_py_value(v) for v in node.elts)
    if isinstance(node, ast.Subscript):
        return f"{ast.unparse(node.value)}[{ast.unparse(node.slice)}]"
    raise DecodeError(f"unsupported value: {type(node).__name__}")


def _py_call(node: ast.Call) -> dict[str, dict]:
    parts = []
    func = node.func
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if isinstance(func, ast.Name):
        parts.append(func.id)
    args: dict[Any, Any] = {}
    for kw in node.keywords:
        args[kw.arg] = _py_value(kw.value)
    return {".".join(reversed(parts)): args}


def _decode_python(text: str) -> list[dict]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarning on odd literals: the verdict is all that matters
            tree = ast.parse(text.strip().strip("'"), mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
        raise DecodeError(f"not Python: {type(exc).__name__}") from None
    body = tree.body
    if isinstance(body, ast.Call):
        return [_py_call(body)]
    if not isinstance(body, (ast.List, ast.Tuple, ast.Set)):
        raise DecodeError(f"not a list of calls: {type(body).__name__}")
    out = []
    for elt in body.elts:
        if not isinstance(elt, ast.Call):
            raise DecodeError(f"list element is not a call: {type(elt).__name__}")
        out.append(_py_call(elt))
    return out


# ------------------------------------------------------------------------------------------------- tree-sitter


TREE_SITTER_HINT = ("pip install 'tree-sitter==0.21.3' 'tree-sitter-java==0.21.0' 'tree-sitter-javascript==0.21.4' "
                    "(Python <= 3.12: version 0.21 has no wheel for 3.13)")


def tree_sitter_available() -> bool:
    """Whether the Java/JavaScript decoder can run (tree-sitter 0.21 and both grammars import)."""
    try:
        _parser("java"), _parser("javascript")
    except RuntimeError:
        return False
    return True


@lru_cache(maxsize=None)
def _parser(lang: str) -> Any:
    """A tree-sitter parser for ``java`` or ``javascript`` at the grammar versions bfcl-eval pins."""
    try:
        from tree_sitter import Language, Parser
        module = __import__("tree_sitter_java" if lang == "java" else "tree_sitter_javascript")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the two-argument Language() form is the one tree_sitter 0.21 has
            language = Language(module.language(), lang)
        parser = Parser()
        parser.set_language(language)
    except (ImportError, TypeError, AttributeError) as exc:  # missing, or a tree-sitter without the 0.21 API
        raise RuntimeError(f"BFCL's {lang} decoder needs tree-sitter 0.21: {TREE_SITTER_HINT} ({exc})") from None
    return parser


def _parse_tree(source: str, lang: str) -> Any:
    root = _parser(lang).parse(source.encode("utf-8")).root_node
    if "ERROR" in root.sexp():
        raise DecodeError(f"{lang} syntax error")
    return root


def _java_decode(source: str) -> list[dict] | dict:
    root = _parse_tree(source, "java")

    def text(node: Any) -> str:  # byte offsets into the str, as upstream does
        return source[node.start_byte:node.end_byte]

    def value(node: Any, nested: bool = False) -> str:
        kind = node.type
        if kind in ("string_literal", "character_literal"):
            return text(node) if nested else text(node)[1:-1]
        if kind in ("identifier", "class_literal", "type_identifier", "method_invocation"):
            return text(node)
        if kind == "array_creation_expression":
            of_type, init = node.child_by_field_name("type"), node.child_by_field_name("value")
            if of_type is None or init is None:
                raise DecodeError("array creation without an initializer")
            return f"new {value(of_type, True)}[]{value(init, True)}"
        if kind == "object_creation_expression":
            of_type = value(node.child_by_field_name("type"), True)
            arguments = node.child_by_field_name("arguments")
            if arguments is None:
                return f"new {of_type}()"
            inner = [value(c, True) for c in arguments.children if c.type not in (",", "(", ")")]
            return f"new {of_type}({', '.join(inner)})"
        if kind == "set":
            return "{" + ", ".join(value(c, True) for c in node.children if c.type not in (",", "set")) + "}"
        if node.child_count:
            return "".join(value(c, True) for c in node.children)
        return text(node)

    def arguments(node: Any) -> dict:
        out: dict[Any, Any] = {}
        for child in node.children:
            if child.type == "assignment_expression":
                parts = child.children
                name, val = text(parts[0]), value(parts[2])
            elif child.type in ("identifier", "class_literal", "set"):
                name, val = None, value(child)
            else:
                continue
            if name in out:
                raise DecodeError(f"parameter {name!r} given twice")
            out[name] = val
        return out

    stack = [root]
    while stack:  # pre-order, first method invocation wins
        node = stack.pop()
        if node.type == "method_invocation":
            args = node.child_by_field_name("arguments")
            if args is not None:
                obj = node.child_by_field_name("object")
                name = text(node.child_by_field_name("name"))
                return [{f"{text(obj)}.{name}" if obj is not None else name: arguments(args)}]
            continue
        stack.extend(reversed(node.children))
    return {}


def _js_decode(source: str) -> list[dict] | None:
    root = _parse_tree(source, "javascript")

    def text(node: Any) -> str:
        return node.text.decode("utf-8")

    for statement in root.children:
        if statement.type != "expression_statement":
            continue
        for call in statement.children:
            if call.type != "call_expression":
                continue
            parts = call.children
            out: dict[Any, Any] = {}
            for child in parts[1].children:
                if child.type == "assignment_expression":
                    pieces = child.children
                    name, val = text(pieces[0]), text(pieces[2])
                    if any(val.startswith(q) and val.endswith(q) for q in "\"'"):
                        val = val[1:-1]
                elif child.type in ("identifier", "true"):
                    name, val = None, text(child)
                else:
                    continue
                if name in out:
                    raise DecodeError(f"parameter {name!r} given twice")
                out[name] = val
            return [{text(parts[0]): out}]
    return None


# ------------------------------------------------------------------------------------------------- entry points

_EDGE = "`\n "


def decode(text: str, lang: str = "python") -> Any:
    """Decode a raw reply as BFCL's prompting decoder does; raises :class:`DecodeError` where it fails.

    >>> decode("[get_weather(city='Paris', days=3)]")
    [{'get_weather': {'city': 'Paris', 'days': 3}}]
    >>> decode("math.factorial(number=5, 2)")
    Traceback (most recent call last):
    ...
    genenv_lab.evaluation.bfcl_decode.DecodeError: not Python: SyntaxError
    >>> decode("math.factorial(2, number=+5)")
    [{'math.factorial': {'number': -5}}]
    >>> decode('Search.find(limit="10", tags=new String[]{"a", "b"})', "java")
    [{'Search.find': {'limit': '10', 'tags': 'new String[]{"a","b"}'}}]
    """
    text = text.strip(_EDGE)
    if not text.startswith("["):
        text = "[" + text
    if not text.endswith("]"):
        text = text + "]"
    try:
        if lang == "java":
            return _java_decode(text[1:-1])
        if lang == "javascript":
            return _js_decode(text[1:-1])
        return _decode_python(text)
    except RecursionError:
        raise DecodeError("nested too deeply") from None


def is_call_list(decoded: Any) -> bool:
    """Upstream's format check: a list of one-key dicts whose value is a dict (``[]`` passes)."""
    return type(decoded) is list and all(
        type(item) is dict and len(item) == 1 and type(next(iter(item.values()))) is dict for item in decoded)


def has_call(decoded: Any) -> bool:
    """Upstream's relevance test: decoded, well formed and not ``[]`` / ``[{}]``."""
    return is_call_list(decoded) and bool(decoded) and not (len(decoded) == 1 and not decoded[0])
