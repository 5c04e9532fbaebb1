"""``genenv-lab upgrade RUN_DIR``: a run directory written by an older genenv_lab rewritten in this version's format,
in place, after a copy of the folder is made beside it. No reader knows an older format: the readers read this
version's records and configuration only, and this module is the one place the old names live.

What it rewrites:

- ``epochs.jsonl``: the keys runs wrote before 2026-12 under their names now (:data:`RENAMED`). Until then a record
  held four of the env and agent update's figures twice, at the top level (``env_kl``, ``n_env_steps``,
  ``env_loss``, ``agent_loss``) and namespaced in ``extra`` (``rwr/kl``, ``rwr/steps``, ``rwr/loss``,
  ``grpo/loss``), and six measurements sat in ``extra`` with no namespace. Every rewritten record is checked as this
  version's :class:`~genenv_lab.core.types.EpochRecord` before anything is written;
- ``tasks.parquet``/``attempts.parquet`` of a run written before per-epoch table files: split into
  ``tasks/epoch_NNN.parquet`` and ``attempts/epoch_NNN.parquet`` by their ``epoch`` column;
- ``epochs.jsonl`` again: the keys a record has held since, computed from what the run wrote then: the
  ``diversity/entropy`` of each epoch's valid tasks (:data:`BACKFILLED`), from its tasks table;
- ``config.json``: the fields that moved section (``loop.eval_*`` → ``eval.*``, ``model.world_*`` → ``world.*``;
  :func:`genenv_lab.config.spellings.upgrade_config_dict`).

A folder holding runs (a comparison's ``runs/``, or the comparison folder itself) upgrades each run in it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Mapping

from genenv_lab.core.diversity import entropy_bits
from genenv_lab.core.metrics import DIVERSITY_ENTROPY
from genenv_lab.core.types import EpochRecord, jsonable
from genenv_lab.rundir.layout import (CONFIG, EPOCHS, LOCK, STATE, TABLES, TASKS, RunDirError, atomic_write_bytes,
    atomic_write_json, atomic_write_parquet, table_files, whole_table)
from genenv_lab.safe_io import MB, loads_json, read_regular

RENAMED = {
    "env_kl": "rwr/kl",
    "n_env_steps": "rwr/steps",
    "env_loss": "rwr/loss",
    "agent_loss": "grpo/loss",
    "n_fresh": "fresh/tasks",
    "p_hat_gap": "fresh/p_hat_gap",
    "score_errors": "agent/score_errors",
    "p_hat_reference": "reference/p_hat",
    "in_band_frac_reference": "reference/in_band_frac",
    "p_hat_gap_reference": "reference/p_hat_gap",
}
"""Old key → its name since 2026-12. Every new name is a key of the record's ``extra``."""

BACKFILLED = (DIVERSITY_ENTROPY,)
"""Keys every record has held since 2026-12-06, computed for an older record from its epoch's tasks table."""

TOP_LEVEL_OLD = ("env_kl", "n_env_steps", "env_loss", "agent_loss")
"""The old keys that sat at the record's top level (the others sat in ``extra``)."""


