"""``genenv-lab compare`` and ``genenv-lab sweep``: GenEnv and its baselines (or α and the env reward shape) over
seeds, the grid's options and its report on the terminal."""

from __future__ import annotations

import argparse
from pathlib import Path

from genenv_lab.cli.common import console as _console, interruptible as _interruptible, one_process as _one_process
from genenv_lab.cli.flags import count_type, nonempty_type
from genenv_lab.config import MAX_SEED, PRESETS, VARIANTS, ConfigError
from genenv_lab.domains import known_domains

MAX_GRID_SEEDS = 10_000  # seeds per configuration of one comparison


def cmd_compare(args: argparse.Namespace) -> int:
    from genenv_lab.compare import (band_residence, bands_of, check_jobs, compare_grid, glance, read_study,
        rollouts_to_reach_table, spread_lines, summarise, sweep_entries, variant_entries, verdict)
    from genenv_lab.rundir.layout import atomic_write_bytes

    console = _console()
    if not _one_process(console, args.command):
        return 2
    try:
        if args.command == "sweep":
            entries = sweep_entries(args.preset, alphas=args.alphas, shapes=args.shapes, epochs=args.epochs,
                                    domain=args.domain, reference_tasks=args.reference_tasks,
                                    eval_limit=args.eval_limit, data_dir=args.data_dir or "")
        else:
            entries = variant_entries(args.presets, args.variants, epochs=args.epochs, domain=args.domain,
                                      teacher=args.teacher, teacher_multipliers=args.teacher_multipliers,
                                      reference_tasks=args.reference_tasks, eval_limit=args.eval_limit,
                                      data_dir=args.data_dir or "")
        check_jobs(args.jobs, [cfg for _, cfg in entries])
    except (ConfigError, ValueError) as exc:
        console.print(f"[red]config error:[/red] {exc}")
        return 2
    study = None
    if getattr(args, "spread_from", ""):  # read before any run starts, so a bad file costs nothing
        try:
            study = read_study(args.spread_from)
        except ValueError as exc:
            console.print(f"[red]--spread-from:[/red] {exc}")
            return 2
    from genenv_lab.evaluation.common import BenchmarkDataMissing

    out = Path(args.out)
    if (out / "config.json").is_file() or (out / "state.json").is_file():
        console.print(f"[red]--out {out} is a run folder[/red] (it holds config.json/state.json); a comparison writes "
                      "its runs under --out/runs/: choose another --out")
        return 2
    if args.first_seed + args.seeds - 1 > MAX_SEED:
        console.print(f"[red]--first-seed {args.first_seed} with --seeds {args.seeds} runs past seed {MAX_SEED}[/red] "
                      "(loop.seed's bound): choose a lower --first-seed")
        return 2
    _interruptible()
    try:
        seeds = list(range(args.first_seed, args.first_seed + args.seeds))  # --first-seed N: N .. N+seeds-1
        table = compare_grid(entries, seeds, out, jobs=args.jobs)
    except BenchmarkDataMissing as exc:
        console.print(f"[red]held-out data missing:[/red] {exc}")
        return 2
    except KeyboardInterrupt:
        console.print("[yellow]interrupted[/yellow]; the same command continues it (finished runs are skipped)")
        return 130
    # the terminal: the verdict at a glance, in 120 columns; the full verdict and tables go to files (verdict.txt, …)
    files = ("report.html", "comparison.csv", "summary.csv", "band_residence.csv", "rollouts_to_reach.csv",
             "efficiency.csv", "dry_run.csv")
    if args.command == "compare":  # a sweep has no baseline to judge against
        full = verdict(table)
        if study is not None:
            full += "\n\n" + (spread_lines(table, study, args.spread_from)
                               or f"(the study in {args.spread_from} has none of these arms)")
        atomic_write_bytes(out / "verdict.txt", (full + "\n").encode())
        files = ("verdict.txt", *files)
    console.print(f"in {out}/: {', '.join(f for f in files if not f.endswith('.csv'))}\n"
                  f"  tables: {', '.join(f for f in files if f.endswith('.csv'))}", markup=False, soft_wrap=True)
    if args.command == "compare":
        console.print()
        for line in glance(table, study, args.spread_from):
            console.print(line, markup=False, highlight=False, soft_wrap=True)
    else:
        last = table[table["epoch"] == table["epoch"].max()] if len(table) else table
        console.print(summarise(last).to_string(index=False))
        console.print(band_residence(table, bands=bands_of(entries)).to_string(index=False))
        for row in rollouts_to_reach_table(table).itertuples():
            console.print(f"{row.label}: {row.verdict}")
    return 0


