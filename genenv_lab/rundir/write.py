"""The run directory: the only interface between training and the app. Every key is in docs/run_directory.md.

Layout::

    config.json          the resolved RunConfig
    state.json           {"last_complete_epoch", "status", "pid", "updated_at", "env_version", "epochs_planned",
                         "world_size"}: the commit marker (world_size: processes of a data-parallel job)
    epochs.jsonl         one EpochRecord per line, append-only
    tasks/epoch_NNN.parquet     every generation (valid or rejected) of epoch NNN: lineage, p̂, R_env, band, weight
    attempts/epoch_NNN.parquet  every agent completion of epoch NNN with its reward and advantage
    reference_tasks.parquet  the counterfactual tasks of the untrained simulator (written with epoch 1)
    baseline.json        with held-out evaluation on: the untrained agent's scores (epoch 0), before epoch 1
    adapters/epoch_NNN/  agent/ and env/ LoRA adapters (peft format) after epoch NNN
    events.log           human-readable progress lines
    .writer.lock         flock'ed by the one process writing the run (a second --resume is refused while it runs)

Commit protocol of one epoch (each write atomic: temp file + ``os.replace``):
the epoch's table files (only its own rows: a commit never rewrites earlier epochs) → adapters into
``adapters/epoch_NNN`` → one line appended to ``epochs.jsonl`` → ``state.json`` says the epoch is complete. A run
killed at any point resumes from ``last_complete_epoch``: table files, lines and adapter folders of later epochs
are discarded first, so nothing is lost or duplicated. :func:`read_table` reads a table's epoch files as one frame
(a run written before the per-epoch layout, with one ``tasks.parquet``/``attempts.parquet``, is refused until
``genenv-lab upgrade`` splits them).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Iterable, Sequence

import pandas as pd

from genenv_lab.config import RunConfig
from genenv_lab.core.types import Attempt, EpochRecord, GeneratedTask
from genenv_lab.rundir.layout import (ADAPTERS, ATTEMPTS, BASELINE, CONFIG, EPOCHS, EVENTS, LOCK, REFERENCE, STATE,
    TABLES, TASKS, RunDirError, adapter_dir, atomic_write_bytes, atomic_write_json, atomic_write_parquet, whole_table,
    overwrite_in_place, state_count, table_files)
from genenv_lab.rundir.lock import RunLock
from genenv_lab.rundir.read import BASELINE_PREFIXES, read_config, read_epochs, read_state

def commit_problem(row: dict) -> str | None:
    """What stops a tasks-table row (``GeneratedTask.to_row()``) from being committed as an epoch commits it (its
    features as JSON, the row to parquet), or None. ``genenv-lab check-domain`` asks it of a seed task, so a domain
    whose features hold numpy values or sets fails there, not at a run's first commit after a whole epoch."""
    import io

    try:
        _tasks_frame([row]).to_parquet(io.BytesIO())
    except Exception as exc:  # noqa: BLE001 - the report is the point
        return f"{type(exc).__name__}: {str(exc)[:120]}"
    return None


def _tasks_frame(rows: list[dict]) -> pd.DataFrame:
    frame = pd.DataFrame(rows)
    if "features" in frame:
        frame["features"] = frame["features"].map(lambda f: json.dumps(f, sort_keys=True))
    return frame


def _leftover(path: Path) -> bool:
    """A file that a writer killed before committing anything may leave: its lock, or a temp file of an atomic
    write (``.<name>.<random>.tmp``)."""
    return path.is_file() and (path.name == LOCK or (path.name.startswith(".") and path.name.endswith(".tmp")))


