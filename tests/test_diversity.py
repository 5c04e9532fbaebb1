"""The diversity instrument's math (genenv_lab.core.diversity): examples in its doctests, properties here."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from genenv_lab.core.diversity import entropy_bits

labels = st.lists(st.sampled_from("abcdefgh"), min_size=1, max_size=60)


@given(labels)
def test_the_entropy_lies_between_zero_and_log2_of_the_distinct_values(items):
    h = entropy_bits(items)
    assert -1e-12 <= h <= math.log2(len(set(items))) + 1e-9


@given(labels, st.randoms())
def test_the_entropy_does_not_depend_on_order_nor_on_the_names(items, rng):
    shuffled = list(items)
    rng.shuffle(shuffled)
    renamed = [ord(x) * 7 for x in items]
    assert math.isclose(entropy_bits(shuffled), entropy_bits(items), abs_tol=1e-12)
    assert math.isclose(entropy_bits(renamed), entropy_bits(items), abs_tol=1e-12)


@given(st.integers(1, 40), st.integers(1, 5))
def test_k_distinct_values_equally_often_read_log2_k(k, repeat):
    assert math.isclose(entropy_bits([v for v in range(k) for _ in range(repeat)]), math.log2(k), abs_tol=1e-9)


@given(labels)
def test_writing_one_more_new_task_never_lowers_a_uniform_epoch(items):
    distinct = sorted(set(items))
    assert entropy_bits([*distinct, "new"]) > entropy_bits(distinct) or len(distinct) == 0
