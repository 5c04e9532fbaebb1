"""``stride``: count from a start in steps of a stride, a world whose difficulty the untrained simulator does not move.

The simulator writes one line, ``Task: 3 to 23 by 4``; the agent continues the prefilled ``3`` with `` 7 11 15 19 23``.
A task's *level* is its stride (1..``MAX_STRIDE``): what decides how hard it is. A task starts at 1..``MAX_START`` and
runs ``MIN_STEPS``..``MAX_STEPS`` steps. The domain computes the sequence itself; a rejection names its reason (no
``Task:`` line, not ``a to b by s``, a start, stride or length outside the world, an end the stride does not reach,
or a held-out item: the items of ``data/stride_heldout.jsonl`` are never trained on).

Why this world (an extension of the paper's setting, for docs/research/curriculum_cpu.md's question "does training
the simulator pay where its untrained supply runs out?"): in ``count`` a task's difficulty is its end number, the very
knob the untrained simulator moves when the hint says "harder", so curated parents at the frontier reach the next
level by themselves. Here the world's agent (:class:`StrideWorld`) takes each step of stride ``s`` right with
probability ``mastery(s)`` (a curve falling from ~1 at stride 1 to a floor), so a task's success rate is
``mastery(s) ** (steps − 1)``: the stride carries the difficulty, the length only a little. The untrained simulator
varies the task it is shown: "harder" makes it *longer* (the hint's words: "count further"), and it keeps the
parent's stride but for a ``mutation`` share of its tasks (stride ± 1). So once the agent has learnt a stride, the
untrained simulator's variations of a frontier parent are all solved, longer or not, and only its rare mutants reach
the next stride; a simulator trained on the in-band tasks (which are then those mutants) can learn to write them.

The held-out set has two counts per stride, starting at 1 or 2 and five steps long.
"""

from __future__ import annotations

import random
import re
from functools import lru_cache
from typing import Any

from genenv_lab.core.types import TaskSpec
from genenv_lab.domains.base import HELDOUT_REASON, Domain, LineageStats, ParseResult, SeedTask
from genenv_lab.domains.count import CountDomain
from genenv_lab.domains.worlds import LevelWorld, falling_mastery

MAX_START = 9
MAX_STRIDE = 6
MIN_STEPS, MAX_STEPS = 2, 6

_TASK = re.compile(r"^\s*task\s*[:：]\s*(\d{1,4})\s+to\s+(\d{1,4})\s+by\s+(\d{1,3})\s*[.?!]?\s*$", re.IGNORECASE)


@lru_cache(maxsize=1)
def heldout_triples() -> frozenset[tuple[int, int, int]]:
    """The (start, stride, steps) of ``data/stride_heldout.jsonl`` (never trained on)."""
    return frozenset((t.spec.features["start"], t.spec.features["level"], t.spec.features["steps"])
                     for t in StrideDomain().heldout_tasks())


def all_tasks() -> list[tuple[int, int, int]]:
    """Every (start, stride, steps) task of the world, held-out ones included."""
    return [(a, s, n) for a in range(1, MAX_START + 1) for s in range(1, MAX_STRIDE + 1)
            for n in range(MIN_STEPS, MAX_STEPS + 1)]


def task_text(start: int, stride: int, steps: int) -> str:
    """>>> task_text(3, 4, 5)
    'Task: 3 to 23 by 4'
    """
    return f"Task: {start} to {start + stride * steps} by {stride}"


