"""``tools``: BFCL-style function-calling tasks, checked for consistency and scored with BFCL's AST checker.

The simulator writes one JSON object (on one line) with the function schemas, the user's request and the gold
call(s)::

    {"functions": [{"name": "get_weather", "description": "Current weather of a city.",
                    "parameters": {"type": "dict",
                                   "properties": {"city": {"type": "string", "description": "City name."},
                                                  "unit": {"type": "string", "enum": ["celsius", "fahrenheit"],
                                                           "default": "celsius", "description": "Unit."}},
                                   "required": ["city"]}}],
     "question": "What's the weather in Lisbon right now, in fahrenheit?",
     "calls": [{"name": "get_weather", "arguments": {"city": "Lisbon", "unit": "fahrenheit"}}]}

Validation (each failure is a rejection with a reason): the JSON parses; 1-6 functions with unique names, each with
``parameters`` of type ``dict``/``object``, 1-8 properties of a known type (``string``, ``integer``, ``float``,
``boolean``, ``array`` with ``items``, ``dict``, ``tuple``, ``any``; ``number``/``object``/``str``... are accepted
and renamed), ``required`` a subset of the properties, enums of the right type; a question of 10-500 characters;
1-4 distinct gold calls, each naming a given function, with all its required parameters, no unknown parameter and
values of the declared types (enum values from the enum); every argument value **grounded in the question** where
its type allows: strings (and string elements/values of arrays/dicts) must appear in the question after BFCL's
string standardisation, numbers must appear as numbers (digits, ``1,000``, ``5%``, or a number word up to twenty),
enum values and booleans are exempt; finally the gold calls must pass the AST checker themselves.

The agent sees the schemas and the question and must answer with the call(s) (JSON list of ``{"name",
"arguments"}``, Python-style ``[f(a=1)]`` or ``<tool_call>`` blocks are all read). Reward: 1.0 when BFCL's AST
checker accepts the calls (one function: ``simple``; several: ``multiple``; several calls: order-free
``parallel``), else 0.0. An optional parameter the gold leaves out may be omitted, or given its declared default.
"""

from __future__ import annotations

import json
import re
from fractions import Fraction
from typing import Any

from genenv_lab.evaluation.bfcl import ast_check
from genenv_lab.evaluation.bfcl_checker import standardize_string
from genenv_lab.evaluation.calls import decode_calls
from genenv_lab.core.types import TaskSpec
from genenv_lab.domains.base import Domain, ParseResult

MAX_TEXT_CHARS = 6000
MAX_FUNCTIONS = 6
MAX_PARAMS = 8
MAX_CALLS = 4
MIN_QUESTION_CHARS = 10
MAX_QUESTION_CHARS = 500
TYPES = ("string", "integer", "float", "boolean", "array", "dict", "tuple", "any")
_TYPE_ALIASES = {"str": "string", "text": "string", "int": "integer", "number": "float", "double": "float",
                 "bool": "boolean", "list": "array", "object": "dict", "map": "dict"}
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*$")
_PARAM = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_NUMBER = re.compile(r"(?<![\w.])(-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|-?\d+(?:\.\d+)?)(\s*%)?")
_WORDS = {w: i for i, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve thirteen "
                                     "fourteen fifteen sixteen seventeen eighteen nineteen twenty".split())}
_WORDS.update({"thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90,
               "hundred": 100, "thousand": 1000, "dozen": 12, "a dozen": 12, "half": Fraction(1, 2)})


class _Invalid(ValueError):
    pass


def _extract_json(text: str) -> dict:
    start = text.find("{")
    if start < 0:
        raise _Invalid("no JSON object")
    try:
        obj, _ = json.JSONDecoder().raw_decode(text, start)
    except json.JSONDecodeError as exc:
        raise _Invalid(f"invalid JSON: {exc.msg}") from None
    except RecursionError:
        raise _Invalid("invalid JSON: nested too deeply") from None
    if not isinstance(obj, dict):
        raise _Invalid("JSON is not an object")
    return obj


def _norm_type(t: Any, where: str) -> str:
    if not isinstance(t, str):
        raise _Invalid(f"{where}: missing type")
    t = _TYPE_ALIASES.get(t.strip().lower(), t.strip().lower())
    if t not in TYPES:
        raise _Invalid(f"{where}: unknown type {t!r}")
    return t


def _type_ok(value: Any, schema: dict) -> bool:
    t = schema["type"]
    if t == "string":
        return isinstance(value, str)
    if t == "integer":
        return type(value) is int
    if t == "float":
        return type(value) in (int, float)
    if t == "boolean":
        return isinstance(value, bool)
    if t in ("array", "tuple"):
        items = schema.get("items")
        return isinstance(value, list) and (items is None or all(_type_ok(v, items) for v in value))
    if t == "dict":
        return isinstance(value, dict)
    return True  # any


