"""``facts``: addition facts, a world whose skills do not transfer to each other and whose frontier the untrained
simulator rarely writes.

The simulator writes one line of ``PAIRS_MIN``-``PAIRS_MAX`` one-digit pairs, ``Task: 7+8 3+4 9+6``; the agent
writes each pair's sum, ``15 7 15``. The domain computes the sums itself; a rejection names its reason (no ``Task:``
line, not pairs of digits, a digit outside 1-9, a number of pairs outside the world, or a held-out item: the items of
``data/facts_heldout.jsonl`` are never trained on).

Why this world (an extension of the paper's setting, for docs/research/curriculum_cpu.md's question "does training
the simulator pay where its untrained supply runs out?"; issue 65). In the carry world the frontier was one skill (add
the carry), the same in every column, so an agent that learnt it from the untrained simulator's few carrying sums
had learnt every sum, and no frontier outlasted the run. Here each *fact* is a skill of its own:

- the world's agent (:class:`FactsWorld`) writes a fact whose sum is under ten right always, and a fact that crosses
  ten (sum ``s`` ≥ 10) right with probability ``mastery(s)``, a curve that falls from ~0.93 at 10 to a floor at 18;
  else it writes that fact's own wrong sum, one more or one less by a rule hidden in the fact (:func:`slip`). Below
  0.5 the wrong sum is the fact's most likely reply, so no sharpening of the agent as a whole gets it right: each
  fact must be learnt from tasks that hold it;
- the world's simulator keeps the parent's number of pairs but for the hint ("harder" is one more pair, "easier"
  one fewer, the hint's words) and draws the digits afresh, small ones more often (as a person writing practice
  sums does, :data:`TEACHER_DIGIT_WEIGHTS`): 14 % of its pairs cross ten, 2.6 % reach 13 or more, so its variations
  of a frontier parent are mostly solved tasks and the hardest facts come up once in a few hundred pairs;
- a simulator trained on its in-band tasks can learn what they share, larger digits, which the untrained one writes
  only by chance.

A task's *level* is its number of facts that cross ten; its niche is its number of pairs and those facts' sums. The
seeds are two- and three-pair tasks that never cross ten; the held-out set has tasks of every length with none, one
and two facts that cross ten, those facts drawn evenly from all 25 (so a fact the untrained simulator rarely writes
counts as much as a common one).
"""

from __future__ import annotations

import math
import random
import re
from functools import lru_cache
from typing import Any

from genenv_lab.core.types import TaskSpec
from genenv_lab.domains.base import HELDOUT_REASON, Domain, ParseResult, SeedTask
from genenv_lab.domains.worlds import LevelWorld, QuestionPrompt, falling_mastery, task_body

PAIRS_MIN, PAIRS_MAX = 2, 4
"""A task has this many pairs."""
TEN = 10
"""A fact whose sum reaches this crosses ten: the world's hard facts."""
TEACHER_DIGIT_WEIGHTS = (10, 10, 10, 8, 5, 3, 1, 1, 1)
"""How often the world's simulator writes each digit 1-9: small digits more often, so 14 % of its pairs cross ten."""

_PAIR = re.compile(r"(\d+)\+(\d+)")
_PAIRS = re.compile(r"^\d+\+\d+(?:\s+\d+\+\d+)*\s*[.]?$")


def hard_facts() -> list[tuple[int, int]]:
    """The 25 facts (x ≤ y, digits 1-9) whose sum crosses ten.

    >>> len(hard_facts()), hard_facts()[0], hard_facts()[-1]
    (25, (1, 9), (9, 9))
    """
    return [(x, y) for x in range(1, 10) for y in range(x, 10) if x + y >= TEN]


def slip(x: int, y: int) -> int:
    """The wrong sum the world's agent writes for the fact ``x + y`` when it fumbles: one more or one less than the
    sum, by a rule of the fact's own (the same for ``y + x``), which no text shows.

    >>> slip(7, 8), slip(8, 7), slip(9, 9)
    (16, 16, 19)
    """
    lo, hi = sorted((x, y))
    return x + y + (1 if (3 * lo + 5 * hi) % 4 < 2 else -1)


def task_text(pairs) -> str:
    """``Task: 7+8 3+4`` of ``[(7, 8), (3, 4)]``."""
    return "Task: " + " ".join(f"{x}+{y}" for x, y in pairs)


