"""Reading files the lab did not write itself (predictions, a run folder's state) without trusting them.

:func:`read_regular` opens without blocking, requires a regular file (a FIFO, a device such as ``/dev/zero``, a
socket or a folder is refused at once, never read) and reads at most ``limit`` bytes, so a hostile path costs a
stat and one bounded read. :func:`loads_json` turns every way a JSON text can be bad (syntax, bad UTF-8, integers
past Python's digit limit, nesting past the stack) into one ``ValueError``. Standard-library calls only: no library
offers this pair.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

MB = 1 << 20


class UnsafeFile(ValueError):
    """A file that is not a regular file, or is larger than its reader allows; the message is one sentence."""


def read_regular(path: str | os.PathLike, limit: int, what: str = "file") -> bytes:
    """The bytes of ``path``, a regular file of at most ``limit`` bytes; else :class:`UnsafeFile` (or
    ``FileNotFoundError`` when absent)."""
    return read_regular_with_stat(path, limit, what)[1]


def read_regular_with_stat(path: str | os.PathLike, limit: int, what: str = "file") -> tuple[os.stat_result, bytes]:
    """:func:`read_regular`, with the ``fstat`` of the file it read (which file it was: device, inode)."""
    fd = os.open(Path(path), os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnsafeFile(f"{what} {path} is not a regular file (a FIFO, device, socket or folder); not read")
        if info.st_size > limit:
            raise UnsafeFile(f"{what} {path} is {info.st_size / MB:.1f} MB, above the {limit / MB:.0f} MB this "
                             "reader accepts; not read")
        chunks, left = [], limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        if len(data) > limit:  # it grew after the stat
            raise UnsafeFile(f"{what} {path} grew past {limit / MB:.0f} MB while being read; not read")
        return info, data
    finally:
        os.close(fd)


DATA_LIMIT = 1 << 30
"""The most any data file the project reads but did not write (benchmark data, seed and held-out files) may hold."""


def read_text(path: str | os.PathLike, what: str = "data file", limit: int = DATA_LIMIT) -> str:
    """The UTF-8 text of ``path`` read through :func:`read_regular` (a regular file of at most ``limit`` bytes): the
    one reader of every data file (benchmark data, seed and held-out files), so a link to ``/dev/zero`` or a FIFO
    is refused in one sentence instead of filling memory or hanging. Bad UTF-8 is a ``ValueError``."""
    data = read_regular(path, limit, what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{what} {path} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def loads_json(data: bytes | str) -> Any:
    """``json.loads`` whose every failure is a ``ValueError`` with a short message."""
    try:
        return json.loads(data)
    except RecursionError:
        raise ValueError("nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, int digit limit
        raise ValueError(f"{type(exc).__name__}: {str(exc)[:80]}") from None


def short_repr(text: str, keep: int = 60) -> str:
    """``repr(text)`` for a message, or for a text longer than ``keep`` characters (a 120 kB prompt) the ``repr`` of
    its start and its length: a message that names an untrusted text stays one short line.

    >>> short_repr("Task: " + "9" * 100)
    "'Task: 999999999999999999999999999999999999999999999999999999'… (106 characters)"
    """
    return repr(text) if len(text) <= keep else f"{text[:keep]!r}… ({len(text):,} characters)"
