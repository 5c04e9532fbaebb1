"""Online difficulty filtering, the ``online_filter`` baseline's selection: pure functions, no model, no I/O.

What practitioners do instead of training a simulator (DAPO's "dynamic sampling" is the best-known form): keep a
fixed pool of tasks, screen candidates with G sampled agent rollouts before each update, and train only on the
tasks the agent solves sometimes but not always (0 < p̂ < 1), the only ones whose GRPO group has a non-zero
advantage. It is the natural rival of GenEnv's claim: both aim the agent's batch at tasks of intermediate
difficulty, one by filtering what exists, the other by writing new tasks.

The loop (:func:`genenv_lab.coevolution.loop.screen_fresh`) shuffles the fixed set, hands the order and a ``measure``
callback (G rollouts per task, no update) to :func:`screen`, and trains on :attr:`Screening.batch`. Rules:

- Rounds draw the next candidates in order, each round only as many as the batch still lacks
  (:func:`next_round`), so every informative task screened is kept and the batch never exceeds the budget.
- Screening stops at ``budget`` informative tasks, at ``cap`` screened candidates (``loop.screen_factor`` ×
  budget), or when the candidates run out.
- Short of ``budget`` informative tasks, the batch is topped up with the other screened tasks (:func:`fill_up`):
  first those at p̂ = 0, then those at p̂ = 1, each in screening order; every arm then trains on the same number of
  fresh tasks per epoch (the pool permitting).
- Tasks screened at p̂ = 1 are *used up* (:attr:`Screening.used_up`): the loop removes them from the pool, so no
  later epoch draws them again. Tasks at p̂ = 0 stay (the agent may learn to solve them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence



@dataclass(frozen=True)
class Screened:
    """One candidate's screening: its id and p̂ over G sampled rollouts."""

    task_id: str
    p_hat: float


@dataclass(frozen=True)
class Screening:
    """The outcome of one epoch's screening."""

    screened: tuple[Screened, ...]
    """Every candidate screened this epoch, in screening order."""
    kept: tuple[str, ...]
    """The ones the screening keeps (informative: 0 < p̂ < 1; or in band), in screening order; never more than the
    budget."""
    fill: tuple[str, ...]
    """Other screened tasks that top the batch up to the budget (:func:`fill_up`)."""

    @property
    def batch(self) -> tuple[str, ...]:
        """The epoch's fresh training tasks: the informative ones, then the fill-up."""
        return self.kept + self.fill

    @property
    def used_up(self) -> tuple[str, ...]:
        """Screened at p̂ = 1: the agent already solves them every time, so they leave the pool for good."""
        return tuple(s.task_id for s in self.screened if s.p_hat >= 1.0)

    @property
    def unsolved(self) -> tuple[str, ...]:
        """Screened at p̂ = 0: no signal now, back to the pool (the agent may solve them later)."""
        return tuple(s.task_id for s in self.screened if s.p_hat <= 0.0)


def informative(p_hat: float) -> bool:
    """Whether a task of screened success rate ``p_hat`` gives GRPO a signal: its G rewards are not all equal.

    >>> informative(0.5), informative(0.0), informative(1.0)
    (True, False, False)
    """
    return 0.0 < p_hat < 1.0


def next_round(n_kept: int, n_screened: int, n_left: int, budget: int, cap: int) -> int:
    """How many candidates the next screening round draws: what the batch still lacks, within the cap and what is
    left of the candidates (0: screening is over). Drawing no more than is lacking is what keeps every informative
    task screened, and spends no rollout on a candidate the batch would have no room for.

    >>> next_round(0, 0, 100, budget=8, cap=32), next_round(5, 8, 92, budget=8, cap=32)
    (8, 3)
    >>> next_round(5, 31, 69, budget=8, cap=32), next_round(8, 12, 88, budget=8, cap=32), next_round(2, 9, 0, 8, 32)
    (1, 0, 0)
    """
    return max(0, min(budget - n_kept, cap - n_screened, n_left))