def current_names(record: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of the epoch ``record`` with every old key of :data:`RENAMED` under its current name in ``extra``.
    Where a record holds both spellings (runs of 2026-11 wrote ``env_kl`` and ``rwr/kl``), the current name's value
    is kept: it is the one a new run writes. A record in current names comes back equal; ``record`` is not changed. A
record whose ``extra`` is not an object comes back as it is.

    >>> old = {"epoch": 1, "env_kl": 0.0, "agent_loss": 0.5, "extra": {"rwr/kl": None, "p_hat_reference": 0.2}}
    >>> current_names(old)
    {'epoch': 1, 'extra': {'rwr/kl': None, 'reference/p_hat': 0.2, 'grpo/loss': 0.5}}
    """
    extra_in = record.get("extra", {})
    if not isinstance(extra_in, dict):  # not a record this module can read (readers take such an extra as {})
        return dict(record)
    if not any(k in record for k in TOP_LEVEL_OLD) and not any(k in extra_in for k in RENAMED):
        return dict(record)
    out = {k: v for k, v in record.items() if k not in TOP_LEVEL_OLD}
    extra = {k: v for k, v in extra_in.items() if k not in RENAMED}
    for old, value in [*extra_in.items(), *((k, record[k]) for k in TOP_LEVEL_OLD if k in record)]:
        if old in RENAMED:
            extra.setdefault(RENAMED[old], value)
    out["extra"] = extra
    return out


BACKUP_SUFFIX = ".before-upgrade"
"""The copy of a run made before it is rewritten: ``.<run name>.before-upgrade`` beside it (hidden, so that the lab
and ``compare`` do not take it for a run of the folder)."""


def upgrade_path(path: str | Path) -> list[str]:
    """Upgrade the run at ``path``, or every run in the folder ``path`` (a comparison: its ``runs/``); one line per
    run saying what changed. A RunDirError in one line when ``path`` holds no run."""
    path = Path(path)
    if (path / STATE).is_file() or (path / CONFIG).is_file():
        return [upgrade_run(path)]
    holder = path / "runs" if (path / "runs").is_dir() else path
    found = holder.iterdir() if holder.is_dir() else ()
    runs = sorted(p for p in found if p.is_dir() and not p.name.startswith(".") and (p / STATE).is_file())
    if not runs:
        raise RunDirError(f"{path} is neither a run directory (no {STATE}) nor a folder of runs; nothing upgraded")
    return [upgrade_run(run) for run in runs]


def upgrade_run(run_dir: str | Path) -> str:
    """Rewrite one run directory in this version's format, after copying it to ``.<run name>.before-upgrade`` beside
    it; one line saying what changed (nothing is written, and no copy made, when nothing is old). Refused while a
    writer holds the run, or when the copy's place is taken."""
    from genenv_lab.config.spellings import upgrade_config_dict

    run_dir = Path(run_dir)
    _refuse_if_written(run_dir)
    lines, renamed = _upgraded_epochs(run_dir)
    config_path = run_dir / CONFIG
    config = _json_file(config_path) if config_path.is_file() else None
    new_config = upgrade_config_dict(config) if isinstance(config, dict) else config
    whole = [name for name in TABLES if whole_table(run_dir, name).is_file()]
    if not renamed and new_config == config and not whole:
        return f"{run_dir}: already in this version's format; nothing changed"
    backup = run_dir.with_name(f".{run_dir.name}{BACKUP_SUFFIX}")
    if backup.exists():
        raise RunDirError(f"{backup} exists (an earlier upgrade's copy?); move it away first, nothing was changed")
    shutil.copytree(run_dir, backup, symlinks=True)
    if renamed:
        atomic_write_bytes(run_dir / EPOCHS, "".join(line + "\n" for line in lines).encode())
    if new_config != config:
        atomic_write_json(config_path, new_config)
    for name in whole:
        _split_table(run_dir, name)
    what = [f"{renamed} epoch record(s) rewritten in current keys"] if renamed else []
    what += ["config.json's moved fields"] if new_config != config else []
    what += [f"{name}.parquet split per epoch" for name in whole]
    return f"{run_dir}: upgraded ({', '.join(what)}); the run as it was is in {backup}"


def _split_table(run_dir: Path, name: str) -> None:
    """A whole-run table written as one file, into one file per epoch (the layout every reader reads); the whole
    file goes once every epoch's file is written."""
    import pandas as pd

    whole = whole_table(run_dir, name)
    frame = pd.read_parquet(whole)
    folder = run_dir / name
    folder.mkdir(exist_ok=True)
    for epoch, part in frame.groupby("epoch"):
        atomic_write_parquet(folder / f"epoch_{int(epoch):03d}.parquet", part.reset_index(drop=True))
    whole.unlink()


def _refuse_if_written(run_dir: Path) -> None:
    import fcntl
    import os

    if not (run_dir / LOCK).is_file():
        return
    fd = os.open(run_dir / LOCK, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise RunDirError(f"{run_dir} is being written by a run; stop it before upgrading") from None
    finally:
        os.close(fd)


def _json_file(path: Path) -> Any:
    try:
        return loads_json(read_regular(path, 4 * MB, path.name))
    except ValueError as exc:
        raise RunDirError(f"{path} cannot be read ({exc}); nothing was changed") from None


def _upgraded_epochs(run_dir: Path) -> tuple[list[str], int]:
    """``epochs.jsonl``'s lines in current names (each checked as this version's record) and how many changed; a
    torn last line is dropped, as every reader drops it."""
    path = run_dir / EPOCHS
    if not path.is_file():
        return [], 0
    raw = read_regular(path, 256 * MB, EPOCHS).decode("utf-8", errors="strict").split("\n")
    raw = [line for line in raw if line.strip()]
    questions: dict[int, list[str]] | None = None  # the tasks tables are read only for a record that needs them
    out, changed = [], 0
    for i, line in enumerate(raw, 1):
        try:
            record = loads_json(line)
        except ValueError:
            if i == len(raw):
                changed += 1  # a torn last line: dropped
                continue
            raise RunDirError(f"{path}:{i} is not valid JSON; nothing was changed") from None
        new = current_names(record) if isinstance(record, dict) else record
        if lacks_backfilled(new):
            questions = _valid_questions(run_dir) if questions is None else questions
            new = backfilled(new, questions)
        try:
            checked = EpochRecord.from_dict(new).to_dict()
        except ValueError as exc:
            raise RunDirError(f"{path}:{i} cannot be upgraded ({exc}); nothing was changed") from None
        changed += new != record
        out.append(json.dumps(jsonable(checked), allow_nan=False))
    return out, changed


def backfilled(record: Mapping[str, Any], questions: Mapping[int, list[str]]) -> dict[str, Any]:
    """``record`` with the keys of :data:`BACKFILLED` it lacks, computed from ``questions`` (its epoch's valid
    tasks' questions; none: NaN, as a new run writes for an epoch without generated tasks). A record that has them,
    or is not a record this module can read, comes back equal.

    >>> backfilled({"epoch": 2, "extra": {}}, {2: ["Count from 1 to 5.", "Count from 2 to 6."]})
    {'epoch': 2, 'extra': {'diversity/entropy': 1.0}}
    """
    if not lacks_backfilled(record):
        return dict(record)
    entropy = entropy_bits(questions.get(record["epoch"], []))
    return {**record, "extra": {**record["extra"], DIVERSITY_ENTROPY: entropy}}


def lacks_backfilled(record: Any) -> bool:
    """Whether ``record`` is an epoch record (an object with an integer ``epoch`` and an ``extra`` object) missing a
    key of :data:`BACKFILLED`."""
    return (isinstance(record, dict) and isinstance(record.get("epoch"), int) and isinstance(record.get("extra"), dict)
            and not all(k in record["extra"] for k in BACKFILLED))


def _valid_questions(run_dir: Path) -> dict[int, list[str]]:
    """The questions of each epoch's valid generated tasks, from the tasks table in either layout (one file, or one
    per epoch); a table that cannot be read is a RunDirError in one line, and nothing is changed."""
    import pyarrow as pa

    from genenv_lab.rundir.read import WHOLE_TABLE_SCALE, read_budgeted

    whole = whole_table(run_dir, TASKS)
    paths = [(whole, WHOLE_TABLE_SCALE)] if whole.is_file() else [(p, 1) for _, p in table_files(run_dir, TASKS)]
    out: dict[int, list[str]] = {}
    for path, scale in paths:
        try:
            frame = read_budgeted(path, scale).select(["epoch", "valid", "question"]).to_pandas()
        except (OSError, KeyError, pa.ArrowException) as exc:  # a damaged file, or one without those columns
            raise RunDirError(f"{path} cannot be read ({type(exc).__name__}); nothing was changed") from None
        for epoch, question in frame.loc[frame["valid"].astype(bool), ["epoch", "question"]].itertuples(index=False):
            out.setdefault(int(epoch), []).append(question)
    return out
