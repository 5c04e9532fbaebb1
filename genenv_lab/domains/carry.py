"""``carry``: column addition, a world whose difficulty (the carries) the task's text does not show.

The simulator writes one line, ``Task: 847 + 285``: two numbers of the same length, 2 to ``MAX_DIGITS`` digits. The
agent adds them in columns as on paper: its question sets the digits out by column, four columns from the ones up
(``ones: 7 5, tens: 4 8, hundreds: 8 2, thousands: 0 0``), and it writes each column's sum with the carry coming in
added (``ones 12, tens 13, hundreds 11, thousands 1``; the sum is 1132). The domain computes the
sum itself; a rejection names its reason (no ``Task:`` line, not ``a + b``, a length outside the world, numbers of
different lengths, a leading zero, or a held-out item: the items of ``data/carry_heldout.jsonl`` are never trained
on).

Why this world (an extension of the paper's setting, for docs/research/curriculum_cpu.md's question "does training
the simulator pay where its untrained supply runs out?"; issue 65). In the count and stride worlds a task's
difficulty is written in its text (the end number, the stride), and the untrained simulator, varying the task it is
shown, keeps it: a frontier parent's variations are frontier tasks. Here difficulty is the *carries*: the columns
whose digits, with the carry coming in, reach ten. The text shows the digits, not the carries, and a variation that
draws the digits afresh draws the carries afresh:

- the world's agent (:class:`CarryWorld`) takes a carry into column ``i`` (1 = the tens) right with probability
  ``mastery(i)``, a curve that falls from ~0.86 for the tens to a floor (else it drops the carry), so a task's success
  rate is the product of its carries' masteries: a column's carry is a skill of its own, learnt in order, as a count's
  steps are;
- the world's simulator keeps the parent's length but for the hint ("harder" is one more digit, "easier" one fewer,
  the hint's words) and draws the digits afresh, small ones more often (as a person writing practice sums does), so
  that a column carries about one time in ten (:data:`TEACHER_DIGIT_WEIGHTS`): its variations of a frontier
  parent with two or three carries are mostly tasks with none or one;
- a simulator trained on its in-band tasks can learn what they share, large digits in the same column of both
  numbers, which the untrained one writes only by chance.

A task's *level* is its number of carries (0-3); its niche is its length and which columns carry. The seeds are two-
and three-digit sums without a carry, the held-out set two sums per (length, number of carries).
"""

from __future__ import annotations

import math
import random
import re
from functools import lru_cache
from typing import Any

from genenv_lab.core.types import TaskSpec
from genenv_lab.domains.base import HELDOUT_REASON, Domain, ParseResult, SeedTask
from genenv_lab.domains.worlds import LevelWorld, QuestionPrompt, falling_mastery, task_body, task_numbers

MIN_DIGITS, MAX_DIGITS = 2, 4
"""A task's numbers have this many digits, both the same."""
COLUMNS = MAX_DIGITS
"""The agent sees every sum set out in this many columns (:func:`column_question`), as on squared paper."""
TEACHER_DIGIT_WEIGHTS = (10, 10, 10, 10, 8, 5, 3, 1, 1, 1)
"""How often the world's simulator writes each digit 0-9 (a leading digit is never 0): small digits more often, so
that a column's digits reach ten in 10 % of its columns (15 % with a carry coming in)."""

_SUM = re.compile(r"^(\d{1,9})\s*\+\s*(\d{1,9})\s*[.?!]?$")


def carry_columns(a: int, b: int) -> tuple[int, ...]:
    """The columns a carry goes into (1 = the tens), from the ones up; a carry out of the top (thousands) column has
    no column to go into and is written in that column's sum.

    >>> carry_columns(347, 285), carry_columns(847, 285), carry_columns(23, 41), carry_columns(9500, 500)
    ((1, 2), (1, 2, 3), (), (3,))
    """
    out, carry = [], 0
    for i in range(1, COLUMNS):
        carry = 1 if a % 10 + b % 10 + carry >= 10 else 0
        a, b = a // 10, b // 10
        if carry:
            out.append(i)
    return tuple(out)


COLUMN_NAMES = ("ones", "tens", "hundreds", "thousands")


def column_question(a: int, b: int) -> str:
    """The agent's question: the two numbers' digits set out by column, from the ones up.

    >>> column_question(847, 285)
    'Add in columns. ones: 7 5, tens: 4 8, hundreds: 8 2, thousands: 0 0.'
    """
    pairs = zip(reversed(f"{a:0{COLUMNS}d}"), reversed(f"{b:0{COLUMNS}d}"))
    return "Add in columns. " + ", ".join(f"{n}: {x} {y}" for n, (x, y) in zip(COLUMN_NAMES, pairs)) + "."


