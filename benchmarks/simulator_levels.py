"""How well a world model's untrained simulator writes the level it is asked for (docs/research/curriculum_cpu.md,
count).

    python benchmarks/simulator_levels.py                                   # cpu-demo's world model, temperature 0.6
    python benchmarks/simulator_levels.py --temperature 1.0
    python benchmarks/simulator_levels.py --set world.env_steps=500  # another pre-training recipe (built once)

For each level L it builds the loop's own simulator prompt for a seed task at level L whose lineage's newest recent
task is at L with p̂ = α (the "similar" hint), samples ``--samples`` variations of ``--contexts`` such prompts with
the domain's format constraint, and prints the valid share and the levels written. The teacher the world model
imitates writes L ± 1 here, so the spread printed is the model's imitation error.
"""

from __future__ import annotations

import argparse
import collections
import random

import torch

from genenv_lab.backends.factory import make_backend
from genenv_lab.cli.flags import apply_settings
from genenv_lab.config import preset
from genenv_lab.domains import LineageStats, get_domain
from genenv_lab.models.world import world_class


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="cpu-demo")
    ap.add_argument("--temperature", type=float, default=None, help="default: the preset's env.temperature")
    ap.add_argument("--contexts", type=int, default=8)
    ap.add_argument("--samples", type=int, default=4)
    ap.add_argument("--set", action="append", default=[], help="SECTION.FIELD=VALUE, as genenv-lab run --set")
    args = ap.parse_args(argv)
    cfg = apply_settings(preset(args.preset), args.set)
    torch.manual_seed(0)
    domain = get_domain(cfg.loop.domain)
    backend = make_backend(cfg, domain)
    world = world_class(cfg.loop.domain)()
    rng = random.Random(0)
    alpha, k_min = cfg.curriculum.alpha, cfg.curriculum.k_min
    g = cfg.agent.num_generations
    temperature = cfg.env.temperature if args.temperature is None else args.temperature
    print(f"{args.preset} ({cfg.loop.domain}), temperature {temperature}: level asked → valid, mean, levels written")
    for lvl in range(world.lowest + 1, world.highest + 1, 2):
        stats = LineageStats(successes=round(alpha * g), rollouts=g,
                             recent=((domain.describe({"level": lvl}), alpha),))
        prompts = [domain.env_messages(domain.parse(world.task_at(rng, lvl)).spec, stats, alpha, k_min)
                   for _ in range(args.contexts)]
        outs = backend.generate("env", prompts, n=args.samples, max_new_tokens=cfg.env.max_new_tokens,
                                temperature=temperature, stop=domain.env_stop, alphabet=domain.env_alphabet)
        parsed = [domain.safe_parse(domain.env_prefill + o) for row in outs for o in row]
        levels = [p.spec.features["level"] for p in parsed if p.valid]
        mean = sum(levels) / len(levels) if levels else float("nan")
        print(f"{lvl:3d} → {len(levels)}/{len(parsed)} valid, mean {mean:.1f}, "
              f"{sorted(collections.Counter(levels).items())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
