"""Hostile model output for testing a domain's parsers and scorers: what a policy can write that a parser may not
expect (deep nesting, huge numbers, unicode digits, lone surrogates, code, runaway length).

Used by the fuzz tests (``tests/test_domain_fuzz.py``) and ``benchmarks/fuzz_domains.py``; a new domain can be
checked the same way: every text must come back from :meth:`Domain.safe_parse` / :meth:`Domain.safe_score` as a
task or a rejection with a reason, never as an exception. Hand-written: it is a list of cases, plus random
recombination of them.
"""

from __future__ import annotations

import random

_ATOMS = (
    "Task: ", "Expression: ", "Question: ", "Answer: ", "Task: 7 * 8", "7 * 8 =", "56", "[", "]", "(", ")", "{", "}",
    "**", "*", "+", "-", "/", "=", "\n", " ", "9" * 400, "1e999999", "-0", "NaN", "inf", "٣", "٤٥", "٧ * ٨",
    "\ud800", "\udfff", "\x00", "\u202e", "𝟕", "ｔａｓｋ", "<tool_call>", "</tool_call>", "```python", "```",
    '{"name": ',
    '"arguments": {', "f(a=1)", "geometry.triangle_area(base=999999**64, height=7.5, unit='cm')",
    "__import__('os').system('true')", "lambda: 0", "True", "None", "'", '"', "\\", "\\x", "%s", "{0}",
)


def hostile_cases() -> list[str]:
    """Fixed hostile texts: each a case a parser has been, or could be, broken by."""
    return [
        "",
        " ",
        "(" * 5000 + ")" * 5000,
        "[" * 3000 + "]" * 3000,
        "{" * 3000 + "}" * 3000,
        "Task: " + "9" * 4301 + " * 2",
        "Task: 7 * 8 = " + "5" * 5000,
        "9" * 20_000,
        "Task: 9**9**9**9",
        "Task: ٧ * ٨",
        "Task: 𝟕 * 𝟖",
        "Task: 7 * 8\ud800",
        "\ud800\udc00\udfff",
        "\x00" * 100,
        "[" + ", ".join(f"f{i}(x={i})" for i in range(2000)) + "]",
        "[geometry.triangle_area(base=999999**64, height=7.5, unit='cm')]",
        '{"name": "f", "arguments": ' * 500 + "{}" + "}" * 500,
        "<tool_call>" * 1000,
        "```python\n" + "x = [" * 1000 + "\n```",
        "Question: " + "why " * 5000 + "\nAnswer: 42",
        "Expression: " + " + ".join(["1"] * 5000),
        "Expression: " + "(" * 900 + "1" + ")" * 900,
        "a" * 100_000,
    ]


def random_hostile(rng: random.Random, max_parts: int = 40) -> str:
    """A random concatenation of hostile atoms and cases (some very long)."""
    parts = [rng.choice(_ATOMS) for _ in range(rng.randint(1, max_parts))]
    if rng.random() < 0.1:
        parts.insert(rng.randrange(len(parts) + 1), rng.choice(hostile_cases()))
    return "".join(parts)
