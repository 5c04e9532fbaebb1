"""BFCL V4 multi-turn categories, scored on BFCL's own stateful backends, with no model text ever evaluated.

Categories: ``multi_turn_base``, ``multi_turn_miss_func``, ``multi_turn_miss_param``, ``multi_turn_long_context``
(200 entries each). An entry is a conversation of several user turns over one or more simulated APIs (a file
system, messaging, posting, tickets, a trading bot, travel booking, vehicle control, math); its answer key is, per
turn, the list of calls that fulfil it. BFCL scores a prompting model like this (and so does this module):

1. **Inference.** Before each turn the user's messages are added (a ``miss_func`` turn that holds back functions
   instead says which functions were added, in BFCL's wording). The model replies; the reply is decoded as BFCL's
   ``decode_execute`` for prompting models decodes it (:func:`decode_step`: the project's BFCL decoder,
   :mod:`.bfcl_decode`, then each call written back as a call string as BFCL writes it); the calls run on the
   entry's backend instances and each result comes back as a ``tool`` message. The turn ends at the first reply that
   does not decode or decodes to no call; after ``MAXIMUM_STEP_LIMIT`` + 1 steps (21) the whole entry is cut off.
   A prediction is what the model wrote: per turn, the list of its raw replies per step.
2. **Checking** (``--protocol official``, BFCL's leaderboard metric). The replies are decoded again (a step that
   does not decode, or decodes to no call, is skipped); per turn the model's calls run on one set of instances and
   the answer key's on another, both kept across turns; after each turn whose key is not empty, an empty model turn
   fails, then BFCL's ``state_checker`` (every public attribute of every instance equal) and ``response_checker``
   (every result of the key's calls this turn among the results of all the model's calls so far, in any order). An
   entry is right only if every turn is; a prediction with fewer turns than the entry (cut off) is wrong.
3. **Per turn** (``--protocol per-turn``, the paper's reading: GenEnv's Table 1 reports BFCL's long-context
   multi-turn subset "with each turn evaluated independently"). Before turn t both sets of instances are rebuilt
   from the entry's initial state and replay the answer key's calls of turns 0 … t−1, so every turn starts from the
   state a correct history leaves; turn t is then checked as above on its own (the replayed results count as the
   history the response check may find results in, as BFCL's own check lets an earlier turn's call count), and a
   turn whose key is empty (the model should call nothing: a missing function or parameter) is right when the
   model's turn decodes to no call (BFCL's ``multi_turn_irrelevance_checker`` rule, which the leaderboard does not
   apply). The score is the share of turns right over all turns. When a model answers under this protocol, its
   history before turn t is the answer key's (its calls as one assistant step, their results as tool messages),
   not its own. This is not BFCL's leaderboard metric and the summary says so.

What comes from the installed ``bfcl-eval`` (imported, never re-written; :func:`upstream`): the backend classes and
their scenario loading, ``state_checker``, ``response_checker``, ``method_invoke_order_checker`` (upstream has it
switched off; so is it here, ``METHOD_ORDER_CHECK``), ``is_empty_execute_response``, the class → module and
class → function-doc mappings, the step limit and the text of the "functions added" message. What this module
writes itself, because upstream's executor runs every call string through Python's ``eval``: the dispatch. A call
string is compiled (for upstream's syntax errors, never run), its tree walked, and only a call of a public method of
the entry's instances by its bare name runs, with literal arguments; anything else (an unknown or private name, a
builtin, an attribute chain, a non-literal argument) is that call's error result, as upstream's ``eval`` would
record an exception. Where BFCL's harness wrote code of its own, this module matches it byte for byte and tests it
(``tests/test_bfcl_multi_turn.py``): the call strings it renders from decoded calls, the result strings
(``str`` as is, a ``dict`` as ``json.dumps``, anything else ``str()``, an exception as
``"Error during execution: …"``, the writing of the result included, so that an integer ``str()`` cannot write is
that error too; the eight names upstream refuses), the message layout of a turn (user messages, the assistant's raw
reply, one ``tool`` message per call with the call string as its ``name``) and the "functions added" message. The
system prompt is the lab's own wording (as for single-turn BFCL), not BFCL's.

Bounds (the ``MAX_*`` constants; docs/bfcl_multi_turn.md, "Bounds"): upstream's backends compute whatever a call
asks (``power(base=10, exponent=1000000000)`` runs for hours, a few ``cp``/``mv`` calls share folders so that
``find`` walks 2**22 paths), so every call is bounded before it runs. A call whose arguments ask for too much (an
integer result, a precision, a number as text) or whose walk (``find``, ``du``) covers too many paths, or a folder
inside itself, is not run: its result is an error string, as upstream records a call that raises, and the entry is
scored on (these calls change no state; the answer keys' stay far inside every bound). The work of an entry (calls,
characters of calls and of results, characters the file system reads, digits of precision) is charged to a
:class:`Budget`; once one is crossed no further call of the entry runs and the entry is wrong
(``multi_turn:bound_exceeded``; under the per-turn protocol, that turn and every later one). Each call also restores
the precisions ``decimal`` and mpmath keep for the whole process, which upstream leaves as the last call set them.
``score`` lists the bounds met in ``bounds``.

Known differences from upstream (none changes a verdict on the answer keys or on the parity test's predictions,
``benchmarks/bfcl_parity.py --multi-turn``; docs/bfcl_multi_turn.md): upstream's ``eval`` resolves names in its
executor module, so a model calling a Python builtin by keyword (``open(file=…, mode='w')``) runs it there and is
refused here (the result is the ``NameError`` text instead of the builtin's result); upstream rewrites every
``method(`` it finds in the call string, string arguments included, and here strings are never rewritten.
"""

