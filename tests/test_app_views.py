"""The lab without Gradio: run loading, status, path safety, the pure view functions, the launcher's checks.

Runs here are synthetic, written through the real ``RunWriter`` (no model), so they follow the run directory format
exactly and take milliseconds. ``make_run`` is reused by the app's smoke test.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
import pytest

from genenv_lab.config import preset
from genenv_lab.lab import figures, launcher, panels, views
from genenv_lab.lab.glance import glance_figure, level_label, story_frame, story_numbers
from genenv_lab.lab.names import LabError, resolve_run, validate_run_name
from genenv_lab.lab.runs import discover_runs, load_run
from genenv_lab.lab.status import fingerprint, pid_alive
from genenv_lab.rundir.layout import CONFIG, EVENTS, STATE
from genenv_lab.rundir.write import RunWriter
from genenv_lab.core.types import Attempt, EpochRecord, GeneratedTask

ALPHA, K_MIN, G = 0.5, 0.25, 4
SEED_ID = "arith-seed-001"  # a real seed id of the arith domain, so its text shows in the lineage


ROOT = Path(__file__).resolve().parent.parent


def make_run(run_dir: Path, epochs: int = 3, finish: bool = True, eval_scores: bool = True) -> Path:
    """A synthetic run: 2 lineages, 2 variations each per epoch, one rejection per epoch, p̂ moving into the band.

    Lineage A (root ``arith-seed-001``) varies the previous epoch's first task; its tasks get p̂ 0, 0.25, 0.5 ...
    """
    cfg = preset("tiny").replace(curriculum={"alpha": ALPHA, "k_min": K_MIN}, agent={"num_generations": G},
                                 loop={"epochs": epochs})
    writer = RunWriter(run_dir, cfg)
    if eval_scores:
        writer.write_baseline({"eval/arith_test": 0.05})  # the untrained agent, epoch 0
    parent_a = SEED_ID
    for epoch in range(1, epochs + 1):
        tasks, attempts = [], []
        successes = [min(epoch - 1, G), min(epoch, G)]  # successes out of G for the two valid tasks
        for v, (parent, root) in enumerate([(parent_a, SEED_ID), ("arith-seed-002", "arith-seed-002")]):
            tid = f"e{epoch:03d}-s{v:02d}-v00"
            p_hat = successes[v] / G
            context = json.dumps([{"role": "system", "content": "You write arithmetic practice tasks."},
                                  {"role": "user", "content": f"Seed task:\nExpression: {epoch} + {v}\n"
                                                              "Write a variation."}])
            tasks.append(GeneratedTask(
                task_id=tid, epoch=epoch, env_version=epoch - 1, parent_id=parent, root_id=root, context=context,
                raw=f"Expression: {epoch} + {v}\nQuestion: What is {epoch} plus {v}?", valid=True,
                question=f"What is {epoch} plus {v}?", answer=str(epoch + v),
                text=f"Expression: {epoch} + {v}\nQuestion: What is {epoch} plus {v}?",
                features={"n_operands": 2, "max_digits": 1, "operators": ["+"], "depth": 1},
                p_hat=p_hat, env_reward=math.exp(-2 * (p_hat - ALPHA) ** 2),
                in_band=abs(p_hat - ALPHA) <= K_MIN, weight=1.0 if abs(p_hat - ALPHA) <= K_MIN else 0.0))
            rewards = [1.0] * successes[v] + [0.0] * (G - successes[v])
            mean = sum(rewards) / G
            std = (sum((r - mean) ** 2 for r in rewards) / G) ** 0.5
            for i, r in enumerate(rewards):
                attempts.append(Attempt(task_id=tid, epoch=epoch, source="generated", prompt=f"Compute {epoch}+{v}",
                                        completion=f"answer {i}", reward=r, success=r >= 1.0,
                                        advantage=(r - mean) / (std + 1e-4)))
        tasks.append(GeneratedTask(task_id=f"e{epoch:03d}-s00-v01", epoch=epoch, env_version=epoch - 1,
                                   parent_id=parent_a, root_id=SEED_ID, context="[]", raw="gibberish",
                                   valid=False, reject_reason="missing 'Question:' line"))
        parent_a = tasks[0].task_id
        valid = [t for t in tasks if t.valid]
        record = EpochRecord(
            epoch=epoch, n_generated=len(tasks), n_valid=len(valid), valid_frac=len(valid) / len(tasks),
            p_hat_mean=sum(t.p_hat for t in valid) / len(valid),
            in_band_frac=sum(t.in_band for t in valid) / len(valid),
            env_reward_mean=sum(t.env_reward for t in valid) / len(valid), frac_zero_std=0.5,
            agent_reward_mean=0.4, wall_s=1.0, env_version=epoch,
            reject_reasons={"missing 'Question:' line": 1},
            extra=({"eval/arith_test": 0.1 * epoch} if eval_scores else {})
            | {"rwr/kl": 0.01 * epoch, "reference/p_hat": 0.5 + 0.1 * epoch, "reference/p_hat_gap": 0.1 * epoch,
               "fresh/p_hat_gap": abs(sum(t.p_hat for t in valid) / len(valid) - 0.5), "features/n_operands": 2 + epoch,
               "features/max_digits": 1, "grpo/reward_std": 0.3, "rwr/kl_capped": True})
        writer.commit_epoch(record, tasks, attempts)
    if finish:
        writer.finish(env_version=epochs)
    return run_dir


@pytest.fixture
def run_dir(tmp_path) -> Path:
    return make_run(tmp_path / "runs" / "syn")


# ------------------------------------------------------------------------------------------------ loading

def test_load_run_reads_config_records_and_tables(run_dir):
    run = load_run(run_dir)
    assert run.problems == ()
    assert (run.status, run.preset, run.model, run.domain) == ("finished", "tiny", "tiny", "arith")
    assert (run.alpha, run.k_min, run.num_generations) == (ALPHA, K_MIN, G)
    assert (run.epochs_done, run.epochs_planned) == (3, 3)
    assert len(run.tasks) == 9 and len(run.attempts) == 3 * 2 * G
    assert SEED_ID in run.seeds and "Expression" in run.seeds[SEED_ID]


def test_status_running_killed_interrupted(tmp_path):
    run_dir = make_run(tmp_path / "r", epochs=1, finish=False)
    assert load_run(run_dir).status == "running"  # this process is the writer and is alive
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    state = json.loads((run_dir / "state.json").read_text())
    (run_dir / "state.json").write_text(json.dumps(state | {"pid": dead.pid}))
    assert not pid_alive(dead.pid)
    run = load_run(run_dir)
    assert run.status == "killed" and any("--resume" in p for p in run.problems)
    (run_dir / "state.json").write_text(json.dumps(state | {"status": "interrupted"}))
    assert load_run(run_dir).status == "interrupted"
    summary = discover_runs(tmp_path)[0]
    assert (summary.name, summary.status, summary.epochs_done, summary.epochs_planned) == ("r", "interrupted", 1, 1)


def test_rows_of_an_uncommitted_epoch_are_hidden(run_dir):
    state = json.loads((run_dir / "state.json").read_text())
    (run_dir / "state.json").write_text(json.dumps(state | {"last_complete_epoch": 2}))
    run = load_run(run_dir)
    assert run.epochs_done == 2 and set(run.tasks["epoch"]) == {1, 2} and set(run.attempts["epoch"]) == {1, 2}


def test_fingerprint_changes_when_the_run_is_written(tmp_path):
    run_dir = make_run(tmp_path / "r", epochs=1)
    before = fingerprint(run_dir)
    with open(run_dir / "epochs.jsonl", "a") as fh:
        fh.write("{")
    assert fingerprint(run_dir) != before


# ------------------------------------------------------------------------------------------ broken directories

def _broken_runs(tmp_path: Path) -> Path:
    root = tmp_path / "runs"
    (root / "empty").mkdir(parents=True)
    garbage = make_run(root / "garbage_config", epochs=2)
    (garbage / "config.json").write_text("{not json")
    torn = make_run(root / "torn_epochs", epochs=2)
    with open(torn / "epochs.jsonl", "a") as fh:
        fh.write('{"epoch": 3, "n_gen')
    bad_middle = make_run(root / "bad_middle", epochs=2)
    lines = (bad_middle / "epochs.jsonl").read_text().splitlines()
    (bad_middle / "epochs.jsonl").write_text("\n".join([lines[0], "garbage", lines[1]]) + "\n")
    no_parquet = make_run(root / "no_parquet", epochs=2)
    shutil.rmtree(no_parquet / "tasks")
    bad_parquet = make_run(root / "bad_parquet", epochs=2)
    (bad_parquet / "attempts" / "epoch_002.parquet").write_bytes(b"PAR1 not really")
    garbage_state = make_run(root / "garbage_state", epochs=1)
    (garbage_state / "state.json").write_text("[1, 2")
    make_run(root / "good", epochs=2)
    return root


def test_broken_run_directories_show_a_message_and_never_raise(tmp_path):
    root = _broken_runs(tmp_path)
    summaries = {s.name: s for s in discover_runs(root)}
    assert set(summaries) == {"empty", "garbage_config", "torn_epochs", "bad_middle", "no_parquet", "bad_parquet",
                              "garbage_state", "good"}
    assert summaries["empty"].status == "empty" and summaries["good"].status == "finished"
    frame = views.runs_frame(summaries.values())
    assert len(frame) == 8 and list(frame.columns[:6]) == ["run", "status", "preset", "model", "domain", "epochs"]

    def everything(name):
        run = load_run(root / name)
        out = [views.run_card(run), figures.difficulty_figure(run), figures.curves_figure([run]),
               views.tasks_frame(run), views.tasks_frame(run, band="in band", validity="valid"),
               views.lineage_figure(run, "e001-s00-v00"), views.lineage_frame(run, "e001-s00-v00"),
               views.context_markdown(run, "e001-s00-v00"), views.attempts_frame(run, "e001-s00-v00"),
               views.attempts_markdown(run, "e001-s00-v00"), views.task_filter_choices(run), glance_figure(run),
               story_numbers(run)]
        assert isinstance(out[1], go.Figure) and isinstance(out[2], go.Figure) and isinstance(out[11], go.Figure)
        return run, out

    run, out = everything("empty")
    assert run.status == "empty" and "Empty directory" in out[0]
    assert "no difficulty distribution" in out[1].layout.annotations[0].text
    assert "No committed epoch" in out[2].layout.annotations[0].text
    assert "No committed epoch" in out[11].layout.annotations[0].text and out[12]["epochs"] == 0

    run, out = everything("garbage_config")
    assert any("config.json is unreadable" in p for p in run.problems) and "config.json is unreadable" in out[0]
    assert run.alpha is None and run.epochs_done == 2  # the rest of the run still shows
    assert len(out[1].data) == 2 and not out[1].layout.shapes  # no band without α and k_min

    run, out = everything("torn_epochs")
    assert run.epochs_done == 2 and run.problems == ()  # a torn last line is a write in progress, not an error

    run, out = everything("bad_middle")
    assert run.epochs_done == 2 and any("not valid JSON" in p for p in run.problems)

    run, out = everything("no_parquet")
    assert any("tasks table (tasks/) is missing" in p for p in run.problems)
    assert "no difficulty distribution" in out[1].layout.annotations[0].text and len(out[3]) == 0
    assert len(out[2].data) > 0  # the curves come from epochs.jsonl and still draw

    run, out = everything("bad_parquet")
    assert any("attempts table is unreadable" in p for p in run.problems)
    assert len(out[8]) == 0 and len(run.tasks) == 6

    run, out = everything("garbage_state")
    assert run.status == "unreadable" and any("state.json" in p for p in run.problems)

    run = load_run(root / "does-not-exist")
    assert run.status == "missing" and "does not exist" in views.run_card(run)


# ------------------------------------------------------------------------------------------------ path safety

@pytest.mark.parametrize("name", ["../x", "..", ".", "", "/etc", "/etc/passwd", "a/b", "a\\b", ".hidden", "x\x00y",
                                  " x", "x" * 101, None, 3, "../../runs/x", "~root"])
def test_bad_run_names_are_refused(tmp_path, name):
    with pytest.raises(LabError):
        resolve_run(tmp_path, name)


def test_symlinks_must_stay_inside_the_runs_folder(tmp_path):
    root, outside = tmp_path / "runs", tmp_path / "secret"
    make_run(root / "real", epochs=1)
    make_run(outside, epochs=1)
    (root / "escape").symlink_to(outside, target_is_directory=True)
    (root / "alias").symlink_to(root / "real", target_is_directory=True)
    with pytest.raises(LabError, match="outside"):
        resolve_run(root, "escape")
    assert resolve_run(root, "alias") == (root / "real").resolve()
    assert resolve_run(root, "real") == (root / "real").resolve()
    assert validate_run_name("tiny-1.a_b") == "tiny-1.a_b"
    assert {s.name for s in discover_runs(root)} == {"real", "alias"}  # the escaping link is not listed


# ----------------------------------------------------------------------------------------------------- views

def test_difficulty_figure_bars_per_epoch_and_band_from_config(run_dir):
    fig = figures.difficulty_figure(load_run(run_dir))
    assert [t.type for t in fig.data] == ["bar"] * 3
    assert list(fig.data[0].x) == [0, 0.25, 0.5, 0.75, 1.0]  # the p̂ levels k/G
    assert sum(fig.data[0].y) == pytest.approx(1.0)  # shares of the epoch's valid tasks
    rect = [s for s in fig.layout.shapes if s.type == "rect"][0]
    # the shading spans whole bar groups: every bar of an in-band p̂ level inside it, every other bar outside
    step, half_group = 1 / G, (1 - fig.layout.bargap) / G / 2
    for level in fig.data[0].x:
        left, right = level - half_group, level + half_group
        if abs(level - ALPHA) <= K_MIN:
            assert rect.x0 <= left and right <= rect.x1
        else:
            assert right <= rect.x0 or rect.x1 <= left
    assert rect.x0 == pytest.approx(ALPHA - K_MIN - step / 2) and rect.x1 == pytest.approx(ALPHA + K_MIN + step / 2)
    assert any(s.type == "line" and s.x0 == ALPHA for s in fig.layout.shapes)
    assert "α = 0.5" in fig.layout.annotations[0].text
    assert len(fig.layout.sliders[0].steps) == 4  # all + one per epoch
    assert "100% in band" in fig.data[2].name  # epoch 3: p̂ 0.5 and 0.75 are both within 0.25 of α


def test_glance_heatmap_holds_each_epochs_shares_with_k_over_g_rows_and_the_band_framed(run_dir):
    run = load_run(run_dir)
    fig = glance_figure(run)
    heat = next(t for t in fig.data if t.type == "heatmap")
    assert list(heat.x) == [1, 2, 3] and len(heat.z) == G + 1
    for col in range(3):  # each epoch's column is a distribution over p̂ levels
        assert sum(row[col] for row in heat.z) == pytest.approx(1.0)
    # the synthetic run: epoch e has valid tasks with e-1 and e successes out of G
    assert heat.z[1][0] == 0.5 and heat.z[0][0] == 0.5 and heat.z[3][2] == 0.5
    assert list(fig.layout.yaxis.ticktext) == [f"{k}/{G}" for k in range(G + 1)]
    band = [s for s in fig.layout.shapes if s.type == "rect" and s.xref == "x"]
    assert len(band) == 1 and (band[0].y0, band[0].y1) == (0.5, 3.5)  # rows 1/4..3/4 are within 0.25 of 0.5
    story = {t.name: t for t in fig.data if t.type == "scatter"}
    assert set(story) == {"p̂ on the simulator's tasks", "p̂ on the untrained simulator's tasks", "held-out score"}
    assert list(story["held-out score"].x) == [0, 1, 2, 3]  # epoch 0 is the untrained agent
    assert fig.layout.title.text.startswith("Curriculum at a glance · syn")


def test_story_numbers_are_the_runs_own(run_dir):
    run = load_run(run_dir)
    frame = story_frame(run)
    assert list(frame["heldout"].round(2)) == [0.05, 0.1, 0.2, 0.3]
    numbers = story_numbers(run)
    assert numbers["epochs"] == 3 and numbers["heldout_first"] == 0.05 and numbers["heldout_last"] == pytest.approx(0.3)
    assert numbers["reference/p_hat, last third"] == pytest.approx(0.8)  # epoch 3 alone: 0.5 + 0.1 * 3
    assert numbers["in_band_first"] == 0.5 and numbers["in_band_last"] == 1.0
    assert level_label(0.75, 4) == "3/4"


def test_difficulty_figure_of_two_runs_side_by_side(tmp_path, run_dir):
    other = make_run(tmp_path / "runs" / "other", epochs=2)
    fig = figures.difficulty_figure([load_run(run_dir), load_run(other)])
    assert len(fig.data) == 5 and {t.xaxis for t in fig.data} == {"x", "x2"}
    assert [t.showlegend for t in fig.data] == [True, True, True, False, False]  # one legend entry per epoch
    assert len([s for s in fig.layout.shapes if s.type == "rect"]) == 2  # each run's band
    assert "syn" in fig.layout.annotations[0].text and "α = 0.5" in fig.layout.annotations[0].text
    empty = tmp_path / "runs" / "empty"
    empty.mkdir()
    fig = figures.difficulty_figure([load_run(run_dir), load_run(empty)])
    assert any("no valid generated task" in a.text for a in fig.layout.annotations)


def test_curves_figure_overlays_runs_and_shows_eval_scores(tmp_path, run_dir):
    other = make_run(tmp_path / "runs" / "other", epochs=2, eval_scores=False)
    fig = figures.curves_figure([load_run(run_dir), load_run(other)])
    names = {t.name for t in fig.data}
    assert {"syn", "other", "syn eval/arith_test"} <= names
    per_run = [t for t in fig.data if t.name == "syn"]
    one_line = [p for p in panels.PANELS if p.draw is panels.one_line]
    assert len(per_run) == len(one_line) == 7 and list(per_run[0].x) == [1, 2, 3]
    assert any(s.type == "rect" for s in fig.layout.shapes)  # the band on the p̂ panel
    frame = figures.curves_frame(load_run(run_dir))
    assert list(frame["epoch"]) == [0, 1, 2, 3]  # epoch 0: the untrained agent's baseline
    assert list(frame["eval/arith_test"]) == pytest.approx([0.05, 0.1, 0.2, 0.3])
    evals = [t for t in fig.data if t.name == "syn eval/arith_test"]
    assert list(evals[0].x) == [0, 1, 2, 3]


def test_curves_figure_shows_the_methods_signals_in_a_third_row(run_dir):
    fig = figures.curves_figure([load_run(run_dir)])
    names = {t.name for t in fig.data}
    # the counterfactual, both distances from α, every features/* key and the GRPO metric the records hold
    assert {"syn reference/p_hat", "syn fresh/p_hat_gap", "syn reference/p_hat_gap", "syn features/n_operands",
            "syn features/max_digits", "syn grpo/reward_std"} <= names
    assert "syn grpo/kl" not in names  # a key the records lack draws nothing
    assert not any("kl_capped" in n for n in names if n)  # booleans are not curves
    ref = next(t for t in fig.data if t.name == "syn reference/p_hat")
    assert list(ref.y) == pytest.approx([0.6, 0.7, 0.8]) and ref.xaxis == "x9"  # row 3, column 1
    gap_ref = next(t for t in fig.data if t.name == "syn reference/p_hat_gap")
    assert gap_ref.line.dash == "dot"
    titles = [a.text for a in fig.layout.annotations]
    assert any("untrained simulator" in t for t in titles) and any("features/*" in t for t in titles)
    # every line of a several-line panel names itself where it ends; every panel has a y title
    features = [t for t in fig.data if (t.name or "").startswith("syn features/")]
    assert {[x for x in t.text if x][0] for t in features} == {"n_operands", "max_digits"}
    assert all(list(t.text).count("") == len(t.text) - 1 for t in features)
    y_titles = [getattr(fig.layout, f"yaxis{i if i > 1 else ''}").title.text for i in range(1, len(panels.PANELS) + 1)]
    assert y_titles == [p.y_title for p in panels.PANELS]


def test_curves_figure_draws_the_dry_run_instrument_in_a_fourth_row(tmp_path):
    run_dir = make_run(tmp_path / "runs" / "dry", epochs=3)
    records = [json.loads(line) for line in (run_dir / "epochs.jsonl").read_text().splitlines()]
    for r, dry, top in zip(records, (0.0, 0.5, 1.0), (9, 12, 15)):
        r["extra"] |= {"dry/step_frac": dry, "levels/max": top, "heldout/frontier_level": 8,
                       "dry/frontier_level": 8, "dry/frontier_groups": 4, "dry/frontier_informative": 1}
    (run_dir / "epochs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    fig = figures.curves_figure([load_run(run_dir)])
    by_name = {t.name: t for t in fig.data}
    dry = by_name["dry dry/step_frac"]
    assert list(dry.y) == [0.0, 0.5, 1.0] and dry.xaxis == "x13"  # row 4, column 1
    assert list(by_name["dry levels/max"].y) == [9, 12, 15] and by_name["dry levels/max"].xaxis == "x15"
    assert by_name["dry dry/frontier_level"].line.dash == "dot"
    assert fig.layout.yaxis13.range == (-0.03, 1.03)


def test_a_signal_panel_with_no_numbers_says_so(tmp_path):
    run_dir = make_run(tmp_path / "runs" / "bare", epochs=2, eval_scores=False)
    records = [json.loads(line) for line in (run_dir / "epochs.jsonl").read_text().splitlines()]
    for r in records:  # the GRPO metrics all null, as a run whose TRL logs none
        r["extra"] = {k: (None if k.startswith("grpo/") else v) for k, v in r["extra"].items()}
    (run_dir / "epochs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    fig = figures.curves_figure([load_run(run_dir)])
    assert not any((t.name or "").startswith("bare grpo/") for t in fig.data)
    assert any("not in these records" in a.text for a in fig.layout.annotations)


def test_corrupt_baseline_is_a_problem_not_a_crash(run_dir):
    (run_dir / "baseline.json").write_text("{not json")
    run = load_run(run_dir)
    assert run.baseline == {} and any("baseline.json is corrupt" in p for p in run.problems)
    assert list(figures.curves_frame(run)["epoch"]) == [1, 2, 3]


def test_tasks_frame_filters(run_dir):
    run = load_run(run_dir)
    full = views.tasks_frame(run)
    assert len(full) == 9 and {"f.n_operands", "f.operators"} <= set(full.columns)
    assert len(views.tasks_frame(run, epoch="2")) == 3
    assert len(views.tasks_frame(run, validity="rejected")) == 3
    assert set(views.tasks_frame(run, validity="valid")["valid"]) == {True}
    in_band = views.tasks_frame(run, band="in band")
    assert set(in_band["in_band"]) == {True} and len(in_band) == 5  # p̂ 0.25, 0.5, 0.75
    assert list(views.tasks_frame(run, band="out of band")["p̂"]) == [0.0]
    assert len(views.tasks_frame(run, reason="missing 'Question:' line")) == 3
    assert list(views.tasks_frame(run, search="3 PLUS 1")["task_id"]) == ["e003-s01-v00"]
    choices = views.task_filter_choices(run)
    assert choices == {"epochs": ["all", "1", "2", "3"], "reasons": ["all", "missing 'Question:' line"]}


def test_lineage_context_and_attempts_of_a_task(run_dir):
    run = load_run(run_dir)
    assert views.lineage_ids(run, "e003-s00-v00") == [SEED_ID, "e001-s00-v00", "e002-s00-v00", "e003-s00-v00"]
    frame = views.lineage_frame(run, "e003-s00-v00")
    assert list(frame["epoch"]) == [0, 1, 2, 3] and "Expression" in frame["task"].iloc[0]
    fig = views.lineage_figure(run, "e003-s00-v00")
    highlighted = [t for t in fig.data if t.mode == "lines" and t.line.width > 2][0]
    assert len([x for x in highlighted.x if x is not None]) == 2 * 3  # three parent → child edges
    assert "family of arith-seed-001" in fig.layout.title.text
    rejected = views.lineage_frame(run, "e002-s00-v01")
    assert not rejected["valid"].iloc[-1] and "rejected" in rejected["task"].iloc[-1]

    md = views.context_markdown(run, "e002-s00-v00")
    assert "**system**" in md and "**user**" in md and "Seed task" in md and "simulator output" in md

    attempts = views.attempts_frame(run, "e003-s00-v00")
    assert len(attempts) == G and list(attempts.columns) == ["epoch", "source", "#", "completion", "reward",
                                                             "success", "advantage"]
    assert attempts["reward"].sum() == 2 and attempts["advantage"].sum() == pytest.approx(0, abs=1e-6)
    assert "p̂ = 0.50" in views.attempts_markdown(run, "e003-s00-v00")
    assert "never attempted" in views.attempts_markdown(run, "e002-s00-v01")
    assert len(views.attempts_frame(run, "nope")) == 0
    assert "Pick a generated task" in views.lineage_figure(run, "nope").layout.annotations[0].text


def test_markdown_never_lets_generated_text_break_out_of_its_fence(tmp_path):
    run_dir = make_run(tmp_path / "r", epochs=1)
    tasks = pd.read_parquet(run_dir / "tasks" / "epoch_001.parquet")
    tasks.loc[0, "raw"] = "```\n<script>alert(1)</script>\n````"
    tasks.to_parquet(run_dir / "tasks" / "epoch_001.parquet", index=False)
    md = views.context_markdown(load_run(run_dir), "e001-s00-v00")
    assert "`````text\n```\n<script>" in md


# -------------------------------------------------------------------------------------------------- launcher

def test_launcher_only_builds_preset_commands(tmp_path):
    cmd = launcher.build_command("tiny", "arith", tmp_path / "x")
    assert cmd == (sys.executable, "-m", "genenv_lab.cli", "run", "--preset", "tiny", "--domain", "arith",
                   "--out", str(tmp_path / "x"))
    for bad_preset in ("a100", "colab-t4", "tiny; rm -rf /", ""):
        with pytest.raises(LabError, match="preset"):
            launcher.build_command(bad_preset, "arith", tmp_path / "x")
    with pytest.raises(LabError, match="domain"):
        launcher.build_command("tiny", "--help", tmp_path / "x")
    for bad_name in ("../x", "/tmp/x", ".x"):
        with pytest.raises(LabError):
            launcher.start_run(tmp_path, "tiny", "arith", bad_name)
    (tmp_path / "taken").mkdir()
    with pytest.raises(LabError, match="already exists"):
        launcher.start_run(tmp_path, "tiny", "arith", "taken")
    assert {p.name for p in tmp_path.iterdir()} <= {"taken", launcher.LAUNCHES}  # nothing created or started
    assert not list(tmp_path.glob(f"{launcher.LAUNCHES}/*.pid"))


def test_the_start_form_defaults_to_the_presets_own_domain(tmp_path):
    from genenv_lab.config import preset

    assert launcher.preset_domain("cpu-demo") == "count" and launcher.preset_domain("cpu-times") == "times"
    for name in launcher.LAUNCH_PRESETS:  # every preset the lab can start runs on its own domain as it is
        domain = launcher.preset_domain(name)
        assert domain == preset(name).loop.domain and domain in launcher.domain_names()
        assert launcher.build_command(name, domain, tmp_path / "x")[-4:] == ("--domain", domain, "--out",
                                                                               str(tmp_path / "x"))
    with pytest.raises(LabError, match="preset"):
        launcher.preset_domain("a100")


@pytest.mark.parametrize("parent_sigint", ["default", "ignored"])
def test_start_and_stop_a_run_from_the_lab(tmp_path, parent_sigint):
    """Stop works even when the lab itself ignores SIGINT (a lab started in the background with ``&``): children
    inherit an ignored SIGINT, and the run must still end as soon as it is asked to."""
    import signal

    previous = signal.getsignal(signal.SIGINT)
    if parent_sigint == "ignored":
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        run = launcher.start_run(tmp_path, "tiny", "arith", "from-lab")
    finally:
        signal.signal(signal.SIGINT, previous)
    import time

    try:
        assert run.path == (tmp_path / "from-lab").resolve() and run.state == "running"
        assert [s.name for s in discover_runs(tmp_path)] == ["from-lab"]  # listed at once (empty → starting)
        deadline = time.time() + 60
        while time.time() < deadline and not (run.path / "state.json").exists() and run.poll() is None:
            time.sleep(0.2)
        assert (run.path / "state.json").exists(), launcher.log_tail(run)
    finally:
        asked = time.time()
        code = launcher.stop_run(run, grace_s=30.0)
    assert run.poll() is not None and code != 0
    assert time.time() - asked < 15.0  # SIGINT itself ended it, not the SIGTERM that follows the grace period
    assert run.state.startswith("stopped")
    # "killed" only if the signal lands in the microseconds between state.json and the loop's interrupt handler
    assert load_run(run.path).status in ("interrupted", "killed")
    frame = launcher.launched_frame({run.name: run})
    assert frame.loc[0, "run"] == "from-lab" and frame.loc[0, "state"].startswith("stopped")
    assert not pid_alive(run.pid)
    os.unlink(run.log_path)


@pytest.mark.parametrize("bad", [1e20, float("nan"), float("inf"), -5, True, "yesterday"])
def test_an_implausible_updated_at_cannot_break_the_runs_table(tmp_path, bad):
    good = make_run(tmp_path / "runs" / "good", epochs=1)
    other = make_run(tmp_path / "runs" / "odd", epochs=1)
    state = json.loads((other / "state.json").read_text())
    state["updated_at"] = bad
    (other / "state.json").write_text(json.dumps(state))  # json.dumps writes NaN and Infinity as Python reads them
    summaries = discover_runs(tmp_path / "runs")
    assert {s.name for s in summaries} == {"good", "odd"}
    assert all(0 < s.updated_at < 4_102_444_800 for s in summaries)
    frame = views.runs_frame(summaries)
    assert len(frame) == 2 and good.name in set(frame["run"])


def test_run_card_shows_html_in_config_strings_as_text(tmp_path):
    run_dir = make_run(tmp_path / "runs" / "syn", epochs=1)
    cfg = json.loads((run_dir / "config.json").read_text())
    cfg["model"]["name_or_path"] = "<img src=x onerror=alert(1)>"
    (run_dir / "config.json").write_text(json.dumps(cfg))
    card = views.run_card(load_run(run_dir))
    assert "<img" not in card and "&lt;img src=x onerror=alert(1)&gt;" in card


def test_the_lab_starts_no_run_beyond_the_cap(tmp_path):
    for name in ("a", "b"):
        make_run(tmp_path / name, epochs=1, finish=False)  # status running, this (live) process as writer
    assert sorted(launcher.running_runs(tmp_path)) == ["a", "b"]
    with pytest.raises(LabError, match="2 runs are already running here"):
        launcher.start_run(tmp_path, "tiny", "arith", "c")
    assert not (tmp_path / "c").exists()



def test_five_quick_starts_leave_at_most_the_cap_running(tmp_path, monkeypatch):
    """Five starts 0.3 s apart were all accepted (a run counted only once its process had written state.json);
    the lab now counts the runs it started and that are still alive, under a lock."""
    import sys
    import time

    monkeypatch.setattr(launcher, "build_command",  # a process that starts slowly, as a real run does
                        lambda preset, domain, out: (sys.executable, "-c", "import time; time.sleep(60)"))
    started, refused = [], []
    try:
        for name in "abcde":
            try:
                started.append(launcher.start_run(tmp_path, "tiny", "arith", name))
            except LabError as exc:
                refused.append(str(exc))
            time.sleep(0.3)
        assert len(started) == launcher.MAX_RUNNING and len(refused) == 5 - launcher.MAX_RUNNING
        assert "already running here (a, b)" in refused[0]
        assert launcher.running_runs(tmp_path) == ["a", "b"]
    finally:
        for run in started:
            launcher.stop_run(run, grace_s=1.0)
    assert launcher.running_runs(tmp_path) == []  # stopped runs free their places
    assert {s.name for s in discover_runs(tmp_path)} == {"a", "b"}  # the notes folder is not a run


@pytest.mark.parametrize("planted", ["link", "link-inside", "lock-link", "note-link"])
def test_start_writes_nothing_outside_the_runs_folder_through_a_planted_link(tmp_path, monkeypatch, planted):
    """Round 5, P7: a symlinked ``.lab-launches`` made Start write its lock and pid note where the link pointed.
    A notes folder that is a link (even to a folder inside the runs folder), a lock or a pid note that is a link:
    Start is refused in one sentence naming no absolute path, no process starts, no run folder or log is left, and
    nothing is written outside the runs folder."""
    import tempfile

    runs, outside, logs = tmp_path / "runs", tmp_path / "outside", tmp_path / "tmp"
    for folder in (runs, outside, logs):
        folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(logs))  # where a started run's log would go
    notes = runs / launcher.LAUNCHES
    if planted == "link":
        notes.symlink_to(outside, target_is_directory=True)
    elif planted == "link-inside":
        (runs / "elsewhere").mkdir()
        notes.symlink_to(runs / "elsewhere", target_is_directory=True)
    else:
        notes.mkdir()
        (notes / (".lock" if planted == "lock-link" else "probe1.pid")).symlink_to(outside / "written")
    with pytest.raises(LabError) as refused:
        launcher.start_run(runs, "tiny", "arith", "probe1")
    message = str(refused.value)
    assert launcher.LAUNCHES in message and str(tmp_path) not in message and "\n" not in message
    assert not list(outside.iterdir()) and not list(logs.iterdir()) and not (runs / "probe1").exists()
    assert launcher.running_runs(runs) == []  # the runs list reads no note through a link either


def test_start_messages_name_no_absolute_path_and_a_fifo_note_cannot_block_the_count(tmp_path):
    """Round 5, P10: Start's messages named the absolute runs folder; the command it shows names the run as in the
    runs folder. A FIFO planted as a pid note would block the count of running runs; it is skipped, not read."""
    import threading

    (tmp_path / "taken").mkdir()
    with pytest.raises(LabError, match="already exists in the runs folder") as refused:
        launcher.start_run(tmp_path, "tiny", "arith", "taken")
    assert str(tmp_path) not in str(refused.value)
    shutil.rmtree(tmp_path / launcher.LAUNCHES)
    (tmp_path / launcher.LAUNCHES).write_text("a file")
    with pytest.raises(LabError, match="is a file") as refused:
        launcher.start_run(tmp_path, "tiny", "arith", "x")
    assert str(tmp_path) not in str(refused.value)
    (tmp_path / launcher.LAUNCHES).unlink()
    (tmp_path / launcher.LAUNCHES).mkdir()
    os.mkfifo(tmp_path / launcher.LAUNCHES / "fifo.pid")
    counted = []
    reader = threading.Thread(target=lambda: counted.append(launcher.running_runs(tmp_path)), daemon=True)
    reader.start()
    reader.join(10.0)
    assert counted == [[]], "the count of running runs blocked on a FIFO note"
    run = launcher.LaunchedRun(name="probe1", path=tmp_path / "probe1", preset="tiny", domain="arith",
                               command=launcher.build_command("tiny", "arith", tmp_path / "probe1"), process=None,
                               log_path=tmp_path / "log")
    assert run.shown_command == "-m genenv_lab.cli run --preset tiny --domain arith --out probe1"

def test_hostile_run_files_are_refused_without_opening_them(tmp_path):
    """A FIFO (would block a reader), a link to /dev/zero (never ends), a link out of the run folder and an
    oversized file each make their own run 'unreadable' with a sentence; the good run beside them still lists and
    renders, and nothing blocks."""
    runs = tmp_path / "runs"
    make_run(runs / "good")
    outside = tmp_path / "secret.json"
    outside.write_text('{"preset": "leaked"}')
    hostile = {"fifo": (EVENTS, lambda p: os.mkfifo(p), "not a regular file"),
               "zero": (STATE, lambda p: p.symlink_to("/dev/zero"), "outside the run folder"),
               "escape": (CONFIG, lambda p: p.symlink_to(outside), "outside the run folder"),
               "huge": (CONFIG, lambda p: os.truncate(p, 5 << 20), "above the lab's"),
               # round 4, L6: a hard link showed a file from outside the run folder in the events pane
               "hardlink": (EVENTS, lambda p: os.link(outside, p), "hard links"),
               "table_fifo": ("tasks/epoch_001.parquet", lambda p: os.mkfifo(p), "not a regular file"),
               "table_escape": ("attempts", lambda p: p.symlink_to(tmp_path, target_is_directory=True),
                                "outside the run folder"),
               "table_not_folder": ("tasks", lambda p: os.mkfifo(p), "not a folder of per-epoch tables")}
    for name, (file, make, _) in hostile.items():
        run_dir = make_run(runs / name, epochs=1)
        target = run_dir / file
        shutil.rmtree(target) if target.is_dir() else target.unlink()
        if name == "huge":
            target.write_text("{}")
        make(target)
    listed = {s.name: s for s in discover_runs(runs)}
    assert listed["good"].status == "finished"
    for name, (_, _, words) in hostile.items():
        assert listed[name].status == "unreadable" and words in listed[name].problem
        run = load_run(runs / name)
        assert run.status == "unreadable" and any(words in p for p in run.problems)
        assert "leaked" not in repr(run.config) and fingerprint(runs / name)  # no read, no block
    good = load_run(runs / "good")
    assert good.problems == () and len(good.records) == 3
    assert figures.difficulty_figure(good).data  # still renders


def test_events_view_reads_only_the_tail(tmp_path):
    run_dir = make_run(tmp_path / "runs" / "long")
    with (run_dir / EVENTS).open("a") as f:
        for i in range(200_000):
            f.write(f"line {i}\n")
    run = load_run(run_dir)
    lines = run.events.splitlines()
    assert lines[-1] == "line 199999" and len(lines) == 40


@pytest.mark.parametrize("payload", ["[" * 100_000 + "]" * 100_000, '{"epochs": ' + "9" * 5000 + "}",
                                     '{"pid": 18446744073709551616}'])
def test_deep_nesting_and_huge_numbers_in_run_files_are_problems_not_crashes(tmp_path, payload):
    """Nesting past the stack, an integer past Python's digit limit or a pid past 2^64 in config.json, state.json
    or epochs.jsonl: the run's card names the problem, the runs list, the fingerprint and the good run beside it
    are unaffected (these used to raise out of the reader and empty every user's run list)."""
    runs = tmp_path / "runs"
    make_run(runs / "good")
    for name in ("config.json", "state.json", "epochs.jsonl"):
        bad = runs / f"bad-{name.split('.')[0]}"
        make_run(bad)
        (bad / name).write_text(payload + ("\n" if name.endswith("jsonl") else ""))
        run = load_run(bad)
        fingerprint(bad)
        assert views.run_card(run) and isinstance(figures.curves_figure([run]), go.Figure)
    listed = {s.name: s for s in discover_runs(runs)}
    assert set(listed) == {"good", "bad-config", "bad-state", "bad-epochs"} and listed["good"].status == "finished"
    assert views.runs_frame(listed.values()).shape[0] == 4


def test_a_small_table_file_that_decodes_to_a_gigabyte_is_refused_before_it_is_expanded(tmp_path):
    """Round 4, failure 6: 100,000 rows of one repeated 10 kB string (dictionary-encoded: a few hundred kB on disk,
    about 1 MB in its metadata) passed the metadata budget and took the lab to 5 GB for one view. The text columns
    are read as stored and their decoded size measured before anything is expanded."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from genenv_lab.rundir.read import TABLE_FILE_DECODED, read_table
    from genenv_lab.rundir.layout import RunDirError

    bomb = make_run(tmp_path / "runs" / "bomb", epochs=1)
    path = bomb / "tasks" / "epoch_001.parquet"
    row = pq.read_table(path).slice(0, 1).to_pylist()[0]
    rows = 99_999
    table = pa.Table.from_pylist([row]).take([0] * rows)
    repeated = pa.DictionaryArray.from_arrays(pa.array([0] * rows, pa.int32()), pa.array(["x" * 10_000]))
    table = table.set_column(table.schema.get_field_index("raw"), "raw", repeated)  # 10 kB once, an index a row
    pq.write_table(table, path, compression="zstd", store_schema=False)
    meta = pq.ParquetFile(path).metadata
    assert path.stat().st_size < 2 * 2**20 and sum(meta.row_group(i).total_byte_size
                                                   for i in range(meta.num_row_groups)) < TABLE_FILE_DECODED
    with pytest.raises(RunDirError, match="decode to 9[0-9][0-9] MB"):
        read_table(bomb, "tasks")
    run = load_run(bomb)
    assert len(run.tasks) == 0 and any("decode to" in p for p in run.problems)
    assert len(run.records) == 1 and views.run_card(run)


def test_the_runs_list_rereads_only_the_runs_that_changed(tmp_path, monkeypatch):
    """Round 4, failure 9 (runs list): every refresh parsed every run's whole epochs.jsonl (12 s for a 70 MB one,
    for every user). A run whose files are unchanged is not read again; one that changed is."""
    from genenv_lab.lab import runs as runs_module

    root = tmp_path / "runs"
    make_run(root / "a")
    make_run(root / "b")
    read = []
    real = runs_module.summarize
    monkeypatch.setattr(runs_module, "summarize", lambda path, name=None: read.append(name) or real(path, name))
    first = {s.name: s.epochs_done for s in discover_runs(root)}
    assert sorted(read) == ["a", "b"]
    read.clear()
    assert {s.name: s.epochs_done for s in discover_runs(root)} == first and read == []
    with (root / "b" / "events.log").open("a") as fh:
        fh.write("one more line\n")
    discover_runs(root)
    assert read == ["b"]


def test_a_manifest_naming_half_a_million_runs_is_cut_and_says_so(tmp_path):
    """Round 4, failure 9 (comparisons): a 3 MB manifest of 480,000 seeds cost 25 s and a 79 MB response on every
    page load; the lab reads at most COMPARISON_RUNS runs of one comparison and the card says what was cut."""
    import json as _json

    from genenv_lab.lab.comparisons import COMPARISON_RUNS, load_comparison

    folder = tmp_path / "runs" / "cmp"
    folder.mkdir(parents=True)
    (folder / "manifest.json").write_text(_json.dumps({"entries": [{"label": "tiny:genenv", "config": {}}],
                                                       "seeds": list(range(480_000))}))
    data = load_comparison(folder)
    assert len(data.runs) == COMPARISON_RUNS
    assert any("480,000 runs" in p for p in data.problems)


@pytest.mark.parametrize("case", ["baseline-deep", "baseline-digits", "alpha-digits", "epochs-digits"])
def test_huge_numbers_in_a_runs_settings_are_one_problem_on_its_card(tmp_path, case):
    """Round 4, failure 14: a 4000-digit ``alpha`` or ``last_complete_epoch``, or a baseline.json nested 1000 deep or
    holding a 5000-digit value, failed that run's view and /run_summary; now the card shows the run, the value
    left out (and said where it is read as a problem)."""
    import json as _json

    from genenv_lab.lab.runs import summarize

    run_dir = make_run(tmp_path / "runs" / "r")
    if case == "baseline-deep":
        (run_dir / "baseline.json").write_text("[" * 1000 + "]" * 1000)
    elif case == "baseline-digits":
        (run_dir / "baseline.json").write_text('{"eval/domain": ' + "9" * 5000 + "}")
    elif case == "alpha-digits":
        cfg = _json.loads((run_dir / "config.json").read_text())
        cfg["curriculum"]["alpha"] = int("9" * 4000)
        (run_dir / "config.json").write_text(_json.dumps(cfg))
    else:
        state = _json.loads((run_dir / "state.json").read_text())
        (run_dir / "state.json").write_text(_json.dumps({**state, "last_complete_epoch": int("9" * 4000)}))
    run = load_run(run_dir)
    assert views.run_card(run) and isinstance(figures.curves_figure([run]), go.Figure)
    assert summarize(run_dir).name == "r"
    if case.startswith("baseline"):
        assert any("baseline.json" in p for p in run.problems)
    if case == "alpha-digits":
        assert run.alpha is None
        assert any("curriculum.alpha is not a finite number; it is left out" in p for p in run.problems)  # round 5
    if case == "epochs-digits":
        assert any("last_complete_epoch is not a whole number" in p for p in run.problems)


def test_a_small_table_file_of_200000_rows_is_refused_from_its_metadata_before_decoding(tmp_path):
    """A compressed parquet of 200,000 identical rows (kilobytes on disk, hundreds of MB once shown) passes the
    file-size check; its metadata states the rows, so the one table reader refuses it before decoding, and the
    lab shows the rest of that run with one sentence (the run beside it is untouched)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from genenv_lab.rundir.read import TABLE_FILE_ROWS, read_table
    from genenv_lab.rundir.layout import RunDirError

    runs = tmp_path / "runs"
    make_run(runs / "good")
    bomb = make_run(runs / "bomb", epochs=1)
    path = bomb / "attempts" / "epoch_001.parquet"
    row = pq.read_table(path).slice(0, 1).to_pylist()[0]
    pq.write_table(pa.Table.from_pylist([row] * 200_000), path, compression="zstd")
    assert path.stat().st_size < 256 * 1024 and 200_000 > TABLE_FILE_ROWS
    with pytest.raises(RunDirError, match="200,000 rows"):
        read_table(bomb, "attempts")
    run = load_run(bomb)
    assert len(run.attempts) == 0 and any("200,000 rows" in p and "budget" in p for p in run.problems)
    assert len(run.records) == 1 and figures.difficulty_figure(run).data  # the rest of the run still shows
    assert load_run(runs / "good").problems == ()


