"""Run directories as the lab sees them: discovery, safe names, status, and a loader that never raises.

A run name comes from the browser, so it is checked twice before any file is opened (:mod:`.names`); a run's files
are opened only when :mod:`.safety` allows it; its status and fingerprint are :mod:`.status`'s. Their public names
are importable from here too.

Reading a run while it is written: each file is replaced atomically except ``epochs.jsonl``, which is appended
(``rundir.read.read_epochs`` skips a torn last line). An epoch's tables are committed before its record and
``state.json``, so rows of the epoch in flight can be on disk before it counts; :func:`load_run` keeps only epochs
up to ``state.json``'s ``last_complete_epoch``, so every view shows the same committed epochs.

:func:`load_run` never raises for what is inside a run directory: a missing, empty, corrupt or half-written file
becomes a sentence in :attr:`RunData.problems` and an empty part, so one bad run cannot break the lab. It reads
``config.json`` and ``state.json`` as plain JSON objects (``rundir.read.read_json_object``, the lenient reader beside
the strict ``read_config`` and ``read_state``), so a run written by an older or newer version (unknown or missing
fields) still shows.

A comparison folder (``genenv-lab compare --out``, recognised by its ``manifest.json``) can sit in the runs folder
too; it is not a run (:func:`run_dirs` leaves it out) and :func:`.comparisons.load_comparison` reads it, as leniently: a
comparison still running, with runs missing or half-written, shows what exists.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from genenv_lab.rundir.layout import BASELINE, CONFIG, EPOCHS, EVENTS, STATE, RunDirError
from genenv_lab.core.types import EpochRecord
from genenv_lab.rundir.read import read_baseline, read_epochs, read_json_object, read_state, read_table
from genenv_lab.safe_io import MB
from genenv_lab.lab.names import LabError, resolve_run
from genenv_lab.lab.safety import tail_text, unsafe_files
from genenv_lab.lab.status import (fingerprint, finite_float, killed_note, last_committed, status_of,
    unusable_numbers)
from genenv_lab.lab.tailing import read_epochs_appended
from genenv_lab.core.metrics import IN_BAND_FRAC, N_GENERATED, P_HAT_MEAN

STATUSES = ("running", "finished", "killed", "interrupted", "failed", "starting", "empty", "unreadable", "missing")
"""``killed``: ``state.json`` says running but its writer's pid is not alive (on this machine).
``starting``: ``config.json`` but no ``state.json`` yet. ``empty``: nothing in the directory yet.
``unreadable``: ``state.json`` is corrupt. ``missing``: the directory is gone."""

TASK_COLUMNS = ("task_id", "epoch", "env_version", "parent_id", "root_id", "context", "raw", "valid",
                "reject_reason", "question", "answer", "text", "features", "p_hat", "env_reward", "in_band", "weight")
ATTEMPT_COLUMNS = ("task_id", "epoch", "source", "prompt", "completion", "reward", "success", "advantage")


def _refused(name: str, path: Path, unsafe: list[str]) -> "RunData":
    return RunData(name=name, path=path, status="unreadable", problems=tuple(unsafe) + (
        "The lab reads only regular files inside a run folder, within size limits; this run is not shown.",))


# --------------------------------------------------------------------------------------------------------- loading

def read_records(run_dir: Path, problems: list[str]) -> list[EpochRecord]:
    """A run's records for the lab: a live run's read from where the last read ended; a damaged file's readable
    records, with what was skipped added to ``problems``."""
    try:
        return list(read_epochs_appended(run_dir))
    except (RunDirError, OSError) as exc:
        problems.append(f"{exc} Showing the readable lines only.")
        epochs = read_epochs(run_dir, lenient=True)
        problems.extend(epochs.problems)
        return list(epochs.records)


DRAWN_EPOCHS = 300
"""The most epochs whose tasks and attempts tables the lab reads for one run. A longer run's tables are read for
:func:`drawn_epochs` only (its records, the curves, stay whole), so that a 10,000-epoch run's view takes seconds,
not a minute; its card says so."""
TAIL_EPOCHS = 50
"""Of those, the newest epochs always read (what a user of a running run looks at)."""


def drawn_epochs(last: int, limit: int = DRAWN_EPOCHS, tail: int = TAIL_EPOCHS) -> list[int] | None:
    """The epochs 1..``last`` whose tables the lab reads: all of them up to ``limit`` (None), else the newest
    ``tail`` and ``limit - tail`` evenly spaced before them, the first included.

    >>> drawn_epochs(300) is None
    True
    >>> e = drawn_epochs(10_000); len(e), e[:3], e[-3:]
    (300, [1, 41, 81], [9998, 9999, 10000])
    """
    if last <= limit:
        return None
    head_end = last - tail  # epochs 1..head_end are sampled
    step = (head_end - 1) / (limit - tail - 1)
    head = sorted({1 + round(i * step) for i in range(limit - tail)})
    return head + list(range(head_end + 1, last + 1))


def read_frame(run_dir: Path, name: str, columns: tuple[str, ...], problems: list[str],
                epochs: list[int] | None = None, last: int | None = None) -> pd.DataFrame:
    """A run table for the lab: the rows of ``epochs`` (None: all) up to ``last`` (the last committed epoch, when
    known), every column of ``columns`` present; what is wrong with it goes into ``problems``."""
    file = f"the {name} table"
    try:
        frame = read_table(run_dir, name, epochs)
    except Exception as exc:  # noqa: BLE001 - pyarrow raises many types for a corrupt file
        problems.append(f"{file} is unreadable ({type(exc).__name__}: {str(exc)[:200]}).")
        frame = pd.DataFrame()
    if len(frame):
        missing = [c for c in columns if c not in frame.columns]
        if missing:
            problems.append(f"{file} lacks column(s) {', '.join(missing)}.")
    for col in columns:
        if col not in frame.columns:
            frame[col] = pd.Series(dtype=object)
    if last is not None and len(frame):
        frame = frame[pd.to_numeric(frame["epoch"], errors="coerce") <= last]
    return frame.reset_index(drop=True)


@dataclass(frozen=True, eq=False)
class RunData:
    """Everything the lab shows of one run, read once. Parts that could not be read are empty and explained in
    ``problems``; ``records``, ``tasks`` and ``attempts`` hold committed epochs only."""

    name: str
    path: Path
    status: str
    config: dict[str, Any] = field(default_factory=dict)
    state: dict[str, Any] = field(default_factory=dict)
    records: tuple[EpochRecord, ...] = ()
    baseline: dict[str, float] = field(default_factory=dict)
    """The untrained agent's held-out scores (``baseline.json``, ``eval/*`` keys), when the run has them."""
    tasks: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=list(TASK_COLUMNS)))
    attempts: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=list(ATTEMPT_COLUMNS)))
    events: str = ""
    seeds: dict[str, str] = field(default_factory=dict)
    """Base seed id → seed task text, from the run's domain (for the first step of a lineage)."""
    problems: tuple[str, ...] = ()
    sampled: str = ""
    """For a run longer than :data:`DRAWN_EPOCHS`: which epochs' tables were read (:func:`drawn_epochs`)."""
    table_epochs: list[int] | None = None
    """The epochs whose tables are read (None: all)."""
    attempts_read: bool = False
    """Whether ``attempts`` holds the attempts table (:func:`with_attempts`) or is empty because it was not read."""

    def _section(self, name: str) -> dict[str, Any]:
        section = self.config.get(name)
        return section if isinstance(section, dict) else {}

    @property
    def preset(self) -> str:
        return str(self.config.get("preset", "?"))

    @property
    def model(self) -> str:
        return str(self._section("model").get("name_or_path", "?"))

    @property
    def domain(self) -> str:
        return str(self._section("loop").get("domain", "?"))

    @property
    def variant(self) -> str:
        return str(self._section("loop").get("variant", "?"))

    @property
    def alpha(self) -> float | None:
        return finite_float(self._section("curriculum").get("alpha"))

    @property
    def k_min(self) -> float | None:
        return finite_float(self._section("curriculum").get("k_min"))

    @property
    def num_generations(self) -> int | None:
        value = self._section("agent").get("num_generations")
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    @property
    def epochs_done(self) -> int:
        return len(self.records)

    @property
    def processes(self) -> int:
        """Processes of the data-parallel job that wrote the run (state.json ``world_size``; 1 when absent)."""
        value = self.state.get("world_size")
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else 1

    @property
    def epochs_planned(self) -> int | None:
        for value in (self.state.get("epochs_planned"), self._section("loop").get("epochs")):
            if isinstance(value, int) and not isinstance(value, bool):
                return value
        return None


