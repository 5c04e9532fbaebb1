"""``arith``: integer arithmetic tasks whose truth the domain computes itself.

The simulator writes two lines::

    Expression: (12 + 7) * 3
    Question: Three boxes hold 12 red and 7 blue marbles each. How many marbles are there?

The expression is parsed with Python's ``ast`` module in ``eval`` mode and evaluated by walking a whitelist of
node types (integer literals, + - * / // %, unary minus, parentheses) with exact fractions: nothing is ever passed
to ``eval``. Rejections (counted per reason): missing lines, a syntax error, a disallowed construct (names, calls,
powers, floats...), too many operands or digits, division by zero, a non-integer or too large result.
The simulator's reply is prefilled with ``Expression:``. The agent is asked for the value and its reply is
prefilled with ``<expression> =``, so that it completes the equation (small models then answer at once instead
of rambling); its reward is 1.0 when its answer (see :func:`extract_answer`) equals the computed value, else 0.0.
"""

from __future__ import annotations

import ast
import re
from fractions import Fraction

from genenv_lab.core.types import TaskSpec
from genenv_lab.domains.base import Domain, ParseResult

MAX_EXPR_CHARS = 120
MAX_OPERANDS = 8
MAX_DIGITS = 6
MAX_ABS_RESULT = 10**9
MAX_QUESTION_CHARS = 300

_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%"}
_LINE = re.compile(r"^\s*(expression|question)\s*[:：](.*)$", re.IGNORECASE)
r"""A field line; its value is ``group(2).strip()`` (a lazy ``(.*?)\s*$`` backtracked: quadratic on long blank runs)."""
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


class UnsafeExpression(ValueError):
    """The expression uses a construct outside the arithmetic whitelist or breaks a limit."""


