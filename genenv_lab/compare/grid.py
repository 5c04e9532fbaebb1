"""Running a comparison: the grid of (label, config) entries over seeds, each run into ``<out>/runs/<label>-s<seed>``
(finished runs skipped, interrupted ones resumed), under one lock per ``--out`` and a manifest written only once
it is held."""

from __future__ import annotations

import functools
import itertools
import os
from pathlib import Path
from typing import Sequence

import pandas as pd

from genenv_lab.coevolution.resolve import for_domain, resolve
from genenv_lab.config import RunConfig, preset
from genenv_lab.rundir.layout import RunDirError, atomic_write_json
from genenv_lab.compare.report import write_report
from genenv_lab.compare.table import bands_of, collect, run_dir_for

COMPARE_LOCK = ".compare.lock"
"""The file a running comparison holds an exclusive lock on (one comparison per ``--out`` at a time)."""


def variant_entries(presets: Sequence[str], variants: Sequence[str], *, epochs: int | None = None,
                    domain: str | None = None, teacher: str | None = None,
                    teacher_multipliers: Sequence[float] = (1.8, 3.3), reference_tasks: int | None = None,
                    eval_limit: int | None = None, data_dir: str = "") -> list[tuple[str, RunConfig]]:
    """(label, config) for each preset × variant; ``offline_teacher`` expands to one entry per data multiplier."""
    out = []
    for name, variant in itertools.product(presets, variants):
        base = preset(name)
        if domain:
            base = for_domain(base, domain)
        measured = _measurement(base, reference_tasks, eval_limit, data_dir)
        measured["loop"]["variant"] = variant
        if epochs:
            measured["loop"]["epochs"] = epochs
        if variant == "offline_teacher":
            if not teacher:
                raise ValueError("the offline_teacher variant needs a teacher model (--teacher ID or directory)")
            for m in teacher_multipliers:
                cfg = resolve(base.replace(**measured, env={"teacher_model": teacher, "teacher_data_multiplier": m}))
                out.append((f"{name}:offline_teacher_x{m:g}", cfg))
        else:
            out.append((f"{name}:{variant}", resolve(base.replace(**measured))))
    return out


def sweep_entries(preset_name: str, *, alphas: Sequence[float] = (0.5,), shapes: Sequence[str] = ("gaussian",),
                  epochs: int | None = None, domain: str | None = None, reference_tasks: int | None = None,
                  eval_limit: int | None = None, data_dir: str = "") -> list[tuple[str, RunConfig]]:
    """(label, config) for each α × reward shape of the full method (the sweep helper)."""
    base = preset(preset_name)
    if domain:
        base = for_domain(base, domain)
    measured = _measurement(base, reference_tasks, eval_limit, data_dir)
    if epochs:
        measured["loop"]["epochs"] = epochs
    return [(f"{preset_name}:alpha={a:g}:{s}", resolve(base.replace(**measured, curriculum={"alpha": a, "shape": s})))
            for a, s in itertools.product(alphas, shapes)]


def _measurement(base: RunConfig, reference_tasks: int | None, eval_limit: int | None,
                 data_dir: str) -> dict[str, dict]:
    """The settings every run of a comparison measures with (the ``loop`` and ``eval`` changes): held-out score after
    every epoch, and the counterfactual set. ``None`` keeps the preset's own choice where it makes one
    (``cpu-demo``: 32 reference tasks, the whole held-out set), else 8 reference tasks and 20 held-out items."""
    if reference_tasks is None:
        reference_tasks = base.loop.reference_tasks or 8
    if eval_limit is None:
        eval_limit = base.eval.limit if base.eval.every else 20
    return {"loop": {"reference_tasks": reference_tasks},
            "eval": {"every": 1, **_heldout(base.loop.domain, data_dir), "limit": eval_limit}}


