"""The verbs around runs: ``genenv-lab eval`` (a model or predictions on a benchmark), ``generate`` and ``export``
(a run's trained agent), ``check-domain`` and ``upgrade`` (run folders written by an older version)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from genenv_lab.cli.common import console as _console, one_process as _one_process
from genenv_lab.cli.flags import count_type, nonempty_type
from genenv_lab.safe_io import read_text, short_repr


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


def cmd_upgrade(args: argparse.Namespace) -> int:
    """``genenv-lab upgrade RUN_DIR [RUN_DIR ...]``: each run folder (or each run of a comparison's folder) rewritten
    in this version's format (:func:`genenv_lab.rundir.upgrade.upgrade_path`), one line each; 1 when one could not
    be."""
    from genenv_lab.rundir.upgrade import upgrade_path

    failed = 0
    for run_dir in args.run_dirs:
        if not Path(run_dir).is_dir():
            failed += 1
            print(f"{run_dir}: error: no such folder", file=sys.stderr)
            continue
        try:
            print("\n".join(upgrade_path(run_dir)))
        except (OSError, ValueError, RuntimeError) as exc:  # RunDirError: a writer holds it, the copy's place taken
            failed += 1
            print(f"{run_dir}: error: {exc}", file=sys.stderr)
    return 1 if failed else 0


def add_eval(sub) -> None:
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


def add_agent_commands(sub) -> None:
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


def add_check_domain(sub) -> None:
    """``genenv-lab check-domain``."""
    d = sub.add_parser("check-domain", help="check that a domain (yours too) keeps what the loop relies on")
    d.add_argument("domain", type=nonempty_type, metavar="NAME|package.module:Class")
    d.add_argument("--seeds", default="", help="JSONL of {\"id\", \"text\"} seed tasks (default: the domain's)")
    d.add_argument("--heldout", default="", help="JSONL of held-out tasks (default: the domain's, if any)")
    d.set_defaults(func=cmd_check_domain)




def add_upgrade(sub) -> None:
    """``genenv-lab upgrade``."""
    u = sub.add_parser("upgrade", help="rewrite run folders written by an older genenv_lab (old epochs.jsonl keys, "
                                       "config fields that moved section) in this version's format, after copying "
                                       "each to .<name>.before-upgrade beside it")
    u.add_argument("run_dirs", nargs="+", type=nonempty_type, metavar="RUN_DIR",
                   help="a run folder, or a comparison's folder (each of its runs)")
    u.set_defaults(func=cmd_upgrade)


def add_lab(sub) -> None:
    """``genenv-lab lab``: the lab (:mod:`genenv_lab.lab.app`) from any install, the wheel's included."""
    from genenv_lab.lab.names import lab_arguments

    lab = sub.add_parser("lab", help="serve the lab (Gradio) over a runs folder, from any install")
    lab_arguments(lab, "runs")
    lab.set_defaults(func=cmd_lab, parser=lab)


def cmd_lab(args: argparse.Namespace) -> int:
    """Serve the lab until Ctrl-C; needs the ``app`` extra (Gradio)."""
    try:
        from genenv_lab.lab.app import serve
    except ImportError as exc:
        print(f"error: the lab needs the app extra (pip install 'genenv_lab[app]'): {exc}", file=sys.stderr)
        return 1
    serve(args, args.parser)
    return 0