from __future__ import annotations

import ast
import copy
import decimal
import importlib
import inspect
import json
import math
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Sequence

from genenv_lab.safe_io import loads_json, read_text
from genenv_lab.evaluation.bfcl_decode import DecodeError, decode
from genenv_lab.evaluation.common import ItemResult

CATEGORIES = ("multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param", "multi_turn_long_context")
PROTOCOLS = ("official", "per-turn")
BFCL_EVAL_VERSION = "2026.3.23"
INSTALL = f"pip install --no-deps 'bfcl-eval=={BFCL_EVAL_VERSION}' 'mpmath==1.3.0'"
"""The backends need only the standard library and mpmath; the package's declared dependencies (numpy 1.26,
provider SDKs, faiss, ...) are not needed and conflict with this project's, hence ``--no-deps``."""

BLOCKED = ("kill", "exit", "quit", "remove", "unlink", "popen", "Popen", "run")
"""Names upstream's executor refuses before it evaluates a call (its error text is reproduced)."""
METHOD_ORDER_CHECK = False
"""Upstream's ``multi_turn_checker`` has its method-order check commented out; kept off to score as it does."""
MAX_CALL_CHARS = 100_000
"""The longest call string dispatched; a longer one is that call's error result (no backend method needs it)."""

# Bounds (the project's own: upstream's backends compute whatever a call asks; docs/bfcl_multi_turn.md, "Bounds").
# Per call, checked before it runs; a call over one is not run and its result is an error string, as upstream
# records a call that raises, and the entry is scored on (the calls bounded here change no state).
MAX_RESULT_DIGITS = 10_000
"""``power`` on integers and ``round_number`` of an integer to negative places: at most this many digits (Python
cannot write an integer of more than 4,300 as text anyway; upstream computes ``10**1000000000`` for hours)."""
MAX_PRECISION = 1_000
"""``logarithm`` and ``square_root``: at most this many digits of precision (the answer keys use at most 10)."""
MAX_NUMBER_TEXT = 32
"""``logarithm``: a number given as text has at most this many characters (mpmath reads ``'1e'`` and 4,000 nines for
17 s)."""
MAX_WALK_PATHS = 10_000
"""``find`` and ``du``: at most this many paths under the folder they walk, a folder that upstream's shallow
``cp``/``mv`` shares counted once per path it is reached by, and no folder inside itself."""
MAX_WALK_CHARS = 2_000_000
"""``find``: at most this many characters of paths; ``du``: of the files' contents it reads (counted per path)."""
# Per entry (all the model's calls in one check or one conversation; the answer key's replay is not counted):
# once one is crossed, no further call of the entry runs and the entry (per turn: that turn and every later one)
# is wrong, with the reason ``multi_turn:bound_exceeded``.
MAX_CALLS = 500
"""Calls dispatched, nested calls included (the answer keys make at most 35 in an entry)."""
MAX_CALL_TEXT = 1_000_000
"""Characters of call strings (so the backends' state, which only call arguments fill, stays under it)."""
MAX_RESULT_TEXT = 2_000_000
"""Characters of results kept (the history the checks and the model read; the answer keys' longest is 70,454)."""
MAX_READ_CHARS = 10_000_000
"""Characters the file system's walks and reads go through (``find``, ``du``: as above; ``cat``, ``wc``, ``sort``,
``grep``, ``tail``, ``diff``: the contents of the files named)."""
MAX_PRECISION_DIGITS = 50_000
"""Digits of precision the ``logarithm`` and ``square_root`` calls ask for, summed (50 calls at the most)."""


class BFCLEvalMissing(ImportError):
    """``bfcl-eval`` is not installed; the message names the install command."""


@lru_cache(maxsize=1)
def upstream() -> SimpleNamespace:
    """The pieces of the installed ``bfcl-eval`` this module uses (imported once; one-line error when absent)."""
    try:
        from bfcl_eval.constants import default_prompts
        from bfcl_eval.constants.executable_backend_config import (CLASS_FILE_PATH_MAPPING,
                                                                   MULTI_TURN_FUNC_DOC_FILE_MAPPING,
                                                                   STATELESS_CLASSES)
        from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_checker as checker
        from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import is_empty_execute_response
    except ImportError as exc:
        raise BFCLEvalMissing(f"BFCL multi-turn scoring runs BFCL's own backends: {INSTALL} (missing: {exc.name})"
                              ) from None
    return SimpleNamespace(
        classes=dict(CLASS_FILE_PATH_MAPPING), docs=dict(MULTI_TURN_FUNC_DOC_FILE_MAPPING),
        stateless=frozenset(STATELESS_CLASSES), state_checker=checker.state_checker,
        response_checker=checker.response_checker, method_order_checker=checker.method_invoke_order_checker,
        is_empty=is_empty_execute_response, step_limit=int(default_prompts.MAXIMUM_STEP_LIMIT),
        added_functions=default_prompts.DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_PROMPTING)


def available() -> bool:
    try:
        upstream()
    except BFCLEvalMissing:
        return False
    return True