def _heldout(domain: str, data_dir: str = "") -> dict[str, str]:
    """Eval settings of the held-out evaluation: the domain's own held-out set, else its benchmark (read from
    ``data_dir``, else ``$GENENV_LAB_DATA`` or the cache)."""
    from genenv_lab.domains import get_domain

    dom = get_domain(domain)
    if dom.heldout_tasks():
        return {"benchmark": "domain"}
    benchmark, category = dom.heldout_benchmark
    return {"benchmark": benchmark, "category": category, "data_dir": str(data_dir or "")}


def compare_grid(entries: Sequence[tuple[str, RunConfig]], seeds: int | Sequence[int], out: str | Path, *,
                 progress: bool = True, backend_factory=None, jobs: int = 1) -> pd.DataFrame:
    """Run (or resume, or skip when finished) every entry for every seed, then write and return the comparison. The
    runs go seed by seed (every entry of the first seed, then of the next), so a comparison stopped early holds whole
    seeds, paired across its arms.

    ``backend_factory(cfg)`` builds the backend of each run (default: the engine of its config). ``jobs`` > 1 runs
    that many at a time, each in its own process on its share of the CPU cores (:func:`run_parallel`).
    """
    from genenv_lab.coevolution.heldout import check_eval_data
    from genenv_lab.coevolution.session import run
    from genenv_lab.rundir.read import read_state

    check_jobs(jobs, [cfg for _, cfg in entries])
    for _, cfg in entries:  # missing benchmark data fails here, before any folder or model
        check_eval_data(cfg)
    out = Path(out)
    seed_list = list(range(seeds)) if isinstance(seeds, int) else list(seeds)
    manifest = {"entries": [{"label": lab, "config": cfg.to_dict()} for lab, cfg in entries], "seeds": seed_list}
    check_out(out)  # a folder of the user's own files is refused before anything is written into it
    out.mkdir(parents=True, exist_ok=True)
    lock = _lock_comparison(out)  # before anything of the folder is written: a second compare is refused untouched
    try:
        for (label, cfg), seed in itertools.product(entries, seed_list):
            _check_reusable(run_dir_for(out, label, seed), cfg.replace(loop={"seed": seed}))
        atomic_write_json(out / "manifest.json", manifest)
        # seed by seed, every arm of a seed before the next seed: a comparison stopped early holds whole pairs
        grid = [(label, cfg.replace(loop={"seed": seed}), seed)
                for seed, (label, cfg) in itertools.product(seed_list, entries)]
        if jobs > 1:
            run_parallel(out, grid, jobs, progress, backend_factory)
        else:
            for label, cfg_s, seed in grid:
                _run_one(out, label, cfg_s, seed, progress, backend_factory, run, read_state)
        table = collect(out)
        write_report(table, out, bands_of(entries))
    finally:
        os.close(lock)
    return table


def check_out(out: str | Path) -> None:
    """``--out`` must be new, empty or a comparison's own folder (its ``manifest.json``; or only the lock of a
    comparison stopped before it wrote one): a folder holding anything else (a user's ``summary.csv``, notes) is
    refused with a RunDirError in one line and left untouched, as ``run --out`` refuses a non-empty folder. A path
    that is not a folder is left to the ``mkdir`` that follows."""
    out = Path(out)
    if not out.is_dir() or (out / "manifest.json").is_file():
        return
    try:
        foreign = sorted(p.name for p in out.iterdir() if p.name != COMPARE_LOCK)
    except OSError:  # not listable: the lock or the first write says why
        return
    if foreign:
        shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
        raise RunDirError(f"--out {out} is not empty ({shown}) and is not a comparison's folder (no manifest.json); "
                          "choose a new or empty --out (nothing was changed)")