def sums_answer(pairs) -> str:
    """The agent's answer: each pair's sum, space-separated.

    >>> sums_answer([(7, 8), (3, 4), (9, 6)])
    '15 7 15'
    """
    return " ".join(str(x + y) for x, y in pairs)


@lru_cache(maxsize=1)
def heldout_pairs() -> frozenset[tuple[tuple[int, int], ...]]:
    """The pairs of each task of ``data/facts_heldout.jsonl`` (never trained on)."""
    return frozenset(t.spec.features["pairs"] for t in FactsDomain().heldout_tasks())


class FactsDomain(QuestionPrompt, Domain):
    name = "facts"
    system_prompt_env = "You write addition fact practice. Reply with one line: Task: <x>+<y> <x>+<y> ..."
    system_prompt_agent = "Write the sum of each pair, in order, separated by spaces."
    env_prefill = "Task:"
    env_stop = ("\n", "=")
    env_alphabet = "123456789 +\n="
    """Digits, spaces and ``+`` (with the stop characters); :meth:`parse` checks the rest."""
    difficulty_hints = ("Write a variation of similar difficulty.",
                        "Write a harder variation: more pairs.",
                        "Write an easier variation: fewer pairs.")
    recommended = {"agent": {"max_completion_length": 16}, "env": {"max_new_tokens": 16}}
    """Four sums are at most 11 characters; four pairs 15."""

    def parse(self, text: str) -> ParseResult:
        return self._parse(text, decontaminate=True)

    def _parse(self, text: str, decontaminate: bool) -> ParseResult:
        """Parse ``Task: x+y x+y ...``; the sums are computed here, never taken from the text.

        >>> d = FactsDomain()
        >>> d.parse("Task: 7+8 3+4").spec.answer, d.parse("Task: 7+8 3+0").reason
        ('15 7', 'a digit outside 1-9')
        """
        body = task_body(text)
        if body is None:
            return ParseResult(reason="missing 'Task:' line")
        if not _PAIRS.match(body):
            return ParseResult(reason="not of the form 'x+y x+y ...'")
        found = _PAIR.findall(body)
        if any(len(d) != 1 or d == "0" for pair in found for d in pair):
            return ParseResult(reason="a digit outside 1-9")
        pairs = tuple((int(x), int(y)) for x, y in found)
        if not PAIRS_MIN <= len(pairs) <= PAIRS_MAX:
            return ParseResult(reason=f"a number of pairs outside {PAIRS_MIN}-{PAIRS_MAX}")
        if decontaminate and pairs in heldout_pairs():
            return ParseResult(reason=HELDOUT_REASON)
        over = sorted(x + y for x, y in pairs if x + y >= TEN)
        features = {"level": len(over), "pairs": pairs, "length": len(pairs), "top_sum": max(x + y for x, y in pairs)}
        return ParseResult(spec=TaskSpec(question="Add each pair: " + " ".join(f"{x}+{y}" for x, y in pairs),
                                         answer=sums_answer(pairs), text=task_text(pairs), features=features))

    def heldout_tasks(self) -> list[SeedTask]:
        return self._load(self._heldout_source() or "facts_heldout.jsonl",
                          parse=lambda text: self._parse(text, decontaminate=False))

    def describe(self, features: dict[str, Any]) -> str:
        """What the simulator is told of a recent task: its number of pairs, which its text shows (not which facts
        cross ten)."""
        return f"{features.get('length', '?')} pairs"

    def niche(self, spec: TaskSpec) -> str:
        """A task's niche is its number of pairs and the sums of its facts that cross ten: what decides how hard it
        is.

        >>> FactsDomain().niche(FactsDomain().parse("Task: 7+8 3+4 9+6").spec)
        '3 pairs, over ten: 15 15'
        """
        over = sorted(x + y for x, y in spec.features["pairs"] if x + y >= TEN)
        return f"{spec.features['length']} pairs, over ten: {' '.join(map(str, over)) or 'none'}"

    def score(self, spec: TaskSpec, completion: str) -> float:
        """1.0 when the first line of the completion is exactly the sums, in order (a final full stop allowed).

        >>> d = FactsDomain(); spec = d.parse("Task: 7+8 3+4").spec
        >>> d.score(spec, " 15 7."), d.score(spec, "15  7"), d.score(spec, "16 7"), d.score(spec, "15")
        (1.0, 1.0, 0.0, 0.0)
        """
        line = completion.split("\n", 1)[0].strip().rstrip(".")
        return 1.0 if line.split() == spec.answer.split() else 0.0


