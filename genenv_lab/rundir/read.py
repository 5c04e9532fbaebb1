"""Reading a run directory back, bounded and typed: its state, config, epoch records, baseline and tables (each
table file within a row and decoded-size budget). Every reader raises :class:`~genenv_lab.rundir.layout.RunDirError` in
one sentence for what it cannot read."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Collection, Iterator, Sequence

import pandas as pd

from genenv_lab.config import RunConfig, load_config
from genenv_lab.rundir.layout import (BASELINE, CONFIG, EPOCHS, EPOCHS_LIMIT, JSON_LIMIT, STATE, TABLES, RunDirError,
    state_count, whole_table, table_files)
from genenv_lab.core.types import EpochRecord
from genenv_lab.safe_io import MB, UnsafeFile, loads_json, read_regular, read_regular_with_stat
from genenv_lab.core.metrics import EVAL

BASELINE_PREFIXES = (EVAL, "heldout/")
"""The keys ``baseline.json`` holds: held-out scores (``eval/*``) and what the same evaluation read off them
(``heldout/frontier_level``)."""


def read_baseline(run_dir: str | Path, prefixes: tuple[str, ...] = (EVAL,)) -> dict[str, float]:
    """The ``eval/*`` scores of ``baseline.json`` (the keys starting with one of ``prefixes``), or {} when the run
    has none (evaluation off, or an older run)."""
    path = Path(run_dir) / BASELINE
    if not path.is_file():
        return {}
    try:  # bounded, and every JSON failure (syntax, nesting, digits past the limit) one line
        data = loads_json(read_regular(path, JSON_LIMIT, BASELINE))
    except ValueError as exc:
        raise RunDirError(f"{path} is corrupt ({exc}); delete it to drop the epoch-0 point") from None
    if not isinstance(data, dict):
        raise RunDirError(f"{path} is not a JSON object; delete it to drop the epoch-0 point")
    return {k: v for k, v in data.items() if k.startswith(prefixes) and isinstance(v, (int, float))}


def read_state(run_dir: str | Path) -> dict[str, Any]:
    path = Path(run_dir) / STATE
    if not path.is_file():
        raise RunDirError(f"{run_dir} has no {STATE}: not a run directory or not started")
    try:  # a regular file within JSON_LIMIT (a state.json is ~200 bytes), every JSON failure one ValueError
        state = loads_json(read_regular(path, JSON_LIMIT, STATE))
    except ValueError as exc:
        raise RunDirError(f"{path} is corrupt ({exc})") from None
    if not isinstance(state, dict):
        raise RunDirError(f"{path} is corrupt (a JSON {type(state).__name__}, not an object)")
    return state


def committed_epochs(run_dir: str | Path) -> int:
    """How many epochs of the run are committed (``state.json``'s ``last_complete_epoch``): a whole number, or a
    RunDirError in one line when state.json is missing, corrupt or says ``2.9``, ``"4"``, ``true``."""
    state = read_state(run_dir)
    if state.get("last_complete_epoch") is None:
        raise RunDirError(f"{Path(run_dir) / STATE} does not say how many epochs are complete (no "
                          "last_complete_epoch)")
    return state_count(state, "last_complete_epoch", Path(run_dir))


def read_json_object(path: Path, problems: list[str], limit: int = JSON_LIMIT) -> dict[str, Any]:
    """The lab's lenient read of a run's ``config.json`` or ``state.json`` (or a comparison's manifest): the JSON
    object the file holds, or {} when it is absent, and {} with one line added to ``problems`` when it is unreadable,
    larger than ``limit``, or not an object (a FIFO, deep nesting, a 5000-digit number included)."""
    if not path.is_file():
        return {}
    try:
        data = loads_json(read_regular(path, limit, path.name))
    except (OSError, ValueError) as exc:
        problems.append(f"{path.name} is unreadable ({exc}).")
        return {}
    if not isinstance(data, dict):
        problems.append(f"{path.name} does not hold a JSON object.")
        return {}
    return data


def read_config(run_dir: str | Path) -> RunConfig:
    """The run's configuration (:func:`genenv_lab.config.load_config` of its ``config.json``), or a RunDirError in
    one line when the folder has none or it is not a configuration this version reads. The one reader of a run's
    ``config.json`` (the writer's resume, ``compare``'s reuse check, ``band_ceiling``, ``run --resume``); the lab
    reads it leniently through :func:`read_json_object`, to show what it can of any run."""
    from genenv_lab.config import ConfigError

    path = Path(run_dir) / CONFIG
    if not path.is_file():
        raise RunDirError(f"{run_dir} has no {CONFIG}: it is not a run directory")
    try:
        return load_config(path)
    except ConfigError as exc:
        raise RunDirError(f"{path} is not a configuration this version reads ({exc})") from None



@dataclass(frozen=True)
class EpochCursor:
    """Where a read of ``epochs.jsonl`` ended: the file (device, inode), the bytes of whole lines parsed, their BLAKE2b
    digest, how many lines they hold, and their records. A later read from it parses only what was appended, as long
    as the file is the same file and its first ``offset`` bytes have ``digest`` (else it reads the file afresh)."""

    device: int
    inode: int
    offset: int
    digest: bytes
    lines: int
    records: tuple[EpochRecord, ...]


@dataclass(frozen=True)
class Epochs:
    """The records of ``epochs.jsonl`` (iterate, index and count it as their tuple), the cursor a later read may
    continue from, and, read leniently, what was skipped (one line each)."""

    records: tuple[EpochRecord, ...] = ()
    cursor: EpochCursor | None = None
    problems: tuple[str, ...] = ()

    def __iter__(self) -> Iterator[EpochRecord]:
        return iter(self.records)

    def __len__(self) -> int:
        return len(self.records)

    def __getitem__(self, i):
        return self.records[i]


def read_epochs(run_dir: str | Path, *, lenient: bool = False, since: EpochCursor | None = None) -> Epochs:
    """The one reader of ``epochs.jsonl`` (``Epochs()`` when absent), each line checked as an
    :class:`~genenv_lab.core.types.EpochRecord` (:meth:`~genenv_lab.core.types.EpochRecord.from_dict`).

    - strict (the default): a torn last line (a run killed mid-write) is skipped; any other bad line, and epochs not
      running 1, 2, 3, ..., raise :class:`RunDirError` in one line;
    - ``lenient``: what cannot be read is skipped and said in ``problems`` (the lab shows a damaged run);
    - ``since``: a cursor of an earlier read of the same file; only the bytes appended after it are parsed (a live
      run's file re-read at every epoch). The result equals a read from scratch.

    Standard library only: no library keeps parsed state across appends to a JSON Lines file."""
    path = Path(run_dir) / EPOCHS
    if not path.is_file():
        return Epochs()
    try:
        info, data = read_regular_with_stat(path, EPOCHS_LIMIT, EPOCHS)
    except (UnsafeFile, OSError) as exc:
        if not lenient:
            raise RunDirError(f"{path} cannot be read ({exc}); the run directory is corrupt") from None
        return Epochs(problems=(f"{exc}",))
    hasher = hashlib.blake2b(memoryview(data)[:since.offset] if since else b"", digest_size=16)
    if not (since and (since.device, since.inode) == (info.st_dev, info.st_ino) and len(data) >= since.offset
            and hasher.digest() == since.digest):
        since, hasher = None, hashlib.blake2b(b"", digest_size=16)
    offset, first, kept = (since.offset, since.lines, since.records) if since else (0, 0, ())
    new = data[offset:]
    done = new.rfind(b"\n") + 1  # whole lines end here; what follows is a write in flight (or torn)
    try:
        whole = new[:done].decode("utf-8", errors="replace" if lenient else "strict").split("\n")[:-1]
        rest = new[done:].decode("utf-8", errors="replace" if lenient else "strict")
    except UnicodeDecodeError as exc:
        raise RunDirError(f"{path} is not UTF-8 text ({exc.reason}); the run directory is corrupt") from None
    problems: list[str] = []
    lines = whole + ([rest] if rest else [])
    parsed = _parse(lines, path, first + 1, lenient, problems)
    torn = bool(lines) and bool(lines[-1].strip()) and (len(lines) - 1) not in parsed
    whole_parsed = [parsed[i] for i in range(len(whole)) if i in parsed]
    if torn and not rest:  # a torn whole last line: not kept, read again (then an error) when more follows
        done -= len(whole[-1].encode("utf-8")) + 1
        whole = whole[:-1]
    records = kept + tuple(whole_parsed)
    end = offset + done
    hasher.update(memoryview(data)[offset:end])
    cursor = EpochCursor(info.st_dev, info.st_ino, end, hasher.digest(), first + len(whole), records)
    answer = records + ((parsed[len(whole)],) if rest and len(whole) in parsed else ())
    if lenient:
        answer = tuple(sorted({r.epoch: r for r in answer}.values(), key=lambda r: r.epoch))
        if len(answer) != len(records) + (1 if rest and len(whole) in parsed else 0):
            problems.append("epochs out of order or repeated in epochs.jsonl; each epoch's last record shown")
    else:
        _consecutive(answer, path)
    return Epochs(answer, cursor, tuple(problems))


def _parse(lines: Sequence[str], path: Path, first_line: int, lenient: bool,
           problems: list[str]) -> dict[int, EpochRecord]:
    """The records of ``lines`` by index (line numbers from ``first_line``, for the messages): blank lines skipped;
    an unparsable last line skipped (torn); any other bad line a :class:`RunDirError`, or, ``lenient``, a problem."""
    out: dict[int, EpochRecord] = {}
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        where = f"{path}:{first_line + i}"
        try:
            data = loads_json(line)
        except ValueError as exc:  # bad syntax, nesting past the stack, an integer past the digit limit
            if i == len(lines) - 1:
                continue
            why = f"{where} is not valid JSON ({exc})"
        else:
            why, record = _as_record(data, where)
            if record is not None:
                out[i] = record
                continue
        if not lenient:
            raise RunDirError(f"{why}; the run directory is corrupt")
        problems.append(f"{why}; skipped")
    return out


def _as_record(data: Any, where: str) -> tuple[str | None, EpochRecord | None]:
    """``(None, record)`` of one parsed line, or ``(why, None)``."""
    epoch = data.get("epoch") if isinstance(data, dict) else None
    if not isinstance(epoch, int) or isinstance(epoch, bool) or not 1 <= epoch <= 10**9:
        return f"{where} is not an epoch record (a JSON object with a whole-number epoch)", None
    try:
        return None, EpochRecord.from_dict(data)
    except ValueError as exc:
        return f"{where}: {exc}", None


def _consecutive(records: Sequence[EpochRecord], path: Path) -> None:
    """Nothing if the epochs of ``records`` run 1, 2, 3, … (the writer appends one record per epoch, in order); else
    a :class:`RunDirError` naming the first out of place (a duplicated or missing epoch is a damaged file)."""
    for i, record in enumerate(records, 1):
        if record.epoch != i:
            raise RunDirError(f"{path}: record {i} is epoch {record.epoch}, not {i} (epochs run 1, 2, 3, ... "
                              "once each); the run directory is corrupt")


TABLE_FILE_ROWS = 100_000
"""The most rows one per-epoch table file may hold (an epoch's attempts are its batch × G: a few thousand in every
preset)."""
TABLE_FILE_DECODED = 256 * MB
"""The most one per-epoch table file may decode to, as its own metadata states."""
WHOLE_TABLE_SCALE = 50
"""A whole-run table file (the single-file layout of older runs) may hold this many times the per-epoch budget."""


def read_budgeted(path: Path, scale: int = 1):
    """The pyarrow table in ``path``, refused when its metadata (read first, a few kB) states more than ``scale`` ×
    :data:`TABLE_FILE_ROWS` rows or ``scale`` × :data:`TABLE_FILE_DECODED` bytes decoded: a small file can hold a
    huge table (a 64 kB parquet of 200,000 rows), and nothing is decoded before this check. The file is opened once;
    a refusal is a :class:`RunDirError` with one sentence."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    rows, size = scale * TABLE_FILE_ROWS, scale * TABLE_FILE_DECODED
    name = f"{path.parent.name}/{path.name}"
    meta = pq.ParquetFile(path).metadata
    stated = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    if meta.num_rows > rows or stated > size:
        raise RunDirError(f"{name} holds {meta.num_rows:,} rows ({stated / MB:.0f} MB stated in its metadata), "
                          f"above the budget of {rows:,} rows and {size // MB} MB per table file; not read")
    # Text columns are read dictionary-encoded (as they are stored: the dictionary once, an index per row), so the
    # size they would decode to is measured before anything is expanded: a 270 kB file of one 10 kB string repeated
    # 100,000 times states 1 MB in its metadata and decodes to 1 GB.
    schema = pq.read_schema(path)
    texts = [f.name for f in schema if pa.types.is_string(f.type) or pa.types.is_binary(f.type)
             or pa.types.is_large_string(f.type)]
    table = pq.ParquetFile(path, read_dictionary=texts).read()
    decoded = 0
    for column in table.columns:
        for chunk in column.chunks:
            if pa.types.is_dictionary(chunk.type):
                lengths = pc.binary_length(chunk.dictionary)
                decoded += int(pc.sum(pc.take(lengths, chunk.indices)).as_py() or 0) + chunk.indices.nbytes
            else:
                decoded += chunk.nbytes
    if decoded > size:
        raise RunDirError(f"{name} holds {meta.num_rows:,} rows that decode to {decoded / MB:.0f} MB, above the "
                          f"budget of {size // MB} MB per table file; not read")
    return table.cast(schema) if texts else table


def read_table(run_dir: str | Path, name: str, epochs: Collection[int] | None = None) -> pd.DataFrame:
    """``tasks``, ``attempts`` (every epoch file, in epoch order, as one frame; with ``epochs``, only those epochs'
    rows) or ``reference_tasks`` as a DataFrame (empty when absent). The one reader of the run tables: the loop's
    resume, the lab and the tools; each file is checked against its row and size budget before it is decoded
    (:func:`read_budgeted`)."""
    import pyarrow as pa

    wanted = None if epochs is None else set(epochs)
    whole = whole_table(run_dir, name)
    if name in TABLES and whole.is_file():
        raise RunDirError(f"{whole} is a table of a run written before per-epoch table files; run "
                          "`genenv-lab upgrade RUN_DIR` on the run first")
    per_epoch = table_files(run_dir, name) if name in TABLES else []
    paths = [p for p in [whole] + [p for e, p in per_epoch if wanted is None or e in wanted] if p.is_file()]
    tables = [read_budgeted(p, WHOLE_TABLE_SCALE if p == whole else 1) for p in paths]
    if not tables:
        return pd.DataFrame()
    try:  # one conversion to pandas for all epochs: 2.5x faster than a DataFrame per file at 2,000 epochs
        frame = (pa.concat_tables(tables, promote_options="permissive") if len(tables) > 1 else tables[0]).to_pandas()
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):  # epochs whose column types disagree
        frame = pd.concat([t.to_pandas() for t in tables], ignore_index=True)
    if name in ("tasks", "reference_tasks") and "features" in frame:
        frame["features"] = frame["features"].map(json.loads)
    return frame
