"""How varied the simulator's tasks are: the entropy, in bits, of the distinct tasks an epoch wrote. A simulator that
reward-weighted regression narrows to a few shapes of task reads low (0 when one task fills the epoch); one that
writes every task once reads log2 of their number. Pure: no I/O.

Written by hand: the Shannon entropy of a list's counts is one line of NumPy; SciPy, which names it, is not a
dependency of this package.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable

import numpy as np


def entropy_bits(items: Iterable[Hashable]) -> float:
    """The Shannon entropy (bits) of how ``items`` spread over their distinct values; NaN for no items.

    >>> entropy_bits(["a", "a", "a"])
    0.0
    >>> entropy_bits(["a", "b", "c", "d"])
    2.0
    >>> round(entropy_bits(["a", "a", "a", "b"]), 3)
    0.811
    >>> entropy_bits([])
    nan
    """
    counts = np.fromiter(Counter(items).values(), dtype=float)
    if counts.size == 0:
        return float("nan")
    p = counts / counts.sum()
    return float(max(0.0, -(p * np.log2(p)).sum()))
