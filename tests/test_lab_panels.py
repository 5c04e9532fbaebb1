"""The panel table of the lab's per-epoch curves (genenv_lab/lab/panels.py): the figure is assembled from it, a new
panel is one entry, and a panel that cannot be drawn is refused when it is written."""

from __future__ import annotations

import json

import pytest

from genenv_lab.lab import figures, panels
from genenv_lab.lab.panels import PANELS, Panel
from genenv_lab.lab.runs import load_run

from test_app_views import make_run


def test_the_curves_figure_has_one_panel_per_entry_of_the_table_in_its_order(tmp_path):
    fig = figures.curves_figure([load_run(make_run(tmp_path / "runs" / "syn"))])
    titles = [a.text for a in fig.layout.annotations][:len(PANELS)]
    assert titles == [p.title for p in PANELS]
    assert len({p.name for p in PANELS}) == len(PANELS)  # a name says which panel, once
    p_hat = next(t for t in fig.data if t.name == "syn" and "p_hat_mean" in t.hovertemplate)
    assert (p_hat.xaxis, p_hat.yaxis) == ("x", "y")  # the first entry is the first cell
    assert fig.layout.yaxis.range == (-0.03, 1.03) and fig.layout.yaxis7.range is None  # p̂ fixed, KL free


def test_a_new_panel_is_one_entry_of_the_table(tmp_path, monkeypatch):
    run_dir = make_run(tmp_path / "runs" / "syn")
    records = [json.loads(line) for line in (run_dir / "epochs.jsonl").read_text().splitlines()]
    for r, rollouts in zip(records, (8, 16, 24)):  # a registered key that no panel draws yet
        r["extra"]["cumulative/agent_rollouts"] = rollouts
    (run_dir / "epochs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    extra = Panel("rollouts", "agent rollouts so far", ("cumulative/agent_rollouts",), "rollouts", panels.signals)
    monkeypatch.setattr(figures, "PANELS", (*PANELS, extra))
    fig = figures.curves_figure([load_run(run_dir)])
    line = next(t for t in fig.data if t.name == "syn cumulative/agent_rollouts")
    assert list(line.y) == [8, 16, 24] and line.xaxis == f"x{len(PANELS) + 1}"  # a fifth row, first cell
    assert "agent rollouts so far" in [a.text for a in fig.layout.annotations]
    assert getattr(fig.layout, f"yaxis{len(PANELS) + 1}").title.text == "rollouts"


def test_a_panel_without_keys_or_with_an_unknown_band_is_refused():
    with pytest.raises(ValueError, match="at least one epoch metric key"):
        Panel("empty", "nothing", (), "y", panels.signals)
    with pytest.raises(ValueError, match="band is 'line', 'shade' or None"):
        Panel("p", "p̂", ("p_hat_mean",), "p̂", panels.one_line, band="dotted")
    with pytest.raises(ValueError, match="low < high"):
        Panel("p", "p̂", ("p_hat_mean",), "p̂", panels.one_line, y_range=(1, 0))
    assert panels.panel("grpo").keys == ("grpo/reward_std", "grpo/kl")
    with pytest.raises(KeyError, match="the panels are p_hat, in_band"):
        panels.panel("nope")


def test_every_builder_that_can_stay_empty_says_so_in_its_panel(tmp_path):
    run = load_run(make_run(tmp_path / "runs" / "bare", epochs=2, eval_scores=False))
    fig = figures.curves_figure([run])
    notes = [a.text for a in fig.layout.annotations]
    assert panels.EMPTY[panels.scores] in notes  # no eval/* score in these records
    assert notes.count(panels.EMPTY[panels.signals]) == sum(
        p.draw is panels.signals and not panels.expand(figures.curves_frame(run), p.keys) for p in PANELS)


def test_every_panel_the_registry_names_is_a_panel_of_the_lab_and_every_panel_draws_registered_keys():
    from genenv_lab.core.metrics import METRICS, PANELS as REGISTRY_PANELS, metric

    assert set(REGISTRY_PANELS) == {p.name for p in PANELS}
    for p in PANELS:
        assert p.keys and all(metric(k + "x" if k.endswith("/") else k).panel == p.name for k in p.keys), p.name
    on_a_panel = {m.key for m in METRICS if m.panel}
    drawn = {k for p in PANELS for k in p.keys}
    assert all(k in drawn or k.startswith(tuple(d for d in drawn if d.endswith("/"))) for k in on_a_panel)