def wheel_data() -> Path | None:
    """The data folder the installed ``bfcl-eval`` wheel ships (every category's files, the answer keys and the
    multi-turn function docs), found without importing the package; None when it is not installed."""
    import importlib.util

    spec = importlib.util.find_spec("bfcl_eval")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(list(spec.submodule_search_locations)[0]) / "data"
    return folder if (folder / "possible_answer").is_dir() else None


def is_multi_turn(category: str) -> bool:
    return category in CATEGORIES


# ------------------------------------------------------------------------------------------------- loading


@dataclass(frozen=True)
class MultiTurnItem:
    id: str
    category: str
    turns: tuple[tuple[dict, ...], ...]
    """The user's messages per turn (a ``miss_func`` turn that adds functions back has none in the data)."""
    functions: tuple[dict, ...]
    """The function docs the model is shown from the start (the held-back ones removed)."""
    held_back: dict[int, tuple[dict, ...]]
    """``miss_func``: turn index -> the docs added at that turn."""
    initial_config: dict
    involved_classes: tuple[str, ...]
    ground_truth: tuple[tuple[str, ...], ...]
    """The answer key: per turn, call strings (``cd(folder='document')``)."""

    @property
    def long_context(self) -> bool:
        return "long_context" in self.category


def load_multi_turn(data_dir: Path, category: str, question: Path, answer: Path) -> list[MultiTurnItem]:
    """Entries of one multi-turn category, their function docs as BFCL assembles them (the involved classes' docs in
    order, a ``miss_func`` entry's held-back functions moved to the turn that adds them)."""
    up = upstream()
    doc_dir = Path(data_dir) / "multi_turn_func_doc"
    if not doc_dir.is_dir():
        raise FileNotFoundError(f"no multi_turn_func_doc/ in {data_dir} (BFCL ships it beside the category files)")
    docs: dict[str, list[dict]] = {}
    keys = {r["id"]: r["ground_truth"] for r in _jsonl(answer)}
    items = []
    for row in _jsonl(question):
        functions: list[dict] = []
        for cls in row["involved_classes"]:
            if cls not in up.classes:
                raise ValueError(f"{category}: entry {row['id']} uses {cls!r}, which bfcl-eval has no backend for")
            if cls not in docs:
                docs[cls] = _jsonl(doc_dir / up.docs[cls])
            functions.extend(docs[cls])
        held: dict[int, tuple[dict, ...]] = {}
        for turn, names in (row.get("missed_function") or {}).items():
            moved = []
            for name in names:
                i = next((k for k, f in enumerate(functions) if f.get("name") == name), None)
                if i is not None:
                    moved.append(functions.pop(i))
            held[int(turn)] = tuple(moved)
        if row["id"] not in keys:
            raise ValueError(f"{category}: entry {row['id']} has no answer key")
        gt = keys[row["id"]]
        if len(gt) != len(row["question"]):
            raise ValueError(f"{category}: entry {row['id']} has {len(row['question'])} turns and an answer key of "
                             f"{len(gt)}")
        items.append(MultiTurnItem(
            id=row["id"], category=category, turns=tuple(tuple(t) for t in row["question"]),
            functions=tuple(functions), held_back=held, initial_config=row.get("initial_config") or {},
            involved_classes=tuple(row["involved_classes"]), ground_truth=tuple(tuple(t) for t in gt)))
    return items


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in read_text(path, "BFCL file").splitlines() if line.strip()]


# ------------------------------------------------------------------------------------------------- decoding


def _render_value(value: Any) -> str:
    """A decoded argument value written back as upstream's executor writes it (``parse_nested_value``): a dict
    whose values are all dicts is a nested call (its first key the name; an empty dict raises ``IndexError``, a
    decoding failure upstream too), any other dict is ``{'k': v}`` with the key unescaped, everything else
    ``repr``."""
    if isinstance(value, dict):
        if all(isinstance(v, dict) for v in value.values()):
            name = list(value)[0]
            return f"{name}(" + ", ".join(f"{k}={_render_value(v)}" for k, v in value[name].items()) + ")"
        return "{" + ", ".join(f"'{k}': {_render_value(v)}" for k, v in value.items()) + "}"
    return repr(value)


def render_calls(decoded: list[dict]) -> list[str]:
    """Decoded calls ``[{name: {param: value}}]`` as call strings, as upstream's ``decode_execute`` returns them.

    >>> render_calls([{"cd": {"folder": "document"}}, {"ls": {}}])
    ["cd(folder='document')", 'ls()']
    """
    return [f"{name}(" + ", ".join(f"{k}={_render_value(v)}" for k, v in args.items()) + ")"
            for call in decoded for name, args in call.items()]


def decode_step(text: Any) -> list[str]:
    """One raw reply decoded as BFCL's ``decode_execute`` for prompting models decodes it; raises
    :class:`DecodeError` (or the exception upstream's writer raises) where upstream's decoding fails.

    >>> decode_step("```\\n[cd(folder='document'), mkdir(dir_name='temp')]\\n```")
    ["cd(folder='document')", "mkdir(dir_name='temp')"]
    """
    if not isinstance(text, str):
        raise DecodeError(f"a step is {type(text).__name__}, not text")
    return render_calls(decode(text, "python"))