def _grid_options(q: argparse.ArgumentParser) -> None:
    q.add_argument("--seeds", type=count_type(1, MAX_GRID_SEEDS), default=3,
                   help=f"seeds per configuration, at most {MAX_GRID_SEEDS} (default 3)")
    q.add_argument("--first-seed", type=count_type(0, MAX_SEED), default=0, metavar="N",
                   help="the first seed: the runs use seeds N .. N+seeds-1 (default 0). To report on seeds no "
                        "choice was made on, start past the seeds any setting was tuned on (e.g. --first-seed 3 "
                        "after looking at seeds 0-2)")
    q.add_argument("--epochs", type=count_type(1), help="epochs per run (default: the preset's)")
    q.add_argument("--domain", type=nonempty_type, metavar="NAME|package.module:Class",
                   help=f"task domain: one of {', '.join(known_domains())}, or your own class "
                        "(docs/domains.md); default: the preset's")
    q.add_argument("--reference-tasks", type=count_type(0),
                   help="tasks of the untrained simulator measured every epoch (the counterfactual; default: "
                        "the preset's, else 8)")
    q.add_argument("--eval-limit", type=count_type(0),
                   help="held-out items per evaluation (default: the preset's, else 20; 0: all)")
    q.add_argument("--data-dir", help="benchmark data of the held-out score when the domain ships no held-out "
                                      "set (tools: BFCL; default $GENENV_LAB_DATA/<name> or the cache)")
    q.add_argument("--jobs", type=count_type(1, 64), default=1, metavar="N",
                   help="runs at a time, each in its own process on its share of the CPU cores (default 1; CPU "
                        "presets, no GPU visible). A run's numbers depend on its thread count: with N jobs on C "
                        "cores each run equals the sequential one under OMP_NUM_THREADS=C/N (with the same model "
                        "cache: the models are built first, on all cores); an OMP_NUM_THREADS set lower caps "
                        "each run's threads")
    q.add_argument("--out", required=True, type=nonempty_type,
                   help="comparison folder (runs/, comparison.csv, report.html)")
    q.set_defaults(func=cmd_compare)


def add_grids(sub) -> None:
    """``genenv-lab compare`` and ``genenv-lab sweep`` (the same grid options)."""
    c = sub.add_parser("compare", help="run GenEnv and baselines over seeds and write a side-by-side report")
    c.add_argument("--presets", nargs="+", default=["tiny"], choices=sorted(PRESETS))
    c.add_argument("--variants", nargs="+", default=["genenv", "random_env", "static"], choices=VARIANTS,
                   help="genenv and the baselines to run (default: genenv random_env static; docs/method.md, "
                        "Baselines); the report reads each baseline's final held-out score against the agent "
                        "rollouts genenv needs to reach it")
    c.add_argument("--spread-from", metavar="CSV", default="",
                   help="a committed study's paired_by_seed.csv: the verdict then puts this comparison's genenv − "
                        "baseline beside that study's per-seed differences (what scripts/demo.sh does, since one "
                        "seed has no spread and numbers differ across machines)")
    c.add_argument("--teacher", help="teacher model of the offline_teacher variant (hub id or directory)")
    c.add_argument("--teacher-multipliers", nargs="+", type=float, default=[1.8, 3.3],
                   help="offline_teacher data sizes relative to GenEnv's (default 1.8 3.3)")
    _grid_options(c)
    s = sub.add_parser("sweep", help="sweep α and the env reward shape of the full method")
    s.add_argument("--preset", default="tiny", choices=sorted(PRESETS))
    s.add_argument("--alphas", nargs="+", type=float, default=[0.3, 0.5, 0.7])
    s.add_argument("--shapes", nargs="+", default=["gaussian"], choices=["gaussian", "learnability", "min", "azr"])
    _grid_options(s)