def _norm_schema(schema: Any, where: str, depth: int = 0) -> dict:
    if not isinstance(schema, dict):
        raise _Invalid(f"{where}: schema is not an object")
    out: dict[str, Any] = {"type": _norm_type(schema.get("type"), where)}
    if out["type"] in ("array", "tuple"):
        if depth >= 2:
            raise _Invalid(f"{where}: arrays nested too deeply")
        if not isinstance(schema.get("items"), dict):
            raise _Invalid(f"{where}: array without 'items'")
        out["items"] = _norm_schema(schema["items"], f"{where} items", depth + 1)
    if "enum" in schema:
        enum = schema["enum"]
        if not isinstance(enum, list) or not enum or not all(_type_ok(v, out) for v in enum):
            raise _Invalid(f"{where}: enum must be a non-empty list of {out['type']} values")
        out["enum"] = enum
    if "default" in schema:
        if schema["default"] is not None and not _type_ok(schema["default"], out):
            raise _Invalid(f"{where}: default is not a {out['type']}")
        out["default"] = schema["default"]
    desc = schema.get("description", "")
    if not isinstance(desc, str):
        raise _Invalid(f"{where}: description is not a string")
    out["description"] = desc
    return out


def _norm_function(fn: Any, index: int) -> dict:
    if not isinstance(fn, dict):
        raise _Invalid(f"function {index + 1} is not an object")
    name = fn.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise _Invalid(f"function {index + 1}: invalid name {name!r}")
    params = fn.get("parameters")
    if not isinstance(params, dict) or params.get("type") not in ("dict", "object"):
        raise _Invalid(f"function {name}: parameters must be an object schema of type 'dict'")
    props = params.get("properties")
    if not isinstance(props, dict) or not props:
        raise _Invalid(f"function {name}: no properties")
    if len(props) > MAX_PARAMS:
        raise _Invalid(f"function {name}: more than {MAX_PARAMS} parameters")
    norm_props = {}
    for p, schema in props.items():
        if not _PARAM.match(p):
            raise _Invalid(f"function {name}: invalid parameter name {p!r}")
        norm_props[p] = _norm_schema(schema, f"{name}.{p}")
    required = params.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise _Invalid(f"function {name}: 'required' must be a list of names")
    unknown = [r for r in required if r not in norm_props]
    if unknown:
        raise _Invalid(f"function {name}: required parameter {unknown[0]!r} is not a property")
    if len(set(required)) != len(required):
        raise _Invalid(f"function {name}: duplicate required parameter")
    desc = fn.get("description", "")
    if not isinstance(desc, str):
        raise _Invalid(f"function {name}: description is not a string")
    return {"name": name, "description": desc,
            "parameters": {"type": "dict", "properties": norm_props, "required": required}}


def question_numbers(question: str) -> list[Fraction]:
    """Numbers written in the question: digits (``1,000``, ``2.5``), percentages (also as fractions), number words.

    >>> [str(x) for x in question_numbers("Split 1,200 dollars among three people at 5% interest")]
    ['1200', '5', '1/20', '3']
    """
    out: list[Fraction] = []
    for m in _NUMBER.finditer(question):
        value = Fraction(m.group(1).replace(",", ""))
        out.append(value)
        if m.group(2):
            out.append(value / 100)
    lower = question.lower()
    for word, value in _WORDS.items():
        if re.search(rf"\b{word}\b", lower):
            out.append(Fraction(value))
    return out


def _grounded(value: Any, schema: dict | None, q_std: str, numbers: list[Fraction], where: str) -> None:
    if schema and "enum" in schema:
        return
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, (int, float)):
        try:
            v = Fraction(repr(value)) if isinstance(value, float) else Fraction(value)
        except (ValueError, OverflowError):
            raise _Invalid(f"{where}: value {value!r} is not a finite number") from None
        if v not in numbers:
            raise _Invalid(f"{where}: value {value!r} does not appear in the question")
        return
    if isinstance(value, str):
        s = standardize_string(value)
        if not s:
            raise _Invalid(f"{where}: empty string value")
        if s not in q_std:
            raise _Invalid(f"{where}: value {value!r} does not appear in the question")
        return
    if isinstance(value, list):
        items = schema.get("items") if schema else None
        for i, v in enumerate(value):
            _grounded(v, items, q_std, numbers, f"{where}[{i}]")
        return
    if isinstance(value, dict):
        for k, v in value.items():
            _grounded(v, None, q_std, numbers, f"{where}[{k!r}]")