def decode_turns(prediction: Sequence[Sequence[Any]]) -> list[list[list[str]]]:
    """Per turn, the decoded calls of each step, the steps that do not decode or decode to no call left out (as
    BFCL's checker leaves them out)."""
    up = upstream()
    out = []
    for turn in prediction:
        steps = []
        for raw in turn:
            try:
                calls = decode_step(raw)
            except Exception:  # noqa: BLE001 - upstream skips any step its decoder raises on
                continue
            if not up.is_empty(calls):
                steps.append(calls)
        out.append(steps)
    return out


# ------------------------------------------------------------------------------------------------- execution


class _Refused(Exception):
    """A call this executor does not run; its message is the error text upstream's ``eval`` would have raised."""


class _OverBound(_Refused):
    """A call over one of the project's bounds (module constants ``MAX_*``); not run."""


@dataclass
class Budget:
    """What one entry's model calls have spent (one check, or one conversation), shared by the backends of its
    turns under the per-turn protocol. ``exceeded`` is the first per-entry bound crossed: once set, no call of the
    entry runs. ``refused`` lists the per-call bounds met (their calls were not run)."""

    calls: int = 0
    call_chars: int = 0
    result_chars: int = 0
    read_chars: int = 0
    digits: int = 0
    exceeded: str = ""
    refused: list[str] = field(default_factory=list)

    def spend(self, what: str, amount: int) -> None:
        """Add ``amount`` to ``what``; crossing its bound sets :attr:`exceeded` and refuses the call at hand."""
        spent = getattr(self, what) + amount
        setattr(self, what, spent)
        if not self.exceeded and spent > _ENTRY_BOUNDS[what][0]:
            limit, unit = _ENTRY_BOUNDS[what]
            self.exceeded = f"the model's calls in this entry went over {limit:,} {unit} (genenv_lab's bound)"
        if self.exceeded:
            raise _OverBound(f"not run: {self.exceeded}")

    def notes(self) -> list[str]:
        return ([self.exceeded] if self.exceeded else []) + self.refused[:3]


_ENTRY_BOUNDS = {"calls": (MAX_CALLS, "calls"), "call_chars": (MAX_CALL_TEXT, "characters of calls"),
                 "result_chars": (MAX_RESULT_TEXT, "characters of results"),
                 "read_chars": (MAX_READ_CHARS, "characters read by the file system"),
                 "digits": (MAX_PRECISION_DIGITS, "digits of precision")}
_READERS = {"cat": ("file_name",), "wc": ("file_name",), "sort": ("file_name",), "grep": ("file_name",),
            "tail": ("file_name",), "diff": ("file_name1", "file_name2")}


def _precisions() -> tuple:
    """The process-global precisions a backend call may set (``decimal``'s context, mpmath's ``mp``)."""
    mp = sys.modules.get("mpmath")
    context = decimal.getcontext()
    return context, context.prec, mp.mp.prec if mp is not None else None


def _restore(saved: tuple) -> None:
    context, prec, mp_prec = saved
    if context.prec != prec:
        context.prec = prec
    mp = sys.modules.get("mpmath")
    mp_prec = mp_prec if mp_prec is not None else 53  # mpmath's default (15 digits)
    if mp is not None and mp.mp.prec != mp_prec:
        mp.mp.prec = mp_prec


def _result_text(result: Any) -> str:
    """A call's result as upstream's executor writes it: a ``str`` as is, a ``dict`` as ``json.dumps`` (``str()``
    where JSON cannot write it), anything else ``str()``. Raises what ``str()`` raises (an integer of more than
    4,300 digits): the caller records it as the call's error, as upstream does."""
    if type(result) is str:
        return result
    if type(result) is dict:
        try:
            return json.dumps(result)
        except Exception:  # noqa: BLE001 - upstream falls back to str() for what JSON cannot write
            return str(result)
    return str(result)


def _error_text(exc: Exception) -> str:
    try:
        return f"Error during execution: {exc}"
    except Exception:  # noqa: BLE001 - a message str() cannot write (upstream's executor would raise here)
        return f"Error during execution: {type(exc).__name__}"


def _walk_size(folder: Any) -> tuple[int, int, int] | None:
    """Paths under ``folder`` (a GorillaFileSystem ``Directory``), characters of their names joined as ``find``
    writes them (without the folder's own path), characters of the files' contents, each counted once per path
    (upstream's shallow ``cp`` and ``mv`` share folders, so the paths can be exponentially many); None when a
    folder contains itself. Linear in the distinct folders: each ``contents`` dict is sized once."""
    sizes: dict[int, tuple[int, int, int]] = {}
    open_: set[int] = set()
    stack: list[tuple[dict, bool]] = [(folder.contents, False)]
    while stack:
        contents, done = stack.pop()
        key = id(contents)
        if done:
            open_.discard(key)
            paths = names = text = 0
            for name, item in contents.items():
                sub = getattr(item, "contents", None)
                below = sizes[id(sub)] if isinstance(sub, dict) else (0, 0, 0)
                content = getattr(item, "content", None)
                text += below[2] + (len(content) if isinstance(content, str) and not isinstance(sub, dict) else 0)
                width = len(name) if isinstance(name, str) else len(str(name))
                paths += 1 + below[0]
                names += (width + 1) * (1 + below[0]) + below[1]
            sizes[key] = (paths, names, text)
            continue
        if key in sizes:
            continue
        open_.add(key)
        stack.append((contents, True))
        for item in contents.values():
            sub = getattr(item, "contents", None)
            if isinstance(sub, dict):
                if id(sub) in open_:
                    return None
                if id(sub) not in sizes:
                    stack.append((sub, False))
    return sizes[id(folder.contents)]