def test_a_long_runs_tables_are_read_for_a_sample_of_its_epochs_and_its_card_says_so(tmp_path):
    """Past DRAWN_EPOCHS epochs the lab reads the tasks and attempts of an evenly spaced sample (the newest all),
    so that a 10,000-epoch run's view takes seconds; the records (curves) stay whole and the card says what was read."""
    import importlib.util

    from genenv_lab.lab.runs import DRAWN_EPOCHS, TAIL_EPOCHS, drawn_epochs

    spec = importlib.util.spec_from_file_location("long_run_load", ROOT / "benchmarks" / "long_run_load.py")
    long_run = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(long_run)
    source = make_run(tmp_path / "runs" / "short", epochs=1)
    run_dir = long_run.make_long_run(source, tmp_path / "runs" / "long", DRAWN_EPOCHS + 100)
    run, short = load_run(run_dir), load_run(source)  # each epoch file of the long run is a copy of short's epoch 1
    assert len(run.records) == DRAWN_EPOCHS + 100 and run.problems == ()
    assert len(run.tasks) == DRAWN_EPOCHS * len(short.tasks) and len(run.attempts) == DRAWN_EPOCHS * len(short.attempts)
    read = drawn_epochs(DRAWN_EPOCHS + 100)
    assert len(read) == DRAWN_EPOCHS and read[0] == 1 and read[-TAIL_EPOCHS:] == list(range(351, 401))
    assert "300 of its 400 epochs" in run.sampled and run.sampled in views.run_card(run)
    assert figures.difficulty_figure(run).data and glance_figure(run).data
    assert short.sampled == ""


