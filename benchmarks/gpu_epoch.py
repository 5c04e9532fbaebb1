"""One short co-evolution run on a CUDA GPU: phase times per epoch and peak GPU memory, per engine.

    python benchmarks/gpu_epoch.py                                   # unsloth engine, tiny model built here
    python benchmarks/gpu_epoch.py --engine vllm --epochs 2          # hf training + vLLM generation
    python benchmarks/gpu_epoch.py --engine hf                       # the reference engine on the GPU
    python benchmarks/gpu_epoch.py --preset colab-t4 --model /path/to/Qwen2.5-0.5B-Instruct --epochs 1
    python benchmarks/gpu_epoch.py --json out.json                   # also write the numbers as JSON

Without ``--model`` the base is the project's tiny random Qwen2, built locally (no hub) with hidden size 256, so
4 heads of 64 dimensions (vLLM's GPU attention backends take head sizes from 32/64 up; the default tiny model has
16), format-warmed on the domain's seed texts. Its numbers measure the engines' fixed costs (start-up, adapter
swaps, trainer construction, vLLM LoRA loading), not a real model's throughput; pass ``--model`` (a local
directory: the GPU machines here reach no hub) with ``--preset colab-t4|colab-l4|a100`` for those.

Reported: model/engine load time, per epoch the loop's phases (generate, rollouts, agent_update, env_update) and
wall time, and the peak GPU memory: torch's peak allocated/reserved (vLLM inside the process allocates through
torch too) and the device's used memory seen by ``torch.cuda.mem_get_info`` after each epoch.
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
        model_changes.update(dtype="bfloat16", max_seq_length=512, gpu_memory_utilization=args.gpu_memory_utilization,
                             lora_r=8, lora_alpha=16)
    if args.four_bit is not None:
        model_changes["load_in_4bit"] = args.four_bit
    return cfg.replace(model=model_changes, loop={"epochs": args.epochs})


def make(cfg):
    """The backend of ``cfg.model.engine`` (built directly: loop.make_backend may not route GPU engines yet)."""
    if cfg.model.engine == "unsloth":
        from genenv_lab.backends.unsloth_engine import UnslothBackend

        return UnslothBackend(cfg)
    if cfg.model.engine == "vllm":
        from genenv_lab.backends.vllm_engine import make_vllm_backend

        return make_vllm_backend(cfg)
    from genenv_lab.backends.hf import HFBackend

    return HFBackend(cfg)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--engine", choices=("unsloth", "vllm", "hf"), default="unsloth")
    ap.add_argument("--preset", default="tiny", help="tiny (default) or a GPU preset: colab-t4, colab-l4, a100")
    ap.add_argument("--model", default=None, help="local model directory (default: tiny model built here)")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=256, help="tiny model hidden size (4 heads)")
    ap.add_argument("--warmup", type=int, default=300, help="tiny model format warm-up steps")
    ap.add_argument("--gpu-memory-utilization", type=float, default=0.3)
    ap.add_argument("--four-bit", dest="four_bit", action="store_true", default=None)
    ap.add_argument("--sixteen-bit", dest="four_bit", action="store_false")
    ap.add_argument("--cache", default=os.environ.get("GENENV_LAB_CACHE", tempfile.gettempdir()))
    ap.add_argument("--json", default=None, help="write the measurements to this file too")
    args = ap.parse_args()

    import torch

    if not torch.cuda.is_available():
        sys.exit("gpu_epoch.py needs a CUDA GPU (none is visible); benchmarks/bench_epoch.py measures the CPU path")
    if args.engine == "unsloth":
        import unsloth  # noqa: F401 - before transformers/TRL, so that Unsloth patches them

    from genenv_lab.loop import run

    cfg = build_cfg(args)
    torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    backend = make(cfg)
    torch.cuda.synchronize()
    load_s = time.perf_counter() - start
    free, total = torch.cuda.mem_get_info()
    result = {"engine": args.engine, "preset": args.preset, "model": cfg.model.name_or_path,
              "gpu": torch.cuda.get_device_name(0), "load_s": round(load_s, 2),
              "used_gib_after_load": round((total - free) / 2**30, 2), "epochs": []}
    if args.engine == "unsloth":
        result["fast_inference"] = backend.generator is not None
    print(f"{args.engine} on {result['gpu']}: load {load_s:.1f} s, "
          f"{result['used_gib_after_load']:.2f} GiB in use after load", flush=True)
    print(f"{'epoch':>5} {'wall s':>8} " + " ".join(f"{p:>13}" for p in PHASES) +
          f" {'valid':>6} {'env steps':>9} {'used GiB':>9}", flush=True)
    with tempfile.TemporaryDirectory(prefix="genenv-gpu-bench-") as tmp:
        for record in run(cfg, Path(tmp) / "run", backend=backend, progress=False):
            torch.cuda.synchronize()
            free, total = torch.cuda.mem_get_info()
            ph = record.phase_s
            row = {"epoch": record.epoch, "wall_s": round(record.wall_s, 3), "phase_s": ph,
                   "valid_frac": record.valid_frac, "n_env_steps": record.n_env_steps,
                   "used_gib": round((total - free) / 2**30, 2)}
            result["epochs"].append(row)
            print(f"{record.epoch:>5} {record.wall_s:>8.2f} " + " ".join(f"{ph.get(p, 0.0):>13.2f}" for p in PHASES)
                  + f" {record.valid_frac:>6.2f} {record.n_env_steps:>9} {row['used_gib']:>9.2f}", flush=True)
    result["peak_allocated_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
    result["peak_reserved_gib"] = round(torch.cuda.max_memory_reserved() / 2**30, 2)
    result["peak_used_gib"] = max([e["used_gib"] for e in result["epochs"]] + [result["used_gib_after_load"]])
    print(f"peak GPU memory: allocated {result['peak_allocated_gib']} GiB, reserved {result['peak_reserved_gib']} "
          f"GiB, device used {result['peak_used_gib']} GiB (of {total / 2**30:.1f})", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