@lru_cache(maxsize=None)
def _signature(function: Any) -> inspect.Signature:
    return inspect.signature(function)


def _math_bound(name: str, a: dict) -> str:
    """Why a MathAPI call would compute without bound (empty when it would not), judged on its bound arguments as
    upstream's method uses them."""
    if name == "power":
        base, exponent = a["base"], a["exponent"]
        if isinstance(base, int) and isinstance(exponent, int) and exponent > 0 and abs(base) > 1 and (
                exponent > 4 * MAX_RESULT_DIGITS or exponent * math.log10(abs(base)) > MAX_RESULT_DIGITS):
            return f"power: a result of more than {MAX_RESULT_DIGITS:,} digits"
    elif name == "round_number":
        number, places = a["number"], a["decimal_places"]
        if isinstance(number, int) and isinstance(places, int) and places < -MAX_RESULT_DIGITS:
            return f"round_number: an integer rounded to more than {MAX_RESULT_DIGITS:,} places left of the point"
    elif name in ("logarithm", "square_root"):
        if name == "logarithm":
            for param in ("value", "base"):
                if isinstance(a[param], str) and len(a[param]) > MAX_NUMBER_TEXT:
                    return f"logarithm: {param} as a text of more than {MAX_NUMBER_TEXT} characters"
        precision = _precision_of(name, a["precision"])
        if precision is not None and precision > MAX_PRECISION:
            return f"{name}: a precision of more than {MAX_PRECISION:,} digits"
    return ""


def _precision_of(name: str, precision: Any) -> int | None:
    """The precision a ``logarithm`` (mpmath reads it with ``int()``) or ``square_root`` (``decimal`` takes only an
    int) call would set; None where the method fails on it at once."""
    if name == "logarithm":
        try:
            return int(precision)
        except Exception:  # noqa: BLE001 - mpmath fails the same way
            return None
    return precision if isinstance(precision, int) else None