class FactsWorld(LevelWorld):
    """The generated pre-training corpus of the ``facts`` world (see the module docstring): both roles, one stream.

    ``mastery(s) = floor + (1 − floor) / (1 + exp((s − midpoint) / spread))`` for a sum ``s`` ≥ 10 (1 below) is the
    chance that the teacher writes the fact right (else its :func:`slip`). The agent role answers tasks whose digits
    are uniform (so every fact is in its corpus). The env role is :class:`~genenv_lab.domains.worlds.LevelWorld`'s
    with a task's *number of pairs* as its level: the variation of the task it is shown has that number moved as the
    hint says and its digits drawn afresh by ``digit_weights`` (:meth:`task_at`).
    """

    ANCHORS = ("task",)
    lowest, highest = PAIRS_MIN, PAIRS_MAX

    def __init__(self, midpoint: float = 12.5, spread: float = 1.0, floor: float = 0.05, env_share: float = 0.25,
                 digit_weights: tuple[int, ...] = TEACHER_DIGIT_WEIGHTS, random_level_share: float = 0.0,
                 similar_shifts: tuple[int, ...] = (-1, 0, 0, 1), harder_shifts: tuple[int, ...] = (0, 1, 1, 1),
                 anchor: str = "task"):
        super().__init__(env_share, random_level_share, similar_shifts, harder_shifts, anchor)
        self.domain = FactsDomain()
        self.midpoint, self.spread, self.floor = midpoint, spread, floor
        self.digit_weights = tuple(digit_weights)

    def mastery(self, total: int) -> float:
        """Probability that the teacher writes a fact of sum ``total`` right.

        >>> w = FactsWorld(); [round(w.mastery(s), 2) for s in (9, 10, 12, 13, 14, 16, 18)]
        [1.0, 0.93, 0.64, 0.41, 0.22, 0.08, 0.05]
        """
        if total < TEN:
            return 1.0
        return falling_mastery(total, self.midpoint, self.spread, self.floor)

    def success_probability(self, pairs) -> float:
        """The teacher's chance of answering a task right: the product of its facts' masteries.

        >>> round(FactsWorld().success_probability([(7, 8), (3, 4)]), 3), FactsWorld().success_probability([(1, 2)])
        (0.122, 1.0)
        """
        return float(math.prod(self.mastery(x + y) for x, y in pairs))

    def attempt(self, rng: random.Random, pairs) -> str:
        """The teacher's answer: each fact right with its mastery, else its slip."""
        return " ".join(str(x + y if rng.random() < self.mastery(x + y) else slip(x, y)) for x, y in pairs)

    def agent_example(self, rng: random.Random) -> tuple[list[dict[str, str]], str]:
        n = rng.randint(PAIRS_MIN, PAIRS_MAX)  # the agent has seen every fact (noisily)
        pairs = [(rng.randint(1, 9), rng.randint(1, 9)) for _ in range(n)]
        spec = self.domain._parse(task_text(pairs), False).spec
        return self.domain.agent_messages(spec), " " + self.attempt(rng, pairs)

    def seed_text(self, rng: random.Random) -> tuple[str, int]:
        """A task of a uniformly drawn length as the seed of an env-role example, its digits uniform (so the
        simulator sees parents with every kind of fact)."""
        n = rng.randint(PAIRS_MIN, PAIRS_MAX)
        return self.task_at(rng, n, (1,) * 9), n

    def task_at(self, rng: random.Random, lvl: int, weights: tuple[int, ...] | None = None) -> str:
        """A training (non-held-out) task of ``lvl`` pairs, its digits drawn by ``weights`` (the teacher's)."""
        while True:
            digits = rng.choices(range(1, 10), weights=weights or self.digit_weights, k=2 * lvl)
            pairs = tuple(zip(digits[::2], digits[1::2]))
            if pairs not in heldout_pairs():
                return task_text(pairs)

    def describe_level(self, lvl: int) -> str:
        """A recent task's number of pairs, as the simulator's context states it (its level here)."""
        return self.domain.describe({"length": lvl})


FactsDomain.world = FactsWorld
