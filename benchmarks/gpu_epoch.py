"""One short co-evolution run on a CUDA GPU: phase times per epoch and peak GPU memory, per engine.

    python benchmarks/gpu_epoch.py                                   # unsloth engine, tiny model built here
    python benchmarks/gpu_epoch.py --engine vllm --epochs 2          # hf training + vLLM generation
    python benchmarks/gpu_epoch.py --engine hf                       # the reference engine on the GPU
    python benchmarks/gpu_epoch.py --trainer high_entropy --epochs 1 # the agent's other trainer (agent.trainer)
    python benchmarks/gpu_epoch.py --preset colab-t4 --model /path/to/Qwen2.5-0.5B-Instruct --epochs 1
    python benchmarks/gpu_epoch.py --json out.json                   # also write the numbers as JSON
    python benchmarks/gpu_epoch.py --report a.json b.json            # the JSON files as docs/gpu.md's table
    GENENV_LAB_UNSLOTH_CPU=1 python benchmarks/gpu_epoch.py --allow-cpu   # dry run on CPU (scripts/gpu_check.sh)

Without ``--model`` the base is the project's tiny random Qwen2, built locally (no hub) with hidden size 256, so
4 heads of 64 dimensions (vLLM's GPU attention backends take head sizes from 32/64 up; the default tiny model has
16), format-warmed on the domain's seed texts. Its numbers measure the engines' fixed costs (start-up, adapter
swaps, trainer construction, vLLM LoRA loading), not a real model's throughput; pass ``--model`` (a local
directory: the GPU machines here reach no hub) with ``--preset colab-t4|colab-l4|a100`` for those.

Reported: model/engine load time, per epoch the loop's phases (generate, rollouts, agent_update, env_update) and
wall time, and the peak GPU memory: torch's peak allocated/reserved (vLLM inside the process allocates through
torch too) and the device's used memory seen by ``torch.cuda.mem_get_info`` after each epoch. ``--allow-cpu`` runs the
same code on CPU (float32, no memory figures): the dry run of ``scripts/gpu_check.sh``, so that on a GPU only what
needs CUDA is left to fail.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

PHASES = ("generate", "rollouts", "agent_update", "env_update")


def build_cfg(args):
    from genenv_lab.config import preset
    from genenv_lab.domains import get_domain
    from genenv_lab.models.tiny import build_tiny_model, chatml

    cfg = preset(args.preset)
    if args.model is None:
        corpus = [chatml(m, r) for m, r in get_domain(cfg.loop.domain).format_examples(cfg.curriculum.alpha)]
        out = Path(args.cache) / f"tiny-gpu-h{args.hidden}"
        model = str(build_tiny_model(out, seed=cfg.loop.seed, corpus=corpus, warmup_steps=args.warmup,
                                     hidden_size=args.hidden))
    else:
        model = args.model
    model_changes = {"name_or_path": model, "engine": args.engine}
    if args.preset == "tiny":  # the tiny preset is a CPU preset: give it GPU-sized engine settings
        import torch

        model_changes.update(dtype="bfloat16" if torch.cuda.is_available() else "float32", max_seq_length=512,
                             gpu_memory_utilization=args.gpu_memory_utilization, lora_r=8, lora_alpha=16)
    if args.four_bit is not None:
        model_changes["load_in_4bit"] = args.four_bit
    return cfg.replace(model=model_changes, loop={"epochs": args.epochs}, agent={"trainer": args.trainer})


def make(cfg):
    """The backend of ``cfg.model.engine``, as a run builds it (the factory imports Unsloth first)."""
    from genenv_lab.backends.factory import make_backend
    from genenv_lab.domains import domain_of

    return make_backend(cfg, domain_of(cfg))


def used_gib() -> float | None:
    """The device's used memory (GiB), ``None`` without CUDA."""
    import torch

    if not torch.cuda.is_available():
        return None
    free, total = torch.cuda.mem_get_info()
    return round((total - free) / 2**30, 2)