def discard_past(run_dir: Path, last: int, records: Sequence[EpochRecord]) -> None:
    """Drop from a run folder everything past its last committed epoch ``last`` (``records``: all of
    ``epochs.jsonl``): later lines of ``epochs.jsonl``, table files and adapter folders, an adapters folder cut short
    (``.partial``), an epoch 1's reference tasks when nothing is committed, and temp files of atomic writes; a
    RunDirError when ``epochs.jsonl`` holds fewer than ``last`` committed epochs."""
    kept = [r for r in records if r.epoch <= last]
    if len(kept) != last:
        raise RunDirError(f"{run_dir}: state.json says {last} epochs are complete but epochs.jsonl holds "
                          f"{len(kept)} of them; the run directory is corrupt")
    atomic_write_bytes(run_dir / EPOCHS, "".join(json.dumps(r.to_dict(), allow_nan=False) + "\n"
                                                 for r in kept).encode())
    for name in TABLES:
        for epoch, path in table_files(run_dir, name):
            if epoch > last:
                path.unlink()
        for leftover in (run_dir / name).glob(".*.tmp") if (run_dir / name).is_dir() else []:
            leftover.unlink()
    for folder in (run_dir / ADAPTERS).glob("epoch_*") if (run_dir / ADAPTERS).is_dir() else []:
        # a save cut short (kill, full disk) leaves epoch_NNN.partial: never complete, always discarded
        number = folder.name.split("_", 1)[1]
        if folder.name.endswith(".partial") or (number.isdigit() and int(number) > last):
            shutil.rmtree(folder)
    if last == 0 and (run_dir / REFERENCE).is_file():
        (run_dir / REFERENCE).unlink()  # written by an epoch 1 that never completed
    for leftover in run_dir.glob(".*.tmp"):
        leftover.unlink()


def last_epoch_on_disk(run_dir: Path, records: Sequence[EpochRecord]) -> int:
    """The highest epoch anything in the folder was written for: a record of epochs.jsonl (``records``), a table
    file, an adapters/epoch_NNN folder (0 when none)."""
    epochs = [r.epoch for r in records]
    epochs += [epoch for name in TABLES for epoch, _ in table_files(run_dir, name)]
    folders = (run_dir / ADAPTERS).glob("epoch_*") if (run_dir / ADAPTERS).is_dir() else []
    epochs += [int(f.name[6:]) for f in folders if f.name[6:].isdigit()]
    return max(epochs, default=0)


def committed_files(run_dir: Path) -> list[str]:
    """What in the folder an epoch commits (records, table files, adapters, the reference tasks), by name."""
    found = []
    if (run_dir / EPOCHS).is_file() and (run_dir / EPOCHS).stat().st_size:
        found.append(EPOCHS)
    found += [f"{name}/" for name in TABLES
              if table_files(run_dir, name) or whole_table(run_dir, name).is_file()]
    if (run_dir / ADAPTERS).is_dir() and any((run_dir / ADAPTERS).glob("epoch_*")):
        found.append(f"{ADAPTERS}/")
    if (run_dir / REFERENCE).is_file():
        found.append(REFERENCE)
    return found


