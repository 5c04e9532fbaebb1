"""What makes a killed TRL run resume with no committed epoch lost: an epoch is committed to the run directory only
once the trainer's checkpoint holding its agent update exists.

At the end of a curriculum epoch (the trainer's ``on_epoch_end``) the finished epoch is **staged** in the run
directory (``trl_pending/``: its record, table rows and adapters, with the trainer's global step), and the trainer
is asked to save a checkpoint. When the checkpoint is written (``on_save``) the curriculum adds its own file to it
(``genenv_curriculum.json``: the epochs it holds and the rollouts of the epoch in flight) and commits the staged
epoch with the loop's :meth:`~genenv_lab.rundir.write.RunWriter.commit_epoch`. A kill

- before the checkpoint exists: the resumed trainer starts from an earlier step and the staged epoch is discarded
  (it was never committed; the trainer trains it again);
- after it: the resumed trainer starts from that step and the staged epoch is committed then (:func:`commit_staged`).

So the run directory's committed epochs are always those of a checkpoint the trainer can resume from.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import fields
from pathlib import Path
from typing import Any, Callable

from genenv_lab.rundir.write import RunWriter
from genenv_lab.rundir.layout import RunDirError
from genenv_lab.rundir.read import read_epochs
from genenv_lab.core.types import Attempt, EpochRecord, EpochResult, GeneratedTask
from genenv_lab.core.metrics import TRL_GLOBAL_STEP

STAGED = "trl_pending"
"""The run directory's folder of a finished epoch waiting for the trainer's checkpoint."""
CHECKPOINT_FILE = "genenv_curriculum.json"
"""The curriculum's file in each of the trainer's checkpoints."""


def stage(run_dir: Path, result: EpochResult, global_step: int, save_adapters: Callable[[Path], None]) -> None:
    """Write a finished epoch to ``run_dir/trl_pending`` (atomically: a ``.partial`` folder renamed)."""
    final = Path(run_dir) / STAGED
    partial = final.with_name(STAGED + ".partial")
    for old in (partial, final):
        if old.exists():
            shutil.rmtree(old)
    partial.mkdir()
    save_adapters(partial / "adapters")
    rows = {"record": result.record.to_dict(), "global_step": global_step,
            "tasks": [t.to_row() for t in result.tasks], "attempts": [a.to_row() for a in result.attempts],
            "reference": [t.to_row() for t in result.reference]}
    with open(partial / "epoch.json", "w") as fh:
        json.dump(rows, fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(partial, final)


def staged_step(run_dir: Path) -> tuple[int, int] | None:
    """(epoch, global step) of the staged epoch, or None when none is staged (a half-written one is removed)."""
    leftover = Path(run_dir) / (STAGED + ".partial")
    if leftover.exists():
        shutil.rmtree(leftover)
    path = Path(run_dir) / STAGED / "epoch.json"
    if not path.is_file():
        return None
    with open(path) as fh:
        saved = json.load(fh)
    return int(saved["record"]["epoch"]), int(saved["global_step"])


def commit_staged(writer: RunWriter) -> None:
    """Commit the staged epoch (records, tables, adapters) with the loop's commit protocol, then drop the stage."""
    folder = writer.dir / STAGED
    with open(folder / "epoch.json") as fh:
        saved = json.load(fh)
    known = {f.name for f in fields(EpochRecord)}
    record = EpochRecord(**{k: v for k, v in saved["record"].items() if k in known})
    writer.commit_epoch(record, [GeneratedTask(**row) for row in saved["tasks"]],
                        [Attempt(**row) for row in saved["attempts"]],
                        lambda target: shutil.copytree(folder / "adapters", target, dirs_exist_ok=True),
                        reference=[GeneratedTask(**row) for row in saved["reference"]])
    discard_staged(writer.dir)


def discard_staged(run_dir: Path) -> None:
    folder = Path(run_dir) / STAGED
    if folder.exists():
        shutil.rmtree(folder)


def committed_step(run_dir: Path, epoch: int) -> int:
    """The trainer's global step at the end of committed epoch ``epoch`` (0 for epoch 0)."""
    if epoch == 0:
        return 0
    record = next((r for r in read_epochs(run_dir) if r.get("epoch") == epoch), {})
    return int(record.get(TRL_GLOBAL_STEP) or 0)


