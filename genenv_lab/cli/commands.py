"""``genenv-lab``: the command-line entry point (the only argument parsing in the project)."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from genenv_lab.config import MAX_SEED, PRESETS, VARIANTS, ConfigError
from genenv_lab.domains import known_domains
from genenv_lab.cli.flags import config_arguments, count_type, nonempty_type, run_config_from
from genenv_lab.cli.run_summary import run_summary
from genenv_lab.safe_io import read_text, short_repr

MAX_GRID_SEEDS = 10_000  # seeds per configuration of one comparison


def _console(quiet: bool = False):
    """rich's console; written to a file or a pipe it keeps 120 columns (its default of 80 cuts the table)."""
    from rich.console import Console

    return Console(width=None if sys.stdout.isatty() else 120, quiet=quiet)


def cmd_run(args: argparse.Namespace) -> int:
    from rich.table import Table

    from genenv_lab.backends import distributed

    procs = distributed.processes()
    console = _console(quiet=not procs.is_main)  # several processes: the main one speaks
    try:
        cfg = run_config_from(args)  # validated before any model loads
        from genenv_lab.domains import domain_of

        domain = domain_of(cfg)  # the domain's seed and held-out files parse, before any folder or model
        if not domain.seed_tasks():
            raise ConfigError(f"domain {cfg.loop.domain!r} has no seed tasks; give some with --loop.seeds FILE.jsonl")
        domain.heldout_tasks()
    except (ConfigError, ValueError, OSError) as exc:
        console.print(f"[red]config error:[/red] {exc}")
        return 2
    if args.out:
        out = Path(args.out)
    else:  # every process of a job must name the same folder: the main process's clock decides
        out = Path(procs.broadcast(str(Path("runs") / f"{cfg.preset}-{time.strftime('%Y%m%d-%H%M%S')}")))
    from genenv_lab.coevolution.loop import run
    from genenv_lab.rundir.layout import LOCK, RunDirError
    from genenv_lab.rundir.write import fmt_num

    had_lock = os.path.lexists(out / LOCK)
    _interruptible()
    console.print(f"[bold]GenEnv co-evolution[/bold]: preset {cfg.preset}, model {cfg.model.name_or_path}, "
                  f"domain {cfg.loop.domain}, variant {cfg.loop.variant}, {cfg.loop.epochs} epochs → {out}")
    c = cfg.curriculum
    table = Table(title=f"run {out}", caption=(
        f"valid: valid generations / generated · p̂ mean: the agent's success rate over G = "
        f"{cfg.agent.num_generations} attempts, averaged over the epoch's tasks · in band: share of them with "
        f"|p̂ − α| ≤ {c.k_min} (α = {c.alpha}) · R_env: mean α-Curriculum Reward · "
        f"agent reward: mean GRPO reward · "
        f"zero-std: GRPO groups whose G rewards are all equal (no signal) · env KL: the simulator's KL to its "
        f"untrained self after this epoch's RWR update (— when no task was in band to train on)"))
    for col in ("epoch", "valid", "p̂ mean", "in band", "R_env", "agent reward", "zero-std", "env KL", "wall s"):
        table.add_column(col, justify="right")
    try:
        for r in run(cfg, out, resume=args.resume):
            table.add_row(str(r.epoch), f"{r.n_valid}/{r.n_generated}",
                          *(fmt_num(x, 2) for x in (r.p_hat_mean, r.in_band_frac, r.env_reward_mean,
                                                    r.agent_reward_mean, r.frac_zero_std)),
                          fmt_num(r.extra.get("rwr/kl"), 4), f"{r.wall_s:.1f}")
    except (RunDirError, RuntimeError, FileNotFoundError, ConfigError) as exc:
        if procs.is_main and not had_lock:
            _drop_stray_lock(out)
        if args.resume and cfg.is_gpu and "needs a CUDA GPU" in str(exc):  # a resumed run keeps its engine
            exc = _resume_where(cfg, out)
        console.print(f"[red]error:[/red] {exc}", soft_wrap=True)
        if not procs.is_main:  # the main process's console speaks for the run; this error is ours
            print(f"process {procs.rank}: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        console.print(table)
        console.print(f"[yellow]interrupted[/yellow]; continue with: genenv-lab run ... --out {out} --resume")
        return 130
    console.print(table)
    for line in run_summary(out, cfg):
        console.print(line)
    console.print(f"run directory: {out}  (inspect it with: python app.py --runs {out.parent}, tab Curriculum: "
                  f"the p̂ histogram per epoch against the shaded α band)")
    distributed.close()
    return 0


def _resume_where(cfg, out: Path) -> str:
    """Where a run on a GPU engine resumes when no GPU is visible (it keeps its engine: a CPU preset is no answer)."""
    name, env = {"unsloth": ("unsloth", "GENENV_LAB_UNSLOTH_CPU=1 "), "vllm": ("vllm", "")}[cfg.model.engine]
    return (f"run {out} trains with engine {cfg.model.engine!r} (its config.json; a resumed run keeps its engine), "
            "which needs a CUDA GPU and none is visible here: resume it on a machine with one, or on the CPU (bash "
            f"scripts/setup_{name}_cpu.sh, then {env}.venv-{name}/bin/genenv-lab run --out {out} --resume)")


def _drop_stray_lock(out: Path) -> None:
    """A run refused in a folder that is no run (``--resume`` of a user's folder) leaves no ``.writer.lock`` there."""
    import fcntl  # (only a lock that no process holds is removed)
    from genenv_lab.rundir.layout import CONFIG, LOCK

    if not os.path.lexists(out / CONFIG) and (out / LOCK).is_file() and not (out / LOCK).is_symlink():
        with open(out / LOCK, "rb") as held:
            try:
                fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
                (out / LOCK).unlink()
            except OSError:  # held by a writer, or gone
                pass


def cmd_eval(args: argparse.Namespace) -> int:
    import json

    from genenv_lab.evaluation import BenchmarkDataMissing, gold_predictions, score_predictions

    console = _console()
    if not _one_process(console, "eval"):
        return 2
    category = args.category or None
    out = Path(args.out) if args.out else Path("runs") / "eval" / f"{args.benchmark}-{time.strftime('%Y%m%d-%H%M%S')}"
    try:
        if args.gold:
            rows = gold_predictions(args.benchmark, args.data_dir, category, out_path=args.gold, limit=args.limit)
            console.print(f"wrote {len(rows)} gold predictions to {args.gold}")
            return 0
        if args.predictions:
            summary = score_predictions(args.benchmark, args.predictions, data_dir=args.data_dir, category=category,
                                        limit=args.limit, out_dir=out, scoring=args.scoring,
                                        protocol=args.protocol)
        elif args.model:
            from genenv_lab.coevolution.heldout import backend_for, evaluate_backend

            summary = evaluate_backend(backend_for(args.model), args.benchmark, out_dir=out, data_dir=args.data_dir,
                                       category=category, limit=args.limit, max_new_tokens=args.max_new_tokens,
                                       scoring=args.scoring, protocol=args.protocol)
        else:
            console.print("[red]error:[/red] give --model ID|RUN_DIR, --predictions FILE.jsonl or --gold OUT.jsonl")
            return 2
    except BenchmarkDataMissing as exc:
        console.print(f"[red]benchmark data missing:[/red] {exc}")
        return 2
    except (ValueError, FileNotFoundError) as exc:
        console.print(f"[red]error:[/red] {exc}", soft_wrap=True)
        return 1
    brief = {k: v for k, v in summary.items() if not isinstance(v, (dict, list))}
    print(json.dumps(brief, indent=2, ensure_ascii=False))
    console.print(f"results: {out / 'results.jsonl'}  summary: {out / 'summary.json'}")
    too_long, n = summary.get("n_prompt_longer_than_context", 0), summary.get("n", 0)
    if too_long and too_long == n:  # every item scored 0 for want of room: say so, it is not the model's score
        console.print(f"[yellow]warning:[/yellow] no {args.benchmark} item's prompt leaves room for "
                      f"{args.max_new_tokens} new tokens in the model's context ({too_long} of {n} too long, "
                      "scored 0): lower --max-new-tokens, or use a model with a longer context", soft_wrap=True)
    return 0


def cmd_generate(args: argparse.Namespace) -> int:
    """``genenv-lab generate --run DIR "Task: ..."``: the agent's answer and the domain's verdict."""
    from rich.markup import escape

    from genenv_lab.coevolution.export import generate

    console = _console()
    task = args.task if args.prompt_file is None else \
        read_text(args.prompt_file, "prompt file", 4 << 20).removesuffix("\n").removesuffix("\r")
    try:
        result = generate(args.run, task, epoch=args.epoch)
    except ValueError as exc:  # the task is echoed in the message: a long one is shortened
        raise ValueError(str(exc).replace(repr(task), short_repr(task))[:500]) from None
    console.print(f"[bold]{escape(result['question'])}[/bold] (agent after epoch {result['epoch']})",
                  highlight=False)
    console.print(result["answer"], markup=False, highlight=False)
    verdict = "right" if result["reward"] >= 1.0 else f"reward {result['reward']:.2f}"
    console.print(f"[dim]{verdict}; expected: {escape(result['expected'])}[/dim]", highlight=False)
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    """``genenv-lab export --run DIR --out DIR [--merge]``."""
    from genenv_lab.coevolution.export import check_repo_id, export_agent, push_to_hub

    if args.push_to_hub:
        check_repo_id(args.push_to_hub)  # before the model loads
    out = export_agent(args.run, args.out, epoch=args.epoch, merge=args.merge)
    _console().print(f"exported the agent to {out} (see {out / 'README.md'} for how to load it)")
    if args.push_to_hub:
        url = push_to_hub(out, args.push_to_hub, private=args.private)
        _console().print(f"pushed to {url}")
    return 0


def cmd_check_domain(args: argparse.Namespace) -> int:
    """``genenv-lab check-domain NAME``: :func:`genenv_lab.domains.check.check_domain`, one line per problem."""
    from rich.markup import escape
    from genenv_lab.domains import get_domain
    from genenv_lab.domains.check import check_domain

    console = _console()
    try:
        domain = get_domain(args.domain, seeds=args.seeds, heldout=args.heldout)
    except ValueError as exc:
        console.print(f"[red]config error:[/red] {exc}")
        return 2
    problems = check_domain(domain)
    try:
        seeds = domain.seed_tasks()
    except Exception:  # noqa: BLE001 - a user's parser: check_domain has said why its tasks do not load
        seeds = []
    problems += [p for p in (_commit_problem(t) for t in seeds[:1]) if p]
    for problem in problems:
        console.print(f"[red]✗[/red] {escape(problem)}", highlight=False)
    if problems:
        return 1
    console.print(f"[green]✓[/green] domain {args.domain!r} passes: {len(seeds)} seed tasks, "
                  f"{len(domain.heldout_tasks())} held-out tasks parse, give themselves back and are solvable")
    return 0


def _commit_problem(task) -> str | None:
    """Whether a task of the domain can be committed as a run commits it
    (:func:`genenv_lab.rundir.write.commit_problem`),
    tried on a seed task dressed as a generated one."""
    from genenv_lab.rundir.write import commit_problem
    from genenv_lab.core.types import GeneratedTask

    spec = task.spec
    row = GeneratedTask(task_id="check", epoch=1, env_version=0, parent_id=task.seed_id, root_id=task.seed_id,
                        context="", raw=spec.text, valid=True, question=spec.question, answer=spec.answer,
                        text=spec.text, features=dict(spec.features) if isinstance(spec.features, dict) else {}
                        ).to_row()
    problem = commit_problem(row)
    return None if problem is None else (f"seed task {task.seed_id!r}: a task of this domain cannot be committed "
                                         f"({problem}); features must be plain numbers, strings or booleans")


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


def _one_process(console, command: str) -> bool:
    """Whether this is a one-process job; otherwise says that ``command`` runs in one process (only ``run`` is
    data-parallel: every process of an ``eval`` or ``compare`` job would write the same files)."""
    from genenv_lab.backends.distributed import launched_world_size

    if launched_world_size() == 1:
        return True
    console.print(f"[red]error:[/red] genenv-lab {command} runs in one process; launch it without torchrun or "
                  "accelerate launch (only genenv-lab run is data-parallel)")
    return False


def _interruptible() -> None:
    """Ctrl-C, SIGTERM and SIGHUP end a run as ``interrupted`` (:func:`genenv_lab.coevolution.loop.stop_on_signals`,
    imported
    when a command starts work, not when the parser is built)."""
    from genenv_lab.coevolution.loop import stop_on_signals

    stop_on_signals()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="genenv-lab",
        description="GenEnv co-evolution of an LLM agent and an LLM environment simulator (two LoRA adapters on one "
                    "base model): run it, score models on the paper's benchmarks, compare against baselines.",
        epilog="Start with: genenv-lab run --preset cpu-demo (CPU, minutes). Then: python app.py (the lab).")
    parser.add_argument("--debug", action="store_true",
                        help="show the full traceback of an unexpected error (default: one line)")
    sub = parser.add_subparsers(dest="command", required=True)
    _add_run(sub)
    _add_eval(sub)
    _add_grids(sub)
    _add_agent_commands(sub)
    _add_check_domain(sub)
    return parser