def _lock_comparison(out: Path) -> int:
    """An exclusive ``flock`` on ``out/.compare.lock`` for the comparison's whole run (released when it ends, a kill
    included), or a RunDirError in one line when another comparison holds it."""
    import fcntl

    fd = os.open(out / COMPARE_LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise RunDirError(f"{out} is being written by another comparison; wait for it to finish or stop it, then "
                          "run this one again (nothing was changed)") from None
    return fd


def _check_reusable(run_dir: Path, cfg_s: RunConfig) -> None:
    """A run folder the comparison will reuse (skip when finished, resume otherwise) must have been started with this
    arm's configuration, epochs aside, and must not hold more epochs than asked (the report would say otherwise than
    the manifest): else a RunDirError in one line, before the manifest is written."""
    from genenv_lab.rundir.layout import CONFIG, STATE
    from genenv_lab.rundir.read import read_config, read_state

    if not (run_dir / CONFIG).is_file():
        return
    try:
        saved = read_config(run_dir)
    except RunDirError as exc:
        raise RunDirError(f"{exc}; move that run away or choose a new --out (nothing was changed)") from None
    if saved.identity() != cfg_s.identity():
        raise RunDirError(f"{run_dir} was run with another configuration than this comparison's (see its {CONFIG}); "
                          "pass the same options or choose a new --out (nothing was changed)")
    if (run_dir / STATE).is_file():
        done = read_state(run_dir).get("last_complete_epoch", 0)
        if isinstance(done, int) and done > cfg_s.loop.epochs:
            raise RunDirError(f"{run_dir} holds {done} epochs, more than the {cfg_s.loop.epochs} asked; pass --epochs "
                              f"{done} or choose a new --out (nothing was changed)")


def _run_one(out: Path, label: str, cfg_s: RunConfig, seed: int, progress: bool, backend_factory, run,
             read_state) -> None:
    """Run, resume or (when finished) skip one arm's seed. An existing folder is always resumed, never cleared: the
    run writer continues from what it committed, or refuses in one line (a folder without state.json that holds
    committed epochs included)."""
    run_dir = run_dir_for(out, label, seed)
    resume = run_dir.exists()
    state = read_state(run_dir) if (run_dir / "state.json").is_file() else {}
    if state.get("status") == "finished" and state.get("last_complete_epoch", 0) >= cfg_s.loop.epochs:
        return
    backend = backend_factory(cfg_s) if backend_factory else None
    if progress:
        print(f"== {label} seed {seed} → {run_dir}")
    for _ in run(cfg_s, run_dir, resume=resume, backend=backend, progress=progress):
        pass


def check_jobs(jobs: int, configs: Sequence[RunConfig]) -> None:
    """``jobs`` must be a positive count, and above 1 only for runs on the CPU (``hf`` engine, a CPU preset, no GPU
    visible): GPU runs would share one GPU's memory, and the ``hf`` engine takes a visible GPU. A ValueError that
    says what to do otherwise."""
    if jobs < 1:
        raise ValueError(f"--jobs {jobs}: pass 1 (one run at a time) or more")
    if jobs > 1:
        on_gpu = sorted({cfg.preset or cfg.model.engine for cfg in configs if cfg.is_gpu})
        if on_gpu:
            raise ValueError(f"--jobs {jobs} runs several runs at once on the CPU cores; {', '.join(on_gpu)} runs on "
                             "a GPU: pass --jobs 1")
        import torch

        if torch.cuda.is_available():
            raise ValueError(f"--jobs {jobs} runs several runs at once on the CPU cores, and a GPU is visible, which "
                             "every run would take: pass --jobs 1, or hide the GPU (CUDA_VISIBLE_DEVICES=)")


def threads_per_job(jobs: int) -> int:
    """torch threads each of ``jobs`` parallel runs gets: its share of this process's CPU cores, at least 1, and at
    most ``OMP_NUM_THREADS`` where the user set it (the thread count a run of its own would have)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    share = max(1, cores // jobs)
    asked = os.environ.get("OMP_NUM_THREADS", "").strip()
    if not asked:
        return share
    if not asked.isdigit() or int(asked) < 1:
        raise ValueError(f"OMP_NUM_THREADS={asked!r} is not a positive whole number of threads; set it to one "
                         "(e.g. OMP_NUM_THREADS=1) or unset it")
    return min(share, int(asked))


def run_parallel(out: Path, grid: Sequence[tuple[str, RunConfig, int]], jobs: int, progress: bool,
                 backend_factory=None) -> None:
    """Run the grid's (label, config, seed) ``jobs`` at a time, each in a process of its own (spawned: no torch
    state is shared) with :func:`threads_per_job` torch threads. The base models (and an ``offline_teacher``'s
    teacher) are built here first, with this process's threads, so a world model's bytes are those a sequential
    comparison builds and no two runs build one cache folder. A run is handed to a process only when one is free,
    so nothing waits in a queue: after the first failure no further run starts (every failure is said, the first
    raised once the running ones end), and on Ctrl-C or SIGTERM, to this process or its whole group, the running
    runs stop as ``interrupted`` and nothing starts after them; a second signal meanwhile (a quick double Ctrl-C) is
    ignored, and a run's process still alive :data:`WORKERS_STOP_S` seconds later is killed. A run's process also
    stops when this one dies, a SIGKILL included (:func:`_watch_parent`), and when one of them dies (kill -9, the
    out-of-memory killer) the runs beside it stop too, named with the command that continues them in one
    RunDirError. A stopped comparison continues with the same command (finished runs skipped, the rest resumed).
    The progress bar counts committed epochs of all runs (read from each run's state.json). A script that calls this
    must guard its top level with ``if __name__ == "__main__":`` (spawned processes import the main module again).

    Numbers: a run's floating point depends on its torch thread count, so a run here equals the sequential
    comparison's run at the same thread count (``OMP_NUM_THREADS=1`` with 2 jobs on 2 cores), not one with all
    cores. Written by hand: the standard library's process pool does the work; the rest is bookkeeping."""
    import concurrent.futures as cf
    import multiprocessing
    import pickle

    from tqdm.auto import tqdm

    try:
        pickle.dumps(backend_factory)
    except Exception as exc:  # noqa: BLE001 - pickling fails in many ways: a lambda, a local function, a lock
        raise ValueError(f"a backend_factory for jobs > 1 must be picklable, e.g. a module-level function ({exc}); "
                         "or pass jobs=1") from None
    _prepare_models(grid)
    threads = threads_per_job(jobs)
    total = sum(cfg_s.loop.epochs for _, cfg_s, _ in grid)
    committed = functools.partial(_committed, out, grid)
    bar = tqdm(total=total, desc=f"comparison ({len(grid)} runs, {jobs} at a time, {threads} threads each)",
               unit="epoch", disable=not progress)
    pool = cf.ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn"),
                                  initializer=_worker_started, initargs=(os.getpid(),))
    waiting, running, failures = list(grid), {}, []
    interrupted = None
    try:
        while waiting or running:
            while waiting and len(running) < jobs and not failures:
                label, cfg_s, seed = waiting.pop(0)
                running[pool.submit(_run_job, out, label, cfg_s, seed, threads, backend_factory)] = (label, seed)
            if not running:
                break
            finished, _ = cf.wait(running, timeout=2.0, return_when=cf.FIRST_COMPLETED)
            bar.update(committed() - bar.n)
            for future in finished:
                label, seed = running.pop(future)
                exc = future.exception()
                if exc is not None:
                    failures.append((label, seed, exc))
                    said = ("stopped: a run's process ended abruptly" if isinstance(exc, cf.process.BrokenProcessPool)
                            else f"failed: {exc}")
                    bar.write(f"{label} seed {seed} {said}" + ("; no further run is started" if waiting else ""))
    except BaseException:  # Ctrl-C or SIGTERM to this process alone: the runs are told too, and stop cleanly
        interrupted = _hold_signals()  # a second signal (a quick double Ctrl-C) cannot break the shutdown below
        _signal_runs()
        raise
    finally:
        _end_pool(pool, interrupted, bar, committed)
    if failures:
        raise _first_failure(out, failures)


