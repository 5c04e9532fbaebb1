"""The simulator's half of a pre-training *world*: a teacher that writes the next task from the real simulator prompt.

A world (:mod:`genenv_lab.models.world`) is a generated corpus a tiny model is pre-trained on once, so that both
roles start where a pretrained LLM starts on a skill it half knows. Its tasks have a *level* (a single difficulty
knob the simulator moves). The env role is shared by every world and lives here: given the domain's real simulator
prompt (seed task, lineage statistics, band, recent tasks with their p̂, the hint that follows from them), the
teacher writes a variation whose level starts from an *anchor* and follows the hint loosely (``similar_shifts``
inside the band or without statistics, ``harder_shifts`` above it, their negatives below it). The anchor is the
newest recent task's level (``anchor="newest"``; the seed's when the lineage has none) or always the seed's
(``anchor="seed"``: the simulator varies the task it is shown, and the statistics only choose the hint;
``anchor="task"``: as ``seed``, and the variation keeps the rest of the seed task where the world can, e.g. a
count's start, :meth:`LevelWorld.variation_of`); a ``random_level_share`` of the teacher's tasks are at a uniformly
random level instead.

A subclass says what a task of a level looks like (:meth:`LevelWorld.task_at`), how a seed is drawn
(:meth:`LevelWorld.seed_text`), what the agent role writes (:meth:`LevelWorld.agent_example`) and its level range.
"""

from __future__ import annotations

import math
import random
import re

from genenv_lab.core.curriculum import in_band
from genenv_lab.domains.base import Domain, LineageStats

_TASK = re.compile(r"^\s*task\s*[:：](.*)$", re.IGNORECASE)
r"""A ``Task:`` line; its body is ``group(1).strip()`` (not a lazy ``(.*?)\s*$``: quadratic on a long blank run)."""


def task_body(text: str) -> str | None:
    """The body of the first ``Task:`` line of ``text`` (stripped), or None when it has none.

    >>> task_body("Sure.\\nTask: 3 * 7 "), task_body("3 * 7")
    ('3 * 7', None)
    """
    return next((m.group(1).strip() for m in map(_TASK.match, text.splitlines()) if m), None)


def falling_mastery(x: float, midpoint: float, spread: float, floor: float) -> float:
    """``floor + (1 − floor) / (1 + exp((x − midpoint) / spread))``: a world's teacher's mastery of the skill at
    ``x`` (a count's step, a stride, a carry's column, a fact's sum), near 1 well below ``midpoint`` and falling to
    ``floor`` above it.

    >>> round(falling_mastery(2, 2.0, 0.6, 0.1), 2), round(falling_mastery(18, 12.5, 1.0, 0.05), 2)
    (0.55, 0.05)
    """
    return floor + (1.0 - floor) / (1.0 + math.exp((x - midpoint) / spread))


class QuestionPrompt:
    """A world domain whose agent is asked the task's question under its system prompt with nothing prefilled, and
    whose correct reply is the answer after a space (``carry``, ``facts``); mixed in before
    :class:`~genenv_lab.domains.base.Domain`."""

    system_prompt_agent: str

    def agent_messages(self, spec) -> list[dict[str, str]]:
        return [{"role": "system", "content": self.system_prompt_agent}, {"role": "user", "content": spec.question}]

    def reference_solution(self, spec) -> str:
        return " " + spec.answer


def task_numbers(text: str, pattern: re.Pattern, form: str) -> tuple[int, int] | str:
    """The two numbers of a world's one-line task (the first ``Task:`` line's body matched by ``pattern``), or the
    rejection reason (``form`` names the expected shape).

    >>> product = re.compile(r"^(\\d+) \\* (\\d+)$")
    >>> task_numbers("Task: 3 * 7", product, "a * b"), task_numbers("3 * 7", product, "a * b")
    ((3, 7), "missing 'Task:' line")
    >>> task_numbers("Task: 3 + 7", product, "a * b")
    "not of the form 'a * b'"
    """
    body = task_body(text)
    if body is None:
        return "missing 'Task:' line"
    m = pattern.match(body)
    if not m:
        return f"not of the form '{form}'"
    return int(m.group(1)), int(m.group(2))


