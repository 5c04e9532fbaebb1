"""``genenv-lab``: the command-line entry point (the only argument parsing in the project)."""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

from .config import MAX_SEED, PRESETS, VARIANTS, ConfigError, RunConfig, for_domain, load_config, preset
from .domains import known_domains
from .trackers import TRACKERS


def _run_config(args: argparse.Namespace) -> RunConfig:
    """The run's configuration: the preset, then every field the command line sets. A field may be written three
    ways (``--epochs 5``, ``--loop.epochs 5``, ``--set loop.epochs=5``); giving one field two different values is
    refused in one line instead of one spelling silently winning. A domain, however it is written, brings its
    recommended settings (:func:`for_domain`). Naming a held-out benchmark, category or protocol without
    ``--eval-every`` evaluates every epoch where the preset evaluates never."""
    given: dict[tuple[str, str], list[tuple[str, object]]] = {}

    def give(section: str, field: str, value: object, spelling: str) -> None:
        given.setdefault((section, field), []).append((spelling, value))

    if args.model:
        give("model", "name_or_path", args.model, "--model")
    if args.engine:
        give("model", "engine", args.engine, "--engine")
    if args.domain:
        give("loop", "domain", args.domain, "--domain")
    for key in ("epochs", "seed", "variant", "eval_every", "eval_benchmark", "eval_category", "eval_limit",
                "eval_data_dir", "eval_protocol", "report_to"):
        value = getattr(args, key, None)
        if value is not None:
            give("loop", key, value, f"--{key.replace('_', '-')}")
    for item in getattr(args, "set", None) or []:
        section, field, value = parse_setting(item)
        give(section, field, value, f"--set {section}.{field}")
    for key, value in vars(args).items():  # --section.field VALUE (config_arguments)
        if key.startswith(FIELD_DEST) and value is not None:
            section, field = key[len(FIELD_DEST):].split(".", 1)
            give(section, field, value, f"--{section}.{field}")
    changes: dict[str, dict] = {}
    for (section, field), values in given.items():
        if len({repr(v) for _, v in values}) > 1:
            said = ", ".join(f"{spelling} {value!r}" for spelling, value in values)
            raise ConfigError(f"{section}.{field} is given different values ({said}); give it once")
        changes.setdefault(section, {})[field] = values[-1][1]
    cfg = _base_config(args)
    domain = changes.get("loop", {}).pop("domain", None)
    if domain is not None:
        cfg = for_domain(cfg, domain)
    loop = changes.get("loop", {})
    if "eval_every" not in loop and cfg.loop.eval_every == 0 and any(
            k in loop for k in ("eval_benchmark", "eval_category", "eval_protocol")):
        loop["eval_every"] = 1  # naming what to evaluate on asks for an evaluation: every epoch unless told
    changes = {section: fields for section, fields in changes.items() if fields}
    return cfg.replace(**changes) if changes else cfg


def _base_config(args: argparse.Namespace) -> RunConfig:
    """What the command line's options change: ``--config FILE``, else ``--preset``, else (``--resume`` of an
    existing run) the run's own ``config.json``, else the ``tiny`` preset."""
    if getattr(args, "config", None) and getattr(args, "preset", None):
        raise ConfigError("give --config FILE or --preset NAME, not both")
    if getattr(args, "config", None):
        return load_config(args.config)
    if getattr(args, "preset", None):
        return preset(args.preset)
    if getattr(args, "resume", False) and args.out and (Path(args.out) / "config.json").is_file():
        return load_config(Path(args.out) / "config.json")
    return preset("tiny")


FIELD_DEST = "config:"
MAX_GRID_SEEDS = 10_000  # seeds per configuration of one comparison


