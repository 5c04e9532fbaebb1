"""The lab's cursors into live runs' ``epochs.jsonl``: each run's records are re-read from where the last read ended.

A run appends one line per epoch; the lab re-reads a run whenever its files change, and a run with a long
``epochs.jsonl`` (70 MB: 12 s of parsing) was re-parsed whole at every epoch it committed, for every user. Here the
cursor of each file's last read (:class:`~genenv_lab.rundir.read.EpochCursor`: the records parsed so far, the byte
offset they end at and a digest of the bytes up to it) is kept, and the next read continues from it
(:func:`~genenv_lab.rundir.read.read_epochs` with ``since``; tests/test_tailing.py checks that the result equals a
read from scratch over appends, torn writes, truncations, rewrites in place and a resume's cut-and-rewrite).

What is kept is bounded by the bytes it was parsed from (:data:`KEPT_BYTES`); when a new file would pass the
bound, files not read for :data:`IDLE_S` make room, and otherwise the new one is read without being kept, so that
many live runs read in turn never evict each other on every refresh.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path

from genenv_lab.core.types import EpochRecord
from genenv_lab.rundir.layout import EPOCHS
from genenv_lab.rundir.read import EpochCursor, read_epochs
from genenv_lab.safe_io import MB

KEPT_BYTES = 512 * MB
"""The most file bytes whose parsed records are kept, over all files."""
IDLE_S = 120.0
"""A kept file not read for this long gives way to a new one."""


@dataclass(frozen=True)
class _Kept:
    cursor: EpochCursor
    read_at: float


_KEPT: dict[Path, _Kept] = {}
_LOCK = threading.Lock()


def _keep(path: Path, kept: _Kept) -> None:
    """Keep ``kept`` for ``path`` within :data:`KEPT_BYTES` (idle files make room first; else it is not kept)."""
    with _LOCK:
        _KEPT.pop(path, None)
        now = time.monotonic()
        used = sum(k.cursor.offset for k in _KEPT.values())
        for other in sorted(_KEPT, key=lambda q: _KEPT[q].read_at):
            if used + kept.cursor.offset <= KEPT_BYTES:
                break
            if now - _KEPT[other].read_at >= IDLE_S:
                used -= _KEPT.pop(other).cursor.offset
        if used + kept.cursor.offset <= KEPT_BYTES:
            _KEPT[path] = kept


def read_epochs_appended(run_dir: str | Path) -> tuple[EpochRecord, ...]:
    """The records of ``run_dir``'s ``epochs.jsonl`` (``()`` when absent), as a strict
    :func:`~genenv_lab.rundir.read.read_epochs` gives them, parsing only what was appended since the last read here."""
    path = Path(run_dir).resolve() / EPOCHS
    with _LOCK:
        kept = _KEPT.get(path)
    epochs = read_epochs(path.parent, since=kept.cursor if kept else None)
    if epochs.cursor is not None:
        _keep(path, _Kept(epochs.cursor, time.monotonic()))
    return epochs.records