def check_not_behind(output_dir: str | Path, run_dir: Path, step: int, last: int, last_step: int) -> None:
    """Refuse, in one line, a trainer resumed at ``step``, before the step ``last_step`` of the run's last committed
    epoch ``last``: name the checkpoint to resume from, or, when it is gone, the agent adapter to start over from."""
    if step >= last_step:
        return
    from genenv_lab.rundir.layout import adapter_dir

    wanted = checkpoint_dir(output_dir, last_step)
    raise RunDirError(f"the trainer resumed at step {step}, before the run's last committed epoch {last} "
                      f"(step {last_step}): resume from GenEnvCurriculum.resume_from ({wanted} or later)"
                      + ("" if wanted.is_dir() else f"; that checkpoint is gone: start a new run from the "
                         f"agent adapter {adapter_dir(run_dir, last) / 'agent'}"))


def checkpoint_dir(output_dir: str | Path, global_step: int) -> Path:
    from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

    return Path(output_dir) / f"{PREFIX_CHECKPOINT_DIR}-{global_step}"


def write_checkpoint_state(folder: Path, state: dict[str, Any]) -> None:
    """The curriculum's file in a checkpoint the trainer has just written (atomic)."""
    tmp = folder / (CHECKPOINT_FILE + ".tmp")
    with open(tmp, "w") as fh:
        json.dump(state, fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, folder / CHECKPOINT_FILE)


def read_checkpoint_state(folder: Path) -> dict[str, Any] | None:
    path = Path(folder) / CHECKPOINT_FILE
    if not path.is_file():
        return None
    with open(path) as fh:
        return json.load(fh)


def run_identity(run_dir: Path, cfg) -> dict[str, str]:
    """What names a run in its checkpoints: its run directory (resolved) and a hash of its configuration's
    :meth:`~genenv_lab.config.RunConfig.identity` (less the number of epochs, which a resume may raise)."""
    digest = hashlib.sha256(json.dumps(cfg.identity(), sort_keys=True, default=str).encode()).hexdigest()[:16]
    return {"run_dir": str(Path(run_dir).resolve()), "config": digest}


def checked_checkpoint(output_dir: str | Path, step: int, identity: dict[str, str]) -> dict[str, Any] | None:
    """The curriculum's file of the checkpoint at ``step`` (None at step 0 or without one), refused in one line when
    it names another run than ``identity`` (:func:`run_identity`): its agent is not this run's."""
    if step <= 0:
        return None
    folder = checkpoint_dir(output_dir, step)
    saved = read_checkpoint_state(folder)
    theirs = (saved or {}).get("run")
    if theirs and theirs != identity:
        raise RunDirError(f"{folder} is a checkpoint of another run ({theirs.get('run_dir')}, config "
                          f"{theirs.get('config')}), not of {identity['run_dir']}: resume with this run's own "
                          "output_dir, or start a fresh run_dir")
    return saved


def curriculum_checkpoints(output_dir: str | Path) -> list[Path]:
    """The checkpoint folders in ``output_dir`` that hold a curriculum's file."""
    from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

    root = Path(output_dir)
    return sorted(f for f in root.glob(f"{PREFIX_CHECKPOINT_DIR}-*") if (f / CHECKPOINT_FILE).is_file()) \
        if root.is_dir() else []


def last_checkpoint(output_dir: str | Path) -> str | None:
    """The newest checkpoint in ``output_dir`` that both the trainer and the curriculum finished writing (its
    ``trainer_state.json`` and :data:`CHECKPOINT_FILE`); None when there is none. A kill while the trainer writes a
    checkpoint leaves a folder TRL's ``resume_from_checkpoint=True`` would pick and fail on; this one is skipped."""
    from transformers.trainer import TRAINER_STATE_NAME
    from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

    root = Path(output_dir)
    if not root.is_dir():
        return None
    steps = []
    for folder in root.glob(f"{PREFIX_CHECKPOINT_DIR}-*"):
        number = folder.name.rsplit("-", 1)[1]
        if number.isdigit() and (folder / TRAINER_STATE_NAME).is_file() and (folder / CHECKPOINT_FILE).is_file():
            steps.append(int(number))
    return str(checkpoint_dir(root, max(steps))) if steps else None
