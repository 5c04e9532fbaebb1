"""The comparison machinery: grid runs, resume, table, summary, report (tiny preset: numbers mean nothing)."""

import subprocess
import sys

import pandas as pd
import pytest

from genenv_lab.compare import (band_residence, check_jobs, collect, compare_grid, summarise, sweep_entries,
                                threads_per_job, variant_entries)
from genenv_lab.config import preset
from genenv_lab.core.metrics import (CUMULATIVE_AGENT_ROLLOUTS, CUMULATIVE_AGENT_TOKENS, DRY_FRONTIER_INFORMATIVE,
                                     DRY_STEP_FRAC, FEATURES_LEVEL, REFERENCE_P_HAT)



def test_variant_entries_and_validation():
    entries = variant_entries(["tiny"], ["genenv", "offline_teacher"], teacher="tiny", epochs=2)
    labels = [label for label, _ in entries]
    assert labels == ["tiny:genenv", "tiny:offline_teacher_x1.8", "tiny:offline_teacher_x3.3"]
    assert all(cfg.eval.every == 1 and cfg.eval.benchmark == "domain" for _, cfg in entries)
    with pytest.raises(ValueError, match="teacher"):
        variant_entries(["tiny"], ["offline_teacher"])
    tools = variant_entries(["tiny"], ["genenv"], domain="tools", data_dir="/data")[0][1]  # BFCL simple
    assert (tools.eval.benchmark, tools.eval.category, tools.loop.domain) == ("bfcl", "simple_python", "tools")
    assert tools.eval.data_dir == "/data"
    sweep = sweep_entries("tiny", alphas=[0.3, 0.5], shapes=["gaussian", "azr"])
    assert len(sweep) == 4 and {c.curriculum.shape for _, c in sweep} == {"gaussian", "azr"}


def test_grid_with_fake_backend_collects_summarises_and_resumes(tmp_path, scripted_backend):
    entries = variant_entries(["tiny"], ["genenv", "random_env", "static"], epochs=3, reference_tasks=4)
    calls = []

    def factory(cfg):
        calls.append((cfg.loop.seed, cfg.loop.variant))
        return scripted_backend(num_generations=cfg.agent.num_generations)

    table = compare_grid(entries, 2, tmp_path, progress=False, backend_factory=factory)
    assert len(table) == 3 * 2 * (3 + 1) and len(calls) == 6  # epochs 1-3 and the untrained agent's epoch 0
    # seed by seed: a comparison stopped early holds every arm of its first seeds
    assert calls == [(s, v) for s in (0, 1) for v in ("genenv", "random_env", "static")]
    assert table["heldout"].notna().all()
    start, trained = table[table["epoch"] == 0], table[table["epoch"] > 0]
    assert (start["tasks_consumed"] == 0).all() and start["p_hat_mean"].isna().all() and len(start) == 6
    assert trained[REFERENCE_P_HAT].notna().all()
    assert (table.groupby(["label", "seed"])["tasks_consumed"].apply(lambda s: s.is_monotonic_increasing)).all()
    summary = summarise(table)
    assert {"heldout_mean", "heldout_std", f"{REFERENCE_P_HAT}_mean"} <= set(summary.columns)
    assert (summary["heldout_count"] == 2).all()
    for name in ("comparison.csv", "comparison.parquet", "summary.csv", "band_residence.csv", "report.html"):
        assert (tmp_path / name).is_file()
    assert "plotly" in (tmp_path / "report.html").read_text()[:5000].lower()
    # finished runs are skipped the second time
    calls.clear()
    again = compare_grid(entries, 2, tmp_path, progress=False, backend_factory=factory)
    assert calls == [] and len(again) == len(table)
    residence = band_residence(table)
    assert {"label", "seed", "entered_at_epoch", "stayed", "epochs_in_band"} <= set(residence.columns)
    assert len(residence) == 6
    assert len(pd.read_csv(tmp_path / "band_residence.csv")) == 6


def test_band_residence_judges_each_label_against_its_own_band():
    table = pd.DataFrame({"label": ["a"] * 3 + ["b"] * 3, "seed": [0] * 6, "epoch": [1, 2, 3] * 2,
                          "p_hat_mean": [0.9, 0.5, 0.45, 0.9, 0.3, float("nan")]})
    res = band_residence(table, bands={"b": (0.3, 0.05)}).set_index("label")
    assert res.loc["a", "entered_at_epoch"] == 2 and res.loc["a", "stayed"] and res.loc["a", "epochs_in_band"] == 2
    assert (res.loc["a", "alpha"], res.loc["a", "k_min"]) == (0.5, 0.1)  # the defaults
    # b enters its own band (0.25–0.35) at epoch 2 but the unmeasured epoch 3 (NaN) counts as outside
    assert res.loc["b", "entered_at_epoch"] == 2 and not res.loc["b", "stayed"] and res.loc["b", "alpha"] == 0.3
    never = band_residence(table, alpha=0.1, k_min=0.05)
    assert never["entered_at_epoch"].isna().all() and not never["stayed"].any()