def _boolean(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("true", "1", "yes", "on"):
        return True
    if lowered in ("false", "0", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def _parser_for(kind: type):
    if kind is bool:
        return _boolean
    if kind in (int, float):
        return kind
    if kind is str:
        return str
    return lambda text: tuple(part.strip() for part in text.split(",") if part.strip())  # tuple[str, ...]


def config_arguments(parser: argparse.ArgumentParser) -> None:
    """``--section.field VALUE`` for every field of the run configuration, generated from the config dataclasses:
    the help is the field's docstring, the choices its constants; values are validated by the config itself
    (ranges next to the fields), after the preset and before any model loads."""
    from .config import config_fields, field_choices

    choices = field_choices()
    groups: dict[str, argparse._ArgumentGroup] = {}
    for section, name, kind, doc in config_fields():
        if section not in groups:
            groups[section] = parser.add_argument_group(
                f"{section} settings", f"every field of config.json's {section!r} section (default: the preset's)")
        metavar = {bool: "true|false", int: "N", float: "X", str: "TEXT"}.get(kind, "LIST")
        options = choices.get((section, name))
        groups[section].add_argument(
            f"--{section}.{name}", dest=f"{FIELD_DEST}{section}.{name}", type=_parser_for(kind), choices=options,
            metavar=None if options else metavar, help=doc.replace("``", "").replace("%", "%%") or None)


def parse_setting(item: str) -> tuple[str, str, object]:
    """``SECTION.FIELD=VALUE`` of ``--set`` → (section, field, value), the value read as the field's type, exactly as
    ``--SECTION.FIELD VALUE`` reads it (``false`` is a boolean, ``3`` an int, ``a,b`` a list); an unknown section or
    field, or a value of the wrong type, is a :class:`ConfigError` in one line. Ranges are checked by the config.

    >>> parse_setting("curriculum.alpha=0.3"), parse_setting("model.separate_adapters=False")
    (('curriculum', 'alpha', 0.3), ('model', 'separate_adapters', False))
    """
    import json

    from .config import config_fields

    key, sep, raw = item.partition("=")
    section, dot, field = key.strip().partition(".")
    section, field = section.strip(), field.strip()
    kinds = {(s, f): kind for s, f, kind, _ in config_fields()}
    sections = sorted({s for s, _ in kinds})
    if not sep or not dot or not section or not field:
        raise ConfigError(f"--set {item!r}: write SECTION.FIELD=VALUE, e.g. --set curriculum.alpha=0.3 or --set "
                          f"env.kl_coef=1.0 (sections: {', '.join(sections)})")
    if section not in sections:
        raise ConfigError(f"--set {item!r}: no config section {section!r}; sections: {', '.join(sections)}")
    if (section, field) not in kinds:
        accepted = sorted(f for s, f in kinds if s == section)
        raise ConfigError(f"--set {item!r}: {section} has no field {field!r}; accepted: {', '.join(accepted)}")
    kind = kinds[section, field]
    text = raw.strip()
    if kind not in (bool, int, float, str) and text.startswith("["):  # a list may also be written as JSON
        try:
            return section, field, tuple(str(v) for v in json.loads(text))
        except (ValueError, TypeError):
            pass
    try:
        value = _parser_for(kind)(text if kind is not str else raw)
    except (ValueError, argparse.ArgumentTypeError):
        name = {bool: "true or false", int: "a whole number", float: "a number"}.get(kind, str(kind))
        raise ConfigError(f"--set {item!r}: {section}.{field} takes {name}, not {raw!r}") from None
    return section, field, value


def apply_settings(cfg: RunConfig, items) -> RunConfig:
    """``cfg`` with each ``SECTION.FIELD=VALUE`` of ``items`` applied (:func:`parse_setting`), validated again: the
    ``--set`` of the benchmark scripts."""
    changes: dict[str, dict] = {}
    for item in items:
        section, field, value = parse_setting(item)
        changes.setdefault(section, {})[field] = value
    return cfg.replace(**changes) if changes else cfg


def _console(quiet: bool = False):
    """rich's console; written to a file or a pipe it keeps 120 columns (its default of 80 cuts the table)."""
    from rich.console import Console

    return Console(width=None if sys.stdout.isatty() else 120, quiet=quiet)


def cmd_run(args: argparse.Namespace) -> int:
    from rich.table import Table

    from . import distributed

    procs = distributed.processes()
    console = _console(quiet=not procs.is_main)  # several processes: the main one speaks
    try:
        cfg = _run_config(args)  # validated before any model loads
        from .domains import domain_of

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
    from .loop import run
    from .runlog import RunDirError

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
        f"untrained self after this epoch's RWR update (0 when no task was in band to train on)"))
    for col in ("epoch", "valid", "p̂ mean", "in band", "R_env", "agent reward", "zero-std", "env KL", "wall s"):
        table.add_column(col, justify="right")
    try:
        for r in run(cfg, out, resume=args.resume):
            table.add_row(str(r.epoch), f"{r.n_valid}/{r.n_generated}", _f(r.p_hat_mean), _f(r.in_band_frac),
                          _f(r.env_reward_mean), _f(r.agent_reward_mean), _f(r.frac_zero_std), _f(r.env_kl, 4),
                          f"{r.wall_s:.1f}")
    except (RunDirError, RuntimeError, FileNotFoundError, ConfigError) as exc:
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


