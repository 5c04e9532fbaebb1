"""Which files of a run folder the lab may open: regular files inside the folder, within size limits, examined with
``lstat``/``stat`` only (a FIFO would block the reader, a link to ``/dev/zero`` never ends, a hard link would show
another path's contents), and the tail of ``events.log``."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from genenv_lab.rundir.layout import (ATTEMPTS, BASELINE, CONFIG, EPOCHS, EPOCHS_LIMIT, EVENTS, JSON_LIMIT, STATE,
    TABLES, TASKS)
from genenv_lab.safe_io import MB

FILE_LIMITS = {CONFIG: JSON_LIMIT, STATE: JSON_LIMIT, BASELINE: JSON_LIMIT, EPOCHS: EPOCHS_LIMIT, EVENTS: 256 * MB,
               f"{TASKS}.parquet": 2048 * MB, f"{ATTEMPTS}.parquet": 2048 * MB, "reference_tasks.parquet": 256 * MB}
"""The run files the lab opens and the most it reads of each (``events.log``: only its last
:data:`EVENTS_TAIL` bytes are read, whatever its size; ``tasks.parquet``/``attempts.parquet``: the single-file
layout of older runs)."""
TABLE_FILE_LIMIT = 512 * MB
"""The most the lab reads of one per-epoch table file (``tasks/epoch_NNN.parquet``)."""
EVENTS_TAIL = 64 * 1024


def unsafe_files(run_dir: str | Path, limits: dict[str, int] | None = None) -> list[str]:
    """One sentence per run file the lab must not open: not a regular file (a FIFO would block the reader, a device
    such as ``/dev/zero`` never ends), a symlink whose target leaves the run folder, or larger than its
    :data:`FILE_LIMITS` entry (or ``limits``); by default also the table folders and every file in them
    (:data:`TABLE_FILE_LIMIT`). Examined with ``lstat``/``stat`` only: nothing is opened. Absent files are fine."""
    run_dir = Path(run_dir)
    out = []
    try:
        base = run_dir.resolve()
    except (OSError, RuntimeError) as exc:
        return [f"{run_dir.name} cannot be resolved ({type(exc).__name__})."]
    checks = list((FILE_LIMITS if limits is None else limits).items())
    for table in TABLES if limits is None else ():
        info, problem = _examine(run_dir / table, table, base)
        if problem or info is None:
            out += [problem] if problem else []
            continue
        if not stat.S_ISDIR(info.st_mode):
            out.append(f"{table} is not a folder of per-epoch tables; the lab does not open it.")
            continue
        try:
            out += _unsafe_entries(run_dir / table, table, base)
        except OSError as exc:
            out.append(f"{table}/ cannot be listed ({exc}).")
    for name, limit in checks:
        info, problem = _examine(run_dir / name, name, base)
        if not problem and info is not None and stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
            # a hard link would show a file from outside the run folder (events.log's text) as the run's own
            problem = (f"{name} has {info.st_nlink} hard links (its contents are another path's too); the lab "
                       "does not open it.")
        out += [problem] if problem else _file_problems(name, info, None if name == EVENTS else limit)
    return out


def _file_problems(name: str, info: os.stat_result | None, limit: int | None) -> list[str]:
    """The sentence for a file the lab must not open, from its stat (none when absent): not a regular file, or above
    ``limit`` bytes (None: no limit, the file is read from its tail)."""
    if info is None:
        return []
    if not stat.S_ISREG(info.st_mode):
        return [f"{name} is not a regular file (a FIFO, device, socket or folder); the lab does not open it."]

    if limit is not None and info.st_size > limit:
        return [f"{name} is {info.st_size / MB:.0f} MB, above the lab's {limit // MB} MB limit; not read."]
    return []


def _unsafe_entries(folder: Path, table: str, base: Path) -> list[str]:
    """:func:`unsafe_files`'s sentences for the files of one table folder. One ``scandir`` pass whose entries carry
    their type and (one ``lstat`` each) their size: a 10,000-epoch run's 20,000 files in a fraction of a second;
    links take :func:`_examine`'s path (resolved, kept inside the run folder)."""
    out = []
    with os.scandir(folder) as it:
        for entry in sorted(it, key=lambda e: e.name):
            if entry.name.startswith("."):
                continue
            name = f"{table}/{entry.name}"
            if entry.is_symlink():
                info, problem = _examine(Path(entry.path), name, base)
            else:
                info, problem = entry.stat(follow_symlinks=False), None
            out += [problem] if problem else _file_problems(name, info, TABLE_FILE_LIMIT)
    return out


def _examine(path: Path, name: str, base: Path) -> tuple[os.stat_result | None, str | None]:
    """``(stat of path or of its link's target, problem)``: (None, None) when absent; a link leaving ``base``
    or a path that cannot be examined is a problem."""
    try:
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode):
            target = path.resolve()
            if base not in target.parents:
                return None, f"{name} is a link outside the run folder; the lab does not follow it."
            info = target.stat()
    except FileNotFoundError:
        return None, None
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop on older Pythons
        return None, f"{name} cannot be examined ({exc})."
    return info, None


def tail_text(path: Path, n_bytes: int = EVENTS_TAIL) -> str:
    """The last ``n_bytes`` of a text file (from its first whole line), decoded leniently."""
    with path.open("rb") as f:
        size = f.seek(0, os.SEEK_END)
        f.seek(max(0, size - n_bytes))
        data = f.read(n_bytes)
    text = data.decode("utf-8", errors="replace")
    return text.split("\n", 1)[1] if size > n_bytes and "\n" in text else text
