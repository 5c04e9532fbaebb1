"""One GRPO step of the tiny model's agent, with each prompt encoded once and with TRL's full rows, in however many
processes this script was launched with (``python`` or ``torchrun --nproc_per_node N``); the main process saves,
per path, the completions, the logged loss and the agent adapter's gradients as the optimiser saw them (after the
processes' all-reduce) to ``OUT`` (tests/test_prefix.py compares the two paths).

    python tests/prefix_step_driver.py OUT.pt KL_BETA
"""

import sys

import torch

from genenv_lab.backends import distributed
from genenv_lab.trainers.agent import TRAINERS
from genenv_lab.backends.base import AgentPrompt
from genenv_lab.backends.factory import make_backend
from genenv_lab.config import preset
from genenv_lab.domains import get_domain


def perturb_lora(backend, seed: int = 1) -> None:
    """LoRA B starts at zero, which makes A's gradient zero: give B small random values (the same everywhere)."""
    gen = torch.Generator().manual_seed(seed)
    for name, param in backend.model.named_parameters():
        if "lora_B" in name:
            param.data.copy_(torch.randn(param.shape, generator=gen) * 0.05)


def reward(task_ids, texts):
    """A reward with spread (so GRPO's advantages are not all zero), the same in every process."""
    return [float(sum(map(ord, t)) % 3) / 2 for t in texts]


def tiny_backend(shared: bool, kl_beta: float, tasks: int):
    """The tiny model's backend (no dropout, LoRA B perturbed, sampling temperature 2 so that G rollouts differ)
    and ``tasks`` agent prompts of its domain's seeds (cycled)."""
    cfg = preset("tiny").replace(model={"lora_dropout": 0.0, "shared_prefix": shared},
                                 agent={"prompts_per_step": tasks, "kl_beta": kl_beta, "temperature": 2.0})
    domain = get_domain(cfg.loop.domain)
    backend = make_backend(cfg, domain)
    perturb_lora(backend)
    seeds = domain.seed_tasks()
    return backend, [AgentPrompt(f"t{i}", domain.agent_messages(seeds[i % len(seeds)].spec)) for i in range(tasks)]


def one_step(shared: bool, kl_beta: float) -> dict:
    backend, prompts = tiny_backend(shared, kl_beta, tasks=2)
    seen: dict = {"texts": []}

    def recording_reward(task_ids, texts):
        seen["texts"].extend(texts)
        return reward(task_ids, texts)

    opt = backend.optimizer("agent")

    def keep_grads(optimizer, args, kwargs) -> None:  # the first step's gradients, after the all-reduce
        seen.setdefault("grads", [p.grad.detach().clone() for g in optimizer.param_groups for p in g["params"]])

    opt.register_step_pre_hook(keep_grads)
    update = backend.train_agent(TRAINERS["grpo"], prompts, recording_reward)
    texts = distributed.processes().gather(seen["texts"])  # every process's, in process order
    return {"texts": texts, "loss": update.loss, "grads": seen["grads"], "path": update.metrics["agent/prefix_path"]}


def main(out: str, kl_beta: float) -> None:
    results = {path: one_step(path == "shared", kl_beta) for path in ("shared", "full")}
    if distributed.processes().is_main:
        torch.save(results, out)
    distributed.close()


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]))