def run_summary(out: Path, cfg) -> list[str]:
    """Where p̂ went: first and last epoch on the simulator's tasks, on the untrained simulator's tasks, and the
    held-out score from epoch 0, against the run's band."""
    from .runlog import read_baseline, read_epochs

    records = read_epochs(out)
    if not records:
        return []
    c = cfg.curriculum
    first, last = records[0], records[-1]
    fx, lx = first.get("extra") or {}, last.get("extra") or {}
    lines = [f"α = {c.alpha:.2f}, band [{c.alpha - c.k_min:.3f}, {c.alpha + c.k_min:.3f}]: p̂ on the simulator's "
             f"tasks {_f(first['p_hat_mean'])} (epoch {first['epoch']}) → {_f(last['p_hat_mean'])} "
             f"(epoch {last['epoch']}); in band {_f(first['in_band_frac'])} → {_f(last['in_band_frac'])}"]
    if "p_hat_reference" in lx:
        lines.append(f"p̂ of the same agent on the untrained simulator's tasks: "
                     f"{_f(fx.get('p_hat_reference'))} → {_f(lx.get('p_hat_reference'))}")
    key = next((k for k in lx if k.startswith("eval/")), None)
    if key:
        base = (read_baseline(out) or {}).get(key)
        lines.append(f"held-out {key[5:]}: {_f(base)} (untrained agent) → {_f(lx[key])} (epoch {last['epoch']})")
    consumed = consumption_line(lx)
    if consumed:
        lines.append(consumed)
    lines.append(_verdict(records, c.alpha, c.k_min))
    return lines


def consumption_line(extra: dict) -> str:
    """What the agent's training consumed by the last record (its ``cumulative/*``), or "" for a run written
    before those keys.

    >>> consumption_line({"cumulative/agent_rollouts": 640, "cumulative/agent_tokens": None,
    ...                   "cumulative/distinct_tasks": 40, "cumulative/distinct_questions": 38})
    'consumed for training: 640 agent rollouts (tokens not counted), 40 distinct tasks (38 distinct questions)'
    """
    rollouts = extra.get("cumulative/agent_rollouts")
    if rollouts is None:
        return ""
    tokens = extra.get("cumulative/agent_tokens")
    tokens_text = "tokens not counted" if tokens is None else f"{tokens:,} completion tokens"
    return (f"consumed for training: {rollouts:,} agent rollouts ({tokens_text}), "
            f"{extra.get('cumulative/distinct_tasks', 0):,} distinct tasks "
            f"({extra.get('cumulative/distinct_questions', 0):,} distinct questions)")