class RunWriter:
    """Creates or resumes a run directory and commits epochs atomically."""

    def __init__(self, run_dir: str | Path, cfg: RunConfig, *, resume: bool = False, world_size: int = 1,
                 reclaim: bool = False):
        self.dir = Path(run_dir)
        self.reclaim = reclaim
        """A writer of this process that also has ``reclaim`` and still holds the run's lock is abandoned and its
        lock taken over, instead of a refusal: the TRL curriculum's retry in a notebook kernel after the trainer
        raised (:class:`genenv_lab.trl.GenEnvCurriculum`; one trainer trains per process)."""
        self.cfg = cfg
        self.world_size = world_size
        self._run_lock: RunLock | None = None
        self._state_before: bytes | None = None
        self._fresh_state = False  # this writer wrote the first state.json of a fresh start
        try:
            if self.dir.exists() and not self.dir.is_dir():
                raise RunDirError(f"--out {self.dir} is a file, not a folder; choose another --out")
            fresh = not self.dir.exists() or not [p for p in self.dir.iterdir() if not _leftover(p)]
            if fresh:  # also a start killed before its config.json: only the lock and temp files are there
                self.dir.mkdir(parents=True, exist_ok=True)
                self._lock()
                for leftover in [p for p in self.dir.iterdir() if _leftover(p) and p.name != LOCK]:
                    leftover.unlink()
                atomic_write_json(self.dir / CONFIG, cfg.to_dict())
                self.last_epoch = 0
                self._write_state("running", env_version=0)
                self._fresh_state = True
            elif resume:
                self._lock()  # before anything is truncated: a run still being written is refused untouched
                self.last_epoch = self._prepare_resume()
            else:
                raise RunDirError(f"{self.dir} is not empty; pass --resume to continue that run or choose a new "
                                  "--out")
            procs = f", {world_size} processes" if world_size > 1 else ""
            self.event(f"{'resumed after epoch ' + str(self.last_epoch) if resume else 'started'} "
                       f"(pid {os.getpid()}{procs})"
                       + ("; the lock taken over from an earlier writer of this process"
                          if self._run_lock.taken_over else ""))
        except BaseException as exc:
            self._failed_start(exc)
            raise

    def _failed_start(self, exc: BaseException) -> None:
        """A start or resume that failed before its first epoch (a full disk, ``events.log`` made a folder): a
        resumed run's ``state.json`` goes back to what it was (a finished run stays finished), a fresh start that had
        written its state is marked ``failed``; best effort, since the disk may be what failed. Then the lock goes."""
        try:
            if self._state_before is not None:
                atomic_write_bytes(self.dir / STATE, self._state_before)
            elif self._fresh_state:
                self._write_state("failed", env_version=0)
        except OSError:
            pass
        self.release()

    # ---------------------------------------------------------------------------------------------- the lock
    def _lock(self) -> None:
        """Take the run's writer lock (:class:`~genenv_lab.rundir.lock.RunLock`) before anything is written."""
        self._run_lock = RunLock(self.dir, reclaim=self.reclaim)

    @property
    def eval_dir(self) -> Path:
        """Where this process's held-out evaluation writes its files: the run directory."""
        return self.dir

    def release(self) -> None:
        """Give up the writer lock (idempotent); the loop calls it however the run ends."""
        if self._run_lock is not None:
            self._run_lock.release()

    @property
    def holds_lock(self) -> bool:
        """Whether this writer still holds the run's lock (it has not finished, failed or been taken over)."""
        return self._run_lock is not None and self._run_lock.held

    # ------------------------------------------------------------------------------------------------- resume
    def _prepare_resume(self) -> int:
        try:  # through the config reader, so that fields added since the run started compare as its preset's
            saved = read_config(self.dir)
        except RunDirError as exc:
            raise RunDirError(f"{exc}; nothing to resume: start a new --out") from None
        if saved.identity() != self.cfg.identity():  # a resumed run may be given more epochs; all else must match
            raise RunDirError(f"{self.dir} was started with another configuration; resume it with the same preset "
                              f"and options (see its {CONFIG}), or start a new --out")
        if (self.dir / STATE).is_file():
            state = read_state(self.dir)
            self._state_before = (self.dir / STATE).read_bytes()  # restored if this resume fails before an epoch
            committed = committed_files(self.dir) if state.get("last_complete_epoch") is None else []
            if committed:  # a state.json that does not say what is committed must not be read as "nothing"
                raise RunDirError(f"{self.dir / STATE} has no last_complete_epoch but the folder holds committed "
                                  f"epochs ({', '.join(committed)}); nothing was changed. Set last_complete_epoch "
                                  "to the last epoch of epochs.jsonl whose adapters/epoch_NNN folder exists, then "
                                  "--resume, or start a new --out")
        else:  # killed between config.json and the first state.json: nothing can have been committed yet
            committed = committed_files(self.dir)
            if committed:
                raise RunDirError(f"{self.dir} has no {STATE} but holds committed epochs ({', '.join(committed)}); "
                                  "nothing was changed. Copy the folder and restore its state.json from a backup, or "
                                  "start a new --out")
            state = {}
        last = state_count(state, "last_complete_epoch", self.dir)
        all_records = read_epochs(self.dir)
        ahead = last_epoch_on_disk(self.dir, all_records)
        if ahead > last + 1:  # a kill leaves at most the epoch in flight past the marker; more is a damaged state
            raise RunDirError(f"{self.dir / STATE} says {last} epoch(s) are complete but the folder holds epochs up "
                              f"to {ahead}; a crash leaves at most one epoch past state.json, so the state is "
                              "damaged and nothing was changed. Set last_complete_epoch to the last epoch of "
                              "epochs.jsonl whose adapters/epoch_NNN folder exists, then --resume, or start a new "
                              "--out")
        env_version = state_count(state, "env_version", self.dir)
        before = state.get("world_size", 1)
        if last and before != self.world_size:
            self.event(f"warning: resumed with {self.world_size} process(es); epochs 1-{last} ran with {before}: the "
                       "run continues, but not as an uninterrupted run with either number would have")
        discard_past(self.dir, last, all_records)
        self._write_state("running", env_version=env_version, last=last)
        return last

    # ------------------------------------------------------------------------------------------------- writes
    def _write_state(self, status: str, *, env_version: int, last: int | None = None) -> None:
        state = {"last_complete_epoch": self.last_epoch if last is None else last, "status": status,
                 "pid": os.getpid(), "updated_at": time.time(), "env_version": env_version,
                 "epochs_planned": self.cfg.loop.epochs, "world_size": self.world_size}
        try:
            atomic_write_json(self.dir / STATE, state)
        except OSError:
            if status == "running" or not (self.dir / STATE).is_file():
                raise
            # a full disk refuses the temporary file: an ending (failed, interrupted, finished) is still told, in
            # place, rather than leaving "running" behind (round 5: a fresh start on a full disk did)
            overwrite_in_place(self.dir / STATE, (json.dumps(state, indent=2, sort_keys=True) + "\n").encode())

    def event(self, line: str) -> None:
        with open(self.dir / EVENTS, "a") as fh:
            fh.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} {line}\n")

    def _write_epoch_rows(self, name: str, epoch: int, rows: list[dict]) -> None:
        """The epoch's rows of one table as their own file (nothing else is read or rewritten)."""
        if not rows:
            return
        folder = self.dir / name
        if not folder.is_dir():
            os.mkdir(folder)
        atomic_write_parquet(folder / f"epoch_{epoch:03d}.parquet",
                              _tasks_frame(rows) if name == TASKS else pd.DataFrame(rows))

    def commit_epoch(self, record: EpochRecord, tasks: Iterable[GeneratedTask], attempts: Iterable[Attempt],
                     save_adapters=None, reference: Iterable[GeneratedTask] = ()) -> EpochRecord:
        """Write one epoch's rows, adapters and record; the epoch counts as done only once state.json says so. The
        record committed (``record`` with the commit's own seconds, ``phase_s.logging``) comes back."""
        if record.epoch != self.last_epoch + 1:
            raise RunDirError(f"epoch {record.epoch} committed after epoch {self.last_epoch}")
        start = time.perf_counter()
        self._write_epoch_rows(TASKS, record.epoch, [t.to_row() for t in tasks])
        self._write_epoch_rows(ATTEMPTS, record.epoch, [a.to_row() for a in attempts])
        reference = [t.to_row() for t in reference]
        if reference:
            atomic_write_parquet(self.dir / REFERENCE, _tasks_frame(reference))
        if save_adapters is not None:
            final = adapter_dir(self.dir, record.epoch)
            partial = final.with_name(final.name + ".partial")
            if partial.exists():
                shutil.rmtree(partial)
            partial.mkdir(parents=True)
            try:
                save_adapters(partial)
            except Exception as exc:  # noqa: BLE001 - safetensors' own error type is not an OSError
                shutil.rmtree(partial, ignore_errors=True)  # give back what the cut-short save took
                raise RuntimeError(
                    f"saving the adapters of epoch {record.epoch} failed ({type(exc).__name__}: {exc}); epochs up to "
                    f"{self.last_epoch} are committed. A full disk is the usual cause: free space under {self.dir} "
                    "and continue with --resume") from exc
            if final.exists():
                shutil.rmtree(final)
            os.replace(partial, final)
        record = record.with_phase("logging", round(time.perf_counter() - start, 4))
        with open(self.dir / EPOCHS, "a") as fh:
            fh.write(json.dumps(record.to_dict(), allow_nan=False) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        self.last_epoch = record.epoch
        self._write_state("running", env_version=record.env_version)
        self._state_before = None  # an epoch committed: from now on a failure is this run's, not the resume's
        self.event(f"epoch {record.epoch} complete: valid {record.n_valid}/{record.n_generated}, "
                   f"p̂ mean {fmt_num(record.p_hat_mean)}, in band {fmt_num(record.in_band_frac)}")
        return record

    def write_baseline(self, scores: dict[str, float]) -> None:
        """The untrained agent's held-out scores (``eval/*`` keys), written once before epoch 1; a score that is
        not a finite number (nothing could be scored) is left out and said in ``events.log``."""
        finite = {k: v for k, v in scores.items() if isinstance(v, (int, float)) and math.isfinite(v)}
        write_baseline(self.dir, finite)
        left = sorted(set(scores) - set(finite))
        self.event("baseline " + " ".join(f"{k}={fmt_num(v)}" for k, v in finite.items())
                   + (f" (not a number, left out: {', '.join(left)})" if left else ""))

    def finish(self, env_version: int, status: str = "finished") -> None:
        self._write_state(status, env_version=env_version)
        self._state_before = None  # the run moved on: nothing to restore any more
        self.event(status)
        self.release()

    def fail(self, exc: BaseException, env_version: int) -> None:
        """The run stopped on an error: a resume that failed before committing an epoch leaves ``state.json`` as it
        was (a finished run stays finished); otherwise the status becomes ``failed``. The error goes to
        ``events.log``."""
        if self._state_before is not None:
            atomic_write_bytes(self.dir / STATE, self._state_before)
        else:
            self._write_state("failed", env_version=env_version)
        try:
            self.event(f"failed: {type(exc).__name__}: {exc}")
        except OSError:  # a full disk: the state says it; the run's own error is what is raised
            pass
        self.release()


class FollowerWriter:
    """The run directory as a process that is not the main one of a data-parallel job sees it: it reads the run
    (``dir``, ``last_epoch``) and writes nothing; the main process's :class:`RunWriter` writes every file."""

    holds_lock = False
    """A follower holds no lock."""

    def __init__(self, run_dir: str | Path, last_epoch: int):
        self.dir = Path(run_dir)
        self.last_epoch = last_epoch
        self._scratch: Path | None = None

    @property
    def eval_dir(self) -> Path:
        """Where this process's held-out evaluation writes its files (the same as the main process's, which go into
        the run): a scratch folder of its own, removed by :meth:`release`."""
        if self._scratch is None:
            self._scratch = Path(tempfile.mkdtemp(prefix="genenv-eval-"))
        return self._scratch

    def commit_epoch(self, record: EpochRecord, *_: Any, **__: Any) -> EpochRecord:
        self.last_epoch = record.epoch
        return record

    def event(self, line: str) -> None:
        """Events are the main process's."""

    def write_baseline(self, scores: dict[str, float]) -> None:
        """The baseline is the main process's."""

    def finish(self, env_version: int, status: str = "finished") -> None:
        """The final state is the main process's; this process's scratch folder goes (:meth:`release`)."""
        self.release()

    def fail(self, exc: BaseException, env_version: int) -> None:
        """The main process records the failure (this process's error is raised as usual); this process's scratch
        folder goes."""
        self.release()

    def release(self) -> None:
        """A follower holds no lock: drop its scratch folder (idempotent)."""
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None


def open_run(out: str | Path, cfg: RunConfig, resume: bool, procs, reclaim: bool = False) -> RunWriter | FollowerWriter:
    """The main process (of ``procs``, a :class:`genenv_lab.backends.distributed.Processes`) creates or resumes the run
    directory (:class:`RunWriter`; ``reclaim`` as there); the others follow it (read it, write nothing) once it is
    ready, with the same last epoch, or stop with the main process's error."""
    if procs.world_size == 1:
        return RunWriter(out, cfg, resume=resume, reclaim=reclaim)
    writer, outcome = None, None
    if procs.is_main:
        try:
            writer = RunWriter(out, cfg, resume=resume, world_size=procs.world_size, reclaim=reclaim)
            outcome = ("ok", writer.last_epoch)
        except BaseException as exc:  # an interrupt too: the others are told, then it is raised here
            outcome = ("error", f"{type(exc).__name__}: {exc}")
            procs.broadcast(outcome)
            raise
    kind, value = procs.broadcast(outcome)
    if kind == "error":
        raise RunDirError(f"the main process could not open the run directory: {value}")
    return writer if procs.is_main else FollowerWriter(out, value)


def fmt_num(x: Any, digits: int = 3) -> str:
    """The one number format of the CLI, the lab and the run's events: ``digits`` decimals, "n/a" for a missing
    value (None, NaN, anything not a number; epochs.jsonl writes NaN as null).

    >>> fmt_num(0), fmt_num(0.5, 2), fmt_num(None), fmt_num(float("nan"))
    ('0.000', '0.50', 'n/a', 'n/a')
    """
    if isinstance(x, bool) or not isinstance(x, (int, float)) or math.isnan(x):
        return "n/a"
    return f"{x:.{digits}f}"




def write_baseline(run_dir: str | Path, scores: dict[str, float]) -> None:
    """Write ``baseline.json``: ``{"epoch": 0, "eval/...": score, ...}`` (atomic)."""
    bad = {k: v for k, v in scores.items() if not (isinstance(k, str) and k.startswith(BASELINE_PREFIXES))
           or not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v)}
    if bad:
        raise ValueError(f"baseline scores must be finite numbers under eval/* (or heldout/*) keys; got {bad}")
    atomic_write_json(Path(run_dir) / BASELINE, {"epoch": 0, **{k: float(v) for k, v in scores.items()}})