class StrideDomain(Domain):
    name = "stride"
    system_prompt_env = "You write counting practice tasks. Reply with one line: Task: <start> to <end> by <stride>"
    system_prompt_agent = ("Count up from the start in steps of the stride. Write every number after the start, up "
                           "to the end, separated by spaces.")
    env_prefill = "Task:"
    env_stop = ("\n",)
    env_alphabet = "0123456789 toby\n"
    """Digits, spaces and the words ``to`` and ``by`` (with the stop character); :meth:`parse` checks the rest."""
    difficulty_hints = ("Write a variation of similar difficulty.",
                        "Write a harder variation: count further.",
                        "Write an easier variation: stop sooner.")
    recommended = {"agent": {"max_completion_length": 32}}

    def parse(self, text: str) -> ParseResult:
        return self._parse(text, decontaminate=True)

    def _parse(self, text: str, decontaminate: bool) -> ParseResult:
        """Parse ``Task: a to b by s`` (the first ``Task:`` line); the sequence is computed here, never taken from the
        text.

        >>> d = StrideDomain()
        >>> d.parse("Task: 3 to 23 by 4").spec.answer, d.parse("Task: 3 to 22 by 4").reason
        ('7 11 15 19 23', 'the stride does not reach the end')
        """
        line = next((ln for ln in text.splitlines() if ln.strip().lower().startswith("task")), None)
        if line is None:
            return ParseResult(reason="missing 'Task:' line")
        m = _TASK.match(line)
        if not m:
            return ParseResult(reason="not of the form 'a to b by s'")
        a, b, s = (int(g) for g in m.groups())
        if not 1 <= a <= MAX_START:
            return ParseResult(reason=f"start outside 1-{MAX_START}")
        if not 1 <= s <= MAX_STRIDE:
            return ParseResult(reason=f"stride outside 1-{MAX_STRIDE}")
        if b <= a or (b - a) % s:
            return ParseResult(reason="the stride does not reach the end")
        n = (b - a) // s
        if not MIN_STEPS <= n <= MAX_STEPS:
            return ParseResult(reason=f"steps outside {MIN_STEPS}-{MAX_STEPS}")
        if decontaminate and (a, s, n) in heldout_triples():
            return ParseResult(reason=HELDOUT_REASON)
        features = {"level": s, "start": a, "steps": n}
        return ParseResult(spec=TaskSpec(question=f"Count from {a} to {b} in steps of {s}.",
                                         answer=" ".join(str(a + s * i) for i in range(1, n + 1)),
                                         text=f"Task: {a} to {b} by {s}", features=features))

    def heldout_tasks(self) -> list[SeedTask]:
        return self._load(self._heldout_source() or "stride_heldout.jsonl",
                          parse=lambda text: self._parse(text, decontaminate=False))

    def describe(self, features: dict[str, Any]) -> str:
        return f"by {features.get('level', '?')}, {features.get('steps', '?')} steps"

    def niche(self, spec: TaskSpec) -> str:
        """A stride task's niche is its stride and length: what decides how hard it is."""
        return self.describe(spec.features)

    # the agent's side is count's: the prefilled start, the sequence as the reference, the first line scored exactly
    agent_messages = CountDomain.agent_messages
    reference_solution = CountDomain.reference_solution
    score = CountDomain.score