def _canonical_value(value: Any, schema: dict) -> Any:
    """Ints become floats where the schema says float (so the canonical text states the type)."""
    t = schema["type"]
    if t == "float" and type(value) is int:
        return float(value)
    if t in ("array", "tuple") and isinstance(value, list) and "items" in schema:
        return [_canonical_value(v, schema["items"]) for v in value]
    return value


def _allowed(value: Any, schema: dict) -> Any:
    """A gold value in BFCL answer-key form (dict values become lists of allowed values)."""
    if schema["type"] == "dict" and isinstance(value, dict):
        return {k: [v] for k, v in value.items()}
    if schema["type"] in ("array", "tuple") and schema.get("items", {}).get("type") == "dict":
        return [{k: [v] for k, v in d.items()} for d in value]
    return value


def answer_key(functions: list[dict], calls: list[dict]) -> list[dict[str, dict[str, list]]]:
    """The gold calls as a BFCL ``possible_answer`` entry (omitted optional parameters may stay omitted or take
    their declared default)."""
    by_name = {f["name"]: f for f in functions}
    key = []
    for call in calls:
        params = by_name[call["name"]]["parameters"]
        entry: dict[str, list] = {}
        for p, schema in params["properties"].items():
            if p in call["arguments"]:
                v = call["arguments"][p]
                allowed = [_allowed(v, schema)]
                if p not in params["required"] and "default" in schema and schema["default"] == v:
                    allowed.append("")
            elif p not in params["required"]:
                allowed = [""]
                if schema.get("default") is not None:
                    allowed.append(_allowed(schema["default"], schema))
            else:
                continue
            entry[p] = allowed
        key.append({call["name"]: entry})
    return key


def _category(task: dict) -> str:
    if len(task["calls"]) > 1:
        return "parallel_multiple"
    return "simple_python" if len(task["functions"]) == 1 else "multiple"


def check_completion(task: dict, completion: str) -> tuple[bool, str]:
    """BFCL AST verdict of an agent completion on a parsed task (``{"functions", "question", "calls"}``)."""
    return ast_check(task["functions"], decode_calls(completion), answer_key(task["functions"], task["calls"]),
                     _category(task))


def parse_task(text: str) -> dict:
    """Validate a simulator output; returns the normalised task or raises ``ValueError`` with the reason."""
    if len(text) > MAX_TEXT_CHARS:
        raise _Invalid(f"text longer than {MAX_TEXT_CHARS} characters")
    obj = _extract_json(text)
    functions = obj.get("functions")
    if not isinstance(functions, list) or not functions:
        raise _Invalid("missing 'functions' list")
    if len(functions) > MAX_FUNCTIONS:
        raise _Invalid(f"more than {MAX_FUNCTIONS} functions")
    functions = [_norm_function(f, i) for i, f in enumerate(functions)]
    names = [f["name"] for f in functions]
    if len(set(names)) != len(names):
        raise _Invalid("duplicate function names")
    question = obj.get("question")
    if not isinstance(question, str) or not question.strip():
        raise _Invalid("missing 'question'")
    question = " ".join(question.split())
    if len(question) < MIN_QUESTION_CHARS:
        raise _Invalid(f"question shorter than {MIN_QUESTION_CHARS} characters")
    if len(question) > MAX_QUESTION_CHARS:
        raise _Invalid(f"question longer than {MAX_QUESTION_CHARS} characters")
    calls = obj.get("calls", obj.get("answer"))
    if isinstance(calls, dict):
        calls = [calls]
    if not isinstance(calls, list) or not calls:
        raise _Invalid("missing 'calls' list")
    if len(calls) > MAX_CALLS:
        raise _Invalid(f"more than {MAX_CALLS} calls")
    by_name = {f["name"]: f for f in functions}
    q_std = standardize_string(question)
    numbers = question_numbers(question)
    norm_calls = []
    for i, call in enumerate(calls):
        if not isinstance(call, dict):
            raise _Invalid(f"call {i + 1} is not an object")
        name = call.get("name")
        args = call.get("arguments", call.get("parameters"))
        if name not in by_name:
            raise _Invalid(f"call {i + 1} names an unknown function {name!r}")
        if not isinstance(args, dict):
            raise _Invalid(f"call {i + 1} has no 'arguments' object")
        params = by_name[name]["parameters"]
        for r in params["required"]:
            if r not in args:
                raise _Invalid(f"call {i + 1} ({name}) misses required parameter {r!r}")
        canon = {}
        for p, v in args.items():
            if p not in params["properties"]:
                raise _Invalid(f"call {i + 1} ({name}) uses unknown parameter {p!r}")
            schema = params["properties"][p]
            if not _type_ok(v, schema):
                raise _Invalid(f"call {i + 1} ({name}): {p} is not a {schema['type']}")
            if "enum" in schema and v not in schema["enum"]:
                raise _Invalid(f"call {i + 1} ({name}): {p} is not one of its enum values")
            _grounded(v, schema, q_std, numbers, f"call {i + 1} ({name}) argument {p!r}")
            canon[p] = _canonical_value(v, schema)
        norm_calls.append({"name": name, "arguments": canon})
    keys = [json.dumps(c, sort_keys=True) for c in norm_calls]
    if len(set(keys)) != len(keys):
        raise _Invalid("duplicate gold calls")
    task = {"functions": functions, "question": question, "calls": norm_calls}
    ok, why = check_completion(task, json.dumps(norm_calls))
    if not ok:
        raise _Invalid(f"gold calls fail the checker: {why}")
    return task


