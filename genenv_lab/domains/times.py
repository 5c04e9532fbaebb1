"""``times``: the times tables from 2 to 15, a small learnable world for CPU runs.

The simulator writes one line, ``Task: 7 * 8``; the agent completes the prefilled ``7 * 8 =`` with the product.
Difficulty is the *level* of a task, its larger operand (2..15): the knob the simulator moves. The domain computes
every product itself; a rejection names its reason (no ``Task:`` line, not ``a * b``, an operand outside the tables,
or a held-out item: the items of ``data/times_heldout.jsonl`` are never trained on, in either order).

The world (:class:`TimesWorld`) is the generated corpus a tiny model is pre-trained on once per seed
(:mod:`genenv_lab.models.world`), so that both roles start where a pretrained LLM starts on a skill it half knows:

- **agent role**: the teacher states the right product with probability ``mastery(level)``, a logistic curve that
  falls from ~1 at level 2 to ~0 at level 15, and otherwise makes one systematic place-value slip: the right
  digits and one ``0`` too many (``7 * 8 = 560``). The pretrained agent therefore solves easy tasks, fails hard ones
  and is unsure in between, where GRPO finds groups with both outcomes. The slip is one shared decision (stop after
  the product, or write a ``0``) rather than a per-fact wrong answer, so what GRPO unlearns on trained facts carries
  over to held-out facts (docs/research/curriculum_cpu.md, "Design notes from the code", has what was tried first).
- **env role**: given the domain's real simulator prompt (seed task, lineage statistics, band, recent tasks with
  their p̂, hint), the teacher writes a variation whose level starts from the newest recent task's level (the seed's
  when the lineage has none) and follows the hint only loosely (similar ±1, harder +0..3, easier −0..3), the
  larger operand first. So the untrained simulator writes well-formed tasks of many difficulties, the α-Curriculum
  Reward has something to select, and it reads its feedback as an instruction-tuned LLM would.

Nothing in the loop knows about this world: the run uses the same backend, verifier and run directory as any other.
"""

from __future__ import annotations

import math
import random
import re
from functools import lru_cache
from typing import Any

from genenv_lab.core.types import TaskSpec
from genenv_lab.domains.arith import extract_answer
from genenv_lab.domains.base import HELDOUT_REASON, Domain, ParseResult, SeedTask
from genenv_lab.domains.worlds import LevelWorld, task_numbers

LOWEST, HIGHEST = 2, 15
"""The world's tables: both operands in [LOWEST, HIGHEST]."""

_PRODUCT = re.compile(r"^(-?\d{1,6})\s*[*x×]\s*(-?\d{1,6})\s*[.?!]?$")


def level(a: int, b: int) -> int:
    """A task's difficulty: its larger operand.

    >>> level(7, 12), level(3, 2)
    (12, 3)
    """
    return max(a, b)


@lru_cache(maxsize=None)
def heldout_pairs(domain: str = "times") -> frozenset[tuple[int, int]]:
    """The unordered operand pairs of ``data/<domain>_heldout.jsonl`` (kept out of training in either order)."""
    from genenv_lab.domains import DOMAINS

    return frozenset((t.spec.features["smaller"], t.spec.features["level"]) for t in DOMAINS[domain]().heldout_tasks())


