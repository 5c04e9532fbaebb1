"""Runs inside .venv-unsloth (the real Unsloth on its CPU backend) for tests/test_unsloth_cpu.py.

    python tests/unsloth_cpu_driver.py kill OUT CLI-ARGS...   genenv-lab run CLI-ARGS --out OUT, SIGKILLed at the
                                                              start of its second agent update (epoch 2)
    python tests/unsloth_cpu_driver.py trainers OUT.json      both engines' GRPO trainers over one tiny model and
                                                              config, compared; the figures as JSON

Needs ``GENENV_LAB_UNSLOTH_CPU=1`` (the test sets it).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile


def kill_in_epoch_two(out: str, cli_args: list[str]) -> int:
    """The real CLI, with the engine's agent update SIGKILLing the process when it starts for the second time."""
    from genenv_lab.backends.unsloth_engine import UnslothBackend
    from genenv_lab.cli.commands import main

    original = UnslothBackend.train_agent
    calls = [0]

    def train_agent(self, trainer, prompts, reward_fn):
        calls[0] += 1
        if calls[0] == 2:
            os.kill(os.getpid(), signal.SIGKILL)
        return original(self, trainer, prompts, reward_fn)

    UnslothBackend.train_agent = train_agent
    return main(["run", *cli_args, "--out", out])


def compare_trainers(out: str) -> None:
    """Build the hf engine's and the unsloth engine's trainers over the same tiny model, configuration and agent
    weights, and report what a reader would compare: the optimiser (class, hyper-parameters, parameters), the
    scheduler's learning rates, beta and the reference, the method fields, precision, gradient checkpointing,
    per-token log-probabilities of one batch, and one update's loss and weight change."""
    import torch

    from genenv_lab.trainers.agent import TRAINERS
    from genenv_lab.trainers.grpo import METHOD_FIELDS
    from genenv_lab.backends.base import AgentPrompt
    from genenv_lab.backends.factory import make_backend
    from genenv_lab.config import preset
    from genenv_lab.domains import get_domain

    cfg = preset("tiny").replace(model={"lora_dropout": 0.0}, agent={"prompts_per_step": 2, "kl_beta": 0.05,
                                                                     "temperature": 2.0})
    domain = get_domain(cfg.loop.domain)
    hf = make_backend(cfg, domain)
    un = make_backend(cfg.replace(model={"engine": "unsloth"}), domain)
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():  # LoRA B = 0 makes every gradient of A zero: the same random B for both engines
        for name, p in hf.model.named_parameters():
            if "lora_B" in name and ".agent." in name:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.05)
    un.slot.load("agent", hf.adapter_state("agent"), origin="the hf engine's agent")
    seeds = domain.seed_tasks()
    prompts = [AgentPrompt(f"t{i}", domain.agent_messages(seeds[i].spec)) for i in range(2)]

    def reward(task_ids, texts):
        return [float(sum(map(ord, t)) % 3) / 2 for t in texts]

    report: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        grpo = TRAINERS["grpo"]
        trainers = {"hf": grpo.build(hf.trainer_kit(prompts, reward, f"{tmp}/hf")),
                    "unsloth": grpo.build(un.trainer_kit(prompts, reward, f"{tmp}/un"))}
        for engine, tr in trainers.items():
            opt = tr.optimizer
            sched = tr.create_scheduler(num_training_steps=4, optimizer=opt)
            lrs = []
            for _ in range(3):
                lrs.append(sched.get_last_lr()[0])
                sched.step()
            causal = tr.model.get_base_model()
            report[engine] = {
                "optimizer": f"{type(opt).__module__}.{type(opt).__name__}",
                "optimizer_defaults": {k: v for k, v in opt.defaults.items() if isinstance(v, (int, float, bool))
                                       or (isinstance(v, tuple) and all(isinstance(x, float) for x in v))},
                "optimizer_params": [list(p.shape) for g in opt.param_groups for p in g["params"]],
                "is_backend_optimizer": opt is (hf if engine == "hf" else un).optimizer("agent"),
                "scheduler": type(sched).__name__, "scheduler_lrs": lrs,
                "beta": tr.beta, "args_beta": tr.args.beta, "ref_model": tr.ref_model is not None,
                "ref_adapter": "ref" in tr.model.peft_config,
                "method_fields": {k: str(getattr(getattr(tr.args, k), "value", getattr(tr.args, k)))
                                  for k in METHOD_FIELDS if k != "beta"},
                "bf16": bool(tr.args.bf16), "fp16": bool(tr.args.fp16),
                "gradient_checkpointing": bool(causal.is_gradient_checkpointing),
                "prefix_path": tr.prefix_path,
            }
        # per-token log-probabilities of one batch (prompt + completion rows, left-padded prompts), adapters on
        tok = hf.tokenizer
        texts = [hf.chat_prompt(p.messages) for p in prompts]
        enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False)
        completion = tok([" 4 5 6", " 7 8"], return_tensors="pt", padding=True, add_special_tokens=False,
                         padding_side="right")
        ids = torch.cat([enc["input_ids"].repeat_interleave(2, 0), completion["input_ids"].repeat(2, 1)], 1)
        mask = torch.cat([enc["attention_mask"].repeat_interleave(2, 0), completion["attention_mask"].repeat(2, 1)],
                         1)
        keep = completion["input_ids"].shape[1]
        logps = {}
        for engine, tr in trainers.items():
            (hf if engine == "hf" else un)._use("agent")
            tr.model.eval()
            with torch.no_grad():
                lp, _, _ = tr._get_per_token_logps_and_entropies(tr.model, ids, mask, keep, batch_size=ids.size(0))
            logps[engine] = (lp * mask[:, -keep:]).double()
        report["logps_max_abs_diff"] = float((logps["hf"] - logps["unsloth"]).abs().max())
        report["logps_mean"] = float(logps["hf"].sum() / mask[:, -keep:].sum())
        # one update each, from the same weights, trainer seed and rollouts' random stream
        before = {e: {k: v.clone() for k, v in (hf if e == "hf" else un).adapter_state("agent").items()}
                  for e in trainers}
        for engine, backend in (("hf", hf), ("unsloth", un)):
            backend._grpo_calls = 0  # the same trainer seed for both updates
            update = backend.train_agent(TRAINERS["grpo"], prompts, reward)
            after = backend.adapter_state("agent")
            report[engine]["update_loss"] = update.loss
            report[engine]["update_kl"] = update.metrics["grpo/kl"]
            report[engine]["update_record"] = {k: v for k, v in update.metrics.items() if k.startswith("agent/")}
            report[engine]["delta"] = {k: (after[k] - before[engine][k]).tolist() for k in sorted(after)[:4]}
    with open(out, "w") as fh:
        json.dump(report, fh)


if __name__ == "__main__":
    import unsloth  # noqa: F401 - first, as the engine's factory imports it (only in the Unsloth venv)

    if sys.argv[1] == "kill":
        sys.exit(kill_in_epoch_two(sys.argv[2], sys.argv[3:]))
    compare_trainers(sys.argv[2])