def evaluate(expression: str) -> tuple[Fraction, dict]:
    """Evaluate an integer arithmetic expression safely; return (value, difficulty features).

    >>> evaluate("(12 + 7) * 3")[0]
    Fraction(57, 1)
    >>> evaluate("__import__('os')")
    Traceback (most recent call last):
    ...
    genenv_lab.domains.arith.UnsafeExpression: disallowed construct: Call
    """
    if len(expression) > MAX_EXPR_CHARS:
        raise UnsafeExpression(f"expression longer than {MAX_EXPR_CHARS} characters")
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError as exc:
        raise UnsafeExpression(f"syntax error: {exc.msg}") from None
    operands: list[int] = []
    operators: set[str] = set()

    def walk(node: ast.AST, depth: int) -> tuple[Fraction, int]:
        if isinstance(node, ast.Constant) and type(node.value) is int:
            if node.value >= 10**MAX_DIGITS:
                raise UnsafeExpression(f"operand with more than {MAX_DIGITS} digits")
            operands.append(node.value)
            if len(operands) > MAX_OPERANDS:
                raise UnsafeExpression(f"more than {MAX_OPERANDS} operands")
            return Fraction(node.value), depth
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            value, d = walk(node.operand, depth + 1)
            return (-value if isinstance(node.op, ast.USub) else value), d
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            left, dl = walk(node.left, depth + 1)
            right, dr = walk(node.right, depth + 1)
            symbol = _OPS[type(node.op)]
            operators.add(symbol)
            if symbol in ("/", "//", "%") and right == 0:
                raise UnsafeExpression("division by zero")
            if symbol == "+":
                value = left + right
            elif symbol == "-":
                value = left - right
            elif symbol == "*":
                value = left * right
            elif symbol == "/":
                value = left / right
            elif symbol == "//":
                value = Fraction(left // right)
            else:
                value = left % right
            if abs(value) > MAX_ABS_RESULT:
                raise UnsafeExpression(f"intermediate value beyond ±{MAX_ABS_RESULT}")
            return value, max(dl, dr)
        if isinstance(node, ast.BinOp):
            raise UnsafeExpression(f"disallowed operator: {type(node.op).__name__}")
        if isinstance(node, ast.Constant):
            raise UnsafeExpression(f"disallowed literal: {type(node.value).__name__}")
        raise UnsafeExpression(f"disallowed construct: {type(node).__name__}")

    value, depth = walk(tree.body, 0)
    features = {
        "n_operands": len(operands),
        "max_digits": max(len(str(abs(o))) for o in operands),
        "operators": "".join(sorted(operators)),
        "n_operators": len(operands) - 1,
        "has_parens": "(" in expression,
        "depth": depth,
    }
    return value, features


def extract_answer(completion: str) -> str | None:
    """The agent's answer: the first number after the last ``Answer:``, else the first number of the completion.

    The completion continues the prefilled ``<expression> =``, so its first number is the value it gives.

    >>> extract_answer(" 12. Since 7 + 5 = 12")
    '12'
    >>> extract_answer(" 3 + 4 is 7. Answer: 7")
    '7'
    >>> extract_answer(" -1,200 apples")
    '-1200'
    >>> extract_answer("no idea") is None
    True
    """
    idx = completion.lower().rfind("answer")
    if idx >= 0:
        found = _NUMBER.search(completion, idx)
        if found:
            return found.group(0).replace(",", "")
    found = _NUMBER.search(completion)
    return found.group(0).replace(",", "") if found else None


_TIMES = re.compile(r"(?<=[\d)])\s*[x×]\s*(?=[\d(])")


def _normalise(expression: str) -> tuple[str, Fraction | None]:
    """Accept the usual spellings (``×``, ``x`` between numbers, ``÷``) and a stated result after ``=``.

    Returns the expression and the stated result, if one is written and is a plain number (it is cross-checked).

    >>> _normalise("12 x (3 + 1) = 48.")
    ('12 * (3 + 1)', Fraction(48, 1))
    """
    expression = _TIMES.sub(" * ", expression.replace("÷", "/")).replace("  ", " ")
    stated = None
    if "=" in expression:
        expression, _, rhs = expression.partition("=")
        rhs = rhs.strip().rstrip(".?! ").replace(",", "")
        if re.fullmatch(r"-?\d+(?:\.\d+)?", rhs):
            stated = Fraction(rhs)
    return expression.strip().rstrip(".?! "), stated


class ArithDomain(Domain):
    name = "arith"
    system_prompt_env = (
        "You write arithmetic practice tasks. Reply with exactly two lines:\n"
        "Expression: <integer arithmetic using + - * / and parentheses>\n"
        "Question: <a short word problem that this expression answers>"
    )
    system_prompt_agent = "Solve the arithmetic task. Reply with the integer value."
    env_prefill = "Expression:"
    difficulty_hints = ("Write a variation of similar difficulty.",
                        "Write a harder variation: more operands, larger numbers or parentheses.",
                        "Write an easier variation: fewer operands or smaller numbers.")

    def parse(self, text: str) -> ParseResult:
        fields: dict[str, str] = {}
        for line in text.splitlines():
            m = _LINE.match(line)
            if m and m.group(1).lower() not in fields:
                fields[m.group(1).lower()] = m.group(2).strip()
        if "expression" not in fields:
            return ParseResult(reason="missing 'Expression:' line")
        expression, stated = _normalise(fields["expression"])
        if not expression:
            return ParseResult(reason="empty expression")
        if not fields.get("question"):
            return ParseResult(reason="missing 'Question:' line")
        question = fields["question"]
        if len(question) > MAX_QUESTION_CHARS:
            return ParseResult(reason=f"question longer than {MAX_QUESTION_CHARS} characters")
        try:
            value, features = evaluate(expression)
        except UnsafeExpression as exc:
            return ParseResult(reason=str(exc))
        except RecursionError:
            return ParseResult(reason="expression nested too deeply")
        if value.denominator != 1:
            return ParseResult(reason="non-integer result")
        if stated is not None and stated != value:
            return ParseResult(reason="stated result disagrees with the computed value")
        answer = str(value.numerator)
        canonical = f"Expression: {expression}\nQuestion: {question}"
        return ParseResult(spec=TaskSpec(question=question, answer=answer, text=canonical, features=features))

    def agent_messages(self, spec: TaskSpec) -> list[dict[str, str]]:
        expression = spec.text.splitlines()[0].split(":", 1)[1].strip()
        user = f"{spec.question}\nWhat is {expression}?"
        return [{"role": "system", "content": self.system_prompt_agent}, {"role": "user", "content": user},
                {"role": "assistant", "content": f"{expression} ="}]

    def reference_solution(self, spec: TaskSpec) -> str:
        return f" {spec.answer}"

    def score(self, spec: TaskSpec, completion: str) -> float:
        """1.0 when the agent's answer equals the computed value, else 0.0. The answer is the first number of the
        completion, or the first after its last ``Answer:`` (:func:`extract_answer`), so a right number stated
        after a wrong one does not count.

        >>> d = ArithDomain(); spec = d.parse("Expression: 2+3\\nQuestion: q").spec
        >>> d.score(spec, " 5"), d.score(spec, " 6, because 2 + 3 = 5")
        (1.0, 0.0)
        """
        got = extract_answer(completion)
        if got is None:
            return 0.0
        try:
            return 1.0 if Fraction(got) == Fraction(spec.answer) else 0.0
        except (ValueError, ZeroDivisionError):
            return 0.0
