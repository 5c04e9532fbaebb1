"""How long the lab takes to read and draw a long run: a run of N epochs made from copies of one real epoch.

    python benchmarks/long_run_load.py runs/demo/runs/cpu-demo_genenv-s0 --epochs 2000
    python benchmarks/long_run_load.py RUN --epochs 10000 --views   # also the Curriculum tab's three figures

Copies RUN's config, state and first epoch record, and its ``tasks/`` and ``attempts/`` files of epoch 1 as epochs
1..N, into a temporary folder; then times ``lab.runs.load_run`` (every table read through ``runlog.read_table``)
and, with ``--views``, the glance figure, the difficulty histogram and the per-epoch curves, ``--repeats`` times
each (min / median / max). A measurement for the docs and closing notes, not a test: on this project's 2-core
machine 2,000 epochs took 18.5 s to load before the tables were joined in one arrow conversion, 8.9 s after.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from genenv_lab.lab.glance import glance_figure
from genenv_lab.lab.runs import load_run, with_attempts
from genenv_lab.lab.figures import curves_figure, difficulty_figure
from genenv_lab.rundir.layout import ATTEMPTS, CONFIG, EPOCHS, STATE, TASKS, table_files


def make_long_run(source: Path, out: Path, epochs: int, rows: int = 1) -> Path:
    """``out``: ``source``'s first epoch repeated ``epochs`` times (records renumbered, table files copied; with
    ``rows`` > 1 each epoch's tables hold their rows that many times over, a run of larger batches)."""
    out.mkdir(parents=True)
    for name in (CONFIG, STATE):
        shutil.copy2(source / name, out / name)
    state = json.loads((out / STATE).read_text())
    state.update(last_complete_epoch=epochs, status="finished")
    (out / STATE).write_text(json.dumps(state))
    first = json.loads((source / EPOCHS).read_text().splitlines()[0])
    (out / EPOCHS).write_text("".join(json.dumps(first | {"epoch": e}) + "\n" for e in range(1, epochs + 1)))
    for table in (TASKS, ATTEMPTS):
        files = table_files(source, table)
        if not files:
            raise SystemExit(f"{source} has no per-epoch {table}/ files to copy")
        (out / table).mkdir()
        first = files[0][1]
        if rows > 1:
            import pyarrow as pa
            import pyarrow.parquet as pq

            first = out / table / ".first.parquet"
            pq.write_table(pa.concat_tables([pq.read_table(files[0][1])] * rows), first)
        for epoch in range(1, epochs + 1):
            shutil.copyfile(first, out / table / f"epoch_{epoch:03d}.parquet")
        if rows > 1:
            first.unlink()
    return out


def timed(fn, repeats: int) -> str:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return f"{min(times):.2f} / {statistics.median(times):.2f} / {max(times):.2f} s"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", type=Path, help="a run directory with at least one committed epoch")
    ap.add_argument("--epochs", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--views", action="store_true", help="also time the Curriculum tab's three figures")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="genenv-long-") as tmp:
        run_dir = make_long_run(args.run, Path(tmp) / "long", args.epochs)
        print(f"{args.epochs} epochs from {args.run} (min / median / max of {args.repeats})")
        print(f"  load_run            {timed(lambda: load_run(run_dir, attempts=False), args.repeats)}  (as the lab's "
              "view reads it)")
        print(f"  + attempts          {timed(lambda: with_attempts(load_run(run_dir, attempts=False)), args.repeats)}"
              "  (when a task is picked)")
        if args.views:
            run = load_run(run_dir, attempts=False)
            for name, draw in (("glance figure", lambda: glance_figure(run)),
                               ("difficulty figure", lambda: difficulty_figure(run)),
                               ("curves figure", lambda: curves_figure([run]))):
                print(f"  {name:19s} {timed(draw, args.repeats)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