def folder_of(cls, path: str | Path, name: str | None) -> tuple[Path, str, Any]:
    """``(path, name, gone)`` of a folder the lab reads: its name defaults to the folder's, and ``gone`` is a
    ``cls`` (:class:`RunData`, a comparison's data) whose status says the folder does not exist (None when it
    does)."""
    path = Path(path)
    name = name or path.name
    if path.is_dir():
        return path, name, None
    said = "is a file, not a folder" if path.exists() else "does not exist (deleted or renamed?)"
    return path, name, cls(name=name, path=path, status="missing", problems=(f"{name!r} {said}.",))


def load_run(run_dir: str | Path, name: str | None = None, *, attempts: bool = True) -> RunData:
    """Read run directory ``run_dir`` for the lab; never raises for its contents (see the module docstring). With
    ``attempts=False`` the attempts table is left for :func:`with_attempts` (the lab's views do so)."""
    path, name, gone = folder_of(RunData, run_dir, name)
    if gone is not None:
        return gone
    problems: list[str] = []
    try:
        entries = [p.name for p in path.iterdir()]
    except OSError as exc:
        return RunData(name=name, path=path, status="unreadable",
                       problems=(f"{name!r} cannot be listed ({exc.strerror or type(exc).__name__}).",))
    if not entries:
        return RunData(name=name, path=path, status="empty", problems=(
            "Empty directory: no config.json, state.json or epochs.jsonl yet. A run that was just started writes "
            "them within seconds; otherwise this is not a run directory.",))
    unsafe = unsafe_files(path)
    if unsafe:
        return _refused(name, path, unsafe)
    config = read_json_object(path / CONFIG, problems)
    if not (path / CONFIG).is_file():
        problems.append("No config.json: α, k_min and the preset are unknown.")
    state: dict[str, Any] = {}
    if (path / STATE).is_file():
        try:
            state = read_state(path)
            if not isinstance(state, dict):
                problems.append("state.json does not hold a JSON object.")
                state = {}
            status = status_of(state) if state else "unreadable"
            if status == "killed":
                problems.append(killed_note(state, path, str(config.get("preset", "P"))))
        except (RunDirError, OSError, UnicodeDecodeError) as exc:
            problems.append(str(exc))
            status = "unreadable"
    else:
        status = "starting" if config else "empty"
        if not config:
            problems.append("No state.json and no readable config.json: not a run directory (yet).")
    records = read_records(path, problems)
    baseline = lenient_baseline(path, problems)
    last = last_committed(state)
    problems += unusable_numbers(config, state)
    newest = last if last is not None else max((r["epoch"] for r in records), default=0)
    epochs = drawn_epochs(newest)
    tasks = read_frame(path, "tasks", TASK_COLUMNS, problems, epochs, last)
    sampled = "" if epochs is None else (
        f"A long run: the tasks and attempts of {len(epochs)} of its {newest:,} epochs are read (the newest "
        f"{TAIL_EPOCHS} and every {(newest - TAIL_EPOCHS) // (DRAWN_EPOCHS - TAIL_EPOCHS)}th or so before them), so "
        "that its view stays fast; the curves use every epoch.")
    if last is not None:
        records = [r for r in records if r["epoch"] <= last]
    if records and not len(tasks) and not any("the tasks table" in p for p in problems):
        if any(r.get(N_GENERATED) for r in records):
            problems.append(f"the tasks table (tasks/) is missing although {len(records)} epoch(s) are recorded.")
    events = ""
    try:
        events = "\n".join(tail_text(path / EVENTS).splitlines()[-40:])
    except OSError:
        pass
    seeds: dict[str, str] = {}
    domain = (config.get("loop") or {}).get("domain") if isinstance(config.get("loop"), dict) else None
    if isinstance(domain, str):
        try:  # a shipped or installed domain only: a run folder must never make the lab import a module it names
            from genenv_lab.domains import get_domain, known_domains

            if domain in known_domains() and not config["loop"].get("seeds"):  # its own seeds: not shown
                seeds = {s.seed_id: s.spec.text for s in get_domain(domain).seed_tasks()}
        except Exception:  # noqa: BLE001 - an unknown domain only loses the seed texts
            seeds = {}
    run = RunData(name=name, path=path, status=status, config=config, state=state, records=tuple(records),
                  baseline=baseline, tasks=tasks, events=events, seeds=seeds,
                  problems=tuple(problems), sampled=sampled, table_epochs=epochs)
    return with_attempts(run) if attempts else run