def _verdict(records: list[dict], alpha: float, k_min: float) -> str:
    """One sentence on what happened: p̂ over the last third of the epochs against α and against epoch 1, and in
    how many epochs the simulator was updated (RWR ran on in-band tasks)."""
    from .curriculum import in_band

    n = len(records)
    late = [r["p_hat_mean"] for r in records[n - max(1, n // 3):] if r.get("p_hat_mean") is not None
            and not math.isnan(r["p_hat_mean"])]
    start = records[0].get("p_hat_mean")
    updated = sum(1 for r in records if (r.get("n_env_steps") or 0) > 0)
    rwr = f"The simulator was updated (RWR on in-band tasks) in {updated} of {n} epochs."
    if not late or start is None or math.isnan(start):
        return "No p̂ was measured on the simulator's tasks (no valid task). " + rwr
    mean_late = sum(late) / len(late)
    where = "inside" if in_band(mean_late, alpha, k_min) else "outside"
    moved = "toward" if abs(mean_late - alpha) < abs(start - alpha) else "away from"
    return (f"So p̂ moved {moved} α: {start:.2f} in epoch 1, {mean_late:.2f} on average over the last "
            f"{len(late)} epochs, {where} the band. " + rwr)


def cmd_eval(args: argparse.Namespace) -> int:
    import json

    from .evaluation import BenchmarkDataMissing, gold_predictions, score_predictions

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
            from .heldout import backend_for, evaluate_backend

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
    return 0


def cmd_generate(args: argparse.Namespace) -> int:
    """``genenv-lab generate --run DIR "Task: ..."``: the agent's answer and the domain's verdict."""
    from rich.markup import escape

    from .export import generate

    console = _console()
    result = generate(args.run, args.task, epoch=args.epoch)
    console.print(f"[bold]{escape(result['question'])}[/bold] (agent after epoch {result['epoch']})",
                  highlight=False)
    console.print(result["answer"], markup=False, highlight=False)
    verdict = "right" if result["reward"] >= 1.0 else f"reward {result['reward']:.2f}"
    console.print(f"[dim]{verdict}; expected: {escape(result['expected'])}[/dim]", highlight=False)
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    """``genenv-lab export --run DIR --out DIR [--merge]``."""
    from .export import check_repo_id, export_agent, push_to_hub

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
    from .domains import get_domain
    from .domains.check import check_domain

    console = _console()
    try:
        domain = get_domain(args.domain, seeds=args.seeds, heldout=args.heldout)
    except ValueError as exc:
        console.print(f"[red]config error:[/red] {exc}")
        return 2
    problems = check_domain(domain)
    problems += [p for p in (_commit_problem(t) for t in domain.seed_tasks()[:1]) if p]
    for problem in problems:
        console.print(f"[red]✗[/red] {escape(problem)}", highlight=False)
    if problems:
        return 1
    console.print(f"[green]✓[/green] domain {args.domain!r} passes: {len(domain.seed_tasks())} seed tasks, "
                  f"{len(domain.heldout_tasks())} held-out tasks parse, give themselves back and are solvable")
    return 0


def _commit_problem(task) -> str | None:
    """Whether a task of the domain can be committed as a run commits it (:func:`genenv_lab.runlog.commit_problem`),
    tried on a seed task dressed as a generated one."""
    from .runlog import commit_problem
    from .types import GeneratedTask

    spec = task.spec
    row = GeneratedTask(task_id="check", epoch=1, env_version=0, parent_id=task.seed_id, root_id=task.seed_id,
                        context="", raw=spec.text, valid=True, question=spec.question, answer=spec.answer,
                        text=spec.text, features=dict(spec.features) if isinstance(spec.features, dict) else {}
                        ).to_row()
    problem = commit_problem(row)
    return None if problem is None else (f"seed task {task.seed_id!r}: a task of this domain cannot be committed "
                                         f"({problem}); features must be plain numbers, strings or booleans")


def cmd_compare(args: argparse.Namespace) -> int:
    from .compare import (band_residence, bands_of, compare_grid, read_study, rollouts_to_reach_table, spread_lines,
                          summarise, sweep_entries, variant_entries, verdict)

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
    from .evaluation.common import BenchmarkDataMissing

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
        table = compare_grid(entries, seeds, out)
    except BenchmarkDataMissing as exc:
        console.print(f"[red]held-out data missing:[/red] {exc}")
        return 2
    except KeyboardInterrupt:
        console.print("[yellow]interrupted[/yellow]; the same command continues it (finished runs are skipped)")
        return 130
    last = table[table["epoch"] == table["epoch"].max()] if len(table) else table
    console.print(summarise(last).to_string(index=False))
    console.print(band_residence(table, bands=bands_of(entries)).to_string(index=False))
    for row in rollouts_to_reach_table(table).itertuples():
        console.print(f"{row.label}: {row.verdict}")
    console.print(f"report: {out / 'report.html'}  table: {out / 'comparison.csv'}  "
                  f"summary: {out / 'summary.csv'}  band residence: {out / 'band_residence.csv'}  "
                  f"rollouts to reach: {out / 'rollouts_to_reach.csv'}  efficiency: {out / 'efficiency.csv'}  "
                  f"dry run: {out / 'dry_run.csv'}")
    if args.command == "compare":  # a sweep has no baseline to judge against
        console.print()
        console.print(verdict(table), markup=False)
        if study is not None:
            line = spread_lines(table, study, args.spread_from)
            console.print(line or f"(the study in {args.spread_from} has none of these arms)", markup=False)
    return 0


def _one_process(console, command: str) -> bool:
    """Whether this is a one-process job; otherwise says that ``command`` runs in one process (only ``run`` is
    data-parallel: every process of an ``eval`` or ``compare`` job would write the same files)."""
    from .distributed import launched_world_size

    if launched_world_size() == 1:
        return True
    console.print(f"[red]error:[/red] genenv-lab {command} runs in one process; launch it without torchrun or "
                  "accelerate launch (only genenv-lab run is data-parallel)")
    return False


def _interruptible() -> None:
    """Ctrl-C, SIGTERM (the lab's stop escalates to it) and SIGHUP end a run as ``interrupted`` between two writes.

    Python leaves SIGINT ignored when the process started with it ignored, as every job a non-interactive shell
    puts in the background does (``cmd &``); a run started that way could not be stopped cleanly."""
    import signal

    from .loop import STOP_REQUESTED

    def _stop(signum, frame):
        # Also remembered: a library that swallows KeyboardInterrupt (a bare ``except:`` in an import) would
        # otherwise lose the request; the loop checks the flag before every phase and stops there.
        STOP_REQUESTED.set()
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
    # a closed terminal or SSH session (SIGHUP) ends the run the same way, unless started under nohup (ignored)
    if signal.getsignal(signal.SIGHUP) is not signal.SIG_IGN:
        signal.signal(signal.SIGHUP, _stop)


def _f(x, digits: int = 2) -> str:
    from .runlog import fmt_num

    return fmt_num(x, digits)


def _count(minimum: int, maximum: int | None = None):
    """argparse type: an integer ≥ ``minimum`` (and ≤ ``maximum`` when given; a value that cannot be right is
    refused, not ignored)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value} is below {minimum}")
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(f"{value} is above {maximum}")
        return value
    parse.__name__ = f"integer ≥ {minimum}" if maximum is None else f"integer {minimum}-{maximum}"
    return parse


def _nonempty(text: str) -> str:
    """argparse type: a non-blank string (``--model ""`` is refused)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty value names nothing")
    return text


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
    p.add_argument("--config", type=_nonempty, metavar="FILE",
                   help="start from a configuration file instead of a preset: JSON (a run's own config.json works) "
                        "or YAML, the sections of config.json; the other options override it")
    p.add_argument("--model", type=_nonempty,
                   help="override the base model: a Hugging Face id, a local directory, 'tiny' or "
                                   "'smollm2-135m'")
    p.add_argument("--engine", choices=["hf", "unsloth", "vllm"], help="override the engine")
    p.add_argument("--domain", type=_nonempty, metavar="NAME|package.module:Class",
                   help=f"task domain: one of {', '.join(known_domains())}, or your own class (docs/domains.md); "
                        "default: the preset's (count for cpu-demo, times for cpu-times, times99 for cpu-smollm2, "
                        "else arith)")
    p.add_argument("--epochs", type=int, help="number of epochs")
    p.add_argument("--seed", type=int, help="random seed")
    p.add_argument("--variant", choices=VARIANTS,
                   help="genenv (default) or a baseline of docs/method.md (Baselines): random_env, static, "
                        "filter_only, offline_teacher, online_filter (static's fixed set screened online for "
                        "0 < p̂ < 1, as DAPO's dynamic sampling; --loop.screen_factor caps the screening)")
    p.add_argument("--out", type=_nonempty, help="run directory (default runs/<preset>-<time>)")
    p.add_argument("--resume", action="store_true", help="continue the run in --out from its last complete epoch")
    p.add_argument("--report-to", choices=TRACKERS,
                   help="also log each epoch's record to a tracker (= --loop.report_to; genenv_lab/trackers.py)")
    p.add_argument("--eval-every", type=int, help="evaluate the agent on --eval-benchmark every N epochs")
    p.add_argument("--eval-benchmark", help="held-out benchmark for --eval-every (default bamboogle)")
    p.add_argument("--eval-category", help="benchmark category of --eval-benchmark (default: all covered)")
    p.add_argument("--eval-limit", type=int, help="items per category in each evaluation (default 20)")
    p.add_argument("--eval-protocol", choices=["per-turn", "official"],
                   help="BFCL multi-turn categories: per-turn (default; the paper's reading) or official (BFCL's)")
    p.add_argument("--eval-data-dir", help="benchmark data folder for --eval-every")
    p.add_argument("--set", action="append", metavar="SECTION.FIELD=VALUE",
                   help="any config field, repeatable: --set curriculum.alpha=0.3 (the same as --curriculum.alpha "
                        "0.3 below; validated like the presets)")
    config_arguments(p)
    p.set_defaults(func=cmd_run)


def _add_eval(sub) -> None:
    """``genenv-lab eval``."""
    from .evaluation.runner import BENCHMARKS

    e = sub.add_parser("eval", help="score a model or a predictions file on a benchmark (official metric)")
    e.add_argument("--benchmark", required=True, choices=sorted(BENCHMARKS) + ["api_bank"])
    src = e.add_mutually_exclusive_group()
    src.add_argument("--model", type=_nonempty,
                     help="a Hugging Face id, a local model directory, 'tiny', 'smollm2-135m', or a run "
                          "directory (its last epoch's agent adapter)")
    src.add_argument("--predictions", help="JSONL of {\"id\": ..., \"prediction\": \"<raw output>\"} to score")
    src.add_argument("--gold", metavar="OUT.jsonl", help="write the answer keys as predictions (sanity check)")
    e.add_argument("--category", action="append", help="benchmark category (repeatable; default: all covered)")
    e.add_argument("--limit", type=_count(1), help="first N items of each category")
    scorings = ["official"] + sorted({name for spec in BENCHMARKS.values() for name, _ in spec.other_scorings})
    e.add_argument("--scoring", default="official", choices=scorings,
                   help="official (default): the benchmark's own verdict; lenient (bfcl only): calls are also read "
                        "from prose, code fences, JSON and tool-call tags; not comparable with the leaderboard")
    e.add_argument("--protocol", default="official", choices=["official", "per-turn"],
                   help="BFCL multi-turn only: official (default; BFCL's checker, the model's own history, an entry "
                        "right only if every turn is) or per-turn (the paper's reading: each turn from the answer "
                        "key's state, the share of turns right; not BFCL's leaderboard metric)")
    e.add_argument("--data-dir", help="benchmark data folder (default: $GENENV_LAB_DATA/<name> or the cache)")
    e.add_argument("--max-new-tokens", type=_count(1, 32768), default=128,
                   help="generation budget per item, at most 32768 as loop.eval_max_new_tokens (--model; per step "
                        "for BFCL multi-turn)")
    e.add_argument("--out", type=_nonempty, help="output folder (default runs/eval/<benchmark>-<time>)")
    e.set_defaults(func=cmd_eval)


def _grid_options(q: argparse.ArgumentParser) -> None:
    q.add_argument("--seeds", type=_count(1, MAX_GRID_SEEDS), default=3,
                   help=f"seeds per configuration, at most {MAX_GRID_SEEDS} (default 3)")
    q.add_argument("--first-seed", type=_count(0, MAX_SEED), default=0, metavar="N",
                   help="the first seed: the runs use seeds N .. N+seeds-1 (default 0). To report on seeds no "
                        "choice was made on, start past the seeds any setting was tuned on (e.g. --first-seed 3 "
                        "after looking at seeds 0-2)")
    q.add_argument("--epochs", type=_count(1), help="epochs per run (default: the preset's)")
    q.add_argument("--domain", type=_nonempty, metavar="NAME|package.module:Class",
                   help=f"task domain: one of {', '.join(known_domains())}, or your own class "
                        "(docs/domains.md); default: the preset's")
    q.add_argument("--reference-tasks", type=_count(0),
                   help="tasks of the untrained simulator measured every epoch (the counterfactual; default: "
                        "the preset's, else 8)")
    q.add_argument("--eval-limit", type=_count(0),
                   help="held-out items per evaluation (default: the preset's, else 20; 0: all)")
    q.add_argument("--data-dir", help="benchmark data of the held-out score when the domain ships no held-out "
                                      "set (tools: BFCL; default $GENENV_LAB_DATA/<name> or the cache)")
    q.add_argument("--out", required=True, type=_nonempty,
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
    g.add_argument("--run", required=True, type=_nonempty, help="run directory")
    g.add_argument("--epoch", type=_count(0), help="the agent after this epoch (default: the last; 0: untrained)")
    g.add_argument("task", help='a task as the simulator writes it, e.g. "Task: 7 * 8"')
    g.set_defaults(func=cmd_generate)
    x = sub.add_parser("export", help="export a run's agent for transformers + peft (adapter, or merged)")
    x.add_argument("--run", required=True, type=_nonempty, help="run directory")
    x.add_argument("--epoch", type=_count(1), help="the agent after this epoch (default: the last)")
    x.add_argument("--out", required=True, type=_nonempty, help="a new folder")
    x.add_argument("--merge", action="store_true", help="merge the adapter into the base: one standalone model")
    x.add_argument("--push-to-hub", metavar="OWNER/NAME", default="",
                   help="then publish the folder as this hub model (needs hf auth login or $HF_TOKEN)")
    x.add_argument("--private", action="store_true", help="with --push-to-hub: a private hub model")
    x.set_defaults(func=cmd_export)


def _add_check_domain(sub) -> None:
    """``genenv-lab check-domain``."""
    d = sub.add_parser("check-domain", help="check that a domain (yours too) keeps what the loop relies on")
    d.add_argument("domain", type=_nonempty, metavar="NAME|package.module:Class")
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
    except (OSError, RuntimeError, ValueError, KeyError, ImportError) as exc:
        # what the commands do not turn into their own message (a full disk, a read-only --out, a corrupt file
        # deep in a library): one line, the traceback with --debug
        print(f"error: {type(exc).__name__}: {exc} (genenv-lab --debug ... shows the traceback)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