def _add_run(sub) -> None:
    """``genenv-lab run``."""
    p = sub.add_parser("run", help="run GenEnv co-evolution and write a run directory")
    p.add_argument("--preset", choices=sorted(PRESETS), help="configuration preset (default tiny)")
    p.add_argument("--config", type=nonempty_type, metavar="FILE",
                   help="start from a configuration file instead of a preset: JSON (a run's own config.json works) "
                        "or YAML, the sections of config.json; a \"preset\": NAME in it is applied, the file's values "
                        "over it (another name labels the defaults); the other options override the file")
    p.add_argument("--out", type=nonempty_type, help="run directory (default runs/<preset>-<time>)")
    p.add_argument("--resume", action="store_true", help="continue the run in --out from its last complete epoch")
    p.add_argument("--set", action="append", metavar="SECTION.FIELD=VALUE",
                   help="any config field, repeatable: --set curriculum.alpha=0.3 (the same as --curriculum.alpha "
                        "0.3 below, read by the same path; validated like the presets)")
    config_arguments(p)
    p.set_defaults(func=cmd_run)


def _add_eval(sub) -> None:
    """``genenv-lab eval``."""
    from genenv_lab.evaluation.runner import BENCHMARKS

    e = sub.add_parser("eval", help="score a model or a predictions file on a benchmark (official metric)")
    e.add_argument("--benchmark", required=True, choices=sorted(BENCHMARKS) + ["api_bank"])
    src = e.add_mutually_exclusive_group()
    src.add_argument("--model", type=nonempty_type,
                     help="a Hugging Face id, a local model directory, 'tiny', 'smollm2-135m', or a run "
                          "directory (its last epoch's agent adapter)")
    src.add_argument("--predictions", help="JSONL of {\"id\": ..., \"prediction\": \"<raw output>\"} to score")
    src.add_argument("--gold", metavar="OUT.jsonl", help="write the answer keys as predictions (sanity check)")
    e.add_argument("--category", action="append", help="benchmark category (repeatable; default: all covered)")
    e.add_argument("--limit", type=count_type(1), help="first N items of each category")
    scorings = ["official"] + sorted({name for spec in BENCHMARKS.values() for name, _ in spec.other_scorings})
    e.add_argument("--scoring", default="official", choices=scorings,
                   help="official (default): the benchmark's own verdict; lenient (bfcl only): calls are also read "
                        "from prose, code fences, JSON and tool-call tags; not comparable with the leaderboard")
    e.add_argument("--protocol", default="official", choices=["official", "per-turn"],
                   help="BFCL multi-turn only: official (default; BFCL's checker, the model's own history, an entry "
                        "right only if every turn is) or per-turn (the paper's reading: each turn from the answer "
                        "key's state, the share of turns right; not BFCL's leaderboard metric)")
    e.add_argument("--data-dir", help="benchmark data folder (default: $GENENV_LAB_DATA/<name> or the cache)")
    e.add_argument("--max-new-tokens", type=count_type(1, 32768), default=128,
                   help="generation budget per item, at most 32768 as eval.max_new_tokens (--model; per step "
                        "for BFCL multi-turn)")
    e.add_argument("--out", type=nonempty_type, help="output folder (default runs/eval/<benchmark>-<time>)")
    e.set_defaults(func=cmd_eval)


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


