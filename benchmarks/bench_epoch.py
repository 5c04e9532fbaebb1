"""Benchmark one preset: wall time per phase, orchestration share, peak memory with two adapters vs one.

    python benchmarks/bench_epoch.py --preset tiny --epochs 3
    python benchmarks/bench_epoch.py --preset cpu-demo --epochs 2

Each configuration runs in a fresh child process (``--child``) so that its peak resident memory (ru_maxrss) is
its own. The first epoch of a process includes one-off costs (TRL/torch warm-up) and is reported separately.
Targets (issue 2): a cpu-demo epoch ≤ 60 s on 2 cores; orchestration (everything outside generate/forward/backward)
≤ 5 % of an epoch; peak memory of the two-adapter run ≤ 1.15 × the single-adapter run.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MODEL_PHASES = ("generate", "rollouts", "agent_update", "env_update")


def child(preset_name: str, epochs: int, single: bool, k_min: float | None) -> None:
    from genenv_lab.config import preset
    from genenv_lab.domains import get_domain
    from genenv_lab.backends.factory import make_backend
    from genenv_lab.coevolution.session import run

    cfg = preset(preset_name).replace(loop={"epochs": epochs}, model={"separate_adapters": not single})
    if k_min is not None:
        cfg = cfg.replace(curriculum={"k_min": k_min})
    start = time.perf_counter()
    backend = make_backend(cfg, get_domain(cfg.loop.domain))
    load_s = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as tmp:
        records = [r.to_dict() for r in run(cfg, Path(tmp) / "run", backend=backend, progress=False)]
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"load_s": load_s, "records": records, "peak_mb": peak_mb}))


def summarise(records: list[dict]) -> dict:
    phases = {}
    for r in records:
        for k, v in r["phase_s"].items():
            phases.setdefault(k, []).append(v)
    wall = [r["wall_s"] + r["phase_s"].get("logging", 0.0) for r in records]
    model = [sum(r["phase_s"].get(p, 0.0) for p in MODEL_PHASES) for r in records]
    orchestration = [w - m for w, m in zip(wall, model)]
    return {"wall": wall, "phases": phases, "orchestration": orchestration}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="tiny")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--k-min", type=float, help="override the band half-width (0.5 sends every valid generation to "
                                                "the env update, to measure its cost when the band keeps nothing)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--single-adapter", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.preset, args.epochs, args.single_adapter, args.k_min)
        return
    results = {}
    for label, single in (("two adapters", False), ("one adapter", True)):
        cmd = [sys.executable, __file__, "--child", "--preset", args.preset, "--epochs", str(args.epochs)]
        if args.k_min is not None:
            cmd += ["--k-min", str(args.k_min)]
        proc = subprocess.run(cmd + (["--single-adapter"] if single else []), capture_output=True, text=True)
        if proc.returncode != 0:
            sys.exit(f"{label} run failed:\n{proc.stderr[-3000:]}")
        results[label] = json.loads(proc.stdout.strip().splitlines()[-1])
    two = results["two adapters"]
    s = summarise(two["records"])
    print(f"preset {args.preset}: {args.epochs} epochs, model load {two['load_s']:.1f} s")
    print(f"{'epoch':>5} {'wall s':>8} " + " ".join(f"{p:>13}" for p in (*MODEL_PHASES, "logging")) +
          f" {'orchestr. s':>12} {'orchestr. %':>12}")
    for i, r in enumerate(two["records"]):
        ph = r["phase_s"]
        print(f"{r['epoch']:>5} {s['wall'][i]:>8.2f} " + " ".join(f"{ph.get(p, 0.0):>13.2f}" for p in
              (*MODEL_PHASES, "logging")) + f" {s['orchestration'][i]:>12.3f} "
              f"{100 * s['orchestration'][i] / s['wall'][i]:>11.1f}%")
    steady = s["wall"][1:] or s["wall"]
    orch = s["orchestration"][1:] or s["orchestration"]
    print(f"steady-state epoch (epochs ≥ 2): {sum(steady) / len(steady):.2f} s; orchestration "
          f"{100 * sum(orch) / sum(steady):.1f}% (logging counted as orchestration)")
    one = results["one adapter"]
    ratio = two["peak_mb"] / one["peak_mb"]
    print(f"peak RSS: two adapters {two['peak_mb']:.0f} MB, one adapter {one['peak_mb']:.0f} MB, ratio {ratio:.3f} "
          f"(target ≤ 1.15)")


if __name__ == "__main__":
    main()