def _committed(out: Path, grid: Sequence[tuple[str, RunConfig, int]]) -> int:
    """Epochs the grid's runs have committed, for the progress bar only: a state.json not (yet) readable counts 0,
    the run itself decides."""
    from genenv_lab.rundir.read import read_state

    done = 0
    for label, _, seed in grid:
        try:
            value = read_state(run_dir_for(out, label, seed)).get("last_complete_epoch", 0)
        except RunDirError:
            continue
        done += value if isinstance(value, int) else 0
    return done


def _end_pool(pool, held: dict | None, bar, committed) -> None:
    """The end of :func:`run_parallel`'s pool: waited for (the running runs finish), or after a signal (``held``:
    the signal handlers set aside meanwhile) bounded by :func:`_stop_workers`; the bar closed; the handlers back."""
    try:
        if held is None:
            pool.shutdown(wait=True, cancel_futures=True)
        else:
            _stop_workers(pool)
        bar.update(committed() - bar.n)
        bar.close()
    finally:
        if held is not None:
            _restore_signals(held)


def _first_failure(out: Path, failures: list[tuple[str, int, BaseException]]) -> BaseException:
    """The error :func:`run_parallel` raises: the first run's own, or, when a run's process died (the pool's
    BrokenProcessPool names neither the runs nor what to do), one line naming the runs it stopped and the command
    that continues them."""
    from concurrent.futures.process import BrokenProcessPool

    exc = failures[0][2]
    if not isinstance(exc, BrokenProcessPool):
        return exc
    lost = ", ".join(f"{label} seed {seed} ({run_dir_for(out, label, seed)})" for label, seed, e in failures
                     if isinstance(e, BrokenProcessPool))
    return RunDirError(f"a run's process ended abruptly (killed: kill -9, the out-of-memory killer) and stopped "
                       f"{lost}; their committed epochs are kept: continue with the same command (genenv-lab compare "
                       f"... --out {out}; finished runs are skipped)")