def fill_up(screened: Sequence[Screened], kept: Sequence[str], budget: int, alpha: float | None = None
            ) -> tuple[str, ...]:
    """The screened tasks not ``kept`` that top a batch up to ``budget``. Without ``alpha`` (``online_filter``,
    which keeps every informative task): p̂ = 0 first, then p̂ = 1, each in screening order. Unsolved tasks come
    first because they stay in the pool either way and are what the agent has still to learn (GRPO's own rollouts
    may find the success the screen missed); a solved task is spent, and its group most likely has no signal again.
    With ``alpha`` (a variant that keeps the band only): the informative tasks outside the band nearest α first,
    then p̂ = 0, then p̂ = 1.

    >>> s = [Screened("a", 1.0), Screened("b", 0.5), Screened("c", 0.0), Screened("d", 0.0)]
    >>> fill_up(s, ["b"], budget=3), fill_up(s, ["b"], budget=9), fill_up(s, ["b", "c", "d"], budget=3)
    (('c', 'd'), ('c', 'd', 'a'), ())
    >>> fill_up([Screened("a", 0.0), Screened("b", 0.9), Screened("c", 0.25)], [], budget=2, alpha=0.5)
    ('c', 'b')
    """
    room = budget - len(kept)
    if room <= 0:
        return ()
    taken = set(kept)
    rest = [s for s in screened if s.task_id not in taken]
    near = sorted((s for s in rest if informative(s.p_hat)), key=lambda s: abs(s.p_hat - alpha)) if alpha else []
    zeros = [s for s in rest if s.p_hat <= 0.0]
    ones = [s for s in rest if s.p_hat >= 1.0]
    return tuple(s.task_id for s in near + zeros + ones)[:room]


def screen(candidates: Sequence[str], measure: Callable[[Sequence[str]], Sequence[float]], budget: int,
           cap: int, keep: Callable[[float], bool] = informative, alpha: float | None = None) -> Screening:
    """Screen ``candidates`` in order with ``measure`` (ids → p̂ each, G sampled rollouts, no update) until
    ``budget`` tasks that ``keep`` accepts (by default the informative ones) are found, ``cap`` candidates are
    screened, or none is left; then top the batch up (:func:`fill_up`; ``alpha``: nearest α first).

    >>> p = {"a": 1.0, "b": 0.5, "c": 0.0, "d": 0.25, "e": 0.75}
    >>> out = screen("abcde", lambda ids: [p[i] for i in ids], budget=2, cap=8)
    >>> out.kept, out.fill, out.used_up, [s.task_id for s in out.screened]
    (('b', 'd'), (), ('a',), ['a', 'b', 'c', 'd'])
    >>> screen("abcde", lambda ids: [p[i] for i in ids], budget=2, cap=2).batch  # the cap stops it at a, b
    ('b', 'a')
    >>> screen("abcde", lambda ids: [p[i] for i in ids], 2, 8, keep=lambda q: abs(q - 0.5) <= 0.1, alpha=0.5).batch
    ('b', 'd')
    """
    if budget < 0 or cap < 0:
        raise ValueError(f"budget and cap must be ≥ 0, got budget={budget}, cap={cap}")
    screened: list[Screened] = []
    kept: list[str] = []
    pos = 0
    while (n := next_round(len(kept), len(screened), len(candidates) - pos, budget, cap)) > 0:
        chunk = list(candidates[pos:pos + n])
        pos += n
        p_hats = list(measure(chunk))
        if len(p_hats) != len(chunk):
            raise ValueError(f"measure returned {len(p_hats)} p̂ for {len(chunk)} candidates")
        for task_id, p in zip(chunk, p_hats):
            screened.append(Screened(task_id, float(p)))
            if keep(p):
                kept.append(task_id)
    return Screening(tuple(screened), tuple(kept), fill_up(screened, kept, budget, alpha))
