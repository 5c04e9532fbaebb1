"""The lab's first screen for a genenv run beside its fixed-set twin (genenv_lab/lab/story.py): a real comparison
folder of the scripted counter (levels, a frontier, a fixed set that runs dry), read as the lab reads it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from genenv_lab.compare import compare_grid, dry_run_table, variant_entries
from genenv_lab.lab.runs import load_run
from genenv_lab.lab.story import PANELS, pair_caption, pair_frame, pair_numbers, story_figure

pytest.importorskip("gradio", reason="the lab needs the app extra: pip install -e '.[app]'")

from test_app_smoke import load_app_module  # noqa: E402 - after the skip


@pytest.fixture(scope="module")
def runs(tmp_path_factory, scripted_counter) -> Path:
    out = tmp_path_factory.mktemp("cmp")
    entries = variant_entries(["tiny"], ["genenv", "static"], epochs=4, domain="count", reference_tasks=2)
    table = compare_grid(entries, 1, out, progress=False,
                         backend_factory=lambda cfg: scripted_counter(num_generations=cfg.agent.num_generations))
    table.to_csv(out / "table.csv", index=False)
    return out / "runs"


def test_the_story_draws_both_runs_in_four_panels_and_its_caption_quotes_them(runs):
    genenv, static = load_run(runs / "tiny_genenv-s0"), load_run(runs / "tiny_static-s0")
    fig = story_figure(genenv, static)
    assert [a.text for a in fig.layout.annotations][:4] == list(PANELS)
    assert {t.legendgroup for t in fig.data} == {"tiny_genenv-s0", "tiny_static-s0"}
    n = pair_numbers(genenv, static)
    # the fixed set's levels are logged once (the epoch that wrote it) and carried forward
    fixed = pair_frame(static, fixed_set=True)
    assert fixed.loc[fixed["epoch"] > 0, "level"].notna().all()
    table = __import__("pandas").read_csv(runs.parent / "table.csv")
    dry = dry_run_table(table).set_index("variant")
    assert n["fixed_dry"] == (int(dry.loc["static", "dry_epochs"]), int(dry.loc["static", "epochs"]))
    assert n["dry"] == (int(dry.loc["genenv", "dry_epochs"]), int(dry.loc["genenv", "epochs"]))
    heldout = table[table["variant"] == "genenv"].sort_values("epoch")["heldout"]
    assert n["heldout"] == pytest.approx((heldout.iloc[0], heldout.iloc[-1]))
    text = pair_caption(n)
    assert f"ran dry in {n['fixed_dry'][0]} of {n['fixed_dry'][1]} second-half epochs" in text
    assert ("sits in the band" in text) or ("which the cpu-demo world shows" in text)


def test_the_lab_opens_on_the_run_beside_its_twin_and_hides_the_story_elsewhere(runs, tmp_path):
    app = load_app_module()
    lab = app.Lab(runs.resolve())
    view = lab.first_view(None)
    assert view["run"] == "tiny_genenv-s0" and view["story"] is not None and "static" in view["story_caption"]
    assert lab.story_of(lab.load("tiny_static-s0")) == (None, "")  # the fixed set's own run has no story
    alone = tmp_path / "alone"
    shutil.copytree(runs / "tiny_genenv-s0", alone / "tiny_genenv-s0")
    solo = app.Lab(alone.resolve())
    assert solo.story_of(solo.load("tiny_genenv-s0")) == (None, "") and solo.first_view(None)["story"] is None
    # Round 6, L1: the story pairs by configuration, not by folder name: renamed folders still pair, and a run of
    # another seed named like the twin does not
    renamed = tmp_path / "renamed"
    shutil.copytree(runs / "tiny_genenv-s0", renamed / "mine")
    shutil.copytree(runs / "tiny_static-s0", renamed / "fixed")
    lab = app.Lab(renamed.resolve())
    assert lab.story_of(lab.load("mine"))[0] is not None
    impostor = tmp_path / "impostor"
    shutil.copytree(runs / "tiny_genenv-s0", impostor / "tiny_genenv-s0")
    shutil.copytree(runs / "tiny_static-s0", impostor / "tiny_static-s0")
    config = json.loads((impostor / "tiny_static-s0" / "config.json").read_text())
    config["loop"]["seed"] = 7
    (impostor / "tiny_static-s0" / "config.json").write_text(json.dumps(config))
    lab = app.Lab(impostor.resolve())
    assert lab.story_of(lab.load("tiny_genenv-s0")) == (None, "")