def _add_grids(sub) -> None:
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


def _add_agent_commands(sub) -> None:
    """``genenv-lab generate`` and ``genenv-lab export``: a run's trained agent."""
    g = sub.add_parser("generate", help="answer a task with a run's trained agent (the domain's prompt, greedy)")
    g.add_argument("--run", required=True, type=nonempty_type, help="run directory")
    g.add_argument("--epoch", type=count_type(0), help="the agent after this epoch (default: the last; 0: untrained)")
    given = g.add_mutually_exclusive_group(required=True)
    given.add_argument("task", nargs="?", help='a task as the simulator writes it, e.g. "Task: 7 * 8"')
    given.add_argument("--prompt-file", metavar="FILE", help="read the task from this UTF-8 file (at most 4 MB)")
    g.set_defaults(func=cmd_generate)
    x = sub.add_parser("export", help="export a run's agent for transformers + peft (adapter, or merged)")
    x.add_argument("--run", required=True, type=nonempty_type, help="run directory")
    x.add_argument("--epoch", type=count_type(1), help="the agent after this epoch (default: the last)")
    x.add_argument("--out", required=True, type=nonempty_type, help="a new folder")
    x.add_argument("--merge", action="store_true", help="merge the adapter into the base: one standalone model")
    x.add_argument("--push-to-hub", metavar="OWNER/NAME", default="",
                   help="then publish the folder as this hub model (needs hf auth login or $HF_TOKEN)")
    x.add_argument("--private", action="store_true", help="with --push-to-hub: a private hub model")
    x.set_defaults(func=cmd_export)