def test_compare_cli_end_to_end_on_tiny(tmp_path):
    out = tmp_path / "cmp"
    proc = subprocess.run([sys.executable, "-m", "genenv_lab.cli", "compare", "--presets", "tiny", "--variants",
                           "genenv", "random_env", "--seeds", "1", "--epochs", "2", "--reference-tasks", "3",
                           "--eval-limit", "4", "--out", str(out)], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    table = pd.read_csv(out / "comparison.csv")
    assert list(table.columns) == list(collect(out).columns)  # the registry's keys: the table as collect names it
    assert sorted(table["label"].unique()) == ["tiny:genenv", "tiny:random_env"]
    assert len(table) == 4 + 2 and table["heldout"].between(0, 1).all()
    assert sorted(table["epoch"].unique()) == [0, 1, 2]
    assert collect(out).shape[0] == 4 + 2  # the untrained agent's epoch 0 of each run too
    trained = table[table["epoch"] > 0]  # the real backend counts its completions' tokens with the tokenizer
    assert (trained[CUMULATIVE_AGENT_TOKENS] > 0).all() and (trained[CUMULATIVE_AGENT_ROLLOUTS] > 0).all()


def test_parallel_runs_write_what_sequential_runs_write_at_the_same_thread_count(tmp_path):
    """--jobs 2: each run in its own process with its share of the cores equals the run made one at a time with that
    many torch threads (the real tiny model, built once by the parent)."""
    import torch

    entries = variant_entries(["tiny"], ["genenv", "static"], epochs=2, reference_tasks=3, eval_limit=4)
    before = torch.get_num_threads()
    torch.set_num_threads(threads_per_job(2))
    try:
        one_at_a_time = compare_grid(entries, 1, tmp_path / "seq", progress=False)
    finally:
        torch.set_num_threads(before)
    parallel = compare_grid(entries, 1, tmp_path / "par", progress=False, jobs=2)
    assert sorted(parallel["label"].unique()) == ["tiny:genenv", "tiny:static"] and len(parallel) == 2 * 3
    columns = [c for c in one_at_a_time.columns if c != "wall_s"]
    pd.testing.assert_frame_equal(one_at_a_time[columns], parallel[columns])
    assert (tmp_path / "par" / "report.html").is_file()


def test_a_failing_parallel_run_is_named_no_further_run_starts_and_the_same_command_continues(tmp_path):
    """--jobs 2 with one run's folder corrupt: that run fails with the folder's own one-line error (raised in its
    process, carried to the caller), the run beside it finishes, the run not yet started is not started, the corrupt
    file is left as it was; once the user moves it away the same call runs only what is missing."""
    from genenv_lab.compare import run_dir_for
    from genenv_lab.rundir.layout import RunDirError
    from genenv_lab.rundir.read import read_state

    entries = variant_entries(["tiny"], ["genenv", "static", "random_env"], epochs=2, reference_tasks=3,
                              eval_limit=4)
    out = tmp_path / "par"
    bad = run_dir_for(out, "tiny:static", 0)
    bad.mkdir(parents=True)
    (bad / "state.json").write_text("{not json")
    (out / "manifest.json").write_text("{}")  # a comparison's folder (a folder without one is refused untouched)
    with pytest.raises(RunDirError, match=r"state\.json is corrupt"):
        compare_grid(entries, 1, out, progress=False, jobs=2)
    assert (bad / "state.json").read_text() == "{not json"
    good = run_dir_for(out, "tiny:genenv", 0)
    assert read_state(good)["status"] == "finished"
    assert not run_dir_for(out, "tiny:random_env", 0).exists()  # queued behind the failure: never started
    kept = (good / "epochs.jsonl").read_bytes()
    bad.rename(tmp_path / "moved-away")
    table = compare_grid(entries, 1, out, progress=False, jobs=2)
    assert sorted(table["label"].unique()) == ["tiny:genenv", "tiny:random_env", "tiny:static"]
    assert len(table) == 3 * 3
    assert (good / "epochs.jsonl").read_bytes() == kept  # the finished run was skipped, not run again


def _children(pid: int) -> list[int]:
    from pathlib import Path

    return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def _alive(pid: int) -> bool:
    import os
    from pathlib import Path

    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.is_file() and stat.read_text().rsplit(")", 1)[1].split()[0] == "Z")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads a process's children from /proc")