WORKERS_STOP_S = 60.0
"""After a Ctrl-C or SIGTERM, how long the comparison waits for its runs' processes to stop as ``interrupted``
before it kills them (a killed run resumes too, from its last committed epoch)."""


def _hold_signals() -> dict | None:
    """In the main thread, SIGINT, SIGTERM and SIGHUP ignored from here on (a quick double Ctrl-C, a terminal's and a
    supervisor's signal one after the other), so that the shutdown of the runs is not broken half way; the previous
    handlers, for :func:`_restore_signals` (``{}`` outside the main thread, where handlers cannot be set)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return {}
    held = {}
    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        sig = getattr(signal, name, None)
        if sig is not None and signal.getsignal(sig) is not signal.SIG_IGN:
            held[sig] = signal.signal(sig, signal.SIG_IGN)
    return held


def _restore_signals(held: dict) -> None:
    import signal

    for sig, handler in held.items():
        signal.signal(sig, handler)


def _stop_workers(pool, timeout_s: float | None = None) -> None:
    """The shutdown of an interrupted comparison, bounded: nothing more is started, the runs' processes (told to
    stop) get :data:`WORKERS_STOP_S` seconds to end their runs as ``interrupted``, and any still alive then is
    killed, so that neither this process nor its exit waits on them for ever."""
    import time

    timeout_s = WORKERS_STOP_S if timeout_s is None else timeout_s
    workers = list((getattr(pool, "_processes", None) or {}).values())  # the pool's own processes, no others
    manager = getattr(pool, "_executor_manager_thread", None)
    pool.shutdown(wait=False, cancel_futures=True)
    deadline = time.monotonic() + timeout_s
    for worker in workers:
        worker.join(max(0.0, deadline - time.monotonic()))
    for worker in workers:
        if worker.is_alive():
            worker.kill()
            worker.join(5.0)
    if manager is not None:
        manager.join(10.0)


def _prepare_models(grid: Sequence[tuple[str, RunConfig, int]]) -> None:
    """Build every model the grid's runs load that this project builds (once, cached; idempotent: a built model is
    found by its cache key): each base, and the teacher of an ``offline_teacher`` arm."""
    from genenv_lab.backends.factory import prepare_base
    from genenv_lab.domains import domain_of

    for _, cfg_s, _ in grid:
        prepare_base(cfg_s, domain_of(cfg_s))
        if cfg_s.variant.fixed_set == "teacher":
            teacher = cfg_s.replace(model={"name_or_path": cfg_s.env.teacher_model})
            prepare_base(teacher, domain_of(teacher))


def _signal_runs() -> None:
    """SIGINT to this process's children (the runs' processes), which stop as ``interrupted``."""
    import multiprocessing
    import signal

    for child in multiprocessing.active_children():
        try:
            os.kill(child.pid, signal.SIGINT)
        except (ProcessLookupError, TypeError):  # ended already, or not started (no pid)
            pass


PARENT_POLL_S = 0.2  # how often a run's process checks that the comparison's process is still its parent
PARENT_GONE_GRACE_S = 5.0
"""How long a run's process, once the comparison's process is gone, lets its run stop as ``interrupted`` before it
exits anyway (that run then reads as killed, and resumes the same)."""
_IN_RUN = None  # in a run's process: a threading.Event set while a run is in flight


def _worker_started(parent: int | None = None) -> None:
    """In each run's process, first: stop cleanly on SIGINT, SIGTERM or SIGHUP (the first one only), and end when
    the comparison's process ``parent`` is gone, so that no run's process outlives it (:func:`_watch_parent`; on
    Linux the run is also told at once, by SIGTERM, through ``PR_SET_PDEATHSIG``)."""
    import ctypes
    import signal
    import sys
    import threading

    from genenv_lab.coevolution.session import stop_on_signals

    global _IN_RUN
    _IN_RUN = threading.Event()
    stop_on_signals(once=True)
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM))  # 1: PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    if parent is not None:
        threading.Thread(target=_watch_parent, args=(parent, _IN_RUN), name="genenv-lab-parent-watch",
                         daemon=True).start()


def _watch_parent(parent: int, in_run, poll_s: float = PARENT_POLL_S, grace_s: float = PARENT_GONE_GRACE_S) -> None:
    """A run's process's watchdog: once ``parent`` (the comparison's process) is no longer its parent (SIGKILL, a
    crash), nothing will be handed to it again and the queue it waits on never closes (it holds both ends). So the
    run in flight, if any, is told to stop (SIGTERM: ``interrupted``; a second one is ignored), gets ``grace_s``
    seconds, and the process exits, closing its end of the resource tracker's pipe (the tracker ends with the last)."""
    import signal
    import time

    while os.getppid() == parent:
        time.sleep(poll_s)
    if in_run.is_set():
        try:
            os.kill(os.getpid(), signal.SIGTERM)
        except OSError:
            pass
        deadline = time.monotonic() + grace_s
        while in_run.is_set() and time.monotonic() < deadline:
            time.sleep(0.05)
    os._exit(1)


def _run_job(out: Path, label: str, cfg_s: RunConfig, seed: int, threads: int, backend_factory) -> None:
    """One run of :func:`run_parallel`, in its own process: ``threads`` torch threads, no progress bars. An error
    that cannot cross back to the comparison's process (one that cannot be pickled) crosses as a RuntimeError that
    names it."""
    import pickle

    import torch

    from genenv_lab.coevolution.session import run
    from genenv_lab.rundir.read import read_state

    torch.set_num_threads(threads)
    if _IN_RUN is not None:
        _IN_RUN.set()
    try:
        _run_one(out, label, cfg_s, seed, False, backend_factory, run, read_state)
    except Exception as exc:
        try:
            pickle.loads(pickle.dumps(exc))
        except Exception:  # noqa: BLE001 - whatever stops it from crossing
            raise RuntimeError(f"{label} seed {seed}: {type(exc).__name__}: {exc}") from None
        raise
    finally:
        if _IN_RUN is not None:
            _IN_RUN.clear()