def _add_check_domain(sub) -> None:
    """``genenv-lab check-domain``."""
    d = sub.add_parser("check-domain", help="check that a domain (yours too) keeps what the loop relies on")
    d.add_argument("domain", type=nonempty_type, metavar="NAME|package.module:Class")
    d.add_argument("--seeds", default="", help="JSONL of {\"id\", \"text\"} seed tasks (default: the domain's)")
    d.add_argument("--heldout", default="", help="JSONL of held-out tasks (default: the domain's, if any)")
    d.set_defaults(func=cmd_check_domain)


def main(argv: list[str] | None = None) -> int:
    import warnings

    warnings.filterwarnings("ignore", category=FutureWarning)  # deprecation notices of transformers/TRL internals
    args = build_parser().parse_args(argv)
    if args.debug:
        return args.func(args)
    try:
        return args.func(args)
    except KeyboardInterrupt:  # Ctrl-C before a command's own handling (a --domain module still importing)
        print("interrupted (Ctrl-C or a signal)", file=sys.stderr)
        return 130
    except (OSError, RuntimeError, ValueError, KeyError, ImportError) as exc:
        # what the commands do not turn into their own message (a full disk, a read-only --out, a corrupt file
        # deep in a library): one line, the traceback with --debug
        print(f"error: {type(exc).__name__}: {exc} (genenv-lab --debug ... shows the traceback)", file=sys.stderr)
        return 1

