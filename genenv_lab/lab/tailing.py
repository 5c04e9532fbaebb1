"""Reading a live run's ``epochs.jsonl`` by what was appended since the last read.

A run appends one line per epoch; the lab re-reads a run whenever its files change, and a run with a long
``epochs.jsonl`` (70 MB: 12 s of parsing) was re-parsed whole at every epoch it committed, for every user. Here the
records parsed so far are kept per file with the byte offset they end at and a digest of the bytes up to it, and a
later read parses only the bytes after it. The result equals :func:`genenv_lab.rundir.read.read_epochs` of the file as
it is (the property test in tests/test_tailing.py checks it over appends, torn writes, truncations, rewrites in
place and a resume's cut-and-rewrite):

- only whole lines (ending in a newline) are kept; an unterminated last line is parsed for the answer, not kept;
- an unparsable last line is skipped as a torn write, and is not kept either: if more lines follow it later, it is
  read again and is then an error, as ``read_epochs`` says;
- the kept records are used only while the file is the same file (device and inode) and its bytes up to the kept
  offset have the kept digest (BLAKE2b: hashing 60 MB takes tens of milliseconds, parsing it seconds); any change
  to what was read, anywhere, reads the file afresh.

What is kept is bounded by the bytes it was parsed from (:data:`KEPT_BYTES`); when a new file would pass the
bound, files not read for :data:`IDLE_S` make room, and otherwise the new one is parsed without being kept, so that
many live runs read in turn never evict each other on every refresh.

Standard library only: no library keeps parsed state across appends to a JSON Lines file.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from genenv_lab.rundir.layout import EPOCHS, RunDirError
from genenv_lab.rundir.read import EPOCHS_LIMIT, consecutive, parse_epoch_lines
from genenv_lab.safe_io import MB, UnsafeFile, read_regular_with_stat

KEPT_BYTES = 512 * MB
"""The most file bytes whose parsed records are kept, over all files."""
IDLE_S = 120.0
"""A kept file not read for this long gives way to a new one."""


@dataclass(frozen=True)
class _Kept:
    device: int
    inode: int
    offset: int  # bytes of whole, parsed lines
    digest: bytes  # of the file's bytes before offset
    lines: int  # how many lines those bytes hold
    records: tuple[dict[str, Any], ...]
    read_at: float


_KEPT: dict[Path, _Kept] = {}
_LOCK = threading.Lock()


def _hasher(data: bytes):
    return hashlib.blake2b(data, digest_size=16)


def _read(path: Path) -> tuple[os.stat_result, bytes]:
    """``(stat, bytes)`` of ``epochs.jsonl`` through the one bounded reader (a FIFO or a device is refused, never
    read; at most EPOCHS_LIMIT bytes)."""
    try:
        return read_regular_with_stat(path, EPOCHS_LIMIT, EPOCHS)
    except UnsafeFile as exc:
        raise RunDirError(f"{exc}; the run directory is corrupt") from None


def _usable(kept: _Kept | None, info: os.stat_result, data: bytes, hasher) -> bool:
    """Whether ``kept`` describes this file's first bytes (``hasher``: a BLAKE2b of them, continued later)."""
    return (kept is not None and (kept.device, kept.inode) == (info.st_dev, info.st_ino)
            and len(data) >= kept.offset and hasher.digest() == kept.digest)


def _keep(path: Path, kept: _Kept) -> None:
    """Keep ``kept`` for ``path`` within :data:`KEPT_BYTES` (idle files make room first; else it is not kept)."""
    with _LOCK:
        _KEPT.pop(path, None)
        now = time.monotonic()
        used = sum(k.offset for k in _KEPT.values())
        for other in sorted(_KEPT, key=lambda q: _KEPT[q].read_at):
            if used + kept.offset <= KEPT_BYTES:
                break
            if now - _KEPT[other].read_at >= IDLE_S:
                used -= _KEPT.pop(other).offset
        if used + kept.offset <= KEPT_BYTES:
            _KEPT[path] = kept


def read_epochs_appended(run_dir: str | Path) -> list[dict[str, Any]]:
    """The records of ``run_dir``'s ``epochs.jsonl`` (``[]`` when absent), as
    :func:`~genenv_lab.rundir.read.read_epochs`
    reads them, parsing only what was appended since this file was last read here."""
    path = Path(run_dir).resolve() / EPOCHS
    if not path.is_file():
        return []
    info, data = _read(path)
    with _LOCK:
        kept = _KEPT.get(path)
    hasher = _hasher(memoryview(data)[:kept.offset] if kept else b"")
    if not _usable(kept, info, data, hasher):
        kept, hasher = None, _hasher(b"")
    offset, lines, records = (kept.offset, kept.lines, kept.records) if kept else (0, 0, ())
    new_bytes = data[offset:]
    done = new_bytes.rfind(b"\n") + 1  # whole lines end here; what follows is a write in flight (or torn)
    try:
        whole = new_bytes[:done].decode("utf-8").split("\n")[:-1]
        rest = new_bytes[done:].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RunDirError(f"{path} is not UTF-8 text ({exc.reason}); the run directory is corrupt") from None
    # read_epochs' rule: only the file's last line may be torn (skipped when unparsable)
    last = whole[-1:] if not rest else []
    body = whole[:len(whole) - len(last)]
    new = parse_epoch_lines(body, path, first_line=lines + 1, last_may_be_torn=False)
    ending = parse_epoch_lines(last, path, first_line=lines + len(body) + 1)
    if last and last[0].strip() and not ending:  # a torn last line: not kept, read again when more follows
        keep, done = body, done - len(last[0].encode("utf-8")) - 1
    else:
        keep, new = whole, new + ending
    tail = parse_epoch_lines([rest], path, first_line=lines + len(whole) + 1) if rest else []
    records += tuple(new)
    end = offset + done
    hasher.update(memoryview(data)[offset:end])  # one pass over the file: the kept bytes, then the new ones
    _keep(path, _Kept(info.st_dev, info.st_ino, end, hasher.digest(), lines + len(keep), records, time.monotonic()))
    return consecutive(list(records) + tail, path)
