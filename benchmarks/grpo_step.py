"""The whole agent update, side by side in one process: the project's against a plain TRL GRPOTrainer.

    python benchmarks/grpo_step.py                       # cpu-smollm2 (SmolLM2-135M-Instruct, G = 8, 8 tasks a step)
    python benchmarks/grpo_step.py --steps 2 --repeats 3 --json out.json
    python benchmarks/grpo_step.py --model tiny          # the random tiny model (a smoke run, seconds)

Both arms take the same tasks (the ``times99`` seeds, cycled) and the same GRPO settings
(:func:`genenv_lab.trainers.grpo.grpo_settings` of the cpu-smollm2 preset: G = 8, 8 tasks a step,
LoRA r 8 on every linear layer, constant learning rate), each on its own model instance:

- ``project``: ``HFBackend.train_agent`` with the ``grpo`` trainer, as the loop calls it every epoch
  (:func:`genenv_lab.trainers.agent.update_agent`), everything included: building the trainer
  (:func:`~genenv_lab.trainers.grpo.build_grpo_trainer`: config, dataset, TRL's trainer set-up), the
  rollouts and the update with each prompt encoded once, the metrics;
- ``trl``: TRL's ``GRPOTrainer`` as a user would write it (a PeftModel with the same LoRA, TRL's own paths; the
  subclass only times its rollout phase), ``train()`` timed; its construction is timed apart, not counted in its
  step.

Reported per arm: seconds per optimiser step (median over ``--repeats``, the arms alternating so that machine load
hits both), split into the rollout phase (TRL's ``_generate_and_score_completions``) and the rest of ``train()``
(the update: log-prob forwards, loss, backward, optimiser step), and for ``project`` the part spent outside both
(trainer construction, data set, metrics). The ratio ``trl / project`` is the speed-up of the whole project step.
Run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _reward(task_ids, texts):  # any reward with spread: the update's cost does not depend on it
    return [float(sum(map(ord, t)) % 3) / 2 for t in texts]


def _prompts(cfg, count):
    from genenv_lab.backends.base import AgentPrompt
    from genenv_lab.domains import domain_of

    domain = domain_of(cfg)
    seeds = domain.seed_tasks()
    return [AgentPrompt(f"t{i}", domain.agent_messages(seeds[i % len(seeds)].spec)) for i in range(count)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="smollm2-135m", help="smollm2-135m (default) or tiny")
    ap.add_argument("--steps", type=int, default=2, help="optimiser steps per update (tasks = steps × 8)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)

    import torch
    from peft import LoraConfig, get_peft_model
    from transformers.trainer_callback import PrinterCallback
    from trl import GRPOConfig, GRPOTrainer

    from genenv_lab.trainers.agent import TRAINERS
    from genenv_lab.trainers.grpo import grpo_reward, grpo_settings, timed_trainer
    from genenv_lab.backends.hf import HFBackend, grpo_dataset
    from genenv_lab.config import preset
    from genenv_lab.models.loading import load_base

    cfg = preset("cpu-smollm2")
    if args.model == "tiny":
        cfg = preset("tiny").replace(loop={"domain": "times99"}, agent={"num_generations": 8, "prompts_per_step": 8})
    prompts = _prompts(cfg, cfg.agent.prompts_per_step * args.steps)
    backend = HFBackend(cfg)
    m = cfg.model
    base, tokenizer = load_base(m.name_or_path, dtype=m.dtype, seed=cfg.loop.seed)
    torch.manual_seed(cfg.loop.seed)
    plain = get_peft_model(base, LoraConfig(r=m.lora_r, lora_alpha=m.lora_alpha, lora_dropout=m.lora_dropout,
                                            target_modules=list(m.target_modules), task_type="CAUSAL_LM"))
    dataset = grpo_dataset(backend, prompts)

    rows = {k: [] for k in ("project", "project_rollouts", "project_update", "project_outside", "trl",
                            "trl_rollouts", "trl_update", "trl_construction")}
    plain_trainer = timed_trainer(GRPOTrainer, share_prefix=False)  # TRL's own paths, its rollout phase timed
    for repeat in range(args.repeats):
        start = time.perf_counter()
        update = backend.train_agent(TRAINERS["grpo"], prompts, _reward)
        total = time.perf_counter() - start
        rows["project"].append(total / update.steps)
        rows["project_rollouts"].append(update.rollout_s / update.steps)
        rows["project_update"].append(update.update_s / update.steps)
        rows["project_outside"].append((total - update.rollout_s - update.update_s) / update.steps)
        with tempfile.TemporaryDirectory() as tmp:
            start = time.perf_counter()
            trainer = plain_trainer(model=plain, reward_funcs=[grpo_reward(_reward)], processing_class=tokenizer,
                                  args=GRPOConfig(**{**grpo_settings(cfg, output_dir=tmp, seed=repeat),
                                                     "use_cpu": True}), train_dataset=dataset)
            trainer.remove_callback(PrinterCallback)
            built = time.perf_counter()
            trainer.train()
            done = time.perf_counter()
        rows["trl_construction"].append(built - start)
        steps = trainer.state.global_step
        rows["trl"].append((done - built) / steps)
        rows["trl_rollouts"].append(trainer.rollout_s / steps)
        rows["trl_update"].append((done - built - trainer.rollout_s) / steps)
        print(f"repeat {repeat + 1}: project {rows['project'][-1]:.2f} s/step (outside phases "
              f"{rows['project_outside'][-1]:.2f}), trl {rows['trl'][-1]:.2f} s/step "
              f"(+ construction {rows['trl_construction'][-1]:.2f} s)", flush=True)
    med = {k: statistics.median(v) for k, v in rows.items()}
    result = {"model": args.model, "steps": args.steps, "repeats": args.repeats,
              "num_generations": cfg.agent.num_generations, "prompts_per_step": cfg.agent.prompts_per_step,
              "median_s_per_step": med, "speedup_trl_over_project": med["trl"] / med["project"], "runs": rows}
    print(f"median s/step: project {med['project']:.2f} (rollouts {med['project_rollouts']:.2f}, update "
          f"{med['project_update']:.2f}, outside the phases {med['project_outside']:.2f}), trl {med['trl']:.2f} "
          f"(rollouts {med['trl_rollouts']:.2f}, update {med['trl_update']:.2f}; construction "
          f"{med['trl_construction']:.2f} s apart): {result['speedup_trl_over_project']:.2f}x")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
