"""One name per metric: :func:`genenv_lab.rundir.metrics.current_names` moves every old key to its current name, keeps
every value a reader had, prefers the current name's value where a record has both, and is a no-op on new records."""

from __future__ import annotations

from hypothesis import given, strategies as st

from genenv_lab.rundir.metrics import RENAMED, TOP_LEVEL_OLD, current_names

values = st.one_of(st.none(), st.integers(-5, 5), st.floats(allow_nan=False, width=32), st.text(max_size=3))
new_names = sorted(set(RENAMED.values()))
other = st.text(st.sampled_from("abcdefghij/_"), min_size=1, max_size=8).filter(
    lambda k: k not in RENAMED and k not in new_names and k != "extra")


@st.composite
def records(draw):
    top = draw(st.dictionaries(st.sampled_from(TOP_LEVEL_OLD), values))
    loose = [k for k in RENAMED if k not in TOP_LEVEL_OLD]
    extra = draw(st.dictionaries(st.one_of(st.sampled_from(loose), st.sampled_from(new_names), other), values))
    rest = draw(st.dictionaries(other, values))
    return {"epoch": 1, **rest, **top, "extra": extra}


@given(records())
def test_old_keys_move_and_no_value_is_lost(record):
    snapshot = repr(record)
    out = current_names(record)
    assert repr(record) == snapshot  # the input is not changed
    assert not (set(out) & set(TOP_LEVEL_OLD)) and not (set(out["extra"]) & set(RENAMED))
    for key, value in record["extra"].items():
        if key in RENAMED:
            new = RENAMED[key]
            assert out["extra"][new] == (record["extra"][new] if new in record["extra"] else value)
        else:
            assert out["extra"][key] == value
    for key in TOP_LEVEL_OLD:
        if key in record:
            new = RENAMED[key]
            assert out["extra"][new] == record["extra"].get(new, record[key])  # the namespaced value wins
    assert {k: v for k, v in out.items() if k != "extra"} == {k: v for k, v in record.items()
                                                              if k not in TOP_LEVEL_OLD and k != "extra"}
    assert current_names(out) == out  # a record in current names comes back equal


def test_examples():
    assert current_names({"epoch": 2, "extra": {"rwr/kl": 0.1}}) == {"epoch": 2, "extra": {"rwr/kl": 0.1}}
    assert current_names({"epoch": 2, "env_kl": 0.0, "extra": {}}) == {"epoch": 2, "extra": {"rwr/kl": 0.0}}
    assert current_names({"epoch": 3, "n_fresh": 4, "extra": "x"}) == {"epoch": 3, "n_fresh": 4, "extra": "x"}
    # a record holding both spellings keeps the namespaced value (what a new run writes)
    assert current_names({"epoch": 1, "env_kl": 0.0, "extra": {"rwr/kl": None}})["extra"] == {"rwr/kl": None}
    assert current_names({"epoch": 1, "agent_loss": 0.5})["extra"] == {"grpo/loss": 0.5}
