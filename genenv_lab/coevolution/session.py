"""A run of many epochs: the run directory opened or resumed, the engine loaded, the untrained agent's held-out
score, then one :func:`~genenv_lab.coevolution.loop.run_epoch` after another, each evaluated when due, checked in sync
across processes and committed, with the tracker, the progress bar and the stop signals around them.

:func:`run` is a generator of :class:`~genenv_lab.core.types.EpochRecord` that the CLI, the notebooks, ``compare``
and the app all drive; :func:`preflight` is every check that can fail before a model loads.
"""

from __future__ import annotations

import math
import threading
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterator

from tqdm.auto import tqdm

from genenv_lab.backends.base import Backend
from genenv_lab.backends.distributed import Processes, processes
from genenv_lab.backends.factory import check_engine, make_backend
from genenv_lab.coevolution.heldout import check_eval_data, evaluate_epoch, seed_probe
from genenv_lab.coevolution.loop import run_epoch
from genenv_lab.coevolution.resolve import resolve
from genenv_lab.coevolution.state import restore_state
from genenv_lab.config import ConfigError, RunConfig
from genenv_lab.core.metrics import HELDOUT_FRONTIER_LEVEL, PROCESSES_ADAPTER_SHA256
from genenv_lab.core.types import EpochRecord, LoopState
from genenv_lab.domains import Domain, SeedTask, domain_of
from genenv_lab.rundir.layout import BASELINE, adapter_dir
from genenv_lab.rundir.read import BASELINE_PREFIXES, read_baseline, read_state
from genenv_lab.rundir.trackers import check_tracker, open_tracker, scalars
from genenv_lab.rundir.write import open_run


def make_teacher(cfg: RunConfig, domain: Domain) -> Backend | None:
    """The ``offline_teacher`` baseline's generator: the teacher model with fresh (identity) adapters."""
    if cfg.variant.fixed_set != "teacher":
        return None
    return make_backend(cfg.replace(model={"name_or_path": cfg.env.teacher_model}), domain)


STOP_REQUESTED = threading.Event()
"""Set by the CLI's SIGINT/SIGTERM handler; :func:`run` stops (as ``interrupted``) before its next phase even if
the KeyboardInterrupt raised by the handler was swallowed by library code."""


def stop_on_signals(*, once: bool = False) -> None:
    """Ctrl-C, SIGTERM (the lab's stop escalates to it) and SIGHUP end a run as ``interrupted`` between two writes:
    each sets :data:`STOP_REQUESTED` and raises KeyboardInterrupt (with ``once``, only the first does: a run of
    ``compare --jobs`` is signalled by the terminal and by its comparison, and the second must not break the first's
    clean stop).

    Python leaves SIGINT ignored when the process started with it ignored, as every job a non-interactive shell
    puts in the background does (``cmd &``); a run started that way could not be stopped cleanly."""
    import signal

    def _stop(signum, frame):
        # Also remembered: a library that swallows KeyboardInterrupt (a bare ``except:`` in an import) would
        # otherwise lose the request; the loop checks the flag before every phase and stops there.
        if once and STOP_REQUESTED.is_set():
            return
        STOP_REQUESTED.set()
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
    # a closed terminal or SSH session (SIGHUP) ends the run the same way, unless started under nohup (ignored)
    if signal.getsignal(signal.SIGHUP) is not signal.SIG_IGN:
        signal.signal(signal.SIGHUP, _stop)


def _stop_if_requested(procs: Processes) -> None:
    """Stop (as ``interrupted``) when a stop was requested, here or (several processes) in any process, so that all
    stop at the same phase."""
    if procs.any(STOP_REQUESTED.is_set()):
        raise KeyboardInterrupt("stop requested")


def preflight(cfg: RunConfig, *, models: bool = True) -> None:
    """Everything that can fail in seconds, checked before the run folder is written or a model loads: the engine,
    the models' sources and the LoRA targets (``models``: unless a backend is given), the held-out data, the probe
    file's items (``loop.probe``: none may be a held-out item), the tracker's package."""
    resolve(cfg)  # first the names the config gives, against their registries (genenv_lab.coevolution.resolve)
    if models:
        from genenv_lab.models.loading import check_model_source, check_target_modules  # torch: only when a model loads

        check_engine(cfg)
        check_model_source(cfg.model.name_or_path)
        if cfg.loop.variant == "offline_teacher":
            check_model_source(cfg.env.teacher_model)
    try:  # a setting the model or the data cannot take: one line, as a bad config value is
        if models:
            check_target_modules(cfg.model.name_or_path, cfg.model.target_modules, cfg.model.targets_chosen)
        check_eval_data(cfg)
        if cfg.loop.probe:
            domain_of(cfg).probe_tasks(cfg.loop.probe)
    except ConfigError:
        raise
    except (ValueError, TypeError) as exc:
        raise ConfigError(str(exc)) from None
    check_tracker(cfg.loop.report_to)