class Backends:
    """One entry's BFCL backend instances (upstream's classes, loaded from the entry's initial state) and a
    dispatcher that runs decoded call strings on them without evaluating any text, each call within the project's
    bounds (``MAX_*``) and charged to ``budget`` (the entry's, shared by its turns; a new one when None)."""

    def __init__(self, item: MultiTurnItem, budget: Budget | None = None):
        up = upstream()
        self.budget = budget if budget is not None else Budget()
        self.instances: dict[str, Any] = {}
        self.methods: dict[str, Any] = {}
        for name in item.involved_classes:
            cls = getattr(importlib.import_module(up.classes[name]), name)
            inst = cls()
            if name not in up.stateless:
                inst._load_scenario(copy.deepcopy(item.initial_config.get(name, {})), long_context=item.long_context)
            self.instances[name] = inst
            for method, bound in inspect.getmembers(inst, predicate=inspect.ismethod):
                if not method.startswith("_"):
                    self.methods[method] = bound  # a later class wins a shared name, as upstream's mapping does

    def execute(self, calls: Sequence[str]) -> list[str]:
        """The result string of each call, in order, as upstream's executor writes them."""
        return [self._one(call) for call in calls]

    def _one(self, call: str) -> str:
        saved = _precisions()
        try:
            self.budget.spend("calls", 1)
            self.budget.spend("call_chars", len(call))
            head = call.split("(")[0]
            parts = head.split(".")
            # upstream prefixes a method's instance name before checking: a dotted name's second part is checked
            checked = head if len(parts) == 1 else ("" if len(parts) == 2 and parts[1] in self.methods else parts[1])
            if checked in BLOCKED:
                raise _Refused(f"Function call {checked} is not allowed.")
            if len(call) > MAX_CALL_CHARS:
                raise _Refused(f"call longer than {MAX_CALL_CHARS} characters")
            compile(call, "<string>", "eval")  # upstream's syntax errors, word for word; compiling runs nothing
            text = _result_text(self._evaluate(ast.parse(call, mode="eval").body))  # inside the try, as upstream
        except Exception as exc:  # noqa: BLE001 - upstream records any exception of a call as its result
            text = _error_text(exc)
        finally:
            _restore(saved)  # a call may set decimal's or mpmath's precision; upstream leaves it set
        try:
            self.budget.spend("result_chars", len(text))
        except _OverBound as exc:
            return f"Error during execution: {exc}"
        return text

    def _bounded(self, method: Any, args: list, kwargs: dict) -> None:
        """Refuse, before it runs, a call whose arguments ask for unbounded work, and charge the file system's
        walks and reads to the entry (module constants ``MAX_*``). A call that does not bind to its method's
        signature is left to fail as upstream's does."""
        owner = type(getattr(method, "__self__", None)).__name__
        if owner not in ("MathAPI", "GorillaFileSystem"):
            return
        try:
            bound = _signature(method.__func__).bind(method.__self__, *args, **kwargs)
        except TypeError:
            return
        bound.apply_defaults()
        a, name = bound.arguments, method.__name__
        reason = (_math_bound(name, a) if owner == "MathAPI" else self._file_system_bound(method.__self__, name, a))
        if reason:
            self.budget.refused.append(reason)
            raise _OverBound(f"not run: {reason} (genenv_lab's bound)")
        if owner == "MathAPI" and name in ("logarithm", "square_root"):
            self.budget.spend("digits", max(0, _precision_of(name, a["precision"]) or 0))

    def _file_system_bound(self, fs: Any, name: str, a: dict) -> str:
        if name in ("find", "du"):
            try:
                folder = fs._current_dir if name == "du" else fs._navigate_to_directory(a["path"])
                base = 0 if name == "du" else len(a["path"].rstrip("/"))
            except Exception:  # noqa: BLE001 - the method raises the same on these arguments
                return ""
            if isinstance(folder, dict):
                return ""  # no such folder: an error result, nothing walked
            size = _walk_size(folder)
            if size is None:
                return f"{name}: a folder contains itself"
            paths, names, text = size
            chars = text if name == "du" else names + paths * base
            if paths > MAX_WALK_PATHS:
                return f"{name}: {paths:,} paths to walk, over {MAX_WALK_PATHS:,}"
            if chars > MAX_WALK_CHARS:
                return f"{name}: {chars:,} characters to walk, over {MAX_WALK_CHARS:,}"
            self.budget.spend("read_chars", paths + chars)
        elif name in _READERS:
            here = fs._current_dir.contents
            for param in _READERS[name]:
                try:
                    item = here.get(a[param])
                except TypeError:  # an unhashable name: the method raises the same
                    return ""
                content = getattr(item, "content", None)
                if isinstance(content, str):
                    self.budget.spend("read_chars", len(content))
        return ""

    def _evaluate(self, node: ast.AST, nested: bool = False) -> Any:
        if isinstance(node, ast.Call):
            method = self._method(node.func)
            if nested:  # a call in an argument is a call too (the call string itself was counted)
                self.budget.spend("calls", 1)
            args = [self._evaluate(a, True) for a in node.args]
            kwargs = {}
            for kw in node.keywords:
                if kw.arg is None:
                    raise _Refused("'**' arguments are not run")
                kwargs[kw.arg] = self._evaluate(kw.value, True)
            self._bounded(method, args, kwargs)
            return method(*args, **kwargs)
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            elts = [self._evaluate(e, True) for e in node.elts]
            return {ast.List: list, ast.Tuple: tuple, ast.Set: set}[type(node)](elts)
        if isinstance(node, ast.Dict) and None not in node.keys:
            return {self._evaluate(k, True): self._evaluate(v, True) for k, v in zip(node.keys, node.values)}
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            operand = self._evaluate(node.operand, nested)
            if type(operand) not in (int, float, complex, bool):
                raise _Refused(f"bad operand type for unary {'-' if isinstance(node.op, ast.USub) else '+'}: "
                               f"'{type(operand).__name__}'")
            return -operand if isinstance(node.op, ast.USub) else +operand
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
            left, right = self._evaluate(node.left, nested), self._evaluate(node.right, nested)
            if not all(type(v) in (int, float, complex) for v in (left, right)):  # repr writes complex as a+bj
                raise _Refused("only numbers are added in an argument")
            return left + right if isinstance(node.op, ast.Add) else left - right
        if isinstance(node, ast.Name):
            raise _Refused(f"name '{node.id}' is not defined")
        raise _Refused(f"{type(node).__name__} is not run")

    def _method(self, func: ast.AST) -> Any:
        if isinstance(func, ast.Name):
            if func.id in self.methods:
                return self.methods[func.id]
            raise _Refused(f"name '{func.id}' is not defined")
        root = func
        while isinstance(root, (ast.Attribute, ast.Call, ast.Subscript)):
            root = root.func if isinstance(root, ast.Call) else root.value
        raise _Refused(f"name '{root.id}' is not defined" if isinstance(root, ast.Name)
                       else f"{type(func).__name__} callee is not run")


# ------------------------------------------------------------------------------------------------- checking


@dataclass(frozen=True)
class TurnVerdict:
    valid: bool
    error_type: str = ""
    message: str = ""


def _check_turn(model: Backends, truth: Backends, model_results: list[str], truth_results: list[str],
                model_steps: list[list[str]], key: Sequence[str], turn: int) -> TurnVerdict:
    """BFCL's per-turn checks after a turn whose key is not empty: an empty model turn fails, then the state check,
    then the response check (upstream's functions). Before them, an entry whose calls went over a per-entry bound
    is wrong (its later calls did not run, so its state says nothing)."""
    up = upstream()
    if model.budget.exceeded:
        return _over(model.budget)
    if not model_steps or up.is_empty(model_steps):
        return TurnVerdict(False, "multi_turn:empty_turn_model_response",
                           f"Model response list is empty for turn {turn}")
    state = up.state_checker(model.instances, truth.instances)
    if not state["valid"]:
        return TurnVerdict(False, state["error_type"], state["error_message"])
    response = up.response_checker(model_results, truth_results, turn)
    if not response["valid"]:
        return TurnVerdict(False, response["error_type"], response["error_message"])
    if METHOD_ORDER_CHECK:
        order = up.method_order_checker(model.instances, truth.instances)
        if not order["valid"]:
            return TurnVerdict(False, order["error_type"], order["error_message"])
    return TurnVerdict(True)


def _over(budget: Budget) -> TurnVerdict:
    return TurnVerdict(False, "multi_turn:bound_exceeded", budget.exceeded)