def column_sums(a: int, b: int, adds=lambda column: True) -> str:
    """The written work of the column addition ``a + b``: each column's sum, the carry coming in added where
    ``adds(column)`` (the answer: always), from the ones up; the sum is the last digit of each column, and the top
    column's whole sum.

    >>> column_sums(847, 285)
    'ones 12, tens 13, hundreds 11, thousands 1'
    >>> column_sums(847, 285, adds=lambda column: column != 2)
    'ones 12, tens 13, hundreds 10, thousands 1'
    """
    out, carry = [], 0
    for i, name in enumerate(COLUMN_NAMES):
        total = a % 10 + b % 10 + (carry if adds(i) else 0)
        out.append(f"{name} {total}")
        carry, a, b = total // 10, a // 10, b // 10
    return ", ".join(out)


@lru_cache(maxsize=1)
def heldout_pairs() -> frozenset[tuple[int, int]]:
    """The (a, b) of ``data/carry_heldout.jsonl`` (never trained on)."""
    return frozenset((t.spec.features["a"], t.spec.features["b"]) for t in CarryDomain().heldout_tasks())


class CarryDomain(QuestionPrompt, Domain):
    name = "carry"
    system_prompt_env = "You write column addition practice. Reply with one line: Task: <a> + <b>"
    system_prompt_agent = ("Add in columns, from the ones column up. Write each column's sum, with the carry from "
                           "the column before added in.")
    env_prefill = "Task:"
    env_stop = ("\n", "=")
    env_alphabet = "0123456789 +\n="
    """Digits, spaces and ``+`` (with the stop characters); :meth:`parse` checks the rest."""
    difficulty_hints = ("Write a variation of similar difficulty.",
                        "Write a harder variation: longer numbers.",
                        "Write an easier variation: shorter numbers.")
    recommended = {"agent": {"max_completion_length": 28}}
    """The written work of four columns is about 20 tokens (a column's name, its sum digit by digit, a comma)."""

    def parse(self, text: str) -> ParseResult:
        return self._parse(text, decontaminate=True)

    def _parse(self, text: str, decontaminate: bool) -> ParseResult:
        """Parse ``Task: a + b``; the sum and its carries are computed here, never taken from the text.

        >>> d = CarryDomain()
        >>> d.parse("Task: 347 + 285").spec.answer, d.parse("Task: 347 + 85").reason
        ('ones 12, tens 13, hundreds 6, thousands 0', 'numbers of different lengths')
        """
        numbers = task_numbers(text, _SUM, "a + b")
        if isinstance(numbers, str):
            return ParseResult(reason=numbers)
        if any(w.startswith("0") for w in re.findall(r"\d+", task_body(text) or "")):
            return ParseResult(reason="a leading zero")
        a, b = numbers
        digits = len(str(a))
        if len(str(b)) != digits:
            return ParseResult(reason="numbers of different lengths")
        if not MIN_DIGITS <= digits <= MAX_DIGITS:
            return ParseResult(reason=f"numbers outside {MIN_DIGITS}-{MAX_DIGITS} digits")
        if decontaminate and (a, b) in heldout_pairs():
            return ParseResult(reason=HELDOUT_REASON)
        columns = carry_columns(a, b)
        features = {"level": len(columns), "digits": digits, "top_carry": max(columns, default=0), "a": a, "b": b}
        return ParseResult(spec=TaskSpec(question=column_question(a, b), answer=column_sums(a, b),
                                         text=f"Task: {a} + {b}", features=features))

    def heldout_tasks(self) -> list[SeedTask]:
        return self._load(self._heldout_source() or "carry_heldout.jsonl",
                          parse=lambda text: self._parse(text, decontaminate=False))

    def describe(self, features: dict[str, Any]) -> str:
        """What the simulator is told of a recent task: its length, which its text shows (not its carries)."""
        return f"{features.get('digits', '?')} digits"

    def niche(self, spec: TaskSpec) -> str:
        """A sum's niche is its length and the columns it carries into: what decides how hard it is.

        >>> CarryDomain().niche(CarryDomain().parse("Task: 847 + 285").spec)
        '3 digits, carries 1 2 3'
        """
        a, b = spec.features["a"], spec.features["b"]
        columns = " ".join(map(str, carry_columns(a, b))) or "none"
        return f"{spec.features['digits']} digits, carries {columns}"

    def score(self, spec: TaskSpec, completion: str) -> float:
        """1.0 when the first line of the completion is exactly the column digits (a final full stop allowed).

        >>> d = CarryDomain(); spec = d.parse("Task: 47 + 38").spec
        >>> d.score(spec, " ones 15, tens 8, hundreds 0, thousands 0.")
        1.0
        >>> d.score(spec, "ones 15, tens 7, hundreds 0, thousands 0")
        0.0
        >>> d.score(spec, "85"), d.score(spec, "")
        (0.0, 0.0)
        """
        line = completion.split("\n", 1)[0].strip().rstrip(".").strip()
        return 1.0 if line == spec.answer else 0.0