def with_attempts(run: RunData) -> RunData:
    """``run`` with its attempts table read (the epochs its tasks were read for, committed ones only) and any
    problem found with it added; ``run`` itself when they are read already. The lab's views of a run need the
    attempts only for a task's detail, so the lab reads them then (``load_run(..., attempts=False)``): the largest
    table of a run (G rows per task) costs nothing until a task is picked."""
    if run.attempts_read or run.status in ("missing", "empty") or not run.path.is_dir():
        return run
    unsafe = unsafe_files(run.path)  # checked again: the folder may have changed since it was loaded
    if unsafe:
        return _refused(run.name, run.path, unsafe)
    problems = list(run.problems)
    attempts = read_frame(run.path, "attempts", ATTEMPT_COLUMNS, problems, run.table_epochs,
                           last_committed(run.state))
    if run.records and not len(attempts) and not any("the attempts table" in p for p in problems):
        problems.append(f"the attempts table (attempts/) is missing although {len(run.records)} epoch(s) are "
                        "recorded.")
    return dataclasses.replace(run, attempts=attempts, attempts_read=True,
                               problems=tuple(problems))


# --------------------------------------------------------------------------------------------------------- folder

@dataclass(frozen=True)
class RunSummary:
    """One row of the runs list (cheap: no parquet is read)."""

    name: str
    status: str
    preset: str = "?"
    model: str = "?"
    domain: str = "?"
    variant: str = "?"
    epochs_done: int = 0
    epochs_planned: int | None = None
    processes: int = 1
    updated_at: float | None = None
    p_hat_mean: float | None = None
    in_band_frac: float | None = None
    problem: str = ""
    world: str = ""
    """:func:`world_key` of the run's configuration: runs of one world and seed that differ only in their arm share
    it (the story pairs a genenv run with its fixed set's run by it)."""