def test_a_signal_to_a_parallel_comparison_alone_stops_its_runs_cleanly_and_starts_no_other(tmp_path):
    """SIGTERM to the comparison's process only (kill PID, a supervisor, timeout): its running runs stop as
    ``interrupted`` and their processes end with it, the run still waiting never starts, and nothing hangs."""
    import signal
    import time

    from genenv_lab.compare import run_dir_for
    from genenv_lab.rundir.layout import RunDirError
    from genenv_lab.rundir.read import read_state

    out = tmp_path / "cmp"
    proc = subprocess.Popen([sys.executable, "-m", "genenv_lab.cli", "compare", "--presets", "tiny", "--variants",
                             "genenv", "static", "random_env", "--seeds", "1", "--epochs", "60",
                             "--reference-tasks", "3", "--eval-limit", "4", "--jobs", "2", "--out", str(out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    started = [run_dir_for(out, f"tiny:{v}", 0) for v in ("genenv", "static")]
    deadline = time.time() + 240
    try:
        while True:
            assert proc.poll() is None and time.time() < deadline, "no run committed an epoch"
            try:
                if all(read_state(run)["last_complete_epoch"] >= 1 for run in started):
                    break
            except (RunDirError, OSError, ValueError, KeyError):  # not written yet
                pass
            time.sleep(0.05)
        workers = _children(proc.pid)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=120) != 0
    finally:
        if proc.poll() is None:
            proc.kill()
    for run in started:
        state = read_state(run)
        assert state["status"] == "interrupted" and state["last_complete_epoch"] < 60, state
    assert not run_dir_for(out, "tiny:random_env", 0).exists()
    time.sleep(1.0)
    assert workers and not [pid for pid in workers if _alive(pid)]


def test_jobs_must_be_positive_and_run_only_on_the_cpu():
    cpu = preset("tiny")
    check_jobs(1, [cpu]) or check_jobs(4, [cpu])  # fine
    with pytest.raises(ValueError, match="pass 1"):
        check_jobs(0, [cpu])
    with pytest.raises(ValueError, match="colab-t4 runs on a GPU: pass --jobs 1"):
        check_jobs(2, [cpu, preset("colab-t4")])
    check_jobs(1, [preset("colab-t4")])  # one at a time is always allowed


def test_jobs_above_one_are_refused_where_a_gpu_is_visible(monkeypatch):
    """The hf engine runs on a visible GPU: several runs at once would share it (the device's answer is set here,
    this machine has none)."""
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    with pytest.raises(ValueError, match="a GPU is visible"):
        check_jobs(2, [preset("tiny")])
    check_jobs(1, [preset("tiny")])
    assert threads_per_job(1) >= threads_per_job(2) >= 1 and threads_per_job(10_000) == 1


def test_threads_per_job_keeps_to_omp_num_threads_where_it_is_set(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    share = threads_per_job(1)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert threads_per_job(1) == 1 and threads_per_job(10_000) == 1
    monkeypatch.setenv("OMP_NUM_THREADS", str(share + 4))
    assert threads_per_job(1) == share  # never more than the job's share of the cores
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv("OMP_NUM_THREADS", bad)
        with pytest.raises(ValueError, match="OMP_NUM_THREADS"):
            threads_per_job(2)


def test_missing_held_out_benchmark_data_fails_before_any_model_loads(tmp_path):
    out = tmp_path / "cmp"
    proc = subprocess.run([sys.executable, "-m", "genenv_lab.cli", "compare", "--presets", "tiny", "--variants",
                           "genenv", "--domain", "tools", "--seeds", "1", "--data-dir", str(tmp_path / "nowhere"),
                           "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "held-out data missing" in proc.stdout and "nowhere" in proc.stdout and "gorilla" in proc.stdout
    assert not out.exists()


def test_online_filter_in_a_grid_counts_its_screening_and_the_report_reads_rollouts_to_reach(tmp_path,
                                                                                             scripted_backend):
    from genenv_lab.cli.commands import build_parser

    args = build_parser().parse_args(["compare", "--variants", "genenv", "static", "online_filter", "--out", "x"])
    assert args.variants == ["genenv", "static", "online_filter"]
    entries = variant_entries(["tiny"], ["genenv", "static", "online_filter"], epochs=2, reference_tasks=3)
    assert [cfg.loop.variant for _, cfg in entries] == ["genenv", "static", "online_filter"]
    table = compare_grid(entries, 2, tmp_path, progress=False,
                         backend_factory=lambda cfg: scripted_backend(num_generations=cfg.agent.num_generations))
    assert table[CUMULATIVE_AGENT_ROLLOUTS].notna().all() and table[CUMULATIVE_AGENT_TOKENS].notna().all()
    assert (table.loc[table["epoch"] == 0, [CUMULATIVE_AGENT_ROLLOUTS, CUMULATIVE_AGENT_TOKENS]] == 0).all().all()
    assert table.groupby(["label", "seed"])[CUMULATIVE_AGENT_ROLLOUTS].apply(lambda s: s.is_monotonic_increasing).all()
    last = table[table["epoch"] == 2].groupby("label")[CUMULATIVE_AGENT_ROLLOUTS].mean()
    # the same GRPO batch size per epoch; online_filter pays for its screening on top
    assert last["tiny:online_filter"] > last["tiny:static"]
    reach = pd.read_csv(tmp_path / "rollouts_to_reach.csv")
    assert list(reach["label"]) == ["tiny:static", "tiny:online_filter"]
    assert set(reach["reference"]) == {"tiny:genenv"}
    mean = table.groupby(["label", "epoch"])[[CUMULATIVE_AGENT_ROLLOUTS, "heldout"]].mean()
    for row in reach.itertuples():  # the ratio as defined: baseline's final rollouts ÷ genenv's at first reach
        assert row.target_heldout == pytest.approx(mean.loc[(row.label, 2), "heldout"])
        assert row.baseline_rollouts == pytest.approx(mean.loc[(row.label, 2), CUMULATIVE_AGENT_ROLLOUTS])
        if row.verdict.startswith("not reached"):
            assert pd.isna(row.ratio) and (mean.loc["tiny:genenv", "heldout"] < row.target_heldout - 1e-9).all()
        else:
            reached = mean.loc[("tiny:genenv", int(row.reached_at_epoch))]
            assert reached["heldout"] >= row.target_heldout - 1e-9
            assert row.ratio == pytest.approx(row.baseline_rollouts / reached[CUMULATIVE_AGENT_ROLLOUTS]) or (
                reached[CUMULATIVE_AGENT_ROLLOUTS] == 0 and row.ratio == float("inf"))


def test_rollouts_to_reach_table_hand_worked():
    from genenv_lab.compare import REACH_COLUMNS, report_figure, rollouts_to_reach_table

    rows = []
    curves = {"p:genenv": [(0, 0.2), (100, 0.5), (200, 0.7)], "p:static": [(0, 0.2), (100, 0.3), (200, 0.5)],
              "p:online_filter": [(0, 0.2), (300, 0.6), (600, 0.8)], "q:static": [(0, 0.1), (50, 0.2), (90, 0.3)]}
    for label, points in curves.items():
        for seed, jitter in ((0, -0.01), (1, 0.01)):  # two seeds around the mean
            for epoch, (rollouts, score) in enumerate(points):
                rows.append({"label": label, "variant": label.split(":")[1], "seed": seed, "epoch": epoch,
                             "heldout": score + jitter, CUMULATIVE_AGENT_ROLLOUTS: rollouts, "tasks_consumed": epoch,
                             CUMULATIVE_AGENT_TOKENS: rollouts * 2})
    table = pd.DataFrame(rows)
    for col in ("p_hat_mean", REFERENCE_P_HAT, "in_band_frac", "valid_frac"):
        table[col] = float("nan")
    reach = rollouts_to_reach_table(table).set_index("label")
    assert list(reach.columns) == list(REACH_COLUMNS)[1:] and set(reach.index) == {"p:static", "p:online_filter"}
    static = reach.loc["p:static"]  # genenv scores 0.5 at epoch 1 with 100 rollouts; static spent 200 on it
    assert (static["reached_at_epoch"], static["reference_rollouts"], static["ratio"]) == (1, 100, 2.0)
    online = reach.loc["p:online_filter"]  # 0.8: genenv never gets there
    assert pd.isna(online["reached_at_epoch"]) and pd.isna(online["ratio"]) and "not reached" in online["verdict"]
    fig = report_figure(table)  # q:static has no genenv beside it (another preset): no row
    cells = [t for t in fig.data if t.type == "table"][0].cells.values
    assert list(cells[0]) == ["p:static", "p:online_filter"] and list(cells[1]) == ["2.00", "not reached"]


def test_first_seed_runs_seeds_n_onward_and_compare_ends_with_the_verdict(tmp_path, monkeypatch, capsys,
                                                                          scripted_backend):
    import json

    import genenv_lab.cli.commands as cli
    import genenv_lab.compare as compare

    parse = cli.build_parser().parse_args
    assert parse(["compare", "--out", "x"]).first_seed == 0 and parse(["sweep", "--out", "x"]).first_seed == 0
    assert parse(["sweep", "--first-seed", "3", "--out", "x"]).first_seed == 3
    real, asked = compare.compare_grid, []

    def scripted_grid(entries, seeds, out, **kwargs):  # the CLI's grid on the scripted backend
        asked.append(list(seeds))
        return real(entries, seeds, out, progress=False,
                    backend_factory=lambda cfg: scripted_backend(num_generations=cfg.agent.num_generations))

    monkeypatch.setattr(compare, "compare_grid", scripted_grid)
    monkeypatch.setattr(cli, "_interruptible", lambda: None)
    out = tmp_path / "cmp"
    assert cli.main(["compare", "--presets", "tiny", "--variants", "genenv", "static", "--seeds", "2",
                     "--first-seed", "5", "--epochs", "2", "--reference-tasks", "3", "--out", str(out)]) == 0
    assert asked == [[5, 6]]
    names = sorted(p.name for p in (out / "runs").iterdir())
    assert names == ["tiny_genenv-s5", "tiny_genenv-s6", "tiny_static-s5", "tiny_static-s6"]
    assert json.loads((out / "runs" / "tiny_static-s6" / "config.json").read_text())["loop"]["seed"] == 6
    table = collect(out)
    assert sorted(table["seed"].unique()) == [5, 6]
    assert json.loads((out / "manifest.json").read_text())["seeds"] == [5, 6]
    printed = capsys.readouterr().out
    # the terminal: the files, then the verdict at a glance (a row per arm, a sentence), every line within 120
    # columns; the full verdict paragraph goes to verdict.txt, the full tables to the CSV files
    assert f"in {out}/: verdict.txt, report.html" in printed and "  tables: comparison.csv, summary.csv" in printed
    assert max(len(line) for line in printed.splitlines()) <= 120
    tail = printed[printed.index("tiny, 2 epochs:"):].splitlines()
    assert tail[1].split()[:2] == ["arm", "seeds"] and tail[2].split()[0] == "genenv" and tail[3].split()[0] == "static"
    assert tail[4].startswith("The curriculum ") and "the fixed set (static), mean over 2 seeds." in tail[4]
    assert tail == compare.glance(table)
    closing = (out / "verdict.txt").read_text()
    assert " ".join(closing.split()) == " ".join(compare.verdict(table).split())
    # the same comparison put beside a study's per-seed differences: its own paired_by_seed.csv (finished runs skip)
    study = out / "paired_by_seed.csv"
    rows = pd.read_csv(study)
    assert list(rows.columns) == ["label", "reference", "seed", "difference"] and sorted(rows["seed"]) == [5, 6]
    args = ["compare", "--presets", "tiny", "--variants", "genenv", "static", "--seeds", "2", "--first-seed", "5",
            "--epochs", "2", "--reference-tasks", "3", "--out", str(out)]
    assert cli.main(args + ["--spread-from", str(study)]) == 0
    printed = " ".join(capsys.readouterr().out.split())
    assert "For scale:" in (out / "verdict.txt").read_text()
    mean = rows["difference"].mean()
    assert f"For scale: over seeds 5–6 of {study}, genenv − static at the final epoch was {mean:+.3f}" in printed
    assert f"this comparison's {mean:+.3f} lies inside that range" in printed
    (tmp_path / "bad.csv").write_text("seed,score\n1,0.5\n")
    assert cli.main(args + ["--spread-from", str(tmp_path / "bad.csv")]) == 2
    assert "is not a paired_by_seed.csv: no column(s)" in " ".join(capsys.readouterr().out.split())
    assert asked == [[5, 6], [5, 6]]  # the bad file was refused before any run
    assert "mean ± std over 2 seeds" in closing and "Against the fixed set (static) the curriculum" in closing


@pytest.mark.parametrize("argv, message", [
    (["--seeds", "1000000000"], "above 10000"),  # round 4, L1: a MemoryError traceback before any run
    (["--first-seed", str(2**32)], "above 4294967295"),
])
def test_a_grid_too_large_for_its_seeds_is_refused_in_one_line(argv, message, capsys):
    import genenv_lab.cli.commands as cli

    with pytest.raises(SystemExit) as exc:
        cli.build_parser().parse_args(["compare", "--out", "x", *argv])
    assert exc.value.code == 2 and message in capsys.readouterr().err


def test_a_grid_running_past_the_last_seed_is_refused_before_any_run(tmp_path, capsys):
    import genenv_lab.cli.commands as cli

    out = tmp_path / "cmp"
    assert cli.main(["compare", "--presets", "tiny", "--variants", "genenv", "--seeds", "2",
                     "--first-seed", str(2**32 - 1), "--out", str(out)]) == 2
    assert "runs past seed 4294967295" in " ".join(capsys.readouterr().out.split())
    assert not (out / "runs").exists()


def test_demo_script_runs_a_comparison_the_cli_accepts():
    """scripts/demo.sh (set-up, then minutes of CPU) is not run here; its command line is parsed as the CLI would."""
    import shlex
    from pathlib import Path

    import genenv_lab.compare as compare
    from genenv_lab.cli.commands import build_parser

    root = Path(__file__).resolve().parent.parent
    script = (root / "scripts" / "demo.sh").read_text()
    joined = script.replace("\\\n", " ")  # continuation lines
    line = next(li for li in joined.splitlines() if li.startswith("genenv-lab compare"))
    argv = shlex.split(line)[1:]
    assert argv[-1] == "$@"  # extra arguments pass through, after the defaults (so they win)
    args = build_parser().parse_args(argv[:-1])
    assert (args.presets, args.variants, args.seeds, args.out, args.jobs) == (
        ["cpu-dry-hint-long"], ["genenv", "static"], 1, "runs/demo", 2)
    study = compare.read_study(root / args.spread_from)  # the committed study the verdict puts one seed beside
    assert set(study["label"]) == {f"cpu-dry-hint-long:{arm}" for arm in ("static", "random_env", "online_filter")}
    assert sorted(study["seed"].unique()) == list(range(36, 44))
    assert "python app.py --runs $out/runs" in script and "--variants genenv static random_env" in script


def test_paired_differences_pair_by_seed_within_a_preset_and_skip_unpaired_seeds():
    from genenv_lab.compare import PAIRED_COLUMNS, paired_differences

    finals = {("p", "genenv"): {0: 0.50, 1: 0.60, 2: 0.40}, ("p", "static"): {0: 0.45, 1: 0.60, 2: 0.50, 3: 0.9},
              ("p", "random_env"): {1: 0.50}, ("q", "static"): {0: 0.1}}
    rows = [{"label": f"{p}:{v}", "variant": v, "seed": s, "epoch": e, "heldout": h if e == 2 else 0.0}
            for (p, v), scores in finals.items() for s, h in scores.items() for e in (0, 1, 2)]
    rows.append({"label": "p:genenv", "variant": "genenv", "seed": 0, "epoch": 3, "heldout": None})  # no score
    out = paired_differences(pd.DataFrame(rows)).set_index("label")
    assert list(out.reset_index().columns) == list(PAIRED_COLUMNS)
    assert set(out.index) == {"p:static", "p:random_env"}  # q has no genenv; genenv is not its own baseline
    static = out.loc["p:static"]  # seed 3 has no genenv run: left out; the score is each run's last scored epoch
    assert static["seeds"] == 3 and static["mean"] == pytest.approx((0.05 + 0.0 - 0.10) / 3)
    assert (static["wins"], static["ties"], static["losses"]) == (1, 1, 1)
    assert static["stderr"] == pytest.approx(static["std"] / 3 ** 0.5)
    one = out.loc["p:random_env"]  # one paired seed: a difference, no spread
    assert one["seeds"] == 1 and one["mean"] == pytest.approx(0.1) and pd.isna(one["std"]) and one["wins"] == 1


def test_every_column_is_a_registry_key_or_a_reading_compare_makes():
    """The table has no second set of names: a column is a key of the metric registry under its own name (``epoch``
    is one), or one of the few readings compare computes itself, or names the run (label, variant, seed)."""
    from genenv_lab.compare import COLUMNS, METRICS
    from genenv_lab.core.metrics import METRICS as REGISTRY

    readings = {"label", "variant", "seed", "heldout", "tasks_consumed", "informative_frac", "informative_groups"}
    assert set(COLUMNS) - {m.key for m in REGISTRY} == readings and len(set(COLUMNS)) == len(COLUMNS)
    assert set(METRICS) <= set(COLUMNS)


def test_late_averages_read_each_runs_own_second_half_and_last_third():
    from genenv_lab.compare import LATE_COLUMNS, late_averages

    rows = [{"label": "a", "seed": s, "epoch": e, "in_band_frac": e / 10, "p_hat_mean": e / 100,
             REFERENCE_P_HAT: 1.0 - e / 100} for s, epochs in ((0, 6), (1, 9)) for e in range(epochs + 1)]
    out = late_averages(pd.DataFrame(rows)).set_index("seed")
    # each late reading is named by its key and its window (late_column), never by a second name
    assert LATE_COLUMNS == ("in_band_frac, second half", "p_hat_mean, last third", "reference/p_hat, last third")
    assert list(out.columns) == ["label", *LATE_COLUMNS]
    # seed 0: 6 epochs, second half 4-6, last third 5-6; seed 1: 9 epochs, second half 5-9, last third 7-9
    assert out.loc[0, "in_band_frac, second half"] == pytest.approx(0.5)
    assert out.loc[0, "p_hat_mean, last third"] == pytest.approx(0.055)
    assert out.loc[1, "in_band_frac, second half"] == pytest.approx(0.7)
    assert out.loc[1, "p_hat_mean, last third"] == pytest.approx(0.08)
    assert out.loc[1, "reference/p_hat, last third"] == pytest.approx(0.92)


def test_a_counting_comparison_reads_dry_runs_and_efficiency_and_an_old_one_still_compares(tmp_path, scripted_counter):
    """genenv and static on ``count`` (the scripted counter: levels, a frontier): the verdict says how often static
    ran dry and the data efficiency paired by seed, the report draws both; the same runs with the instrument's keys
    removed (as written before it) compare as before, without the dry-run line."""
    import json
    import shutil

    from genenv_lab.compare import dry_run_table, efficiency_table, report_figure, verdict


    entries = variant_entries(["tiny"], ["genenv", "static"], epochs=4, domain="count", reference_tasks=2)
    table = compare_grid(entries, 2, tmp_path / "new", progress=False,
                         backend_factory=lambda cfg: scripted_counter(num_generations=cfg.agent.num_generations))
    dry = dry_run_table(table).set_index("variant")
    assert list(dry["epochs"]) == [4, 4]  # epochs 3-4 of each of 2 seeds
    text = verdict(table)
    static = dry.loc["static"]
    assert (f"\nDry run: static ran dry in {static['dry_epochs']} of 4 second-half epochs over 2 seeds" in text
            and f"genenv in {dry.loc['genenv', 'dry_epochs']} of 4" in text)
    eff = efficiency_table(table).set_index("measure")
    assert eff.loc["heldout_auc", "range_low"] == 0 and eff.loc["heldout_auc", "seeds"] == 2
    assert "Paired by seed (genenv − baseline): mean held-out score over the agent rollouts both arms' runs" in text
    assert " against genenv " in text and " over 0–" in text
    assert "Rollouts to reach each baseline's own final score on the same seed: static: genenv got there on" in text
    for name in ("efficiency.csv", "dry_run.csv"):
        assert len(pd.read_csv(tmp_path / "new" / name)) == 2
    assert len([t for t in report_figure(table).data if t.type == "table"]) == 2
    assert table[FEATURES_LEVEL].notna().any() and table[DRY_FRONTIER_INFORMATIVE].notna().any()

    old = tmp_path / "old"
    shutil.copytree(tmp_path / "new", old)
    for path in (old / "runs").glob("*/epochs.jsonl"):
        lines = [json.loads(line) for line in path.read_text().splitlines()]
        for r in lines:
            r["extra"] = {k: v for k, v in r["extra"].items() if not k.startswith(("dry/", "levels/", "heldout/"))}
        path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    before = collect(old)
    assert before[DRY_STEP_FRAC].isna().all() and dry_run_table(before).empty
    text_before = verdict(before)
    assert "Dry run" not in text_before and "Paired by seed" in text_before
    # the rest of the verdict does not depend on the new keys (the supply line reads the reference set, still there)
    assert text_before.split("\nSupply")[0] == text.split("\nDry run")[0]
    report_figure(before)


def test_a_pairs_auc_range_is_its_own_and_an_arm_spending_fewer_rollouts_shortens_only_its_own():
    """genenv − static is read over the rollouts genenv's and static's runs cover, whatever a third arm spends
    (online_filter screens, so it spends fewer); the third arm's own pair is read over its shorter range."""
    from genenv_lab.compare import efficiency_table
    from genenv_lab.compare.table import COLUMNS

    curves = {"genenv": [(0, 0.2), (100, 0.4), (200, 0.6), (300, 0.6)],
              "static": [(0, 0.2), (100, 0.2), (200, 0.2), (300, 0.2)],
              "online_filter": [(0, 0.2), (50, 0.2), (100, 0.2), (150, 0.2)]}
    rows = [{"label": f"p:{v}", "variant": v, "seed": s, "epoch": e, "heldout": h, CUMULATIVE_AGENT_ROLLOUTS: r}
            for v, curve in curves.items() for s in (0, 1) for e, (r, h) in enumerate(curve)]
    table = pd.DataFrame(rows, columns=list(COLUMNS))
    eff = efficiency_table(table)
    auc = eff[eff["measure"] == "heldout_auc"].set_index("label")
    assert tuple(auc.loc["p:static", ["range_low", "range_high"]]) == (0, 300)
    assert tuple(auc.loc["p:online_filter", ["range_low", "range_high"]]) == (0, 150)
    # genenv's mean score over 0-300 rollouts: the trapezoids 30 + 50 + 60 = 140 over 300
    assert auc.loc["p:static", "reference_mean"] == pytest.approx(140 / 300)
    # and over 0-150: 30 + (0.4 + 0.5) / 2 * 50 = 52.5 over 150
    assert auc.loc["p:online_filter", "reference_mean"] == pytest.approx(52.5 / 150)
    without = efficiency_table(table[table["variant"] != "online_filter"])
    pd.testing.assert_frame_equal(without[without["label"] == "p:static"].reset_index(drop=True),
                                  eff[eff["label"] == "p:static"].reset_index(drop=True))


# ------------------------------------------------------------------------ round 5: --out, signals, orphans, a full disk

def test_compare_out_on_a_folder_of_the_users_files_is_refused_in_one_line_and_leaves_them(tmp_path, capsys):
    """Round 5, P4: ``compare --out`` onto a folder of the user's files replaced summary.csv, report.html and
    efficiency.csv, exit 0. A non-empty folder without manifest.json is refused as ``run --out`` refuses one, before
    anything (the comparison's lock included) is written; a comparison's own folder and one holding only the lock of
    a comparison stopped before its manifest are accepted."""
    from genenv_lab.cli.commands import main
    from genenv_lab.compare import COMPARE_LOCK
    from genenv_lab.compare.grid import check_out
    from genenv_lab.rundir.layout import RunDirError

    user = tmp_path / "U"
    (user / "sub").mkdir(parents=True)
    files = {"summary.csv": "mine\n", "report.html": "mine\n", "efficiency.csv": "keep\n", "sub/notes.txt": "n\n"}
    for name, text in files.items():
        (user / name).write_text(text)
    for variants in (["genenv"], ["genenv", "static"]):
        code = main(["compare", "--presets", "tiny", "--variants", *variants, "--seeds", "1", "--epochs", "1",
                     "--out", str(user)])
        printed = capsys.readouterr()
        text = printed.out + printed.err
        assert code != 0 and "not empty" in text and "nothing was changed" in text, text
        assert "Traceback" not in text and len(text.strip().splitlines()) == 1
    assert {str(p.relative_to(user)): p.read_text() for p in user.rglob("*") if p.is_file()} == files
    assert sorted(p.name for p in user.iterdir()) == ["efficiency.csv", "report.html", "sub", "summary.csv"]
    stopped = tmp_path / "stopped"  # a comparison stopped between its lock and its manifest
    stopped.mkdir()
    (stopped / COMPARE_LOCK).write_text("")
    check_out(stopped)
    (user / "manifest.json").write_text("{}")  # a comparison's own folder: its runs are checked one by one later
    check_out(user)
    check_out(tmp_path / "new")
    with pytest.raises(RunDirError, match="not empty"):
        check_out(tmp_path)


def test_a_full_disk_while_the_report_is_written_leaves_no_truncated_report(tmp_path):
    """Round 5, P10: a full disk while report.html was written left a truncated file. Each file of the report is
    written to a temporary file and renamed: a write that fails leaves the previous file whole (here: a file-size
    limit, under which a write fails as on a full disk)."""
    out = tmp_path / "cmp"
    out.mkdir()
    (out / "report.html").write_text("the previous report")
    code = f"""
import resource, signal
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead of killing
import pandas as pd
from genenv_lab.compare import COLUMNS, write_report
resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
write_report(pd.DataFrame(columns=COLUMNS), {str(out)!r})
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0 and "File too large" in proc.stderr, proc.stderr[-2000:]
    assert (out / "report.html").read_text() == "the previous report"
    assert not [p.name for p in out.iterdir() if p.name.endswith(".tmp")]
    assert (out / "summary.csv").is_file()  # the small files before it were written whole


def _session(sid: int) -> list[int]:
    """The live processes of session ``sid`` (a comparison started with ``start_new_session``: its runs' processes
    and multiprocessing's resource tracker stay in it, whoever their parent becomes)."""
    from pathlib import Path

    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid and fields[0] != "Z":
            found.append(int(entry.name))
    return found


def _parallel_comparison(out, *extra):
    """``compare --jobs 2`` of two tiny arms for 60 epochs in a session of its own, once both runs have committed an
    epoch (models loaded, imports done: a signal inside an import is another matter); (process, its runs' folders)."""
    import time

    from genenv_lab.compare import run_dir_for
    from genenv_lab.rundir.layout import RunDirError
    from genenv_lab.rundir.read import read_state

    def committed(run) -> bool:
        try:
            return read_state(run).get("last_complete_epoch", 0) >= 1
        except (RunDirError, OSError, ValueError, TypeError):  # not written yet
            return False

    proc = subprocess.Popen([sys.executable, "-m", "genenv_lab.cli", "compare", "--presets", "tiny", "--variants",
                             "genenv", "static", "--seeds", "1", "--epochs", "60", "--reference-tasks", "2",
                             "--eval-limit", "2", "--jobs", "2", "--out", str(out), *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    runs = [run_dir_for(out, f"tiny:{v}", 0) for v in ("genenv", "static")]
    deadline = time.time() + 240
    while not all(committed(run) for run in runs):
        if proc.poll() is not None or time.time() > deadline:
            _end_session(proc)
            pytest.fail(f"the runs committed no epoch: {proc.communicate()[0][-3000:]}")
        time.sleep(0.05)
    return proc, runs


def _gone_within(sid: int, seconds: float) -> float | None:
    """Seconds until no process of session ``sid`` is alive, or None if some still are after ``seconds``."""
    import time

    start = time.time()
    while time.time() - start < seconds:
        if not _session(sid):
            return time.time() - start
        time.sleep(0.1)
    return None


def _end_session(proc) -> None:
    """Whatever a failed test left of the comparison's session is killed (by the session's own process group)."""
    import os
    import signal

    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.communicate(timeout=30)
    except (subprocess.TimeoutExpired, ValueError):
        pass


@pytest.mark.engines  # multi-process
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads a session's processes from /proc")
def test_sigkill_of_a_parallel_comparison_leaves_no_process_of_it(tmp_path):
    """Round 5, P5: SIGKILL of a ``compare --jobs 2`` parent left both runs' processes (about 0.5 GB each, blocked
    on the call queue, deaf to SIGTERM) and the resource tracker alive for good. Each run's process watches its
    parent: its run stops as ``interrupted`` and it exits, and the tracker ends with the last of them."""
    from genenv_lab.rundir.read import read_state

    proc, runs = _parallel_comparison(tmp_path / "cmp")
    try:
        assert len(_session(proc.pid)) == 4  # the comparison, two runs' processes, the resource tracker
        proc.kill()
        proc.wait(timeout=30)
        gone = _gone_within(proc.pid, 10.0)
        assert gone is not None, f"still alive 10 s after the SIGKILL: {_session(proc.pid)}"
    finally:
        _end_session(proc)
    for run in runs:
        assert read_state(run)["status"] in ("interrupted", "running"), read_state(run)  # running: read as killed


@pytest.mark.engines  # multi-process
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads a session's processes from /proc")
def test_a_quick_double_ctrl_c_neither_hangs_a_parallel_comparison_nor_leaves_its_processes(tmp_path):
    """Round 5, P6: a second SIGINT 50 ms after the first (a quick double Ctrl-C: the terminal's to the whole group,
    then one more to the comparison) broke the pool's shutdown; the comparison hung in its exit for good, its runs'
    processes with it. A second signal during the shutdown is ignored: one line, exit 130, nothing left."""
    import os
    import signal
    import time

    from genenv_lab.rundir.read import read_state

    proc, runs = _parallel_comparison(tmp_path / "cmp")
    try:
        os.killpg(proc.pid, signal.SIGINT)
        time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        printed, _ = proc.communicate(timeout=60)
        assert proc.returncode == 130 and "Traceback" not in printed, printed[-3000:]
        assert "interrupted; the same command continues it" in printed
        assert _gone_within(proc.pid, 10.0) is not None, _session(proc.pid)
    finally:
        _end_session(proc)
    for run in runs:
        assert read_state(run)["status"] == "interrupted"


@pytest.mark.engines  # multi-process
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads a session's processes from /proc")
def test_a_killed_run_process_is_one_line_naming_the_runs_and_the_command_that_continues_them(tmp_path):
    """Round 5, P10: SIGKILL of one run's process gave ``error: BrokenProcessPool: A process in the process pool was
    terminated abruptly ...``, naming no run and no next command. The line names the runs it stopped and the
    command that continues them; nothing of the comparison stays alive."""
    import os
    import signal

    out = tmp_path / "cmp"
    proc, runs = _parallel_comparison(out)
    try:
        workers = [pid for pid in _session(proc.pid)
                   if b"spawn_main" in open(f"/proc/{pid}/cmdline", "rb").read()]
        assert len(workers) == 2
        os.kill(workers[0], signal.SIGKILL)
        printed, _ = proc.communicate(timeout=120)
        assert proc.returncode == 1 and "Traceback" not in printed, printed[-3000:]
        line = [line for line in printed.splitlines() if line.startswith("error:")]
        assert len(line) == 1 and "BrokenProcessPool" not in line[0], printed[-3000:]
        assert all(str(run) in line[0] for run in runs) and f"--out {out}" in line[0]
        assert _gone_within(proc.pid, 10.0) is not None, _session(proc.pid)
    finally:
        _end_session(proc)
