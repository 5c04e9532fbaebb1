"""A run's status as the lab shows it: whether its writer is alive, what ``state.json`` says it is, how a killed run
continues, and the fingerprint that changes when any of its files does (the lab redraws only then)."""

from __future__ import annotations

import math
import os
import time
from pathlib import Path
from typing import Any

from genenv_lab.config.presets import TRL_PRESET_PREFIX
from genenv_lab.rundir.layout import ATTEMPTS, CONFIG, EPOCHS, EVENTS, STATE, TASKS
from genenv_lab.rundir.read import read_json_object
from genenv_lab.lab.safety import unsafe_files


def pid_alive(pid: Any) -> bool:
    """Whether process ``pid`` exists on this machine and is not a zombie (any other value, an integer past what
    the system's pid type holds included, is no live process)."""
    if not isinstance(pid, int) or isinstance(pid, bool) or not 0 < pid < 2**31:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    except OSError:
        return False
    try:  # Linux: a zombie (exited, not yet reaped) is not a running writer
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def status_of(state: dict[str, Any]) -> str:
    """``state.json``'s status, with ``running`` turned into ``killed`` when its writer is gone."""
    status = state.get("status")
    if status == "running" and not pid_alive(state.get("pid")):
        return "killed"
    return status if isinstance(status, str) and status else "unreadable"


def killed_note(state: dict[str, Any], path: Path, preset: str = "P") -> str:
    """A sentence explaining a ``killed`` status (empty for any other status)."""
    if status_of(state) != "killed":
        return ""
    try:
        age = time.time() - max((path / n).stat().st_mtime for n in (STATE, EPOCHS, EVENTS) if (path / n).exists())
        when = f"last write {_age(age)} ago"
    except ValueError:
        when = "no write seen"
    how = (f"rerun your TRL script with `GenEnvCurriculum(..., run_dir='{path}', resume=True)`"
           if preset.startswith(TRL_PRESET_PREFIX) else f"`genenv-lab run --preset {preset} --out {path} --resume`")
    return (f"state.json says running but its writer (pid {state.get('pid')}) is not alive on this machine "
            f"({when}): the run was killed, or it runs on another machine or container. Continue a killed run: "
            f"{how}.")


def _age(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def fingerprint(path: str | Path) -> tuple:
    """What changes when a run directory changes (file sizes and times, and whether its writer is alive); the
    lab redraws a run only when this changes."""
    path = Path(path)
    parts: list[Any] = []
    for name in (CONFIG, STATE, EPOCHS, TASKS, ATTEMPTS, f"{TASKS}.parquet", f"{ATTEMPTS}.parquet", EVENTS):
        try:
            st = (path / name).stat()
            parts.append((name, st.st_mtime_ns, st.st_size))
        except OSError:
            parts.append((name, None, None))
    unsafe = unsafe_files(path)
    parts.append(None if unsafe else status_of(read_json_object(path / STATE, [])))  # never raises
    return tuple(parts + [len(unsafe)])


def last_committed(state: dict[str, Any]) -> int | None:
    """``state.json``'s ``last_complete_epoch`` when it is a whole number of epochs (at most 10⁹: a 4000-digit
    integer is no epoch count), else None."""
    last = state.get("last_complete_epoch")
    return last if isinstance(last, int) and not isinstance(last, bool) and 0 <= last <= 10**9 else None


def unusable_numbers(config: dict[str, Any], state: dict[str, Any]) -> list[str]:
    """One sentence for each number of the run's settings the lab leaves out as no number it can use (a 4000-digit
    α, an epoch count past 10⁹): the card says so instead of showing nothing in its place."""
    out = []
    curriculum = config.get("curriculum") if isinstance(config.get("curriculum"), dict) else {}
    for key in ("alpha", "k_min"):
        if key in curriculum and finite_float(curriculum[key]) is None:
            out.append(f"config.json's curriculum.{key} is not a finite number; it is left out (the band is not "
                       "drawn).")
    if state.get("last_complete_epoch") is not None and last_committed(state) is None:
        out.append("state.json's last_complete_epoch is not a whole number of epochs (0 to 10⁹); it is left out, "
                   "and every recorded epoch is shown.")
    return out


def finite_float(value: Any) -> float | None:
    """``value`` as a finite float when it is a number that is one (a 4000-digit integer overflows: None)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return None
    try:
        out = float(value)
    except OverflowError:
        return None
    return out if math.isfinite(out) else None