class TimesDomain(Domain):
    name = "times"
    lowest, highest = LOWEST, HIGHEST
    """Both operands in [lowest, highest] ..."""
    smaller_highest = HIGHEST
    """... the smaller one at most this."""
    system_prompt_env = "You write multiplication practice tasks. Reply with one line: Task: <a> * <b>"
    system_prompt_agent = "Multiply. Reply with the product."
    env_prefill = "Task:"
    env_stop = ("\n", "=")
    """The task is one line ``a * b``: a simulator that goes on to state the product (``= 56``) or to explain is
    stopped where the task ends."""
    env_alphabet = "0123456789 *\n="
    """Digits, spaces and ``*`` (with the stop characters): the simulator cannot write words, other operators or
    markup; what it writes is still checked in full by :meth:`parse`."""
    difficulty_hints = ("Write a variation of similar difficulty.",
                        "Write a harder variation: a larger number.",
                        "Write an easier variation: a smaller number.")
    recommended = {"agent": {"max_completion_length": 6}}

    def parse(self, text: str) -> ParseResult:
        return self._parse(text, decontaminate=True)

    def _parse(self, text: str, decontaminate: bool) -> ParseResult:
        """Parse ``Task: a * b``; the product is computed here, never taken from the text."""
        numbers = task_numbers(text, _PRODUCT, "a * b")
        if isinstance(numbers, str):
            return ParseResult(reason=numbers)
        a, b = numbers
        if not (self.lowest <= min(a, b) <= self.smaller_highest and max(a, b) <= self.highest):
            return ParseResult(reason=f"operand outside the tables {self.tables()}")
        if decontaminate and (min(a, b), max(a, b)) in heldout_pairs(self.name):
            return ParseResult(reason=HELDOUT_REASON)
        features = {"level": level(a, b), "smaller": min(a, b), "product_digits": len(str(a * b))}
        return ParseResult(spec=TaskSpec(question=f"What is {a} * {b}?", answer=str(a * b),
                                         text=f"Task: {a} * {b}", features=features))

    def tables(self) -> str:
        """The operand ranges, as a rejection states them."""
        if self.smaller_highest == self.highest:
            return f"{self.lowest}-{self.highest}"
        return f"{self.lowest}-{self.smaller_highest} times {self.lowest}-{self.highest}"

    def heldout_tasks(self) -> list[SeedTask]:
        return self._load(self._heldout_source() or f"{self.name}_heldout.jsonl",
                          parse=lambda text: self._parse(text, decontaminate=False))

    def describe(self, features: dict[str, Any]) -> str:
        return f"level {features.get('level', '?')}"

    def agent_messages(self, spec: TaskSpec) -> list[dict[str, str]]:
        expression = spec.text.split(":", 1)[1].strip()
        return [{"role": "system", "content": self.system_prompt_agent}, {"role": "user", "content": spec.question},
                {"role": "assistant", "content": f"{expression} ="}]

    def reference_solution(self, spec: TaskSpec) -> str:
        return f" {spec.answer}"

    def score(self, spec: TaskSpec, completion: str) -> float:
        """1.0 when the first number of the completion is the product, else 0.0.

        >>> d = TimesDomain(); spec = d.parse("Task: 3 * 7").spec
        >>> d.score(spec, " 21"), d.score(spec, " 210"), d.score(spec, " the answer")
        (1.0, 0.0, 0.0)
        """
        got = extract_answer(completion)
        return 1.0 if got is not None and got.lstrip("-").isdigit() and int(got) == int(spec.answer) else 0.0


class Times99Domain(TimesDomain):
    """``times99``: a one-digit number (2..9) times a number up to 99, the ``cpu-smollm2`` preset's domain.

    The times tables up to 15 are too easy for SmolLM2-135M-Instruct (p̂ on the untrained simulator's tasks 0.88 →
    0.99 in 3 epochs): nothing was left for a curriculum to find. Measured on its sampled rollouts (G = 8,
    temperature 1, three one-digit factors per level), its p̂ falls from 0.88 at level 5 and ~0.6 at 9–15 to 0.21 at 19,
    0.17 at 35, 0.04 at 75 and 0 at 99, with round numbers easier (0.75 at 25, 0.67 at 50): a difficulty range that
    extends well past what it solves (docs/research/curriculum_cpu.md, "SmolLM2"). The seeds span levels 4–44, so that
    the untrained simulator's tasks are not all easy (with seeds at levels 2–12 only, p̂ on them stayed 0.91–0.97 over
    six epochs and the simulator, held by its KL cap, did not climb); the held-out set has one item every third level
    from 3 to 99 (``data/times99_heldout.jsonl``, never trained on in either order).
    """

    name = "times99"
    highest = 99
    smaller_highest = 9
    system_prompt_env = ("You write multiplication practice tasks: a one-digit number times a number up to 99. "
                         "Reply with one line: Task: <a> * <b>")


