"""Reading a run directory back, bounded and typed: its state, config, epoch records, baseline and tables (each
table file within a row and decoded-size budget). Every reader raises :class:`~genenv_lab.rundir.layout.RunDirError` in
one sentence for what it cannot read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Collection, Sequence

import pandas as pd

from genenv_lab.config import RunConfig, load_config
from genenv_lab.rundir.metrics import current_names
from genenv_lab.rundir.layout import (BASELINE, CONFIG, EPOCHS, STATE, TABLES, RunDirError, legacy_table, state_count,
    table_files)
from genenv_lab.safe_io import MB, loads_json, read_regular, read_text

BASELINE_PREFIXES = ("eval/", "heldout/")
"""The keys ``baseline.json`` holds: held-out scores (``eval/*``) and what the same evaluation read off them
(``heldout/frontier_level``)."""


def read_baseline(run_dir: str | Path, prefixes: tuple[str, ...] = ("eval/",)) -> dict[str, float]:
    """The ``eval/*`` scores of ``baseline.json`` (the keys starting with one of ``prefixes``), or {} when the run
    has none (evaluation off, or an older run)."""
    path = Path(run_dir) / BASELINE
    if not path.is_file():
        return {}
    try:  # bounded, and every JSON failure (syntax, nesting, digits past the limit) one line
        data = loads_json(read_regular(path, MB, BASELINE))
    except ValueError as exc:
        raise RunDirError(f"{path} is corrupt ({exc}); delete it to drop the epoch-0 point") from None
    if not isinstance(data, dict):
        raise RunDirError(f"{path} is not a JSON object; delete it to drop the epoch-0 point")
    return {k: v for k, v in data.items() if k.startswith(prefixes) and isinstance(v, (int, float))}


def read_state(run_dir: str | Path) -> dict[str, Any]:
    path = Path(run_dir) / STATE
    if not path.is_file():
        raise RunDirError(f"{run_dir} has no {STATE}: not a run directory or not started")
    try:  # a regular file of at most 1 MB (a state.json is ~200 bytes), every JSON failure one ValueError
        state = loads_json(read_regular(path, MB, STATE))
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


def read_config(run_dir: str | Path) -> RunConfig:
    """The run's configuration (:func:`genenv_lab.config.load_config` of its ``config.json``)."""
    return load_config(Path(run_dir) / CONFIG)


def read_epochs(run_dir: str | Path) -> list[dict[str, Any]]:
    """Records of ``epochs.jsonl``; a torn last line (a run killed mid-write) is skipped, any other bad line raises."""
    path = Path(run_dir) / EPOCHS
    if not path.is_file():
        return []
    try:
        text = read_text(path, EPOCHS, EPOCHS_LIMIT)
        lines = text.split("\n")  # JSON Lines ends a line at \n only (a JSON string may hold U+2028 raw)
    except ValueError as exc:  # not UTF-8, not a regular file, too large
        raise RunDirError(f"{path} cannot be read ({exc}); the run directory is corrupt") from None
    return consecutive(parse_epoch_lines(lines[:-1] if lines[-1] == "" else lines, path), path)


def consecutive(records: list[dict[str, Any]], path: Path) -> list[dict[str, Any]]:
    """``records`` if their epochs run 1, 2, 3, … (the writer appends one record per epoch, in order); else a
    :class:`RunDirError` naming the first out of place (a duplicated or missing epoch is a damaged file)."""
    for i, record in enumerate(records, 1):
        if record["epoch"] != i:
            raise RunDirError(f"{path}: record {i} is epoch {record['epoch']}, not {i} (epochs run 1, 2, 3, ... "
                              "once each); the run directory is corrupt")
    return records


EPOCHS_LIMIT = 256 * MB
"""The most ``epochs.jsonl`` may hold for any reader (about a million epochs)."""


def parse_epoch_lines(lines: Sequence[str], path: Path, first_line: int = 1,
                      last_may_be_torn: bool = True) -> list[dict[str, Any]]:
    """The epoch records of ``lines`` of ``path`` (line numbers from ``first_line``, for the messages): blank lines
    skipped; with ``last_may_be_torn`` an unparsable last line is skipped (a run killed mid-write), any other bad
    line a :class:`RunDirError`. Keys of runs written before 2026-12 come back under their current names
    (:func:`genenv_lab.rundir.metrics.current_names`)."""
    out = []
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        where = f"{path}:{first_line + i}"
        try:
            record = loads_json(line)
        except ValueError as exc:  # bad syntax, nesting past the stack, an integer past the digit limit
            if last_may_be_torn and i == len(lines) - 1:
                continue
            raise RunDirError(f"{where} is not valid JSON ({exc}); the run directory is corrupt") from None
        epoch = record.get("epoch") if isinstance(record, dict) else None
        if not isinstance(epoch, int) or isinstance(epoch, bool) or not 1 <= epoch <= 10**9:
            raise RunDirError(f"{where} is not an epoch record (a JSON object with a whole-number epoch); "
                              "the run directory is corrupt")
        out.append(current_names(record))
    return out


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
    whole = legacy_table(run_dir, name)  # reference_tasks, or a table of a run written before per-epoch files
    per_epoch = table_files(run_dir, name) if name in TABLES else []
    paths = [p for p in [whole] + [p for e, p in per_epoch if wanted is None or e in wanted] if p.is_file()]
    tables = [read_budgeted(p, WHOLE_TABLE_SCALE if p == whole else 1) for p in paths]
    if not tables:
        return pd.DataFrame()
    try:  # one conversion to pandas for all epochs: 2.5x faster than a DataFrame per file at 2,000 epochs
        frame = (pa.concat_tables(tables, promote_options="permissive") if len(tables) > 1 else tables[0]).to_pandas()
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):  # epochs whose column types disagree
        frame = pd.concat([t.to_pandas() for t in tables], ignore_index=True)
    if wanted is not None and whole.is_file() and "epoch" in frame:  # a whole-run table: keep the epochs asked for
        frame = frame[frame["epoch"].isin(wanted)].reset_index(drop=True)
    if name in ("tasks", "reference_tasks") and "features" in frame:
        frame["features"] = frame["features"].map(json.loads)
    return frame
