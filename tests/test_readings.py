"""The late windows (genenv_lab/core/readings.py), defined once: their properties, and one run read through every
reader of them (the lab's glance, compare's late table, tools/training_side.py) gives the same number."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from genenv_lab.core.readings import LAST, LAST_THIRD, SECOND_HALF, SPANS, late_mean, window, window_start


@given(st.integers(min_value=1, max_value=10_000))
def test_each_window_ends_at_the_last_epoch_and_holds_its_share(last):
    lengths = {span: last - window_start(last, span) + 1 for span in SPANS}
    assert lengths[LAST_THIRD] == math.ceil(last / 3) and lengths[SECOND_HALF] == math.ceil(last / 2)
    assert lengths[LAST] == 1 and 1 <= lengths[LAST_THIRD] <= lengths[SECOND_HALF] <= last


@given(st.dictionaries(st.sampled_from("abc"), st.integers(min_value=1, max_value=30), min_size=1))
def test_a_table_of_several_runs_reads_each_run_as_alone(lengths):
    frame = pd.DataFrame([{"run": r, "epoch": e} for r, n in lengths.items() for e in range(n + 1)])
    together = window(frame, LAST_THIRD, by=["run"])
    for r in lengths:
        alone = window(frame[frame["run"] == r], LAST_THIRD)
        assert together[together["run"] == r]["epoch"].tolist() == alone["epoch"].tolist()


def test_an_unknown_span_is_refused():
    with pytest.raises(ValueError, match="span must be one of"):
        window_start(10, "last quarter")


def test_one_run_reads_the_same_through_every_reader(tiny_cfg, tmp_path, scripted_backend):
    from genenv_lab.coevolution.session import run
    from genenv_lab.compare.stats import late_averages
    from genenv_lab.core.readings import late_column
    from genenv_lab.compare.table import table_rows
    from genenv_lab.core.metrics import P_HAT_MEAN
    from genenv_lab.lab.glance import story_numbers
    from genenv_lab.lab.runs import load_run
    from genenv_lab.rundir.read import read_epochs
    from tools.training_side import summary

    cfg = tiny_cfg.replace(loop={"epochs": 7}, curriculum={"k_min": 0.25}, agent={"num_generations": 4})
    out = tmp_path / "r"
    list(run(cfg, out, backend=scripted_backend(num_generations=4), progress=False))
    records = read_epochs(out)
    by_hand = sum(r[P_HAT_MEAN] for r in records[4:]) / 3  # 7 epochs: the last third is epochs 5-7
    frame = pd.DataFrame([{"epoch": r.epoch, P_HAT_MEAN: r[P_HAT_MEAN]} for r in records])
    table = pd.DataFrame(table_rows("p:genenv", "genenv", 0, records, {}))
    readers = {"readings": late_mean(frame, P_HAT_MEAN, LAST_THIRD),
               "lab glance": story_numbers(load_run(out))[late_column(P_HAT_MEAN, LAST_THIRD)],
               "compare": float(late_averages(table)[late_column(P_HAT_MEAN, LAST_THIRD)].iloc[0]),
               "training_side": summary(out)["p̂"]}
    assert readers == pytest.approx(dict.fromkeys(readers, by_hand))


def test_the_held_out_score_is_one_key_wherever_it_is_read(tiny_cfg, tmp_path, scripted_backend):
    """A run with held-out scores: the lab's glance, compare's table and the run's closing lines read the same key
    (core.readings.heldout_key) and so the same number at its last epoch."""
    from genenv_lab.cli.run_summary import run_summary
    from genenv_lab.coevolution.session import run
    from genenv_lab.compare.table import table_rows
    from genenv_lab.core.readings import heldout_key
    from genenv_lab.lab.glance import story_numbers
    from genenv_lab.lab.runs import load_run
    from genenv_lab.rundir.read import read_epochs
    from genenv_lab.rundir.write import fmt_num

    cfg = tiny_cfg.replace(loop={"epochs": 2}, eval={"every": 1, "limit": 4, "benchmark": "domain"})
    out = tmp_path / "r"
    list(run(cfg, out, backend=scripted_backend(), progress=False))
    records = read_epochs(out)
    key = heldout_key(k for k, v in records[-1].extra.items() if v is not None)
    assert key == "eval/domain"
    final = records[-1].extra[key]
    table = pd.DataFrame(table_rows("p:genenv", "genenv", 0, records, {}))
    assert story_numbers(load_run(out))["heldout_last"] == pytest.approx(final)
    assert float(table[table["epoch"] == 2]["heldout"].iloc[0]) == pytest.approx(final)
    assert any(line.startswith("held-out domain:") and line.split("→ ")[1].startswith(fmt_num(final, 2))
               for line in run_summary(out, cfg))


def test_a_runs_dry_epochs_are_counted_the_same_by_the_story_and_compare(tiny_cfg, tmp_path, scripted_backend):
    from genenv_lab.coevolution.session import run
    from genenv_lab.compare.stats import dry_run_table
    from genenv_lab.compare.table import table_rows
    from genenv_lab.core.dryrun import ran_dry
    from genenv_lab.core.metrics import DRY_STEP_FRAC
    from genenv_lab.lab.runs import load_run
    from genenv_lab.lab.story import pair_numbers
    from genenv_lab.rundir.read import read_epochs

    cfg = tiny_cfg.replace(loop={"epochs": 6}, curriculum={"k_min": 0.25}, agent={"num_generations": 4})
    out = tmp_path / "r"
    list(run(cfg, out, backend=scripted_backend(num_generations=4), progress=False))
    late = [ran_dry(r.extra.get(DRY_STEP_FRAC)) for r in read_epochs(out) if r.epoch >= 4]  # 6 epochs: 4-6
    by_hand = (sum(bool(d) for d in late), sum(d is not None for d in late))
    assert by_hand[1] == 3
    table = dry_run_table(pd.DataFrame(table_rows("p:genenv", "genenv", 0, read_epochs(out), {})))
    readers = {"story": pair_numbers(load_run(out), load_run(out))["dry"],
               "compare": (int(table["dry_epochs"].iloc[0]), int(table["epochs"].iloc[0]))}
    assert readers == dict.fromkeys(readers, by_hand)
    # the share of informative groups over the second half, as compare and benchmarks/seed_table.py read it
    from benchmarks.seed_table import second_half

    informative = [1 - r["frac_zero_std"] for r in read_epochs(out) if r.epoch >= 4]
    shares = {"compare": float(table["informative_frac"].iloc[0]), "seed_table": second_half(out)[0]}
    assert shares == pytest.approx(dict.fromkeys(shares, sum(informative) / len(informative)))
