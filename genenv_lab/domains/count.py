"""``count``: count up from a start to an end number, a world whose skills must be learnt in order.

The simulator writes one line, ``Task: 3 to 17``; the agent continues the prefilled ``3`` with `` 4 5 … 17``. A task's
*level* is its end number (``LOWEST``..``HIGHEST``), the knob the simulator moves; a count starts at 1 to
``MAX_START`` and runs at least two steps. The domain checks the whole sequence itself; a rejection names its reason
(no ``Task:`` line, not ``a to b``, a start or an end outside the world, too short, or a held-out item: the items of
``data/count_heldout.jsonl`` are never trained on).

Why this world (docs/research/curriculum_cpu.md, "A world where the curriculum pays"): each step of a count,
"after n comes n + 1", is its own skill, and a task to level b needs every step below b. The world's agent
(:class:`CountWorld`)
takes the step to n right with probability ``mastery(n)``, a curve that falls from ~1 for small numbers to a floor
for large ones, and otherwise skips n (``7 9``). So a task's success rate is the product of its steps' masteries:

- tasks ending well below the frontier are always solved and tasks ending well above it never are, so GRPO (which
  learns only from groups with both outcomes) learns only from tasks that end near the frontier;
- learning the step to n makes tasks ending at n + 1, n + 2 solvable: skill transfers to the next levels only, so
  the frontier has to be walked, one level after the other;
- a fixed set written at the start runs out: its tasks are all solved once the agent passes them, and those far
  above the frontier stay out of reach; the held-out set spans the whole range (one item per level).

A count starts at 1 to ``MAX_START`` (12), so a task at the frontier can be short and end past it (``10 to 13``)
while the held-out counts start at 1–4 and need every step. (Why the starts reach 12: docs/research/curriculum_cpu.md,
"Design notes from the code".)

The env role is :class:`~genenv_lab.domains.worlds.LevelWorld`'s (the untrained simulator writes a variation near
the newest recent task's level and follows the hint loosely). Nothing in the loop knows about this world.
"""

from __future__ import annotations

import math
import random
import re
from functools import lru_cache
from typing import Any

from genenv_lab.core.types import TaskSpec
from genenv_lab.domains.base import HELDOUT_REASON, Domain, ParseResult, SeedTask
from genenv_lab.domains.worlds import LevelWorld, falling_mastery, task_numbers

MAX_START = 12
"""A count starts at 1..MAX_START."""
LOWEST, HIGHEST = 3, 24
"""The world's levels (end numbers)."""
MIN_STEPS = 2

_COUNT = re.compile(r"^(\d{1,6})\s+to\s+(\d{1,6})\s*[.?!]?$", re.IGNORECASE)
_NUMBER = re.compile(r"^\d{1,6}$")


@lru_cache(maxsize=1)
def heldout_pairs() -> frozenset[tuple[int, int]]:
    """The (start, end) pairs of ``data/count_heldout.jsonl`` (never trained on)."""
    return frozenset((t.spec.features["start"], t.spec.features["level"]) for t in CountDomain().heldout_tasks())


def all_tasks() -> list[tuple[int, int]]:
    """Every (start, end) task of the world, held-out ones included."""
    return [(a, b) for a in range(1, MAX_START + 1) for b in range(max(LOWEST, a + MIN_STEPS), HIGHEST + 1)]


def sequence(start: int, end: int) -> list[int]:
    """The numbers the agent writes after the prefilled start.

    >>> sequence(3, 7)
    [4, 5, 6, 7]
    """
    return list(range(start + 1, end + 1))


class CountDomain(Domain):
    name = "count"
    system_prompt_env = "You write counting practice tasks. Reply with one line: Task: <start> to <end>"
    system_prompt_agent = "Count up. Write every number after the start, up to the end, separated by spaces."
    env_prefill = "Task:"
    env_stop = ("\n",)
    """The task is one line: a simulator that goes on is stopped where the task ends."""
    env_alphabet = "0123456789 to\n"
    """Digits, spaces and the word ``to`` (with the stop character); what the simulator writes is still checked in
    full by :meth:`parse`."""
    difficulty_hints = ("Write a variation of similar difficulty.",
                        "Write a harder variation: count further.",
                        "Write an easier variation: stop sooner.")
    recommended = {"agent": {"max_completion_length": 64}}
    """A count to 24 is up to 61 tokens where numbers are written digit by digit (Qwen2's and SmolLM2's
    tokenizers split digits)."""

    def parse(self, text: str) -> ParseResult:
        return self._parse(text, decontaminate=True)

    def _parse(self, text: str, decontaminate: bool) -> ParseResult:
        """Parse ``Task: a to b``; the sequence is computed here, never taken from the text."""
        numbers = task_numbers(text, _COUNT, "a to b")
        if isinstance(numbers, str):
            return ParseResult(reason=numbers)
        a, b = numbers
        if not 1 <= a <= MAX_START:
            return ParseResult(reason=f"start outside 1-{MAX_START}")
        if not LOWEST <= b <= HIGHEST:
            return ParseResult(reason=f"end outside {LOWEST}-{HIGHEST}")
        if b - a < MIN_STEPS:
            return ParseResult(reason=f"fewer than {MIN_STEPS} steps")
        if decontaminate and (a, b) in heldout_pairs():
            return ParseResult(reason=HELDOUT_REASON)
        features = {"level": b, "start": a, "steps": b - a}
        return ParseResult(spec=TaskSpec(question=f"Count from {a} to {b}.",
                                         answer=" ".join(map(str, sequence(a, b))),
                                         text=f"Task: {a} to {b}", features=features))

    def heldout_tasks(self) -> list[SeedTask]:
        return self._load(self._heldout_source() or "count_heldout.jsonl",
                          parse=lambda text: self._parse(text, decontaminate=False))

    def describe(self, features: dict[str, Any]) -> str:
        return f"up to {features.get('level', '?')}"

    def niche(self, spec: TaskSpec) -> str:
        """A count's niche is its (start, end): what decides how hard it is."""
        return f"{spec.features['start']} to {spec.features['level']}"

    def agent_messages(self, spec: TaskSpec) -> list[dict[str, str]]:
        start = spec.text.split(":", 1)[1].split()[0]
        return [{"role": "system", "content": self.system_prompt_agent}, {"role": "user", "content": spec.question},
                {"role": "assistant", "content": start}]

    def reference_solution(self, spec: TaskSpec) -> str:
        return " " + spec.answer

    def score(self, spec: TaskSpec, completion: str) -> float:
        """1.0 when the first line of the completion is exactly the sequence (a final full stop allowed), else 0.0.

        >>> d = CountDomain(); spec = d.parse("Task: 2 to 6").spec
        >>> d.score(spec, " 3 4 5 6"), d.score(spec, " 3 4 6"), d.score(spec, " 3 4 5 6 7"), d.score(spec, "")
        (1.0, 0.0, 0.0, 0.0)
        """
        line = completion.split("\n", 1)[0].strip().rstrip(".")
        words = line.split()
        if not words or not all(_NUMBER.match(w) for w in words):
            return 0.0
        return 1.0 if " ".join(words) == spec.answer else 0.0


