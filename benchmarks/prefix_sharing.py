"""Encoding each prompt once, against plain TRL, on the same batch: GRPO update time, rollout time, peak memory.

    python benchmarks/prefix_sharing.py                          # SmolLM2-135M-Instruct, G = 8, times and tools
    python benchmarks/prefix_sharing.py --domains times --repeats 5
    python benchmarks/prefix_sharing.py --model tiny             # the random tiny model (a smoke run, seconds)
    python benchmarks/prefix_sharing.py --json out.json

For each domain, two arms run, each in its own process (so that peak memory is each arm's own):

- ``trl``: TRL's GRPOTrainer as it is (``model.shared_prefix=false``: every override of the project's trainer
  calls TRL's own method), the baseline;
- ``shared``: the project's trainer, each distinct prompt encoded once in the rollouts and in the log-prob forward.

Both arms build the same trainer on the same tasks (the cpu-smollm2 preset's agent settings: G = 8, 8 tasks a step,
LoRA r 8 on every linear layer) with the same seed. Reported per arm: the rollout phase (TRL's
``_generate_and_score_completions``: generation of G completions per task and their rewards), and the agent update
(``compute_loss`` + ``backward`` + the optimiser step on that batch) as the median over ``--repeats``, and the
process's peak resident memory. The update of both arms runs on the batch the ``trl`` arm generated (saved to a
file), so it is the same batch token for token; the ``shared`` arm's own rollouts are checked to be the same tokens
(``same_rollouts``). Numbers are from one run; run it on a quiet machine (docs/prefix_sharing.md has the table).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ARMS = ("trl", "shared")
TASKS_PER_STEP = {"tools": 2}
"""Tasks per step where the preset's 8 do not fit: TRL's full-row update of 8 × G = 64 tools rows (up to 390 prompt
tokens each) holds more activations than 24 GiB."""


def tasks(domain_name: str, count: int):
    """``count`` seed tasks of the domain as agent prompts (cycled when the domain ships fewer)."""
    from genenv_lab.backends.base import AgentPrompt
    from genenv_lab.domains import get_domain

    domain = get_domain(domain_name)
    seeds = domain.seed_tasks()
    return domain, [AgentPrompt(f"t{i}", domain.agent_messages(seeds[i % len(seeds)].spec)) for i in range(count)]


def run_arm(args) -> dict:
    """One arm in this process: rollouts on its own path, then the update on the saved batch, timed."""
    import torch
    from dataclasses import replace

    from genenv_lab.trainers.agent import TRAINERS
    from genenv_lab.backends.hf import HFBackend
    from genenv_lab.config import preset

    torch.set_num_threads(args.threads)
    cfg = preset("cpu-smollm2")
    cfg = replace(cfg, model=replace(cfg.model, name_or_path=args.model, shared_prefix=args.arm == "shared"),
                  agent=replace(cfg.agent, max_completion_length=args.completion or cfg.agent.max_completion_length,
                                prompts_per_step=args.tasks or TASKS_PER_STEP.get(args.domain,
                                                                                 cfg.agent.prompts_per_step)),
                  loop=replace(cfg.loop, domain=args.domain))
    backend = HFBackend(cfg)
    domain, prompts = tasks(args.domain, cfg.agent.prompts_per_step)

    def reward(task_ids, texts):  # any reward with spread: the update's cost does not depend on it
        return [float(len(t) % 2) for t in texts]

    with tempfile.TemporaryDirectory() as tmp:
        trainer = TRAINERS["grpo"].build(backend.trainer_kit(prompts, reward, tmp))
        trainer.current_gradient_accumulation_steps = 1
        batch = next(iter(trainer.get_train_dataloader()))
        backend.model.train()
        start = time.perf_counter()
        inputs = trainer._generate_and_score_completions(batch)
        rollout_s = time.perf_counter() - start
        own = torch.cat([inputs["prompt_ids"], inputs["completion_ids"]], 1)
        if args.arm == "trl":
            torch.save(inputs, args.batch)
        saved = torch.load(args.batch, weights_only=False)
        same = own.shape == torch.cat([saved["prompt_ids"], saved["completion_ids"]], 1).shape and bool(
            (own == torch.cat([saved["prompt_ids"], saved["completion_ids"]], 1)).all())
        opt = backend.optimizer("agent")
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            loss = trainer.compute_loss(trainer.model, saved)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            times.append(time.perf_counter() - start)
    rows = saved["prompt_ids"].size(0)
    prompt_tokens = int(saved["prompt_mask"].sum()) // rows
    completion_tokens = int(saved["completion_mask"].sum()) / rows
    return {"arm": args.arm, "domain": args.domain, "path": trainer.prefix_path, "rollout_s": rollout_s,
            "update_s": statistics.median(times), "update_all_s": times,
            "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "rows": rows,
            "prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "same_rollouts": same}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--domains", nargs="+", default=["times", "tools"])
    ap.add_argument("--repeats", type=int, default=3, help="timed updates per arm (the median is reported)")
    ap.add_argument("--completion", type=int, default=0, help="max completion tokens (default: the preset's)")
    ap.add_argument("--tasks", type=int, default=0,
                    help="tasks per step (default: the preset's 8; 2 for tools, see TASKS_PER_STEP)")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--arm", choices=ARMS, help=argparse.SUPPRESS)
    ap.add_argument("--domain", help=argparse.SUPPRESS)
    ap.add_argument("--batch", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.arm:  # a child: one arm, its figures as the last line of stdout
        print(json.dumps(run_arm(args)))
        return 0

    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for domain in args.domains:
            batch = str(Path(tmp) / f"{domain}.pt")
            for arm in ARMS:  # trl first: it writes the batch both arms update on
                cmd = [sys.executable, __file__, "--arm", arm, "--domain", domain, "--batch", batch,
                       "--model", args.model, "--repeats", str(args.repeats), "--threads", str(args.threads),
                       "--completion", str(args.completion), "--tasks", str(args.tasks)]
                out = subprocess.run(cmd, capture_output=True, text=True)
                if out.returncode != 0:
                    sys.stderr.write(out.stderr[-4000:])
                    raise SystemExit(f"arm {arm} on {domain} failed (exit {out.returncode})")
                results.append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(f"{'domain':8} {'arm':7} {'path':14} {'rows':>4} {'prompt':>6} {'compl':>5} {'rollout s':>9} "
          f"{'update s':>8} {'peak MiB':>8}  same rollouts")
    for r in results:
        print(f"{r['domain']:8} {r['arm']:7} {r['path']:14} {r['rows']:>4} {r['prompt_tokens']:>6} "
              f"{r['completion_tokens']:>5.1f} {r['rollout_s']:>9.2f} {r['update_s']:>8.2f} "
              f"{r['peak_rss_mib']:>8.0f}  {r['same_rollouts']}")
    print("\nratios (trl / shared): ")
    for domain in args.domains:
        base, ours = (next(r for r in results if r["domain"] == domain and r["arm"] == a) for a in ARMS)
        memory = ours["peak_rss_mib"] / base["peak_rss_mib"]
        print(f"  {domain:8} update {base['update_s'] / ours['update_s']:.2f}x  rollouts "
              f"{base['rollout_s'] / ours['rollout_s']:.2f}x  peak memory {memory:.2f} of trl's")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