def _number(rng: random.Random, digits: int, weights) -> int:
    """A ``digits``-digit number, each digit drawn by ``weights`` (the leading one never 0)."""
    lead = rng.choices(range(1, 10), weights=weights[1:])[0]
    rest = rng.choices(range(10), weights=weights, k=digits - 1)
    return int(str(lead) + "".join(map(str, rest)))


class CarryWorld(LevelWorld):
    """The generated pre-training corpus of the ``carry`` world (see the module docstring): both roles, one stream.

    ``mastery(i) = floor + (1 − floor) / (1 + exp((i − midpoint) / spread))`` is the chance that the teacher adds the
    carry into column ``i`` (else it drops it). The agent role adds numbers whose digits are uniform (so every carry
    is in its corpus). The env role is :class:`~genenv_lab.domains.worlds.LevelWorld`'s with a sum's *length* as
    its level: the variation of the task it is shown has that length moved as the hint says
    (``similar_shifts``/``harder_shifts``) and its digits drawn afresh by ``digit_weights`` (:meth:`task_at`).
    """

    ANCHORS = ("task",)
    lowest, highest = MIN_DIGITS, MAX_DIGITS

    def __init__(self, midpoint: float = 2.0, spread: float = 0.6, floor: float = 0.1, env_share: float = 0.25,
                 digit_weights: tuple[int, ...] = TEACHER_DIGIT_WEIGHTS, random_level_share: float = 0.0,
                 similar_shifts: tuple[int, ...] = (-1, 0, 0, 1), harder_shifts: tuple[int, ...] = (0, 1, 1, 1),
                 anchor: str = "task"):
        super().__init__(env_share, random_level_share, similar_shifts, harder_shifts, anchor)
        self.domain = CarryDomain()
        self.midpoint, self.spread, self.floor = midpoint, spread, floor
        self.digit_weights = tuple(digit_weights)

    def mastery(self, column: int) -> float:
        """Probability that the teacher adds the carry into ``column``.

        >>> w = CarryWorld(); [round(w.mastery(i), 2) for i in (1, 2, 3)]
        [0.86, 0.55, 0.24]
        """
        return falling_mastery(column, self.midpoint, self.spread, self.floor)

    def success_probability(self, a: int, b: int) -> float:
        """The teacher's chance of adding ``a + b`` right: the product of its carries' masteries.

        >>> round(CarryWorld().success_probability(847, 285), 3), CarryWorld().success_probability(23, 41)
        (0.115, 1.0)
        """
        return float(math.prod(self.mastery(i) for i in carry_columns(a, b)))

    def attempt(self, rng: random.Random, a: int, b: int) -> str:
        """The teacher's written work (:func:`column_sums`): each carry added with its column's mastery, else
        dropped."""
        return column_sums(a, b, adds=lambda column: rng.random() < self.mastery(column))

    def agent_example(self, rng: random.Random) -> tuple[list[dict[str, str]], str]:
        digits = rng.randint(MIN_DIGITS, MAX_DIGITS)  # the agent has seen every kind of sum (noisily)
        a, b = (_number(rng, digits, (1,) * 10) for _ in range(2))
        spec = self.domain._parse(f"Task: {a} + {b}", False).spec
        return self.domain.agent_messages(spec), " " + self.attempt(rng, a, b)

    def seed_text(self, rng: random.Random) -> tuple[str, int]:
        """A task of a uniformly drawn length as the seed of an env-role example, its digits uniform (so the
        simulator sees parents with every kind of carry)."""
        digits = rng.randint(MIN_DIGITS, MAX_DIGITS)
        return self.task_at(rng, digits, (1,) * 10), digits

    def task_at(self, rng: random.Random, lvl: int, weights: tuple[int, ...] | None = None) -> str:
        """A training (non-held-out) task of ``lvl`` digits, its digits drawn by ``weights`` (the teacher's)."""
        while True:
            a, b = (_number(rng, lvl, weights or self.digit_weights) for _ in range(2))
            if (a, b) not in heldout_pairs():
                return f"Task: {a} + {b}"

    def describe_level(self, lvl: int) -> str:
        """A recent task's length, as the simulator's context states it (its level here is its length)."""
        return self.domain.describe({"digits": lvl})


CarryDomain.world = CarryWorld