def _features(task: dict) -> dict[str, Any]:
    by_name = {f["name"]: f for f in task["functions"]}
    called = {c["name"] for c in task["calls"]}
    optional_used = sum(1 for c in task["calls"] for p in c["arguments"]
                        if p not in by_name[c["name"]]["parameters"]["required"])
    types = {s["type"] for c in task["calls"] for p, s in by_name[c["name"]]["parameters"]["properties"].items()
             if p in c["arguments"]}
    return {"n_functions": len(task["functions"]), "n_calls": len(task["calls"]),
            "n_distractors": len(task["functions"]) - len(called),
            "n_args": sum(len(c["arguments"]) for c in task["calls"]), "n_optional_args": optional_used,
            "arg_types": ",".join(sorted(types)), "question_chars": len(task["question"])}


def canonical_text(task: dict) -> str:
    return json.dumps({"functions": task["functions"], "question": task["question"], "calls": task["calls"]},
                      ensure_ascii=False)


class ToolsDomain(Domain):
    name = "tools"
    heldout_benchmark = ("bfcl", "simple_python")
    recommended = {"env": {"max_new_tokens": 512}, "agent": {"max_completion_length": 128}}
    system_prompt_env = (
        "You write function-calling practice tasks. Reply with one JSON object on one line: "
        '{"functions": [<function schemas>], "question": "<a user request>", '
        '"calls": [{"name": "<function>", "arguments": {...}}]}. '
        'A schema is {"name", "description", "parameters": {"type": "dict", "properties": {<param>: {"type", '
        '"description"}}, "required": [...]}} with types string, integer, float, boolean, array (with "items"), '
        "dict. The calls are the correct answer: they use only the given functions and parameters, include every "
        "required parameter, and take every string and number verbatim from the question.")
    system_prompt_agent = (
        "You can call functions. Given their JSON schemas and a request, reply with only the function call(s) as a "
        'JSON list: [{"name": "<function>", "arguments": {<parameter>: <value>}}]. Use the types the schemas '
        "declare; leave out optional parameters the request does not mention.")
    env_prefill = '{"functions": ['
    difficulty_hints = ("Write a variation of similar difficulty with a new scenario.",
                        "Write a harder variation: add distractor functions, more or optional parameters, "
                        "nested values, or a request needing two calls.",
                        "Write an easier variation: fewer functions and parameters, a direct request, one call.")

    def parse(self, text: str) -> ParseResult:
        try:
            task = parse_task(text)
        except _Invalid as exc:
            return ParseResult(reason=str(exc))
        return ParseResult(spec=TaskSpec(question=task["question"], answer=json.dumps(task["calls"],
                                                                                       ensure_ascii=False),
                                         text=canonical_text(task), features=_features(task)))

    def agent_messages(self, spec: TaskSpec) -> list[dict[str, str]]:
        task = json.loads(spec.text)
        user = f"Functions:\n{json.dumps(task['functions'], ensure_ascii=False)}\n\nRequest: {task['question']}"
        return [{"role": "system", "content": self.system_prompt_agent}, {"role": "user", "content": user}]

    def reference_solution(self, spec: TaskSpec) -> str:
        return spec.answer

    def score(self, spec: TaskSpec, completion: str) -> float:
        """1.0 when BFCL's AST checker accepts the completion's calls, else 0.0."""
        ok, _ = check_completion(json.loads(spec.text), completion)
        return 1.0 if ok else 0.0

    def explain(self, spec: TaskSpec, completion: str) -> str:
        """The checker's reason for the score (for logs and debugging)."""
        return check_completion(json.loads(spec.text), completion)[1]
