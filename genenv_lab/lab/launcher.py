"""Start a preset run from the lab as a separate process, watch it, stop it.

The browser chooses a preset (:data:`LAUNCH_PRESETS`, the CPU ones), a domain (``genenv_lab.domains.known_domains``; the
form sets the chosen preset's own, :func:`preset_domain`) and optionally a run name, nothing else: the command is
always ``sys.executable -m genenv_lab.cli run --preset P --domain D --out <runs>/<name>``, built here as an argument
list (no shell). The run directory is created here first, so the run shows in the lab at once and a taken name fails
(``mkdir`` is atomic) before any process starts.

Stopping sends SIGINT first, so that the run takes its own Ctrl-C path and marks itself ``interrupted``; a run
still alive after ``grace_s`` seconds gets SIGTERM, then SIGKILL (then its ``state.json`` still says running and
the lab shows it as ``killed``; ``--resume`` continues it either way).

This module keeps no state: the caller holds the :class:`LaunchedRun` objects (``app.py`` keeps them in a per-user
``gr.State``). Started runs stay in the lab's process group, so Ctrl-C in the lab's terminal interrupts them too.
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

import pandas as pd

from genenv_lab.config import CPU_PRESETS
from genenv_lab.lab.names import LabError, resolve_run, validate_run_name
from genenv_lab.lab.status import pid_alive

LAUNCH_PRESETS = tuple(CPU_PRESETS)
"""Presets the lab may start (CPU presets: the lab runs where its user is, usually without a GPU)."""


def domain_names() -> list[str]:
    from genenv_lab.domains import known_domains

    return known_domains()


def preset_domain(preset: str) -> str:
    """The domain ``preset`` trains on (``cpu-demo``: ``count``, ``cpu-times``: ``times``): the Start-a-run form's
    domain when that preset is chosen."""
    if preset not in LAUNCH_PRESETS:
        raise LabError(f"preset {preset!r} cannot be started from the lab; choose one of {list(LAUNCH_PRESETS)}")
    from genenv_lab.config import preset as get_preset

    return get_preset(preset).loop.domain


@dataclass(eq=False)
class LaunchedRun:
    """A run this lab session started: its name, command, process and log file."""

    name: str
    path: Path
    preset: str
    domain: str
    command: tuple[str, ...]
    process: subprocess.Popen
    log_path: Path
    started_at: float = field(default_factory=time.time)
    stopped: bool = False
    """Whether the user asked the lab to stop it."""

    @property
    def pid(self) -> int:
        return self.process.pid

    def poll(self) -> int | None:
        """The exit code, or None while it runs (also reaps a finished process)."""
        return self.process.poll()

    @property
    def shown_command(self) -> str:
        """The command as the lab shows it: ``genenv_lab.cli run ... --out NAME``, without the interpreter's path and
        with the run folder named as in the runs folder (messages name no absolute path)."""
        shown = list(self.command[1:])
        if len(shown) >= 2 and shown[-2] == "--out":
            shown[-1] = self.name
        return " ".join(shown)

    @property
    def state(self) -> str:
        code = self.poll()
        if code is None:
            return "stopping" if self.stopped else "running"
        if self.stopped:
            return f"stopped (exit {code})"
        return "finished" if code == 0 else f"failed (exit {code})"


def default_run_name(preset: str, domain: str) -> str:
    return f"{preset}-{domain}-{time.strftime('%Y%m%d-%H%M%S')}"


def build_command(preset: str, domain: str, out: Path) -> tuple[str, ...]:
    """The only command the lab runs: ``genenv_lab.cli run`` with a checked preset and domain."""
    if preset not in LAUNCH_PRESETS:
        raise LabError(f"preset {preset!r} cannot be started from the lab; choose one of {list(LAUNCH_PRESETS)}")
    if domain not in domain_names():
        raise LabError(f"unknown domain {domain!r}; choose one of {domain_names()}")
    from genenv_lab.coevolution.resolve import for_domain
    from genenv_lab.config import ConfigError
    from genenv_lab.config import preset as get_preset

    try:  # e.g. the tiny-world model of cpu-demo and cpu-times exists for the count and times domains only
        for_domain(get_preset(preset), domain)
    except ConfigError as exc:
        raise LabError(str(exc)) from None
    return (sys.executable, "-m", "genenv_lab.cli", "run", "--preset", preset, "--domain", domain,
            "--out", str(out))


MAX_RUNNING = 2
"""Runs (of any user, and started anywhere) that may be running under one runs folder when the lab starts another:
a CPU run takes the machine's cores and about 0.5 GB, so more would only slow them all down."""


