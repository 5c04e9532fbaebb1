"""What makes a killed TRL run resume with no committed epoch lost: an epoch is committed to the run directory only
once the trainer's checkpoint holding its agent update exists.

At the end of a curriculum epoch (the trainer's ``on_epoch_end``) the finished epoch is **staged** in the run
directory (:mod:`genenv_lab.rundir.staging`: its record, table rows and adapters, with the trainer's step), and the
trainer is asked to save a checkpoint. When the checkpoint is written (``on_save``) the curriculum adds its own file
to it (``genenv_curriculum.json``: the epochs it holds and the rollouts of the epoch in flight) and commits the
staged epoch with the loop's :meth:`~genenv_lab.rundir.write.RunWriter.commit_epoch`. A kill

- before the checkpoint exists: the resumed trainer starts from an earlier step and the staged epoch is discarded
  (it was never committed; the trainer trains it again);
- after it: the resumed trainer starts from that step and the staged epoch is committed then
  (:func:`genenv_lab.rundir.staging.commit_staged`).

So the run directory's committed epochs are always those of a checkpoint the trainer can resume from.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from genenv_lab.rundir.layout import RunDirError
from genenv_lab.rundir.read import read_epochs
from genenv_lab.core.metrics import TRL_GLOBAL_STEP

CHECKPOINT_FILE = "genenv_curriculum.json"
"""The curriculum's file in each of the trainer's checkpoints."""


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


def inside_a_pass(saved: dict[str, Any] | None) -> bool:
    """Whether a checkpoint's curriculum file holds some of its epoch's rollouts but not all: the resumed trainer
    then serves the rest of a pass, in an order of its own."""
    order = set((saved or {}).get("order") or ())
    return bool(order) and order != set((saved or {}).get("prompts") or ())


def last_checkpoint(output_dir: str | Path, whole_passes: bool = False) -> str | None:
    """The newest checkpoint in ``output_dir`` that both the trainer and the curriculum finished writing (its
    ``trainer_state.json`` and :data:`CHECKPOINT_FILE`); None when there is none. A kill while the trainer writes a
    checkpoint leaves a folder TRL's ``resume_from_checkpoint=True`` would pick and fail on; this one is skipped.
    ``whole_passes``: only a checkpoint between two passes, or at a pass's last step (:func:`inside_a_pass`), what a
    launch on several processes resumes from."""
    from transformers.trainer import TRAINER_STATE_NAME
    from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

    root = Path(output_dir)
    if not root.is_dir():
        return None
    steps = []
    for folder in root.glob(f"{PREFIX_CHECKPOINT_DIR}-*"):
        number = folder.name.rsplit("-", 1)[1]
        if number.isdigit() and (folder / TRAINER_STATE_NAME).is_file() and (folder / CHECKPOINT_FILE).is_file():
            if not (whole_passes and inside_a_pass(read_checkpoint_state(folder))):
                steps.append(int(number))
    return str(checkpoint_dir(root, max(steps))) if steps else None