def world_key(config: dict[str, Any]) -> str:
    """A digest of a run's configuration less its arm (``loop.variant``), its length (``loop.epochs``) and the preset's
    label: equal for two arms of one comparison's world and seed, different for any other pair; "" for a run with no
    readable configuration.

    >>> a = {"preset": "p", "loop": {"variant": "genenv", "seed": 0, "epochs": 4}, "env": {"lr": 1e-4}}
    >>> b = {"preset": "p", "loop": {"variant": "static", "seed": 0, "epochs": 4}, "env": {"lr": 1e-4}}
    >>> world_key(a) == world_key(b), world_key(a) == world_key({**b, "loop": {**b["loop"], "seed": 1}})
    (True, False)
    """
    if not config:
        return ""
    loop = config.get("loop")
    rest = {k: v for k, v in config.items() if k != "preset"}
    if isinstance(loop, dict):
        rest["loop"] = {k: v for k, v in loop.items() if k not in ("variant", "epochs")}
    return hashlib.sha256(json.dumps(rest, sort_keys=True, default=str).encode()).hexdigest()[:16]


def summarize(path: Path, name: str | None = None) -> RunSummary:
    """The runs-list row of the run directory ``path`` (never raises for its contents)."""
    problems: list[str] = []
    name = name or path.name
    if not path.is_dir():
        return RunSummary(name=name, status="missing", problem="directory is gone")
    unsafe = unsafe_files(path)
    if unsafe:
        return RunSummary(name=name, status="unreadable", problem=" ".join(unsafe))
    config = read_json_object(path / CONFIG, problems)
    state = read_json_object(path / STATE, problems)
    try:
        empty = not any(path.iterdir())
    except OSError:
        empty = False
    if state:
        status = status_of(state)
    elif (path / STATE).is_file():
        status = "unreadable"
    else:
        status = "empty" if empty or not config else "starting"
    run = RunData(name=name, path=path, status=status, config=config, state=state)
    records = read_records(path, problems) if (path / EPOCHS).is_file() else []
    last = last_committed(state)
    if last is not None:
        records = [r for r in records if r["epoch"] <= last]
    updated = state.get("updated_at")
    # a timestamp that is not a number, or not a plausible one (NaN, inf, 1e20: time.localtime would raise), is
    # replaced by the folder's own time, so one bad state.json cannot break the runs table for everyone
    if not isinstance(updated, (int, float)) or isinstance(updated, bool) or not 0 <= updated < 4_102_444_800:
        try:
            updated = path.stat().st_mtime
        except OSError:
            updated = None
    if empty:
        problems.append("empty directory")
    last_rec = records[-1] if records else {}
    return RunSummary(name=name, status=status, preset=run.preset, model=run.model, domain=run.domain,
                      variant=run.variant, epochs_done=len(records), epochs_planned=run.epochs_planned,
                      processes=run.processes,
                      updated_at=updated, p_hat_mean=last_rec.get(P_HAT_MEAN),
                      in_band_frac=last_rec.get(IN_BAND_FRAC), problem=" ".join(problems), world=world_key(config))