@dataclass
class _Session:
    """What a run holds from set-up to finish: the domain, its seeds and probe items (``loop.probe``), the engine,
    the writer, the tracker, the progress bar and where held-out evaluation writes."""

    cfg: RunConfig
    writer: Any
    procs: Processes
    domain: Domain
    seeds: list[SeedTask]
    backend: Backend
    bar: Any
    tracker: Any
    eval_dir: Path
    probe: list[SeedTask] = field(default_factory=list)

    def on_phase(self, state: LoopState, phase: str) -> None:
        _stop_if_requested(self.procs)
        self.bar.set_postfix_str(f"epoch {state.epoch + 1}: {phase}")


def run(cfg: RunConfig, out: str | Path, *, resume: bool = False, backend: Backend | None = None,
        progress: bool = True) -> Iterator[EpochRecord]:
    """Run (or resume) co-evolution, yielding one EpochRecord per completed epoch: set-up, epochs, finish."""
    preflight(cfg, models=backend is None)
    procs = processes()
    writer = open_run(out, cfg, resume, procs)
    saved_env_version = int(read_state(writer.dir).get("env_version", 0)) if writer.last_epoch else 0
    eval_dir = writer.eval_dir  # the run's, or a follower's scratch folder (dropped by its release)
    state: LoopState | None = None
    session: _Session | None = None
    try:  # from here on an interrupt (Ctrl-C, the lab's Stop) leaves the run marked "interrupted"
        session, state = set_up(cfg, writer, procs, backend, eval_dir, saved_env_version, progress)
        while state.epoch < cfg.loop.epochs:
            state, record = next_epoch(session, state)
            yield record
        writer.finish(state.env_version)
    except KeyboardInterrupt:
        writer.finish(saved_env_version if state is None else state.env_version, status="interrupted")
        raise
    except Exception as exc:
        if interrupted(exc):  # e.g. Ctrl-C inside an import, which Python hands on wrapped in a RuntimeError
            writer.finish(saved_env_version if state is None else state.env_version, status="interrupted")
            raise KeyboardInterrupt from exc
        writer.fail(exc, saved_env_version if state is None else state.env_version)
        raise
    finally:
        writer.release()
        if session is not None:
            session.bar.close()
            if session.tracker is not None:
                session.tracker.close()


def interrupted(exc: BaseException) -> bool:
    """Whether ``exc`` stands for an interrupt: a ``KeyboardInterrupt`` among its causes or contexts (Python wraps
    one raised inside ``__set_name__`` or an import hook in another exception, so a Ctrl-C or the lab's Stop while
    a library is importing arrives as a ``RuntimeError``).

    >>> try:
    ...     try:
    ...         raise KeyboardInterrupt
    ...     except KeyboardInterrupt as inner:
    ...         raise RuntimeError("Error calling __set_name__") from inner
    ... except RuntimeError as exc:
    ...     interrupted(exc), interrupted(ValueError("no"))
    (True, False)
    """
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def set_up(cfg: RunConfig, writer, procs: Processes, backend: Backend | None, eval_dir: Path,
           saved_env_version: int, progress: bool) -> tuple[_Session, LoopState]:
    """The domain and seeds, the engine (its adapters as the last committed epoch left them, on a resume), the
    loop state, the tracker and the progress bar; the untrained agent's held-out score (epoch 0) once."""
    domain = domain_of(cfg)
    probe = domain.probe_tasks(cfg.loop.probe) if cfg.loop.probe else []  # checked by preflight
    for warning in cfg.warnings():
        writer.event("warning: " + warning)
        warnings.warn(warning, stacklevel=3)
    backend = backend or make_backend(cfg, domain)
    state = restore_state(writer.dir, writer.last_epoch, saved_env_version, cfg, domain) if writer.last_epoch \
        else LoopState()
    if writer.last_epoch:
        backend.load_adapters(adapter_dir(writer.dir, writer.last_epoch))
    tracker = open_tracker(cfg.loop.report_to, writer.dir, cfg.to_dict()) if procs.is_main else None
    bar = tqdm(total=cfg.loop.epochs, initial=state.epoch, desc="co-evolution", unit="epoch",
               disable=not (progress and procs.is_main))
    session = _Session(cfg, writer, procs, domain, domain.seed_tasks(), backend, bar, tracker, eval_dir, probe)
    if cfg.eval.every and state.epoch == 0 and (writer.dir / BASELINE).is_file():
        state = with_frontier(state, read_baseline(writer.dir, BASELINE_PREFIXES))  # resumed before epoch 1
    elif cfg.eval.every and state.epoch == 0:
        bar.set_postfix_str(f"epoch 0: eval {cfg.eval.benchmark} (untrained agent)")
        scores = evaluate_epoch(backend, cfg, eval_dir, 0)
        writer.write_baseline(scores)
        state = with_frontier(state, scores)
    return session, state


