"""One short co-evolution run on a CUDA GPU: phase times per epoch and peak GPU memory, per engine.

    python benchmarks/gpu_epoch.py                                   # unsloth engine, tiny model built here
    python benchmarks/gpu_epoch.py --engine vllm --epochs 2          # hf training + vLLM generation
    python benchmarks/gpu_epoch.py --engine hf                       # the reference engine on the GPU
    python benchmarks/gpu_epoch.py --trainer high_entropy --epochs 1 # the agent's other trainer (agent.trainer)
    python benchmarks/gpu_epoch.py --preset colab-t4 --model /path/to/Qwen2.5-0.5B-Instruct --epochs 1
    python benchmarks/gpu_epoch.py --json out.json                   # also write the numbers as JSON
    python benchmarks/gpu_epoch.py --report a.json b.json            # the JSON files as docs/gpu.md's table
    GENENV_LAB_UNSLOTH_CPU=1 python benchmarks/gpu_epoch.py --allow-cpu   # dry run on CPU (scripts/gpu_check.sh)
    python benchmarks/gpu_epoch.py --shape colab-t4 --engine unsloth    # the T4 preset's shape, capped at 14.74 GiB
    python benchmarks/gpu_epoch.py --shape colab-t4 --slice --allow-cpu --engine hf   # its CPU dry run (2 layers)
    python benchmarks/gpu_epoch.py --shape-report a.json b.json         # --shape results as docs/gpu.md's table

``--shape PRESET`` measures a GPU preset at its model's true shape without a hub (genenv_lab/backends/shapes.py):
a randomly initialised model of the preset's architecture and vocabulary, built here from the config written in the
repository, with a tokenizer covering the vocabulary. A random model writes no parseable task, so the engine's
phases are driven directly at the preset's sizes, each an upper bound: the simulator writes seeds x variations
tasks, all of them (and the replay and base seeds) go to the agent's update, and all of them to the simulator's RWR
update (its KL cap lifted so that every step runs); every generation is forced to the preset's length
(``min_new_tokens``). Reported per epoch: seconds, tokens/s and peak GPU memory of each phase. The process's GPU
memory is capped at the target card's (``torch.cuda.set_per_process_memory_fraction``; a T4 shows 14.74 GiB, an L4
22.0 GiB), so "the preset fits its card" is a measurement; a phase that runs out of memory is recorded as such.
``--slice`` keeps the real vocabulary and hidden size with 2 layers and a few tokens: the CPU dry run.
``--grpo-steps K`` runs K of the agent update's steps (of the same size as the epoch's) and scales the update's
time to the epoch's step count (``epoch_s_scaled``: a scaling of measured step times, said as such); the other
phases and every memory figure are measured whole.

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
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the checkout's package, not an installed one

from genenv_lab.backends.shapes import TARGETS  # noqa: E402 - after the path


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


# ------------------------------------------------------------------------------------- --shape: the true shapes

SLICE = dict(env={"seeds_per_epoch": 2, "n_variations": 2, "max_new_tokens": 8, "batch_size": 4, "max_steps": 1},
             agent={"num_generations": 2, "prompts_per_step": 2, "max_completion_length": 8, "replay_size": 0,
                    "base_seeds": 1})
"""--slice: a few tokens and tasks (with 2 layers): the CPU dry run of the real-shape measurement."""


def shape_cfg(args):
    """(run configuration, target) of ``--shape``: the preset, its model replaced by the shape built here."""
    import torch

    from genenv_lab.backends.card import detect, pick_dtype
    from genenv_lab.backends.shapes import build_shape_model
    from genenv_lab.config import preset
    from genenv_lab.domains import domain_of

    target = TARGETS[args.shape]
    cfg = preset(args.shape)
    cuda = torch.cuda.is_available()
    dtype = pick_dtype(cfg.model.dtype, detect()) if cuda else "float32"
    domain = domain_of(cfg)
    words = sorted({w for s in domain.seed_tasks() for w in s.spec.text.split()} |
                   set(domain.system_prompt_env.split()))
    layers = 2 if args.slice and args.layers is None else args.layers
    folder = build_shape_model(target.shape, Path(args.cache) / "shapes", layers=layers, words=words, dtype=dtype,
                               device="cuda" if cuda else "cpu")
    changes = dict(model={"name_or_path": str(folder), "engine": args.engine, "dtype": dtype},
                   env={"kl_cap": 100.0}, loop={"epochs": args.epochs}, agent={"trainer": args.trainer})
    if args.slice:
        changes = {k: {**v, **SLICE.get(k, {})} for k, v in changes.items()} | {"agent": {
            **changes["agent"], **SLICE["agent"]}}
    return cfg.replace(**changes), target


def cap_memory(target, enabled: bool) -> float | None:
    """Cap this process's GPU memory at the target card's; the cap in GiB (None without CUDA or cap)."""
    import torch

    if not (enabled and torch.cuda.is_available()):
        return None
    total = torch.cuda.get_device_properties(0).total_memory / 2**30
    torch.cuda.set_per_process_memory_fraction(min(1.0, target.card_gib / total))
    return round(min(total, target.card_gib), 2)


def force_lengths(backend, length: int, *, grpo: int) -> None:
    """Every generation runs to its budget: ``min_new_tokens`` on the model's generation config (the engine's own
    generation) and in TRL's generation kwargs (the update's rollouts; vLLM's ``min_tokens`` when it serves them)."""
    base = backend.model.get_base_model() if hasattr(backend.model, "get_base_model") else backend.model
    base.generation_config.min_new_tokens = length
    engine_args = backend.grpo_engine_args

    def forced():
        args = engine_args()
        key = "min_tokens" if args.get("use_vllm") else "min_new_tokens"
        return {**args, "generation_kwargs": {key: grpo}}

    backend.grpo_engine_args = forced