def check_official(item: MultiTurnItem, prediction: Any,
                   budget: Budget | None = None) -> tuple[TurnVerdict, list[bool | None]]:
    """BFCL's verdict on a whole prediction (its ``multi_turn_checker`` as its eval runner calls it) and the
    verdict of each turn up to the first that fails (later turns ``None``: not reached). The model's calls are
    charged to ``budget`` (a new one when None); a turn in which they go over a per-entry bound is wrong, whatever
    its key."""
    turns: list[bool | None] = [None] * len(item.ground_truth)
    if not isinstance(prediction, list):
        return TurnVerdict(False, "multi_turn:inference_error",
                           "Model did not output a list of model responses."), turns
    if len(prediction) != len(item.ground_truth):
        return TurnVerdict(False, "multi_turn:force_terminated",
                           f"Model was force-terminated during inference phase. The length of the model result turns "
                           f"({len(prediction)}) does not match the length of the ground truth turns "
                           f"({len(item.ground_truth)})."), turns
    decoded = decode_turns([t if isinstance(t, list) else [] for t in prediction])
    model, truth = Backends(item, budget), Backends(item)
    history: list[str] = []
    for t, key in enumerate(item.ground_truth):
        for step in decoded[t]:
            history.extend(model.execute(step))
        truth_results = truth.execute(key)
        if model.budget.exceeded:
            turns[t] = False
            return _over(model.budget), turns
        if not key:
            turns[t] = True  # upstream does not check a turn whose key is empty (its calls still ran, above)
            continue
        verdict = _check_turn(model, truth, history, truth_results, decoded[t], key, t)
        turns[t] = verdict.valid
        if not verdict.valid:
            return verdict, turns
    return TurnVerdict(True), turns


def check_per_turn(item: MultiTurnItem, prediction: Any, budget: Budget | None = None) -> list[bool]:
    """The verdict of each turn on its own (module docstring, "Per turn"); a turn the prediction lacks is wrong.
    The model's calls of all turns are charged to one ``budget`` (a new one when None): the turn in which they go
    over a per-entry bound is wrong, and so is every later one."""
    up = upstream()
    budget = budget if budget is not None else Budget()
    rows = prediction if isinstance(prediction, list) else []
    decoded = decode_turns([t if isinstance(t, list) else [] for t in rows])
    out = []
    for t, key in enumerate(item.ground_truth):
        if t >= len(decoded):
            out.append(False)
            continue
        model, truth = _replayed(item, t, budget), _replayed(item, t)
        history = list(model.replayed)
        for step in decoded[t]:
            history.extend(model.execute(step))
        truth_results = truth.execute(key)
        if budget.exceeded:
            out.append(False)
            continue
        if not key:
            out.append(bool(up.is_empty(decoded[t])))
            continue
        out.append(_check_turn(model, truth, history, truth_results, decoded[t], key, t).valid)
    return out


class _Replayed(Backends):
    replayed: list[str]


def _replayed(item: MultiTurnItem, turn: int, budget: Budget | None = None) -> _Replayed:
    """Fresh instances that have run the answer key's calls of turns before ``turn`` (their results kept; the
    replay is not charged to ``budget``, which the model's calls on them are)."""
    b = _Replayed(item)
    b.replayed = [r for key in item.ground_truth[:turn] for r in b.execute(key)]
    if budget is not None:
        b.budget = budget
    return b


# ------------------------------------------------------------------------------------------------- scoring


def parse_prediction(prediction: Any) -> Any:
    """A prediction as the runner hands it (the JSON text of the per-turn lists) back as lists."""
    if isinstance(prediction, str):
        try:
            return loads_json(prediction)
        except ValueError:
            return prediction
    return prediction


def score(item: MultiTurnItem, prediction: Any, protocol: str = "official") -> ItemResult:
    """One entry's verdict. ``correct`` is always BFCL's (official) verdict on the prediction; ``score`` is the
    chosen protocol's (official: 1/0; per-turn: the share of turns right); ``turn_correct`` the per-turn verdicts;
    ``bounds`` the project's bounds the model's calls met (empty for a prediction within them all)."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"BFCL multi-turn protocol {protocol!r} is unknown; choose one of {list(PROTOCOLS)}")
    pred = parse_prediction(prediction)
    spent = [Budget(), Budget()]
    if prediction is None:
        verdict, official_turns = TurnVerdict(False, "no prediction"), [None] * len(item.ground_truth)
    else:
        verdict, official_turns = check_official(item, pred, spent[0])
    per_turn = check_per_turn(item, pred, spent[1])
    bounds = list(dict.fromkeys(note for b in spent for note in b.notes()))[:4]
    n = len(per_turn)
    value = float(verdict.valid) if protocol == "official" else (sum(per_turn) / n if n else 0.0)
    reason = "ok" if verdict.valid else (verdict.error_type if prediction is None
                                         else f"{verdict.error_type}: {verdict.message}")
    return ItemResult(id=item.id, category=item.category, correct=verdict.valid, score=value, reason=reason,
                      extra={"protocol": protocol, "turn_correct": per_turn, "official_turns": official_turns,
                             "n_turns": n, "n_turns_correct": sum(per_turn), "bounds": bounds,
                             "n_steps": sum(len(t) for t in pred if isinstance(t, list)) if isinstance(pred, list)
                             else 0})


def _positional_to_keywords(backends: Backends, call: str) -> str:
    """An answer-key call string with its positional arguments named (BFCL's prompting decoder drops positional
    arguments, so ``sort('final_report.pdf')`` must be written ``sort(file_name='final_report.pdf')``)."""
    node = ast.parse(call, mode="eval").body
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)) or not node.args:
        return call
    params = [p for p in inspect.signature(backends.methods[node.func.id]).parameters]
    named = [f"{params[i]}={ast.unparse(a)}" for i, a in enumerate(node.args)]
    named += [f"{kw.arg}={ast.unparse(kw.value)}" for kw in node.keywords]
    return f"{node.func.id}(" + ", ".join(named) + ")"


def gold_prediction(item: MultiTurnItem) -> list[list[str]]:
    """The answer key as a prediction: per turn one step holding its calls in BFCL's format (positional arguments
    named), an empty turn where the key is empty. Scores 1 under both protocols (tested)."""
    b = Backends(item)
    return [[("[" + ", ".join(_positional_to_keywords(b, c) for c in key) + "]")] if key else []
            for key in item.ground_truth]


def gold_step(item: MultiTurnItem, turn: int) -> str:
    """The answer key's calls of one turn as one step (the history a per-turn conversation shows)."""
    return gold_prediction(item)[turn][0] if item.ground_truth[turn] else ""