def next_epoch(s: _Session, state: LoopState) -> tuple[LoopState, EpochRecord]:
    """One epoch (:func:`run_epoch`), its held-out score when due, and its commit (records, tables, adapters)."""
    cfg, backend = s.cfg, s.backend
    _stop_if_requested(s.procs)
    teacher = make_teacher(cfg, s.domain) if state.epoch == 0 else None

    def after(updated: LoopState) -> tuple[LoopState, dict]:
        if cfg.eval.every and updated.epoch % cfg.eval.every == 0:
            s.bar.set_postfix_str(f"epoch {updated.epoch}: eval {cfg.eval.benchmark}")
        updated, later = after_updates(updated, backend, cfg, s.eval_dir, s.procs)
        if cfg.loop.seed_probe:
            s.bar.set_postfix_str(f"epoch {updated.epoch}: seed probe")
            later.update(seed_probe(backend, s.domain, s.seeds, updated.reference, cfg, s.probe))
        return updated, later

    state, result = run_epoch(state, backend, s.domain, s.seeds, cfg, generator=teacher,
                              on_phase=lambda phase: s.on_phase(state, phase), after=after)
    del teacher
    record = s.writer.commit_epoch(result.record, result.tasks, result.attempts,
                                   backend.save_adapters if cfg.loop.save_adapters else None,
                                   reference=result.reference)
    if s.tracker is not None:
        s.tracker.log(state.epoch, scalars(record.to_dict()))  # nothing once the tracker stopped
        if (why := s.tracker.new_failure()) is not None:  # never the run's failure: said once, the run goes on
            s.writer.event(f"warning: tracker {s.tracker.kind} stopped ({why}); the run goes on, "
                           "epochs.jsonl holds every record")
            warnings.warn(f"tracker {s.tracker.kind} stopped: {why}", stacklevel=2)
    s.bar.update(1)
    s.bar.set_postfix(valid=f"{record.valid_frac:.2f}", p_hat=_f(record.p_hat_mean), in_band=_f(record.in_band_frac))
    return state, record


def after_updates(state: LoopState, backend, cfg: RunConfig, eval_dir: Path, procs: Processes,
                  adapters: tuple[str, ...] | None = None) -> tuple[LoopState, dict[str, Any]]:
    """What an epoch's record holds once its updates are done (the loop's ``after``,
    :func:`~genenv_lab.coevolution.loop.finish_epoch`; the loop's session and the TRL curriculum both use it): the
    held-out scores when due (written under ``eval_dir``), with the state carrying their frontier
    (:func:`with_frontier`), and under N processes each process's hash of ``adapters`` (the backend's own by
    default), checked equal."""
    later: dict[str, Any] = {}
    if cfg.eval.every and state.epoch % cfg.eval.every == 0:
        later.update(scores := evaluate_epoch(backend, cfg, eval_dir, state.epoch))
        state = with_frontier(state, scores)
    if procs.world_size > 1:  # every process must hold the same adapters before the epoch is committed
        later[PROCESSES_ADAPTER_SHA256] = procs.check_in_sync(backend, adapters or backend.adapters)
    return state, later


def with_frontier(state: LoopState, scores: dict) -> LoopState:
    """The state carrying the held-out frontier of an evaluation's ``scores`` (``heldout/frontier_level``), which
    the next epoch's dry-run counts are read at; unchanged when the evaluation has none (a benchmark, a domain
    without levels)."""
    frontier = scores.get(HELDOUT_FRONTIER_LEVEL)
    return state if frontier is None else replace(state, frontier=float(frontier))


def _f(x: float) -> str:
    return "n/a" if x is None or math.isnan(x) else f"{x:.2f}"