class CountWorld(LevelWorld):
    """The generated pre-training corpus of the ``count`` world (see the module docstring): both roles, one stream.

    ``mastery(n) = floor + (1 − floor) / (1 + exp((n − midpoint) / spread))`` is the chance that the teacher takes
    the step to ``n`` right (else it skips ``n``); the floor keeps every step in the corpus, so that GRPO can find
    it once the steps below it are learnt. The last step of a count (to its end) is always right, so that the
    teacher stops where the task does.
    """

    lowest, highest = LOWEST, HIGHEST

    def __init__(self, midpoint: float = 8.0, spread: float = 1.0, floor: float = 0.1, env_share: float = 0.25,
                 random_level_share: float = 0.0, similar_shifts: tuple[int, ...] = (-1, 0, 0, 1),
                 harder_shifts: tuple[int, ...] = (0, 1, 1, 2, 2, 3), anchor: str = "newest"):
        super().__init__(env_share, random_level_share, similar_shifts, harder_shifts, anchor)
        self.domain = CountDomain()
        self.midpoint, self.spread, self.floor = midpoint, spread, floor
        self.train_tasks = [t for t in all_tasks() if t not in heldout_pairs()]
        self._train_set = frozenset(self.train_tasks)

    def mastery(self, n: int) -> float:
        """Probability that the teacher takes the step to ``n`` right.

        >>> w = CountWorld(); round(w.mastery(4), 2), round(w.mastery(8), 2), round(w.mastery(20), 2)
        (0.98, 0.55, 0.1)
        """
        return falling_mastery(n, self.midpoint, self.spread, self.floor)

    def success_probability(self, start: int, end: int) -> float:
        """The teacher's chance of writing the whole count right: the product of its steps' masteries.

        >>> round(CountWorld().success_probability(1, 5), 2), round(CountWorld().success_probability(1, 12), 3)
        (0.98, 0.004)
        """
        return math.prod(self.mastery(n) for n in range(start + 1, end))

    def count(self, rng: random.Random, start: int, end: int) -> list[int]:
        """The teacher's count: each step to ``n < end`` right with ``mastery(n)``, else ``n`` is skipped."""
        out, n = [], start
        while n < end:
            nxt = n + 1
            if nxt < end and rng.random() >= self.mastery(nxt):
                nxt += 1
            out.append(nxt)
            n = nxt
        return out

    def agent_example(self, rng: random.Random) -> tuple[list[dict[str, str]], str]:
        a, b = rng.choice(all_tasks())  # the agent has seen every count, held-out ones included (noisily)
        spec = self.domain._parse(f"Task: {a} to {b}", False).spec
        return self.domain.agent_messages(spec), " " + " ".join(map(str, self.count(rng, a, b)))

    def seed_text(self, rng: random.Random) -> tuple[str, int]:
        """A training count as the seed of an env-role example: uniform over the training counts, or under
        ``anchor="task"`` a level drawn uniformly first (then a count ending there), so that the simulator learns
        its variations at the easy end too (the counts are mostly two-digit ones: 15 of 22 levels, with more starts
        each)."""
        if self.anchor == "task":
            lvl = rng.randint(self.lowest, self.highest)
            return self.task_at(rng, lvl), lvl
        a, b = rng.choice(self.train_tasks)
        return f"Task: {a} to {b}", b

    def task_at(self, rng: random.Random, lvl: int) -> str:
        """A training (non-held-out) task ending at ``lvl``."""
        a = rng.choice([a for a, b in self.train_tasks if b == lvl])
        return f"Task: {a} to {lvl}"

    def variation_of(self, rng: random.Random, seed_text: str, lvl: int) -> str:
        """The seed's count moved to end at ``lvl`` from the same start, where that is a training task (else any
        task ending at ``lvl``).

        >>> w = CountWorld(anchor="task"); rng = random.Random(0)
        >>> w.variation_of(rng, "Task: 2 to 6", 7), w.variation_of(rng, "Task: 2 to 6", 9) != "Task: 2 to 9"
        ('Task: 2 to 7', True)
        """
        start = int(seed_text.split(":", 1)[1].split()[0])
        if (start, lvl) in self._train_set:
            return f"Task: {start} to {lvl}"
        return self.task_at(rng, lvl)


CountDomain.world = CountWorld
