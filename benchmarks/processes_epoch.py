"""Wall time of an epoch, phase by phase, with 1 and with N data-parallel processes (torchrun, gloo on CPU).

    python benchmarks/processes_epoch.py --preset tiny --epochs 4
    python benchmarks/processes_epoch.py --preset cpu-smollm2 --epochs 2

Each job is launched as a user launches it (``torchrun --nproc_per_node N -m genenv_lab.cli run ...``) into a
scratch folder; the figures are read back from its ``epochs.jsonl`` (``phase_s``, ``wall_s``: the main process's
clock; the phases end in collective operations, so every process leaves a phase together). torchrun gives each of
N > 1 processes one OpenMP thread, so on a machine with C cores the comparison is 1 process × C threads against
N processes × 1 thread. Printed: per phase the mean seconds over the epochs after the first (the first holds
one-off warm-up) and the first epoch's, and the whole job's wall time including start-up.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PHASES = ("generate", "rollouts", "agent_update", "env_update", "reference", "logging")


def launch(n: int, preset: str, epochs: int, out: Path) -> float:
    script = Path(sys.executable).parent / "torchrun"
    runner = [str(script)] if script.is_file() else [sys.executable, "-m", "torch.distributed.run"]
    cmd = runner + ["--nproc_per_node", str(n), "-m", "genenv_lab.cli", "run", "--preset", preset,
                    "--loop.epochs", str(epochs), "--out", str(out)]
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"{n}-process job failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    return time.perf_counter() - start


def phase_means(records: list[dict]) -> dict[str, float]:
    later = records[1:] or records
    out = {p: sum(r["phase_s"].get(p, 0.0) for r in later) / len(later) for p in PHASES}
    out["epoch"] = sum(r["wall_s"] + r["phase_s"].get("logging", 0.0) for r in later) / len(later)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="tiny")
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--processes", type=int, nargs="+", default=[1, 2])
    args = ap.parse_args()
    rows = {}
    with tempfile.TemporaryDirectory(prefix="genenv-processes-") as tmp:
        for n in args.processes:
            out = Path(tmp) / f"n{n}"
            job_s = launch(n, args.preset, args.epochs, out)
            records = [json.loads(line) for line in (out / "epochs.jsonl").read_text().splitlines()]
            first = records[0]
            rows[n] = (phase_means(records), first["wall_s"] + first["phase_s"].get("logging", 0.0), job_s,
                       [r["p_hat_mean"] for r in records])
    label = "epochs 2+" if args.epochs > 1 else "epoch 1"
    print(f"preset {args.preset}, {args.epochs} epochs: mean seconds per phase ({label}), main process's clock")
    print(f"{'processes':>9} " + " ".join(f"{p:>12}" for p in (*PHASES, "epoch")) +
          f" {'epoch 1':>8} {'job wall':>9}")
    for n, (means, first_s, job_s, _) in rows.items():
        print(f"{n:>9} " + " ".join(f"{means[p]:>12.2f}" for p in (*PHASES, "epoch")) +
              f" {first_s:>8.1f} {job_s:>9.1f}")
    for n, (*_, p_hats) in rows.items():
        print(f"p̂ mean per epoch, {n} process(es): " + ", ".join("n/a" if p is None else f"{p:.2f}" for p in p_hats))


if __name__ == "__main__":
    main()
