"""What one runs-list refresh costs while a run with a long ``epochs.jsonl`` is being written.

    python benchmarks/live_refresh.py                      # 40,000 epochs of 61 keys each: about 60 MB
    python benchmarks/live_refresh.py --epochs 5000 --runs 18

Writes ``--runs`` live runs (``state.json`` says ``running``) of ``--epochs`` records into a temporary folder, lists
them once with ``lab.runs.discover_runs`` (every file parsed), then appends one epoch to every run and times the
refresh that follows, ``--repeats`` times (min / median / max); last, it times ``runread.read_epochs`` of one whole
file, what every refresh cost before the lab kept what it had parsed (``genenv_lab/lab/tailing.py``). A measurement
for the docs and closing notes, not a test.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from genenv_lab.lab.runs import discover_runs
from genenv_lab.rundir.read import read_epochs


def _state(run: Path, epochs: int) -> None:
    (run / "state.json").write_text(json.dumps({"status": "running", "last_complete_epoch": epochs, "pid": 0}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=40_000)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    record = {"epoch": 0, **{f"extra/key_{i}": 0.123456 for i in range(60)}}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "runs"
        runs = [root / f"live{k}" for k in range(args.runs)]
        for run in runs:
            run.mkdir(parents=True)
            with (run / "epochs.jsonl").open("w") as f:
                for epoch in range(1, args.epochs + 1):
                    f.write(json.dumps(record | {"epoch": epoch}) + "\n")
            _state(run, args.epochs)
        size = (runs[0] / "epochs.jsonl").stat().st_size / 2**20
        start = time.perf_counter()
        discover_runs(root)
        print(f"{args.runs} run(s) of {args.epochs:,} epochs ({size:.0f} MB each): first list "
              f"{time.perf_counter() - start:.2f} s")
        times = []
        for k in range(args.repeats):
            epoch = args.epochs + 1 + k
            for run in runs:
                with (run / "epochs.jsonl").open("a") as f:
                    f.write(json.dumps(record | {"epoch": epoch}) + "\n")
                _state(run, epoch)
            start = time.perf_counter()
            listed = discover_runs(root)
            times.append(time.perf_counter() - start)
            assert all(s.epochs_done == epoch for s in listed)
        print(f"refresh after one epoch per run: min {min(times):.3f} s, median {statistics.median(times):.3f} s, "
              f"max {max(times):.3f} s")
        start = time.perf_counter()
        read_epochs(runs[0])
        print(f"one file parsed whole (each live run's cost per refresh before): {time.perf_counter() - start:.2f} s")


if __name__ == "__main__":
    main()
