"""A finished epoch staged in its run directory until something outside the run says it may count: the TRL
curriculum stages each epoch until the trainer's checkpoint holding its agent update exists
(:mod:`genenv_lab.trl.resume` says why), then commits it with :meth:`RunWriter.commit_epoch
<genenv_lab.rundir.write.RunWriter.commit_epoch>`, the loop's own commit protocol.

``trl_pending/`` holds ``epoch.json`` (the record, as ``epochs.jsonl`` would, the table rows, and the step it was
staged at) and ``adapters/``; it is written atomically (a ``.partial`` folder renamed) and read back through
:meth:`EpochRecord.from_dict <genenv_lab.core.types.EpochRecord.from_dict>`, bounded, with a damaged stage refused
in one line.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any, Callable

from genenv_lab.core.types import Attempt, EpochRecord, EpochResult, GeneratedTask
from genenv_lab.rundir.layout import STAGED, RunDirError
from genenv_lab.rundir.write import RunWriter
from genenv_lab.safe_io import MB, loads_json, read_regular

STAGE_LIMIT = 512 * MB
"""The most ``trl_pending/epoch.json`` may hold (one epoch's table rows)."""


def stage(run_dir: Path, result: EpochResult, step: int, save_adapters: Callable[[Path], None]) -> None:
    """Write a finished epoch to ``run_dir/trl_pending`` at ``step`` (atomically: a ``.partial`` folder renamed)."""
    final = Path(run_dir) / STAGED
    partial = final.with_name(STAGED + ".partial")
    for old in (partial, final):
        if old.exists():
            shutil.rmtree(old)
    partial.mkdir()
    save_adapters(partial / "adapters")
    rows = {"record": result.record.to_dict(), "global_step": step,
            "tasks": [t.to_row() for t in result.tasks], "attempts": [a.to_row() for a in result.attempts],
            "reference": [t.to_row() for t in result.reference]}
    with open(partial / "epoch.json", "w") as fh:
        json.dump(rows, fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(partial, final)


def _read(run_dir: Path) -> tuple[EpochRecord, dict[str, Any]] | None:
    """The staged record and the rest of ``epoch.json``, None when nothing is staged (a half-written stage is
    removed), a RunDirError in one line when it is damaged."""
    leftover = Path(run_dir) / (STAGED + ".partial")
    if leftover.exists():
        shutil.rmtree(leftover)
    path = Path(run_dir) / STAGED / "epoch.json"
    if not path.is_file():
        return None
    try:
        saved = loads_json(read_regular(path, STAGE_LIMIT, "epoch.json"))
        record = EpochRecord.from_dict(saved["record"])
        int(saved["global_step"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise RunDirError(f"{path} is damaged ({exc}); delete {path.parent} to train that epoch again, or start a "
                          "new run") from None
    return record, saved


def staged_step(run_dir: Path) -> tuple[int, int] | None:
    """(epoch, step) of the staged epoch, or None when none is staged."""
    found = _read(run_dir)
    return None if found is None else (found[0].epoch, int(found[1]["global_step"]))


def commit_staged(writer: RunWriter) -> None:
    """Commit the staged epoch (record, tables, adapters) with the loop's commit protocol, then drop the stage."""
    found = _read(writer.dir)
    if found is None:
        raise RunDirError(f"{writer.dir} has no staged epoch to commit")
    record, saved = found
    folder = writer.dir / STAGED
    writer.commit_epoch(record, [GeneratedTask(**row) for row in saved["tasks"]],
                        [Attempt(**row) for row in saved["attempts"]],
                        lambda target: shutil.copytree(folder / "adapters", target, dirs_exist_ok=True),
                        reference=[GeneratedTask(**row) for row in saved["reference"]])
    discard_staged(writer.dir)


def discard_staged(run_dir: Path) -> None:
    """Drop the staged epoch (it was never committed: the trainer trains it again)."""
    folder = Path(run_dir) / STAGED
    if folder.exists():
        shutil.rmtree(folder)