class StrideWorld(LevelWorld):
    """The generated pre-training corpus of the ``stride`` world (see the module docstring): both roles, one stream.

    ``mastery(s) = floor + (1 − floor) / (1 + exp((s − midpoint) / spread))`` is the chance that the teacher takes a
    step of stride ``s`` right (else it lands one off); the last step, to the end, is always right. The env role
    varies the task it is shown (``anchor`` is ``task``): ``similar_shifts``/``harder_shifts`` move its *length* as the
    context's hint says, its start is kept half the time, and its stride is kept but for ``mutation`` of the tasks
    (± 1).
    """

    ANCHORS = ("task",)
    lowest, highest = 1, MAX_STRIDE

    def __init__(self, midpoint: float = 3.0, spread: float = 0.6, floor: float = 0.1, mutation: float = 0.1,
                 env_share: float = 0.25, random_level_share: float = 0.0,
                 similar_shifts: tuple[int, ...] = (-1, 0, 0, 1), harder_shifts: tuple[int, ...] = (0, 1, 1, 2),
                 anchor: str = "task"):
        super().__init__(env_share, random_level_share, similar_shifts, harder_shifts, anchor)
        self.domain = StrideDomain()
        self.midpoint, self.spread, self.floor, self.mutation = midpoint, spread, floor, mutation
        self.train_tasks = [t for t in all_tasks() if t not in heldout_triples()]

    def mastery(self, stride: int) -> float:
        """Probability that the teacher takes one step of ``stride`` right.

        >>> w = StrideWorld(); [round(w.mastery(s), 2) for s in (1, 2, 3, 4, 5)]
        [0.97, 0.86, 0.55, 0.24, 0.13]
        """
        return falling_mastery(stride, self.midpoint, self.spread, self.floor)

    def success_probability(self, stride: int, steps: int) -> float:
        """The teacher's chance of writing a whole task right: ``mastery(stride) ** (steps − 1)``.

        >>> round(StrideWorld().success_probability(3, 2), 2), round(StrideWorld().success_probability(3, 6), 3)
        (0.55, 0.05)
        """
        return self.mastery(stride) ** (steps - 1)

    def agent_example(self, rng: random.Random) -> tuple[list[dict[str, str]], str]:
        a, s, n = rng.choice(all_tasks())  # the agent has seen every task, held-out ones included (noisily)
        spec = self.domain._parse(task_text(a, s, n), False).spec
        return self.domain.agent_messages(spec), " " + " ".join(map(str, self.attempt(rng, a, s, n)))

    def attempt(self, rng: random.Random, start: int, stride: int, steps: int) -> list[int]:
        """The teacher's numbers after ``start``: each step right with ``mastery(stride)``, else one off; the last
        one is the end."""
        out, x = [], start
        for i in range(1, steps + 1):
            x = (start + stride * steps if i == steps
                 else x + stride + (0 if rng.random() < self.mastery(stride) else rng.choice((-1, 1))))
            out.append(x)
        return out

    def seed_text(self, rng: random.Random) -> tuple[str, int]:
        """A training task as the seed of an env-role example, its stride drawn uniformly first."""
        stride = rng.randint(1, MAX_STRIDE)
        a, s, n = rng.choice([t for t in self.train_tasks if t[1] == stride])
        return task_text(a, s, n), s

    def task_at(self, rng: random.Random, lvl: int) -> str:
        """A training task of stride ``lvl``."""
        a, s, n = rng.choice([t for t in self.train_tasks if t[1] == lvl])
        return task_text(a, s, n)

    def env_example(self, rng: random.Random) -> tuple[list[dict[str, str]], str]:
        """The simulator prompt of a random seed with random lineage statistics (80 %) or none, and the teacher's
        variation of that seed (:meth:`variation`)."""
        text, _ = self.seed_text(rng)
        seed = self.domain.parse(text).spec
        alpha = rng.choice((0.3, 0.4, 0.5, 0.5, 0.5, 0.6, 0.7))
        k_min = rng.choice((0.1, 0.125, 0.15))
        stats = LineageStats()
        if rng.random() < 0.8:
            k, g = rng.randint(1, 4), rng.choice((4, 5, 8))
            p_hats = [rng.randint(0, g) / g for _ in range(k)]
            recent = tuple((self.domain.describe({"level": rng.randint(1, MAX_STRIDE),
                                                  "steps": rng.randint(MIN_STEPS, MAX_STEPS)}), p)
                           for p in p_hats)[-3:]
            stats = LineageStats(successes=int(round(sum(p_hats) * g)), rollouts=k * g, recent=recent)
        task = self.variation(rng, seed.features, stats.success_rate, alpha, k_min)
        return self.domain.env_messages(seed, stats, alpha, k_min), " " + task[len("Task: "):]

    def variation(self, rng: random.Random, seed: dict[str, Any], rate: float | None, alpha: float,
                  k_min: float) -> str:
        """The teacher's next task from a seed's features: its length moved as the hint says
        (:meth:`~genenv_lab.domains.worlds.LevelWorld.target_level`'s shifts), its start kept half the time, its
        stride kept but for ``mutation`` of the tasks; a held-out pick is redrawn with another start.

        >>> w = StrideWorld(mutation=0.0); rng = random.Random(0)
        >>> {w.variation(rng, {"start": 2, "level": 3, "steps": 3}, 1.0, 0.5, 0.125).split()[-1] for _ in range(50)}
        {'3'}
        """
        stride = seed["level"]
        if rng.random() < self.mutation:
            stride = min(max(stride + rng.choice((-1, 1)), 1), MAX_STRIDE)
        steps = min(max(seed["steps"] + self.hint_shift(rng, rate, alpha, k_min), MIN_STEPS), MAX_STEPS)
        start = seed["start"] if rng.random() < 0.5 else rng.randint(1, MAX_START)
        while (start, stride, steps) in heldout_triples():
            start = rng.randint(1, MAX_START)
        return task_text(start, stride, steps)


StrideDomain.world = StrideWorld
