"""``genenv-lab``: the command-line entry point (the only argument parsing in the project): the parser of every
verb, ``genenv-lab run``, and the dispatch. The other verbs are in :mod:`.grids` (``compare``, ``sweep``) and
:mod:`.run_tools` (``eval``, ``generate``, ``export``, ``check-domain``, ``upgrade``)."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from genenv_lab.cli.common import console as _console, interruptible as _interruptible
from genenv_lab.cli.flags import config_arguments, nonempty_type, run_config_from
from genenv_lab.cli.grids import MAX_GRID_SEEDS, add_grids
from genenv_lab.cli.run_summary import run_summary
from genenv_lab.cli.run_tools import add_agent_commands, add_check_domain, add_eval, add_lab, add_upgrade
from genenv_lab.config import PRESETS, ConfigError
from genenv_lab.core.metrics import RWR_KL

__all__ = ["MAX_GRID_SEEDS", "build_parser", "cmd_run", "main"]


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
    from genenv_lab.coevolution.session import run
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
                          fmt_num(r.extra.get(RWR_KL), 4), f"{r.wall_s:.1f}")
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="genenv-lab",
        description="GenEnv co-evolution of an LLM agent and an LLM environment simulator (two LoRA adapters on one "
                    "base model): run it, score models on the paper's benchmarks, compare against baselines.",
        epilog="Start with: genenv-lab run --preset cpu-demo (CPU, minutes). Then: genenv-lab lab (the lab).")
    parser.add_argument("--debug", action="store_true",
                        help="show the full traceback of an unexpected error (default: one line)")
    sub = parser.add_subparsers(dest="command", required=True)
    _add_run(sub)
    add_eval(sub)
    add_grids(sub)
    add_agent_commands(sub)
    add_check_domain(sub)
    add_upgrade(sub)
    add_lab(sub)
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


def main(argv: list[str] | None = None) -> int:
    import warnings

    warnings.filterwarnings("ignore", category=FutureWarning)  # deprecation notices of transformers/TRL internals
    args = build_parser().parse_args(argv)
    if args.debug:
        return args.func(args)
    try:
        return args.func(args)
    except (KeyboardInterrupt, OSError, RuntimeError, ValueError, KeyError, ImportError) as exc:
        from genenv_lab.coevolution.session import interrupted

        if interrupted(exc):  # Ctrl-C before a command's own handling (a --domain module still importing), also
            print("interrupted (Ctrl-C or a signal)", file=sys.stderr)  # when a library hands it on wrapped
            return 130
        # what the commands do not turn into their own message (a full disk, a read-only --out, a corrupt file
        # deep in a library): one line, the traceback with --debug
        print(f"error: {type(exc).__name__}: {exc} (genenv-lab --debug ... shows the traceback)", file=sys.stderr)
        return 1

