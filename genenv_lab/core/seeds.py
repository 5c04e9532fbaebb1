"""Every random stream of a run derived from its one seed (``loop.seed``), in one place: an epoch's sampling and
data order, and each GRPO call's trainer. Distinct streams use strides that no run's epochs or calls reach, so two
streams of one run, or one stream of two seeds, never share a seed. Resuming an epoch replays its stream.

>>> epoch_seed(0, 3), epoch_seed(2, 0), trainer_seed(1, 5), trainer_seed(2**32 - 1, 1) < 2**32
(3, 2000006, 100008, True)
"""

from __future__ import annotations

EPOCH_STRIDE = 1_000_003
"""Seeds apart between two runs' epoch streams (a prime above any run's epoch count)."""
TRAINER_STRIDE = 100_003
"""Seeds apart between two runs' GRPO-trainer streams (a prime above any run's number of GRPO calls)."""


def epoch_seed(run_seed: int, epoch: int) -> int:
    """The seed of epoch ``epoch``'s sampling and data order (epoch 0: the counterfactual reference set, written
    before any update, the same for every variant of a comparison)."""
    return run_seed * EPOCH_STRIDE + epoch


def trainer_seed(run_seed: int, call: int) -> int:
    """The seed of the ``call``-th GRPO trainer of a run (TRL's Trainer re-seeds every RNG when it is built: one
    fixed seed would replay the same stream every epoch), below 2**32 as numpy requires (a run seed above 42,948
    passed that bound and failed at its first agent update; below it the numbers are unchanged)."""
    return (run_seed * TRAINER_STRIDE + call) % 2**32
