"""tools/hint_following.py: the shift bins (examples, a Hypothesis property) and a measurement on a small real
world model (its numbers mean nothing at this size; the table's shape and sums do)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tools.hint_following import BINS, HINTS, hint_stats, main, shift_bins


def test_bins_say_where_each_variation_lands():
    assert shift_bins(10, [9, 10, 11, 12, 13, None]) == {"below": 1 / 6, "same": 1 / 6, "+1..2": 2 / 6,
                                                         "+3 or more": 1 / 6, "invalid": 1 / 6}
    assert shift_bins(5, []) == dict.fromkeys(BINS, 0.0)


@given(st.integers(3, 24), st.lists(st.one_of(st.none(), st.integers(3, 24)), min_size=1, max_size=64))
def test_bins_partition_the_variations(parent, levels):
    shares = shift_bins(parent, levels)
    assert list(shares) == list(BINS) and sum(shares.values()) == pytest.approx(1.0)
    assert shares["invalid"] == pytest.approx(levels.count(None) / len(levels))


def test_each_hint_is_the_one_the_context_states():
    from genenv_lab.domains import get_domain

    d = get_domain("count")
    spec = d.parse("Task: 2 to 8").spec
    similar, harder, easier = d.difficulty_hints
    for hint, said in zip(HINTS, (similar, harder, easier)):
        text = d.env_messages(spec, hint_stats(hint, "up to 8", 8), 0.5, 0.125)[1]["content"]
        assert text.endswith(said)


def test_a_small_world_is_measured_for_every_hint_and_level(tmp_path):
    out = tmp_path / "shifts.csv"
    table = main(["--preset", "cpu-dry", "--set", "world.steps=3", "--set", "world.env_steps=2",
                  "--set", "world.hidden_size=32", "--set", "world.layers=1", "--levels", "4", "12", "--n", "2",
                  "--csv", str(out)])
    assert out.is_file() and len(table) == 2 * len(HINTS)
    assert table[list(BINS)].sum(axis=1).round(6).eq(1.0).all()
    assert table["agent_solves"].between(0, 1).all() and sorted(table["parent_level"].unique()) == [4, 12]
    with pytest.raises(SystemExit):
        main(["--n", "0"])