def full_batch(cfg) -> int:
    """The agent's batch at its upper bound: every generated task, the replay and the base seeds."""
    return cfg.env.seeds_per_epoch * cfg.env.n_variations + cfg.agent.replay_size + cfg.agent.base_seeds


def phase_inputs(cfg, domain, grpo_steps: int | None = None):
    """The simulator's contexts (one per seed), the agent's batch (at its upper bound, or ``grpo_steps`` steps'
    worth of it), a reward function (random 0/1, so that every group has an advantage)."""
    import random

    from genenv_lab.backends.base import AgentPrompt
    from genenv_lab.domains.base import LineageStats

    seeds = domain.seed_tasks()
    pick = [seeds[i % len(seeds)] for i in range(cfg.env.seeds_per_epoch)]
    contexts = [domain.env_messages(s.spec, LineageStats(), cfg.curriculum.alpha, cfg.curriculum.k_min)
                for s in pick]
    n_tasks = full_batch(cfg) if not grpo_steps else min(full_batch(cfg), grpo_steps * cfg.agent.prompts_per_step)
    prompts = [AgentPrompt(f"t{i}", domain.agent_messages(seeds[i % len(seeds)].spec)) for i in range(n_tasks)]
    rng = random.Random(0)
    return contexts, prompts, lambda ids, completions: [float(rng.random() < 0.5) for _ in completions]


def timed(sync, fn):
    """(result, seconds, peak GiB allocated during ``fn``, or None without CUDA; "OOM" when it ran out)."""
    import torch

    cuda = torch.cuda.is_available()
    if cuda:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    try:
        out = fn()
        sync()
    except torch.OutOfMemoryError:
        return None, round(time.perf_counter() - start, 2), "OOM"
    seconds = round(time.perf_counter() - start, 2)
    return out, seconds, round(torch.cuda.max_memory_allocated() / 2**30, 2) if cuda else None