def report(paths: list[str]) -> str:
    """The measurements of ``gpu_epoch.py --json`` files as the markdown table docs/gpu.md keeps."""
    lines = ["| engine | GPU | model | load s | epoch wall s | generate | rollouts | agent update | env update | "
             "peak allocated GiB | device used GiB |", "|" + "---|" * 11]
    for path in paths:
        r = json.loads(Path(path).read_text())
        for e in r["epochs"]:
            ph = e["phase_s"]
            engine = r["engine"] if r.get("trainer", "grpo") == "grpo" else f"{r['engine']} ({r['trainer']})"
            lines.append(f"| {engine} | {r['gpu']} | {Path(r['model']).name} | {r['load_s']} | "
                         f"{e['wall_s']} (epoch {e['epoch']}) | " + " | ".join(str(ph.get(p, 0.0)) for p in PHASES)
                         + f" | {r['peak_allocated_gib']} | {r['peak_used_gib']} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--engine", choices=("unsloth", "vllm", "hf"), default="unsloth")
    ap.add_argument("--preset", default="tiny", help="tiny (default) or a GPU preset: colab-t4, colab-l4, a100")
    ap.add_argument("--model", default=None, help="local model directory (default: tiny model built here)")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--trainer", default="grpo", help="the agent's trainer (agent.trainer): grpo or high_entropy")
    ap.add_argument("--hidden", type=int, default=256, help="tiny model hidden size (4 heads)")
    ap.add_argument("--warmup", type=int, default=300, help="tiny model format warm-up steps")
    ap.add_argument("--gpu-memory-utilization", type=float, default=0.3)
    ap.add_argument("--four-bit", dest="four_bit", action="store_true", default=None)
    ap.add_argument("--sixteen-bit", dest="four_bit", action="store_false")
    ap.add_argument("--cache", default=os.environ.get("GENENV_LAB_CACHE", tempfile.gettempdir()))
    ap.add_argument("--json", default=None, help="write the measurements to this file too")
    ap.add_argument("--allow-cpu", action="store_true", help="run on CPU when no GPU is visible (a dry run)")
    ap.add_argument("--report", nargs="+", default=None, metavar="JSON", help="print these files as a table")
    args = ap.parse_args()
    if args.report:
        print(report(args.report))
        return

    import torch

    cuda = torch.cuda.is_available()
    if not cuda and not args.allow_cpu:
        sys.exit("gpu_epoch.py needs a CUDA GPU (none is visible); benchmarks/bench_epoch.py measures the CPU path")
    if args.engine == "unsloth":
        import unsloth  # noqa: F401 - before transformers/TRL, so that Unsloth patches them

    from genenv_lab.loop import run

    sync = torch.cuda.synchronize if cuda else (lambda: None)
    cfg = build_cfg(args)
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    backend = make(cfg)
    sync()
    load_s = time.perf_counter() - start
    result = {"engine": args.engine, "trainer": args.trainer, "preset": args.preset, "model": cfg.model.name_or_path,
              "gpu": torch.cuda.get_device_name(0) if cuda else "none (CPU dry run)", "load_s": round(load_s, 2),
              "used_gib_after_load": used_gib(), "epochs": []}
    if args.engine == "unsloth":
        result["fast_inference"] = backend.generator is not None
    print(f"{args.engine} on {result['gpu']}: load {load_s:.1f} s, "
          f"{result['used_gib_after_load']} GiB in use after load", flush=True)
    print(f"{'epoch':>5} {'wall s':>8} " + " ".join(f"{p:>13}" for p in PHASES) +
          f" {'valid':>6} {'env steps':>9} {'used GiB':>9}", flush=True)
    with tempfile.TemporaryDirectory(prefix="genenv-gpu-bench-") as tmp:
        for record in run(cfg, Path(tmp) / "run", backend=backend, progress=False):
            sync()
            ph = record.phase_s
            row = {"epoch": record.epoch, "wall_s": round(record.wall_s, 3), "phase_s": ph,
                   "valid_frac": record.valid_frac, "n_env_steps": record.extra["rwr/steps"], "used_gib": used_gib(),
                   "agent": {k: v for k, v in record.extra.items() if k.startswith("agent/")}}
            result["epochs"].append(row)
            print(f"{record.epoch:>5} {record.wall_s:>8.2f} " + " ".join(f"{ph.get(p, 0.0):>13.2f}" for p in PHASES)
                  + f" {record.valid_frac:>6.2f} {record.extra['rwr/steps']:>9.0f} {row['used_gib']!s:>9}", flush=True)
    if cuda:
        result["peak_allocated_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
        result["peak_reserved_gib"] = round(torch.cuda.max_memory_reserved() / 2**30, 2)
        result["peak_used_gib"] = max([e["used_gib"] for e in result["epochs"]] + [result["used_gib_after_load"]])
        print(f"peak GPU memory: allocated {result['peak_allocated_gib']} GiB, reserved "
              f"{result['peak_reserved_gib']} GiB, device used {result['peak_used_gib']} GiB", flush=True)
    else:
        result.update(peak_allocated_gib=None, peak_reserved_gib=None, peak_used_gib=None)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