class LevelWorld:
    """Both roles of a world's corpus, one stream; the env role (this class) reads the context as described above."""

    domain: Domain
    lowest: int
    highest: int

    ANCHORS = ("newest", "seed", "task")

    def __init__(self, env_share: float, random_level_share: float, similar_shifts: tuple[int, ...],
                 harder_shifts: tuple[int, ...], anchor: str = "newest"):
        if anchor not in self.ANCHORS:
            raise ValueError(f"anchor must be one of {self.ANCHORS}, not {anchor!r}")
        self.anchor = anchor
        self.env_share, self.random_level_share = env_share, random_level_share
        self.similar_shifts, self.harder_shifts = tuple(similar_shifts), tuple(harder_shifts)

    def recipe(self) -> dict:
        """The teacher's parameters (part of the world model's cache key, so a changed recipe builds a new model)."""
        return {k: v for k, v in vars(self).items() if isinstance(v, (int, float, str, tuple))}

    # ---------------------------------------------------------------- what a subclass defines
    def agent_example(self, rng: random.Random) -> tuple[list[dict[str, str]], str]:
        raise NotImplementedError

    def seed_text(self, rng: random.Random) -> tuple[str, int]:
        """A (training, never held-out) seed task's text and level for an env-role example."""
        raise NotImplementedError

    def task_at(self, rng: random.Random, lvl: int) -> str:
        """A training (non-held-out) task text of level ``lvl`` (``Task: ...``)."""
        raise NotImplementedError

    def describe_level(self, lvl: int) -> str:
        """How the simulator's context describes a recent task of level ``lvl``: the domain's description of that
        level (a world whose level is another feature, such as a sum's length, names it)."""
        return self.domain.describe({"level": lvl})

    def variation_of(self, rng: random.Random, seed_text: str, lvl: int) -> str:
        """The teacher's variation of ``seed_text`` at level ``lvl`` under ``anchor="task"``: by default any task of
        that level (:meth:`task_at`); a world whose tasks have more than a level keeps the rest where it can."""
        return self.task_at(rng, lvl)

    # ---------------------------------------------------------------- the shared env role
    def example(self, rng: random.Random) -> tuple[list[dict[str, str]], str]:
        """One (messages, reply) pair of either role; a final assistant message is the reply's prefilled start."""
        return self.env_example(rng) if rng.random() < self.env_share else self.agent_example(rng)

    def env_example(self, rng: random.Random) -> tuple[list[dict[str, str]], str]:
        """The simulator prompt of a random seed with random lineage statistics (80 %) or none, and the teacher's
        next task."""
        text, anchor = self.seed_text(rng)
        seed = self.domain.parse(text).spec
        alpha = rng.choice((0.3, 0.4, 0.5, 0.5, 0.5, 0.6, 0.7))
        k_min = rng.choice((0.1, 0.125, 0.15))
        stats = LineageStats()
        if rng.random() < 0.8:
            n = rng.randint(1, 4)
            g = rng.choice((4, 5, 8))
            p_hats = [rng.randint(0, g) / g for _ in range(n)]
            levels = [rng.randint(self.lowest, self.highest) for _ in p_hats]
            recent = tuple((self.describe_level(lv), p) for lv, p in zip(levels, p_hats))[-3:]
            stats = LineageStats(successes=int(round(sum(p_hats) * g)), rollouts=n * g, recent=recent)
            if self.anchor == "newest":
                anchor = levels[-1]
        messages = self.domain.env_messages(seed, stats, alpha, k_min)
        target = self.target_level(rng, anchor, stats.success_rate, alpha, k_min)
        task = self.variation_of(rng, text, target) if self.anchor == "task" else self.task_at(rng, target)
        return messages, " " + task[len("Task: "):]

    def target_level(self, rng: random.Random, anchor: int, rate: float | None, alpha: float, k_min: float) -> int:
        """The level the teacher writes next: ``random_level_share`` of the time a uniformly random level, else
        ``anchor`` moved by one of the shifts of the hint the context states, clipped to the world's range."""
        if rng.random() < self.random_level_share:
            return rng.randint(self.lowest, self.highest)
        return min(max(anchor + self.hint_shift(rng, rate, alpha, k_min), self.lowest), self.highest)

    def hint_shift(self, rng: random.Random, rate: float | None, alpha: float, k_min: float) -> int:
        """One of the shifts of the hint the context states: ``similar_shifts`` inside the band or without
        statistics, ``harder_shifts`` above it, their negatives below it."""
        if rate is None or in_band(rate, alpha, k_min):
            return rng.choice(self.similar_shifts)
        if rate > alpha:
            return rng.choice(self.harder_shifts)
        return -rng.choice(self.harder_shifts)