LAUNCHES = ".lab-launches"
"""Folder under the runs folder where the lab notes each run it started (``<name>.pid``) and holds the start lock:
a run counts as running from the moment it is started, not only once its process has written ``state.json``."""


def running_runs(runs_root: str | Path) -> list[str]:
    """Names of the runs under ``runs_root`` whose writer is alive (status ``running`` and a live pid), and of the
    runs the lab started whose process is alive but has not written its ``state.json`` yet."""
    from genenv_lab.lab.runs import discover_runs

    from genenv_lab.safe_io import read_regular

    root = Path(runs_root)
    running = {s.name for s in discover_runs(root) if s.status == "running"}
    notes = root / LAUNCHES
    for note in notes.glob("*.pid") if _notes_problem(root) is None and notes.is_dir() else ():
        name = note.name[:-len(".pid")]
        try:  # a note is a few digits: a FIFO or a link to /dev/zero planted there is refused, not read
            pid = int(read_regular(note, 64, "start note").decode("ascii").strip() or 0)
        except (OSError, ValueError):
            continue
        if name not in running and not (root / name / "state.json").exists() and pid_alive(pid):
            running.add(name)
    return sorted(running)


def _notes_problem(root: Path) -> str | None:
    """Why ``<root>/.lab-launches`` cannot hold the lab's start notes (one sentence naming it relative to the runs
    folder), or None when it is absent or a real folder directly inside the runs folder. A link is refused whatever it
    points to, as is a folder that resolves elsewhere: the lab writes nothing outside its runs folder."""
    notes = root / LAUNCHES
    try:
        info = notes.lstat()
        if stat.S_ISLNK(info.st_mode):
            return (f"{LAUNCHES} in the runs folder is a link; the lab keeps its start notes in a folder of its own "
                    "there: remove the link to start runs from the lab (nothing was written)")
        if not stat.S_ISDIR(info.st_mode):
            return (f"{LAUNCHES} in the runs folder is a file where the lab keeps its start notes (a folder); move "
                    "it away to start runs from the lab (nothing was written)")
        if notes.resolve().parent != root.resolve():
            return (f"{LAUNCHES} in the runs folder resolves outside it; the lab writes nothing outside its runs "
                    "folder: move it away to start runs from the lab (nothing was written)")
    except FileNotFoundError:
        return None
    except (OSError, RuntimeError) as exc:
        return f"{LAUNCHES} in the runs folder cannot be examined ({type(exc).__name__}); nothing was written"
    return None


