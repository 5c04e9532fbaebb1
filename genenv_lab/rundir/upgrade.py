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
  ``diversity/*`` of each epoch (:data:`BACKFILLED`: the entropy of its valid tasks, the niches written so far), from
  the tasks tables;
- ``config.json``: the fields that moved section (``loop.eval_*`` → ``eval.*``, ``model.world_*`` → ``world.*``;
  :func:`genenv_lab.config.spellings.upgrade_config_dict`).

A folder holding runs (a comparison's ``runs/``, or the comparison folder itself) upgrades each run in it. An
upgrade is all or nothing (:func:`upgrade_run`): everything is read and checked before the first write, a folder that
does not read as a genenv run is refused, no field is dropped, and a rerun finishes an upgrade that was cut short.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from genenv_lab.core.diversity import entropy_bits
from genenv_lab.core.metrics import DIVERSITY_ENTROPY, DIVERSITY_NICHES, DIVERSITY_TOP_SHARE
from genenv_lab.core.types import EpochRecord, jsonable
from genenv_lab.rundir.layout import (CONFIG, EPOCHS, EPOCHS_LIMIT, LOCK, STATE, TABLES, TASKS, RunDirError,
    atomic_write_bytes, atomic_write_json, atomic_write_parquet, table_files, whole_table)
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

BACKFILLED = (DIVERSITY_ENTROPY, DIVERSITY_NICHES, DIVERSITY_TOP_SHARE)
"""Keys every record has held since 2026-12-06 (the niches since 12-07), computed for an older record from the tasks
tables."""

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
    run saying what changed. A RunDirError in one line when ``path`` holds no run; when some run of the folder could
    not be upgraded, the others are, and the RunDirError holds every run's line, the errors among them."""
    path = Path(path)
    if (path / STATE).is_file() or (path / CONFIG).is_file():
        return [upgrade_run(path)]
    holder = path / "runs" if (path / "runs").is_dir() else path
    found = holder.iterdir() if holder.is_dir() else ()
    runs = sorted(p for p in found if p.is_dir() and not p.name.startswith(".") and (p / STATE).is_file())
    if not runs:
        raise RunDirError(f"{path} is neither a run directory (no {STATE}) nor a folder of runs; nothing upgraded")
    lines, failed = [], 0
    for run in runs:  # one run that cannot be upgraded (a live one, another project's) stops none of the others
        try:
            lines.append(upgrade_run(run))
        except (RunDirError, OSError) as exc:
            failed += 1
            lines.append(f"{run}: error: {exc}")
    if failed:
        raise RunDirError("\n".join(lines))
    return lines


UPGRADING = ".upgrade-in-progress"
"""The marker an upgrade leaves in the run while it works, holding its phase: :data:`COPYING` while the copy is made
(a rerun drops the copy and starts again: the run was not touched), then :data:`WRITING` (the copy is whole; a rerun
puts the run back as the copy holds it and upgrades it again)."""
COPYING, WRITING = "copying", "writing"


def upgrade_run(run_dir: str | Path) -> str:
    """Rewrite one run directory in this version's format, all or nothing: every file it rewrites is read and
    checked first (the records, ``config.json``, which must read as a genenv run's configuration, and each whole
    table), then the folder is copied to ``.<run name>.before-upgrade`` beside it, :data:`UPGRADING` is written, the
    files are rewritten and the marker goes. An upgrade that failed or was killed part-way is finished by the rerun:
    it puts the run back from the copy, then upgrades it. One line saying what changed (nothing is written, and no
    copy made, when nothing is old). Refused while a writer holds the run, or when the copy's place is taken by an
    earlier, finished upgrade's copy."""
    run_dir = Path(run_dir)
    _refuse_if_written(run_dir)
    backup = run_dir.with_name(f".{run_dir.name}{BACKUP_SUFFIX}")
    partial = backup.with_name(backup.name + ".partial")
    marker = run_dir / UPGRADING
    phase = marker.read_text().strip() if marker.is_file() else ""
    if phase == COPYING:  # cut short while copying: the run was never touched, and the copy is this upgrade's
        for leftover in (partial, backup):
            if leftover.exists():
                shutil.rmtree(leftover)
        marker.unlink()
    elif phase:
        if not backup.is_dir():
            raise RunDirError(f"{run_dir} holds {UPGRADING} (an upgrade was cut short) but its copy {backup} is gone; "
                              "restore the run from your own copy, then remove that file")
        _restore(run_dir, backup)
    resumed = bool(phase) and phase != COPYING
    plan = _plan(run_dir)
    if not plan.what:
        if resumed:
            marker.unlink()
            return f"{run_dir}: an interrupted upgrade put back from {backup}; already in this version's format"
        return f"{run_dir}: already in this version's format; nothing changed"
    if not resumed:
        if backup.exists():
            raise RunDirError(f"{backup} exists (an earlier upgrade's copy?); move it away first, nothing was "
                              "changed")
        if partial.exists():  # a copy cut short by a kill, before this marker existed: the run was never touched
            shutil.rmtree(partial)
        atomic_write_bytes(marker, f"{COPYING}\n".encode())
        shutil.copytree(run_dir, partial, symlinks=True, ignore=shutil.ignore_patterns(UPGRADING))
        os.rename(partial, backup)
        atomic_write_bytes(marker, f"{WRITING}\n".encode())
    if plan.lines is not None:
        atomic_write_bytes(run_dir / EPOCHS, "".join(line + "\n" for line in plan.lines).encode())
    if plan.config is not None:
        atomic_write_json(run_dir / CONFIG, plan.config)
    for name, frame in plan.tables.items():
        _split_table(run_dir, name, frame)
    marker.unlink()
    return f"{run_dir}: upgraded ({', '.join(plan.what)}); the run as it was is in {backup}"


@dataclass
class _Plan:
    """What an upgrade will write, read and checked before anything is: ``epochs.jsonl``'s new lines, the new
    ``config.json`` (None: either unchanged), the whole tables to split, and what it says it did."""

    lines: list[str] | None
    config: dict | None
    tables: dict[str, Any]
    what: list[str]


def _plan(run_dir: Path) -> _Plan:
    """Read and check everything an upgrade of ``run_dir`` rewrites; a RunDirError in one line (nothing changed)
    when the folder does not read as a genenv run, or a file it must rewrite cannot be read."""
    import pandas as pd

    from genenv_lab.config import ConfigError, RunConfig
    from genenv_lab.config.spellings import upgrade_config_dict

    config_path = run_dir / CONFIG
    if not config_path.is_file():
        raise RunDirError(f"{run_dir} does not read as a genenv run (no {CONFIG}); nothing was changed")
    config = _json_file(config_path)
    try:
        new_config = upgrade_config_dict(config) if isinstance(config, dict) else config
        RunConfig.from_dict(new_config)
    except (ConfigError, TypeError) as exc:
        raise RunDirError(f"{run_dir} does not read as a genenv run ({CONFIG}: {exc}); nothing was changed") \
            from None
    lines, renamed = _upgraded_epochs(run_dir, RunConfig.from_dict(new_config).loop.domain)
    tables = {}
    for name in TABLES:
        whole = whole_table(run_dir, name)
        if whole.is_file():
            try:
                frame = pd.read_parquet(whole)
                frame["epoch"].astype(int)
            except Exception as exc:  # noqa: BLE001 - a damaged table, or one with no epoch column
                raise RunDirError(f"{whole} cannot be read ({type(exc).__name__}); nothing was changed") from None
            tables[name] = frame
    what = [f"{renamed} epoch record(s) rewritten in current keys"] if renamed else []
    what += ["config.json's moved fields"] if new_config != config else []
    what += [f"{name}.parquet split per epoch" for name in tables]
    return _Plan(lines if renamed else None, new_config if new_config != config else None, tables, what)


def _restore(run_dir: Path, backup: Path) -> None:
    """Put ``run_dir`` back as ``backup`` holds it (what an interrupted upgrade wrote goes, every file of the copy
    comes back), keeping :data:`UPGRADING` until the upgrade finishes: a kill here is repeated by the rerun."""
    for path in sorted(run_dir.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        rel = path.relative_to(run_dir)
        if rel.parts[0] == UPGRADING or (backup / rel).exists() or (backup / rel).is_symlink():
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    shutil.copytree(backup, run_dir, symlinks=True, dirs_exist_ok=True)


def _split_table(run_dir: Path, name: str, frame) -> None:
    """A whole-run table written as one file (already read: ``frame``), into one file per epoch (the layout every
    reader reads); the whole file goes once every epoch's file is written."""
    folder = run_dir / name
    folder.mkdir(exist_ok=True)
    for epoch, part in frame.groupby("epoch"):
        atomic_write_parquet(folder / f"epoch_{int(epoch):03d}.parquet", part.reset_index(drop=True))
    whole_table(run_dir, name).unlink()


def _refuse_if_written(run_dir: Path) -> None:
    import fcntl

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


def _upgraded_epochs(run_dir: Path, domain: str) -> tuple[list[str], int]:
    """``epochs.jsonl``'s lines in current names, with the keys of :data:`BACKFILLED` computed from the tasks
    tables of the run's ``domain`` where they lack them (each checked as this version's record), and how many
    changed; a torn last line is dropped, as every reader drops it."""
    path = run_dir / EPOCHS
    if not path.is_file():
        return [], 0
    raw = read_regular(path, EPOCHS_LIMIT, EPOCHS).decode("utf-8", errors="strict").split("\n")
    raw = [line for line in raw if line.strip()]
    readings: dict[int, dict[str, float]] | None = None  # the tasks tables are read only for a record needing them
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
            readings = _backfill_readings(run_dir, domain) if readings is None else readings
            new = backfilled(new, readings)
        try:
            checked = EpochRecord.from_dict(new).to_dict()
        except ValueError as exc:
            raise RunDirError(f"{path}:{i} cannot be upgraded ({exc}); nothing was changed") from None
        changed += new != record
        out.append(json.dumps(jsonable(checked), allow_nan=False))
    return out, changed


def backfilled(record: Mapping[str, Any], readings: Mapping[int, Mapping[str, float]]) -> dict[str, Any]:
    """``record`` with the keys of :data:`BACKFILLED` it lacks, from ``readings`` (its epoch's, computed from the
    tasks tables: :func:`_backfill_readings`; an epoch without generated tasks: NaN entropy and the run's niches so
    far, as a new run writes). A record that has them, or is not a record this module can read, comes back equal.

    >>> backfilled({"epoch": 2, "extra": {}}, {2: {"diversity/entropy": 1.0, "diversity/niches": 2}})
    {'epoch': 2, 'extra': {'diversity/entropy': 1.0, 'diversity/niches': 2}}
    """
    if not lacks_backfilled(record):
        return dict(record)
    found = readings.get(record["epoch"])
    if found is None:  # an epoch after the last that wrote tasks: the run's niches so far, no entropy
        earlier = [e for e in readings if e < record["epoch"]]
        found = {**(readings[max(earlier)] if earlier else {DIVERSITY_NICHES: 0, DIVERSITY_TOP_SHARE: math.nan}),
                 DIVERSITY_ENTROPY: math.nan}
    return {**record, "extra": {**record["extra"], **{k: v for k, v in found.items() if k not in record["extra"]}}}


def lacks_backfilled(record: Any) -> bool:
    """Whether ``record`` is an epoch record (an object with an integer ``epoch`` and an ``extra`` object) missing a
    key of :data:`BACKFILLED`."""
    return (isinstance(record, dict) and isinstance(record.get("epoch"), int) and isinstance(record.get("extra"), dict)
            and not all(k in record["extra"] for k in BACKFILLED))


def _backfill_readings(run_dir: Path, domain_name: str) -> dict[int, dict[str, float]]:
    """Each epoch's keys of :data:`BACKFILLED`, from the valid generated tasks of the tasks table in either layout
    (one file, or one per epoch): the entropy of the epoch's questions, and the niches (``Domain.niche``) written from
    epoch 1 to it; a table that cannot be read is a RunDirError in one line, and nothing is changed."""
    import pyarrow as pa

    from genenv_lab.core.niches import add_counts, top_share
    from genenv_lab.core.types import TaskSpec
    from genenv_lab.domains import get_domain
    from genenv_lab.rundir.read import WHOLE_TABLE_SCALE, read_budgeted

    try:
        domain = get_domain(domain_name)
    except Exception as exc:  # noqa: BLE001 - a domain module of the user's that cannot be imported here
        raise RunDirError(f"{run_dir}: its domain {domain_name!r} cannot be loaded ({exc}); nothing was changed") \
            from None
    whole = whole_table(run_dir, TASKS)
    paths = [(whole, WHOLE_TABLE_SCALE)] if whole.is_file() else [(p, 1) for _, p in table_files(run_dir, TASKS)]
    specs: dict[int, list[TaskSpec]] = {}
    for path, scale in paths:
        try:
            frame = read_budgeted(path, scale).select(["epoch", "valid", "question", "answer", "text", "features"]) \
                .to_pandas()
            for row in frame[frame["valid"].astype(bool)].itertuples(index=False):
                features = json.loads(row.features) if isinstance(row.features, str) else row.features
                specs.setdefault(int(row.epoch), []).append(
                    TaskSpec(row.question, row.answer, row.text, dict(features or {})))
        except (OSError, KeyError, TypeError, ValueError, pa.ArrowException) as exc:  # damaged, or columns missing
            raise RunDirError(f"{path} cannot be read ({type(exc).__name__}); nothing was changed") from None
    out: dict[int, dict[str, float]] = {}
    counts: dict[str, int] = {}
    for epoch in range(1, max(specs, default=0) + 1):
        tasks = specs.get(epoch, [])
        try:
            counts = add_counts(counts, [domain.niche(t) for t in tasks])
        except (KeyError, TypeError, ValueError) as exc:
            raise RunDirError(f"{run_dir}: a task of epoch {epoch} has no niche ({exc!r}); nothing was changed") \
                from None
        out[epoch] = {DIVERSITY_ENTROPY: entropy_bits(t.question for t in tasks), DIVERSITY_NICHES: len(counts),
                      DIVERSITY_TOP_SHARE: top_share(counts)}
    return out
