"""One name per metric. The registry (:mod:`genenv_lab.core.metrics`) holds every key an epoch record may have, once,
and is the record's contract: :class:`~genenv_lab.core.types.EpochRecord` is built from it and read back through it,
the docs' key table is rendered from it, a tiny run writes only registered keys. The upgrade's rename table
(:func:`genenv_lab.rundir.upgrade.current_names`) moves every old key to its current name, keeps every value,
prefers the current name's value where a record has both, and is a no-op on new records."""

from __future__ import annotations

from hypothesis import given, strategies as st

import dataclasses
import math
import re
from pathlib import Path

import pytest

from genenv_lab.core import metrics
from genenv_lab.core.types import EpochRecord
from genenv_lab.rundir.upgrade import RENAMED, TOP_LEVEL_OLD, current_names

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


def test_every_record_field_is_a_top_level_metric_and_every_constant_names_its_key():
    fields = {f.name for f in dataclasses.fields(EpochRecord)}
    assert {m.key for m in metrics.METRICS if m.top} == fields
    for name, value in vars(metrics).items():
        if name.isupper() and isinstance(value, str) and name not in ("KINDS",):
            assert name == re.sub(r"[/.]", "_", value.rstrip("/")).upper(), (name, value)
            assert metrics.metric(value) if not value.endswith("/") else True


def test_a_key_the_registry_does_not_hold_is_an_error_everywhere():
    record = EpochRecord(1, 2, 2, 1.0, 0.5, 0.5, 0.3, 0.0, 0.4, 1.0, extra={"grpo/loss": 0.2})
    with pytest.raises(KeyError, match="genenv_lab/core/metrics.py"):
        record.get("p_hat_maen")
    with pytest.raises(KeyError, match="not a registered metric"):
        metrics.metric("rwr/kll")  # what epoch_record checks each key read after the updates against
    with pytest.raises(ValueError, match="genenv-lab upgrade"):
        EpochRecord.from_dict({**record.to_dict(), "env_kl": 0.1})
    with pytest.raises(ValueError, match="outside"):
        EpochRecord.from_dict({**record.to_dict(), "in_band_frac": 1.5})
    with pytest.raises(ValueError, match="belongs in extra"):
        EpochRecord.from_dict({**record.to_dict(), "rwr/kl": 0.1})
    assert record.get("grpo/entropy") is None and record.get("features/level", 3) == 3  # registered, absent
    with pytest.raises(TypeError):
        record.extra["grpo/loss"] = 1.0  # frozen: a new key makes a new record


@given(st.dictionaries(st.sampled_from(["rwr/kl", "grpo/loss", "features/n_ops", "eval/bfcl"]),
                       st.one_of(st.none(), st.integers(-9, 9), st.floats(-1e6, 1e6))),
       st.one_of(st.none(), st.integers(0, 10**6)))
def test_a_record_comes_back_equal_from_its_line(extra, fresh):
    extra = {**extra, "fresh/tasks": fresh}
    record = EpochRecord(3, 4, 3, 0.75, 0.5, math.nan, 0.25, 0.5, 0.5, 2.0, 8, 6, 1, {"x": 1}, {"generate": 1.0},
                         extra)
    line = record.to_dict()
    assert EpochRecord.from_dict(line).to_dict() == line


def test_the_docs_key_table_is_the_registry():
    page = (Path(__file__).parent.parent / "docs" / "run_directory.md").read_text()
    assert metrics.markdown_table() in page, "run: python -m tools.metric_table --write"


def test_a_tiny_run_writes_only_registered_keys(tmp_path):
    from genenv_lab.coevolution.session import run
    from genenv_lab.config import preset

    records = list(run(preset("tiny").replace(loop={"epochs": 2, "reference_tasks": 2}), tmp_path / "r",
                       progress=False))
    for r in records:
        for key in [*r.to_dict(), *r.extra]:
            metrics.metric(key)