def shape_epoch(backend, cfg, inputs, sync) -> dict:
    """One epoch of the four phases at their upper bounds: seconds, tokens/s, peak GiB of each."""
    from genenv_lab.trainers.agent import trainer_named
    from genenv_lab.trainers.env import update_env
    from genenv_lab.backends.base import EnvExample

    contexts, prompts, reward_fn = inputs
    e, a = cfg.env, cfg.agent
    row: dict = {}
    raw, s, peak = timed(sync, lambda: backend.generate("env", contexts, n=e.n_variations,
                                                         max_new_tokens=e.max_new_tokens, temperature=e.temperature))
    texts = [t for group in raw or [] for t in group]
    row["generate"] = {"s": s, "peak_gib": peak, "tokens": sum(backend.completion_tokens(texts))}
    update, s, peak = timed(sync, lambda: backend.train_agent(trainer_named(a.trainer), prompts, reward_fn))
    if update is not None:
        length = update.metrics.get("grpo/completions/mean_length", float("nan"))
        rollout_tokens = round(length * len(prompts) * a.num_generations)
        row["rollouts"] = {"s": round(update.rollout_s, 2), "tokens": rollout_tokens}
        row["agent_update"] = {"s": round(update.update_s, 2), "steps": update.steps}
    row["agent_total"] = {"s": s, "peak_gib": peak}
    examples = [EnvExample(c, t, 1.0) for c, group in zip(contexts, raw or []) for t in group]
    env, s, peak = timed(sync, lambda: update_env(backend, cfg, examples))
    row["env_update"] = {"s": s, "peak_gib": peak, "steps": getattr(env, "steps", None)}
    for phase in ("generate", "rollouts"):
        if phase in row and row[phase]["s"]:
            row[phase]["tokens_per_s"] = round(row[phase]["tokens"] / row[phase]["s"], 1)
    row["epoch_s"] = round(sum(row[p]["s"] for p in ("generate", "agent_total", "env_update")), 2)
    full = max(1, full_batch(cfg) // a.prompts_per_step)  # the agent update's steps at the upper bound (TRL floors)
    if update is not None and update.steps and update.steps < full:  # --grpo-steps: scale the agent's steps
        row["agent_steps_of_epoch"] = full
        row["epoch_s_scaled"] = round(row["generate"]["s"] + row["env_update"]["s"]
                                      + row["agent_total"]["s"] / update.steps * full, 1)
    return row


def measure_shape(args) -> dict:
    """``--shape``: build, cap, load, run the epochs; the figures as a dict (printed as they come)."""
    import torch

    from genenv_lab.domains import domain_of

    cuda = torch.cuda.is_available()
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    cfg, target = shape_cfg(args)
    cap = cap_memory(target, args.cap)
    backend, load_s, load_peak = timed(sync, lambda: make(cfg))
    result = {"preset": args.shape, "shape": target.shape, "layers": None, "engine": args.engine,
              "trainer": args.trainer, "gpu": torch.cuda.get_device_name(0) if cuda else "none (CPU dry run)",
              "target_card": target.card, "cap_gib": cap, "slice": args.slice, "load_s": load_s,
              "load_peak_gib": load_peak, "picked": getattr(backend, "picked", None), "epochs": []}
    if backend is None:
        print(json.dumps(result), flush=True)
        return result
    result["layers"] = backend.model.get_base_model().config.num_hidden_layers
    result["dtype"] = str(getattr(backend, "dtype", cfg.model.dtype))
    force_lengths(backend, cfg.env.max_new_tokens, grpo=cfg.agent.max_completion_length)
    inputs = phase_inputs(cfg, domain_of(cfg), args.grpo_steps)
    print(f"{args.shape} ({target.shape}, {result['layers']} layers) on {result['gpu']}, cap {cap} GiB: "
          f"load {load_s} s", flush=True)
    for epoch in range(1, args.epochs + 1):
        row = {"epoch": epoch, **shape_epoch(backend, cfg, inputs, sync)}
        result["epochs"].append(row)
        print(json.dumps(row), flush=True)
        if any(isinstance(v, dict) and v.get("peak_gib") == "OOM" for v in row.values()):
            break
    peaks = [v["peak_gib"] for r in result["epochs"] for v in r.values() if isinstance(v, dict) and "peak_gib" in v]
    result["fits"] = None if not cuda else "OOM" not in peaks
    result["peak_gib"] = max((p for p in peaks if isinstance(p, float)), default=None)
    return result


def scaled(e: dict) -> str:
    """The epoch time scaled from --grpo-steps, when it was."""
    if "epoch_s_scaled" not in e:
        return ""
    return f" (scaled to {e['agent_steps_of_epoch']} agent steps: {e['epoch_s_scaled']})"


def shape_report(paths: list[str]) -> str:
    """``--shape`` JSON files as the table docs/gpu.md keeps (every figure names the card that measured it)."""
    lines = ["| preset (shape, layers) | engine | measured on | cap GiB | dtype | epoch | generate s (tok/s) | "
             "rollouts s (tok/s) | agent update s | env update s | epoch s | peak GiB | fits |", "|" + "---|" * 13]
    for path in paths:
        r = json.loads(Path(path).read_text())
        for e in r["epochs"]:
            g, ro = e["generate"], e.get("rollouts", {})
            lines.append(
                f"| {r['preset']} ({r['shape']}, {r['layers']}) | {r['engine']} | {r['gpu']} | {r['cap_gib']} | "
                f"{r.get('dtype')} | {e['epoch']} | {g['s']} ({g.get('tokens_per_s')}) | {ro.get('s')} "
                f"({ro.get('tokens_per_s')}) | {e.get('agent_update', {}).get('s')} | {e['env_update']['s']} | "
                f"{e['epoch_s']}{scaled(e)} | {r.get('peak_gib')} | {r.get('fits')} |")
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
    ap.add_argument("--shape", default=None, choices=sorted(TARGETS),
                    help="measure this GPU preset at its model's true shape (random weights, no hub)")
    ap.add_argument("--slice", action="store_true", help="--shape: 2 layers and a few tokens (the CPU dry run)")
    ap.add_argument("--layers", type=int, default=None, help="--shape: this many decoder layers (default: all)")
    ap.add_argument("--no-cap", dest="cap", action="store_false", help="--shape: do not cap GPU memory")
    ap.add_argument("--grpo-steps", type=int, default=None,
                    help="--shape: run this many of the agent update's steps and scale its time to the epoch's")
    ap.add_argument("--shape-report", nargs="+", default=None, metavar="JSON", help="print --shape files as a table")
    args = ap.parse_args()
    if args.report:
        print(report(args.report))
        return
    if args.shape_report:
        print(shape_report(args.shape_report))
        return
    if args.shape:
        import torch

        if not torch.cuda.is_available() and not args.allow_cpu:
            sys.exit("gpu_epoch.py --shape needs a CUDA GPU (none is visible); --allow-cpu --slice is its dry run")
        if args.engine == "unsloth":
            import unsloth  # noqa: F401 - before transformers/TRL, so that Unsloth patches them
        result = measure_shape(args)
        if args.json:
            Path(args.json).write_text(json.dumps(result, indent=2))
        return

    import torch

    cuda = torch.cuda.is_available()
    if not cuda and not args.allow_cpu:
        sys.exit("gpu_epoch.py needs a CUDA GPU (none is visible); benchmarks/bench_epoch.py measures the CPU path")
    if args.engine == "unsloth":
        import unsloth  # noqa: F401 - before transformers/TRL, so that Unsloth patches them

    from genenv_lab.coevolution.session import run

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
            row = {"epoch": record.epoch, "wall_s": round(record.wall_s, 3), "phase_s": dict(ph),
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