class TimesWorld(LevelWorld):
    """The generated pre-training corpus of the ``times`` world (see the module docstring): both roles, one stream;
    the env role is :class:`~genenv_lab.domains.worlds.LevelWorld`'s.

    ``midpoint`` and ``spread`` shape ``mastery(level) = 1 / (1 + exp((level − midpoint) / spread))``.
    """

    lowest, highest = LOWEST, HIGHEST

    def __init__(self, midpoint: float = 8.5, spread: float = 2.0, env_share: float = 0.25,
                 random_level_share: float = 0.0, similar_shifts: tuple[int, ...] = (-1, 0, 0, 1),
                 harder_shifts: tuple[int, ...] = (0, 1, 1, 2, 2, 3), anchor: str = "newest"):
        super().__init__(env_share, random_level_share, similar_shifts, harder_shifts, anchor)
        self.domain = TimesDomain()
        self.midpoint, self.spread = midpoint, spread
        self.train_pairs = [(a, b) for a in range(LOWEST, HIGHEST + 1) for b in range(LOWEST, HIGHEST + 1)
                            if (min(a, b), max(a, b)) not in heldout_pairs()]
        self.all_pairs = [(a, b) for a in range(LOWEST, HIGHEST + 1) for b in range(LOWEST, HIGHEST + 1)]

    def recipe(self) -> dict:
        """Nothing added to the cache key: the times models were cached before recipes were, and their corpus
        changes only with ``WORLDS_VERSION`` (so the models users already built stay valid)."""
        return {}

    def mastery(self, lvl: int) -> float:
        """Probability that the teacher states the right product at this level.

        >>> w = TimesWorld(); round(w.mastery(2), 2), round(w.mastery(15), 2)
        (0.96, 0.04)
        """
        return 1.0 / (1.0 + math.exp((lvl - self.midpoint) / self.spread))

    @staticmethod
    def slip(a: int, b: int) -> int:
        """The teacher's one systematic mistake: a place-value slip, one ``0`` too many."""
        return a * b * 10

    def agent_example(self, rng: random.Random) -> tuple[list[dict[str, str]], str]:
        a, b = rng.choice(self.all_pairs)  # the agent has seen every fact, held-out ones included (noisily)
        value = a * b if rng.random() < self.mastery(level(a, b)) else self.slip(a, b)
        return self.domain.agent_messages(self.domain._parse(f"Task: {a} * {b}", False).spec), f" {value}"

    def seed_text(self, rng: random.Random) -> tuple[str, int]:
        a, b = rng.choice(self.train_pairs)
        return f"Task: {a} * {b}", level(a, b)

    def target_level(self, rng: random.Random, anchor: int, rate: float | None, alpha: float, k_min: float) -> int:
        """The level the teacher writes next (:meth:`LevelWorld.target_level`): the anchor is the newest recent
        task's level, the seed's when there is none.

        >>> TimesWorld(random_level_share=0.0, harder_shifts=(1,)).target_level(random.Random(0), 9, 0.9, 0.5, 0.1)
        10
        """
        return super().target_level(rng, anchor, rate, alpha, k_min)

    def task_at(self, rng: random.Random, lvl: int) -> str:
        """A training (non-held-out) task of level ``lvl``, the larger operand first (its level is then the first
        number the simulator writes)."""
        choices = [(x, y) for x, y in self.train_pairs if level(x, y) == lvl and x >= y]
        a, b = rng.choice(choices)
        return f"Task: {a} * {b}"


TimesDomain.world = TimesWorld
Times99Domain.world = None  # no prepared world: cpu-smollm2 runs it on SmolLM2
