"""One writer per run directory: an exclusive ``flock`` on the run's ``.writer.lock``.

The lock is held until :meth:`RunLock.release` or until the process ends (a kill included releases it), so a second
``--resume`` of a run that is still being written is refused instead of interleaving two writers' epochs. Within one
process, a lock taken with ``reclaim`` may be taken over by a later ``reclaim`` lock of the same file: the TRL
curriculum's retry in a notebook kernel after its trainer raised, whose first writer was never finished.

Written by hand: ``fcntl.flock`` plus a registry of this process's locks (no well-kept library does the takeover).
"""

from __future__ import annotations

import os
from pathlib import Path

from genenv_lab.rundir.layout import LOCK, RunDirError
from genenv_lab.rundir.read import read_state

_HELD: dict[str, "RunLock"] = {}
"""The run locks this process holds, by lock file's resolved path."""


class RunLock:
    """The writer lock of run directory ``run_dir``, taken at construction (refused in one line naming the pid of
    the process that holds it)."""

    def __init__(self, run_dir: Path, *, reclaim: bool = False):
        import fcntl

        self.path = Path(run_dir) / LOCK
        self.reclaim = reclaim
        self.taken_over = False
        """Whether an abandoned ``reclaim`` lock of this process was taken over."""
        self._key = str(self.path.resolve())
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        earlier = _HELD.get(self._key)
        if earlier is not None and self.reclaim and earlier.reclaim:
            earlier.release()
            self.taken_over = True
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            try:
                pid = read_state(self.path.parent).get("pid", "?")
            except Exception:  # noqa: BLE001 - the message is what matters here
                pid = "?"
            raise RunDirError(f"{self.path.parent} is being written by another process (pid {pid}); wait for it to "
                              "finish or stop it, then --resume") from None
        self._fd: int | None = fd
        _HELD[self._key] = self

    @property
    def held(self) -> bool:
        """Whether this lock is still held (not released, not taken over)."""
        return self._fd is not None

    def release(self) -> None:
        """Give the lock up (idempotent)."""
        if self._fd is not None:
            if _HELD.get(self._key) is self:
                del _HELD[self._key]
            os.close(self._fd)
            self._fd = None
