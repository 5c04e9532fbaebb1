"""One RWR update (genenv_lab.trainers.env.update_env, through the engine) of the tiny model's env adapter on
fixed examples, in however many processes this script was launched with (``python`` or ``torchrun
--nproc_per_node N``), once per batch size, each from a fresh backend; the main process saves the adapters and the
updates' figures to ``OUT`` (tests/test_distributed.py compares 1 and 2 processes).

    python tests/rwr_step_driver.py OUT.pt BATCH_SIZE [BATCH_SIZE ...]
"""

import sys

import torch

from genenv_lab.backends import distributed
from genenv_lab.backends.base import EnvExample
from genenv_lab.backends.factory import make_backend
from genenv_lab.config import preset
from genenv_lab.domains import get_domain
from genenv_lab.trainers.env import update_env


def update(batch_size: int) -> dict:
    cfg = preset("tiny").replace(model={"lora_dropout": 0.0},  # no dropout: the processes' masks would differ
                                 env={"batch_size": batch_size, "max_steps": 3, "kl_cap": 100.0, "lr": 1e-2})
    backend = make_backend(cfg, get_domain(cfg.loop.domain))
    examples = [EnvExample([{"role": "user", "content": f"Write a task like {i} + {2 * i}."}],
                           f"Question: {i} + {i * i} + 1" + " * 3" * i, 0.25 + 0.5 * i) for i in range(5)]
    result = update_env(backend, cfg, examples)
    return {"env": backend.adapter_state("env"), "loss": result.loss, "kl": result.kl, "steps": result.steps}


def main(out: str, batch_sizes: list[int]) -> None:
    results = {b: update(b) for b in batch_sizes}
    if distributed.processes().is_main:
        torch.save(results, out)
    distributed.close()


if __name__ == "__main__":
    main(sys.argv[1], [int(b) for b in sys.argv[2:]])