# ------------------------------------------------------------------------------------------------- inference


SYSTEM_PROMPT = (
    "You can call functions. Below are the available functions as JSON schemas. To call them, reply with only the "
    "call(s), in Python syntax: [func_name(param=value, ...), ...] (one list, several calls allowed). Each call's "
    "result comes back to you; keep calling functions until the user's request is fulfilled. When there is nothing "
    "more to call, or the request cannot be served with the functions (a function or a parameter value is missing), "
    "reply in plain text without any call.")


def system_message(item: MultiTurnItem) -> dict[str, str]:
    return {"role": "system",
            "content": SYSTEM_PROMPT + "\n\nFunctions:\n" + json.dumps(list(item.functions), ensure_ascii=False)}


def turn_messages(item: MultiTurnItem, turn: int) -> list[dict]:
    """The messages that open a turn: the user's, or, where functions are added back (``miss_func``), BFCL's
    message listing them (byte for byte)."""
    if turn in item.held_back:
        return [{"role": "user", "content": upstream().added_functions.format(functions=list(item.held_back[turn]))}]
    return [dict(m) for m in item.turns[turn]]


def tool_messages(calls: Sequence[str], results: Sequence[str]) -> list[dict]:
    """One ``tool`` message per executed call, as BFCL's prompting handlers add them."""
    return [{"role": "tool", "name": c, "content": r} for c, r in zip(calls, results)]


@dataclass
class Conversation:
    """One entry answered by a model, step by step, as BFCL's prompting inference loop runs it (``official``: the
    model's own history; ``per-turn``: before each turn the answer key's history and state). Drive it with
    :meth:`messages` (None once finished) and :meth:`reply`; :attr:`prediction` is what the model wrote."""

    item: MultiTurnItem
    protocol: str = "official"
    prediction: list[list[str]] = field(default_factory=list)
    finished: bool = False
    cut_off: bool = False
    _messages: list[dict] = field(default_factory=list)
    _backends: Backends | None = None
    _steps: int = 0
    _gold: list | None = None
    _budget: Budget = field(default_factory=Budget)
    """What the model's calls have spent: the conversation is one entry (a turn's fresh instances share it)."""

    def __post_init__(self):
        if self.protocol not in PROTOCOLS:
            raise ValueError(f"protocol {self.protocol!r}: choose one of {list(PROTOCOLS)}")
        self._messages = [system_message(self.item)]
        if self.protocol == "official":
            self._backends = Backends(self.item, self._budget)
        self._open(0)

    def _open(self, turn: int) -> None:
        if turn >= len(self.item.ground_truth):
            self.finished = True
            return
        if self.protocol == "per-turn":
            self._backends = _replayed(self.item, turn, self._budget)
            self._messages = [system_message(self.item)]
            replay = _replayed(self.item, 0)
            for t in range(turn):
                self._messages += turn_messages(self.item, t)
                key = list(self.item.ground_truth[t])
                if key:
                    self._gold = self._gold or gold_prediction(self.item)  # once per conversation
                    self._messages.append({"role": "assistant", "content": self._gold[t][0]})
                    self._messages += tool_messages(key, replay.execute(key))
        self._messages += turn_messages(self.item, turn)
        self.prediction.append([])
        self._steps = 0

    def messages(self) -> list[dict] | None:
        return None if self.finished else [dict(m) for m in self._messages]

    def reply(self, text: str) -> None:
        """Take the model's reply to :meth:`messages`: run its calls and continue the turn, or open the next."""
        if self.finished:
            raise RuntimeError("the conversation is finished")
        turn = len(self.prediction) - 1
        self.prediction[turn].append(text)
        self._messages.append({"role": "assistant", "content": text})
        try:
            calls = decode_step(text)
        except Exception:  # noqa: BLE001 - upstream ends the turn on any decoding failure
            calls = []
        if upstream().is_empty(calls):
            self._open(turn + 1)
            return
        self._messages += tool_messages(calls, self._backends.execute(calls))
        self._steps += 1
        if self._steps > upstream().step_limit:
            if self.protocol == "official":  # upstream cuts the whole entry off
                self.finished = self.cut_off = True
            else:
                self._open(turn + 1)

    def cut(self) -> None:
        """End the conversation where it is (the prompt no longer fits the model's context)."""
        self.finished = self.cut_off = True
