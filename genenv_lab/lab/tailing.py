"""Reading a live run's ``epochs.jsonl`` by what was appended since the last read.

A run appends one line per epoch; the lab re-reads a run whenever its files change, and a run with a long
``epochs.jsonl`` (70 MB: 12 s of parsing) was re-parsed whole at every epoch it committed, for every user. Here the
records parsed so far are kept per file with the byte offset they end at, and a later read parses only the bytes
after it. The result equals :func:`genenv_lab.runlog.read_epochs` of the file as it is (the property test in
tests/test_app_views.py checks it over appends, torn writes, truncations and rewrites):

- only whole lines (ending in a newline) are kept; an unterminated last line is parsed for the answer, not kept;
- an unparsable last line is skipped as a torn write, and is not kept either: if more lines follow it later, it is
  read again and is then an error, as ``read_epochs`` says;
- the kept records are used only while the file is the same file (device and inode), at least as long as the kept
  offset, and holds the same bytes as when they were read at both ends of what was kept (its first 4 kB and the
  4 kB before the offset: a resume that cuts an uncommitted epoch's line and writes that epoch again changes the
  latter); anything else is read afresh.

Standard library only: no library keeps parsed state across appends to a JSON Lines file.
"""

from __future__ import annotations

import os
import stat
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..runfiles import EPOCHS, RunDirError
from ..runread import EPOCHS_LIMIT, consecutive, parse_epoch_lines
from ..safe_io import MB

HEAD = 4096
"""How many leading bytes identify a file as the one read before (a rewrite in place changes them)."""
KEPT_FILES = 16
"""The files whose records are kept (least recently read dropped first)."""


@dataclass(frozen=True)
class _Kept:
    device: int
    inode: int
    head: bytes  # the file's first bytes, up to HEAD
    edge: bytes  # the HEAD bytes before offset
    offset: int  # bytes of whole, parsed lines
    lines: int  # how many lines those bytes hold
    records: tuple[dict[str, Any], ...]


_KEPT: OrderedDict[Path, _Kept] = OrderedDict()
_LOCK = threading.Lock()


def _read_from(path: Path, offset: int) -> tuple[os.stat_result, bytes, bytes, bytes]:
    """``(stat, first HEAD bytes, HEAD bytes before offset, bytes from offset)`` of a regular file of at most
    EPOCHS_LIMIT bytes, opened without blocking (a FIFO or a device is refused, never read)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise RunDirError(f"{path} is not a regular file; the run directory is corrupt")
        if info.st_size > EPOCHS_LIMIT:
            raise RunDirError(f"{path} is {info.st_size / MB:.0f} MB, above the {EPOCHS_LIMIT // MB} MB any "
                              "reader accepts; the run directory is corrupt")
        head = os.pread(fd, HEAD, 0)
        edge = os.pread(fd, min(HEAD, offset), max(0, offset - HEAD))
        size = min(info.st_size, EPOCHS_LIMIT)
        chunks, at = [], offset
        while at < size:
            chunk = os.pread(fd, min(size - at, 16 * MB), at)
            if not chunk:
                break
            chunks.append(chunk)
            at += len(chunk)
        return info, head, edge, b"".join(chunks)
    finally:
        os.close(fd)


def _usable(kept: _Kept, info: os.stat_result, head: bytes, edge: bytes) -> bool:
    return ((kept.device, kept.inode) == (info.st_dev, info.st_ino) and info.st_size >= kept.offset
            and head[:len(kept.head)] == kept.head and edge == kept.edge)


def read_epochs_appended(run_dir: str | Path) -> list[dict[str, Any]]:
    """The records of ``run_dir``'s ``epochs.jsonl`` (``[]`` when absent), as :func:`~genenv_lab.runlog.read_epochs`
    reads them, parsing only what was appended since this file was last read here."""
    path = Path(run_dir).resolve() / EPOCHS
    if not path.is_file():
        return []
    with _LOCK:
        kept = _KEPT.get(path)
    info, head, edge, data = _read_from(path, kept.offset if kept else 0)
    if kept is not None and not _usable(kept, info, head, edge):
        kept = None
        info, head, _, data = _read_from(path, 0)
    offset, lines, records = (kept.offset, kept.lines, kept.records) if kept else (0, 0, ())
    done = data.rfind(b"\n") + 1  # whole lines end here; what follows is a write in flight (or torn)
    try:
        whole = data[:done].decode("utf-8").split("\n")[:-1]
        rest = data[done:].decode("utf-8")
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
    edge = ((edge if kept is not None else b"") + data[:done])[-HEAD:]  # the HEAD bytes before the new offset
    with _LOCK:
        _KEPT[path] = _Kept(info.st_dev, info.st_ino, head[:min(HEAD, end)], edge, end, lines + len(keep), records)
        _KEPT.move_to_end(path)
        while len(_KEPT) > KEPT_FILES:
            _KEPT.popitem(last=False)
    return consecutive(list(records) + tail, path)