def folders_under(runs_root: str | Path, comparisons: bool) -> list[tuple[str, Path]]:
    """``(name, resolved path)`` of allowed, contained folders directly under ``runs_root`` that are (or are not)
    comparison folders."""
    root = Path(runs_root).expanduser()
    if not root.is_dir():
        return []
    out = []
    for entry in sorted(root.iterdir()):
        try:
            path = resolve_run(root, entry.name)
        except LabError:
            continue
        if path.is_dir() and is_comparison(path) == comparisons:
            out.append((entry.name, path))
    return out


def run_dirs(runs_root: str | Path) -> list[tuple[str, Path]]:
    """``(name, resolved path)`` of the run directories directly under ``runs_root``: allowed names only, and
    only those that resolve inside it (a symlink to another run of the folder is listed under its own name).
    Comparison folders (:func:`is_comparison`) are not runs: :func:`.comparisons.comparison_dirs` lists them."""
    return folders_under(runs_root, comparisons=False)


_SUMMARIES: dict[tuple[str, Path], tuple[tuple, RunSummary]] = {}
"""The runs list's rows by (name, folder), each with the :func:`fingerprint` it was read at: a refresh re-reads only
the runs whose files changed (a finished run with a 70 MB epochs.jsonl cost 12 s on every refresh, for every user)."""
SUMMARY_CACHE_RUNS = 10_000


def discover_runs(runs_root: str | Path) -> list[RunSummary]:
    """Every run under ``runs_root``, most recently updated first; a run unchanged since the last call (same
    :func:`fingerprint`: sizes, times, its writer alive) is not read again."""
    summaries = []
    for name, path in run_dirs(runs_root):
        key, mark = (name, path), fingerprint(path)
        cached = _SUMMARIES.get(key)
        if cached is None or cached[0] != mark:
            if len(_SUMMARIES) >= SUMMARY_CACHE_RUNS:
                _SUMMARIES.clear()
            cached = _SUMMARIES[key] = (mark, summarize(path, name))
        summaries.append(cached[1])
    return sorted(summaries, key=lambda s: (-(s.updated_at or 0.0), s.name))


def folder_fingerprint(runs_root: str | Path) -> tuple:
    """Changes whenever a run is added, removed or written under ``runs_root``."""
    return tuple((name, fingerprint(path)) for name, path in run_dirs(runs_root))


def lenient_baseline(run_dir: Path, problems: list[str]) -> dict[str, float]:
    try:
        scores = read_baseline(run_dir)
    except (RunDirError, OSError, ValueError) as exc:  # ValueError: nesting, digits past the limit, bad UTF-8
        problems.append(f"{BASELINE} cannot be read ({str(exc).replace(str(run_dir), '')[:120]}); the epoch-0 point is "
                        "left out.")
        return {}
    kept = {k: v for k, v in scores.items() if finite_float(v) is not None}
    if len(kept) < len(scores):
        problems.append(f"{BASELINE} holds a score that is not a finite number; it is left out.")
    return {k: float(v) for k, v in kept.items()}


# ---------------------------------------------------------------------------------------------------- comparisons

MANIFEST = "manifest.json"
"""What marks a comparison folder (``genenv-lab compare --out``): its manifest, beside ``runs/<label>-s<seed>/``."""
MANIFEST_LIMIT = 16 * MB
"""The most the lab reads of a comparison's ``manifest.json`` (one entry per arm, each with its whole config)."""


def is_comparison(path: str | Path) -> bool:
    """Whether ``path`` is a comparison folder (it holds ``manifest.json``) rather than a run directory."""
    return (Path(path) / MANIFEST).is_file()