class _StartLock:
    """An exclusive ``flock`` on ``<runs>/.lab-launches/.lock`` while a start counts and launches: two users
    (or two lab processes) starting at once are counted one after the other. The notes folder must be a real folder
    inside the runs folder (:func:`_notes_problem`); it is opened once, without following a link, and the lock and
    the pid notes are opened relative to it, never through a link, so that nothing is written outside the runs
    folder even if the folder is swapped for a link meanwhile."""

    def __init__(self, root: Path):
        problem = _notes_problem(root)
        if problem:
            raise LabError(problem)
        notes = root / LAUNCHES
        try:
            notes.mkdir()
        except FileExistsError:
            pass
        problem = _notes_problem(root)  # created meanwhile by someone else: checked again
        if problem:
            raise LabError(problem)
        try:
            self.dir_fd = os.open(notes, os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW)
        except OSError as exc:
            raise LabError(f"{LAUNCHES} in the runs folder cannot be opened ({exc.strerror}); nothing was "
                           "written") from None
        self.fd: int | None = None

    def open_note(self, name: str) -> int:
        """A file of the notes folder opened for writing (created, emptied), never through a link."""
        try:
            return os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _NOFOLLOW, 0o644, dir_fd=self.dir_fd)
        except OSError as exc:
            raise LabError(f"{LAUNCHES}/{name} in the runs folder cannot be written ({exc.strerror}); remove it "
                           "to start runs from the lab") from None

    def __enter__(self):
        import fcntl

        try:
            self.fd = os.open(".lock", os.O_RDWR | os.O_CREAT | _NOFOLLOW, 0o644, dir_fd=self.dir_fd)
        except OSError as exc:
            os.close(self.dir_fd)
            raise LabError(f"{LAUNCHES}/.lock in the runs folder cannot be opened ({exc.strerror}); remove it to "
                           "start runs from the lab") from None
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        os.close(self.fd)  # closing releases the lock
        os.close(self.dir_fd)


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def start_run(runs_root: str | Path, preset: str, domain: str, name: str | None = None,
              max_running: int = MAX_RUNNING) -> LaunchedRun:
    """Start preset ``preset`` on ``domain`` into ``runs_root/name`` (a fresh name by default) as a process;
    refused (:class:`LabError`) while ``max_running`` runs are already running under ``runs_root``."""
    name = (name or "").strip() or default_run_name(preset, domain)
    validate_run_name(name)
    root = Path(runs_root).expanduser()
    root.mkdir(parents=True, exist_ok=True)
    path = resolve_run(root, name)
    command = build_command(preset, domain, path)
    with _StartLock(root) as lock:  # counted and launched as one step: five quick starts cannot all see room for one
        busy = running_runs(root)
        if len(busy) >= max_running:
            raise LabError(f"{len(busy)} runs are already running here ({', '.join(sorted(busy))}); wait for one "
                           f"to finish or stop it (at most {max_running} at a time)")
        try:
            path.mkdir()
        except FileExistsError:
            raise LabError(f"a run called {name!r} already exists in the runs folder; choose another name") from None
        try:
            note = lock.open_note(f"{name}.pid")  # before the process: a note that cannot be written starts nothing
        except LabError:
            path.rmdir()
            raise
        fd, log = tempfile.mkstemp(prefix=f"genenv-lab-{name}-", suffix=".log")
        env = dict(os.environ, PYTHONUNBUFFERED="1", COLUMNS="120")  # unbuffered, rich tables not wrapped at 80
        try:
            with os.fdopen(fd, "wb") as log_file:
                process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log_file,
                                           stderr=subprocess.STDOUT, env=env, close_fds=True)
        except OSError as exc:
            os.close(note)
            path.rmdir()
            raise LabError(f"could not start the run: {exc.strerror or type(exc).__name__}") from None
        with os.fdopen(note, "w") as f:
            f.write(str(process.pid))
    return LaunchedRun(name=name, path=path, preset=preset, domain=domain, command=command, process=process,
                       log_path=Path(log))


def stop_run(run: LaunchedRun, grace_s: float = 10.0) -> int:
    """Stop ``run``: SIGINT (the run marks itself interrupted), then SIGTERM and SIGKILL if it lingers; returns
    the exit code."""
    run.stopped = True
    proc = run.process
    for sig, wait_s in ((signal.SIGINT, grace_s), (signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
        if proc.poll() is not None:
            break
        try:
            proc.send_signal(sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            continue
    return proc.wait(timeout=5.0)


def log_tail(run: LaunchedRun, lines: int = 25) -> str:
    """The last lines of the run's output (progress-bar redraws collapsed to their latest state)."""
    try:
        text = run.log_path.read_text(errors="replace")
    except OSError:
        return ""
    cleaned = [line.rsplit("\r", 1)[-1] for line in text.replace("\r\n", "\n").split("\n")]
    return "\n".join(cleaned[-lines:])


def launched_frame(launched: Mapping[str, LaunchedRun]) -> pd.DataFrame:
    """The runs this session started: name, preset, domain, pid, state, start time, log file."""
    rows = [{"run": r.name, "preset": r.preset, "domain": r.domain, "pid": r.pid, "state": r.state,
             "started": time.strftime("%H:%M:%S", time.localtime(r.started_at)), "log": str(r.log_path)}
            for r in launched.values()]
    return pd.DataFrame(rows, columns=["run", "preset", "domain", "pid", "state", "started", "log"])
