"""The run directory's file names and its atomic writes (the layout and the commit protocol:
:mod:`genenv_lab.rundir.write`'s
docstring), shared by its writer (:mod:`genenv_lab.rundir.write`) and its readers (:mod:`genenv_lab.rundir.read`)."""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd

CONFIG = "config.json"
STATE = "state.json"
EPOCHS = "epochs.jsonl"
EPOCHS_LIMIT = 256 << 20
"""The most ``epochs.jsonl`` may hold for any reader (about a million epochs): one bound, every reader's."""
TASKS = "tasks"
ATTEMPTS = "attempts"
TABLES = (TASKS, ATTEMPTS)
"""Folders of one parquet file per epoch (``epoch_NNN.parquet``)."""
REFERENCE = "reference_tasks.parquet"
LOCK = ".writer.lock"
ADAPTERS = "adapters"
EVENTS = "events.log"
BASELINE = "baseline.json"
STAGED = "trl_pending"
"""The folder of a finished epoch staged until it may be committed (:mod:`genenv_lab.rundir.staging`)."""
JSON_LIMIT = 4 << 20
"""The most read of a run's ``config.json``, ``state.json`` and ``baseline.json`` (each a few kB when a run writes
it), by the strict readers and the lab's lenient one alike."""


class RunDirError(RuntimeError):
    """The run directory is missing, corrupt or belongs to another configuration; the message says what to do."""


def atomic_write_bytes(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def overwrite_in_place(path: Path, data: bytes) -> None:
    """``data`` written over the existing file ``path`` (same inode; not atomic): the last resort when a full disk
    refuses the temporary file of :func:`atomic_write_bytes`. A state file of a few hundred bytes rewritten with one
    of about the same length needs no new block, so the run's status can still be told."""
    with open(path, "r+b") as fh:
        fh.write(data)
        fh.truncate()
        fh.flush()
        os.fsync(fh.fileno())


def atomic_write_json(path: Path, obj: Any) -> None:
    atomic_write_bytes(path, (json.dumps(obj, indent=2, sort_keys=True, allow_nan=False) + "\n").encode())


def atomic_write_parquet(path: Path, frame: pd.DataFrame) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        frame.to_parquet(tmp, index=False)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def adapter_dir(run_dir: Path, epoch: int) -> Path:
    return Path(run_dir) / ADAPTERS / f"epoch_{epoch:03d}"


_EPOCH_FILE = re.compile(r"epoch_(\d+)\.parquet")


def whole_table(run_dir: str | Path, name: str) -> Path:
    """Where a table kept in one file lives: ``reference_tasks.parquet`` (written once); for ``tasks`` and
    ``attempts``, the single file of a run written before per-epoch files, which only ``genenv-lab upgrade`` reads."""
    return Path(run_dir) / f"{name}.parquet"


def table_files(run_dir: str | Path, name: str) -> list[tuple[int, Path]]:
    """``(epoch, path)`` of a table's per-epoch files, by epoch (temp files and other names are ignored)."""
    folder = Path(run_dir) / name
    if not folder.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in folder.iterdir() if (m := _EPOCH_FILE.fullmatch(p.name))]
    return sorted(found)


def state_count(state: dict, key: str, run_dir: Path) -> int:
    """``state[key]`` (0 when absent) as a whole number ≥ 0, or a RunDirError that names the field: a resume must
    never read ``2.5`` as 2, or ``true`` as 1, and discard what follows."""
    value = state.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 10**9:
        raise RunDirError(f"{run_dir / STATE}: {key} is {json.dumps(value)[:40]}, not a whole number of epochs; "
                          "nothing was changed. Fix that field (see epochs.jsonl for the committed epochs) or start "
                          "a new --out")
    return value