def test_the_tasks_table_sends_the_newest_rows_that_match_at_most(run_dir):
    run = load_run(run_dir)
    every = views.tasks_frame(run, limit=None)
    newest = views.tasks_frame(run, limit=3)
    assert len(every) > 3 and list(newest["task_id"]) == list(every["task_id"])[-3:]
    assert list(views.tasks_frame(run, validity="valid", limit=2)["task_id"]) == \
        list(views.tasks_frame(run, validity="valid", limit=None)["task_id"])[-2:]
    assert len(views.tasks_frame(run)) == len(every) <= views.TASK_ROWS


def test_attempts_are_read_when_asked_and_never_from_a_folder_that_turned_hostile(run_dir, tmp_path):
    from genenv_lab.lab.runs import with_attempts

    lazy = load_run(run_dir, attempts=False)
    assert not lazy.attempts_read and len(lazy.attempts) == 0 and len(lazy.tasks)
    full = with_attempts(lazy)
    assert full.attempts_read and len(full.attempts) == len(load_run(run_dir).attempts) > 0
    assert with_attempts(full) is full
    task = str(full.attempts["task_id"].iloc[0])
    assert len(views.attempts_frame(full, task)) and views.attempts_frame(lazy, task).empty
    bad = shutil.copytree(run_dir, tmp_path / "turned")
    lazy_bad = load_run(bad, attempts=False)
    target = bad / "attempts" / "epoch_001.parquet"
    target.unlink()
    os.mkfifo(target)
    refused = with_attempts(lazy_bad)  # a FIFO would block the reader: not opened
    assert refused.status == "unreadable" and any("not a regular file" in p for p in refused.problems)
