"""How closely a world model's untrained agent keeps its teacher's mastery curve (docs/research/curriculum_cpu.md,
count).

    python benchmarks/agent_steps.py                                   # cpu-demo's world model
    python benchmarks/agent_steps.py --set world.env_steps=500  # another pre-training recipe (built once)
    python benchmarks/agent_steps.py --run runs/cmp-count/runs/cpu-demo_genenv-s1  # a run's agent, last epoch

For each level b it samples ``--samples`` counts ``1 to b`` from the agent at temperature 1 (the loop's rollout
temperature) and prints the success rate beside the teacher's (``CountWorld.success_probability``), then, over all
samples, each step's accuracy (the step to n taken right, given the count reached n − 1 right) beside
``CountWorld.mastery(n)``. A step whose accuracy is far below the teacher's floor is one GRPO can hardly find.
Last, the most common first slips of the counts that went wrong before their end: a wrong number after n (``after
11: 13``, a skipped 12) or an early stop (``after 11: stop``), which tell a missing step from a learnt habit of ending.
"""

from __future__ import annotations

import argparse
import collections
from pathlib import Path

import torch

from genenv_lab.backends.factory import make_backend
from genenv_lab.cli.flags import apply_settings
from genenv_lab.config import preset
from genenv_lab.domains import get_domain
from genenv_lab.models.world import world_class
from genenv_lab.rundir.layout import adapter_dir
from genenv_lab.rundir.read import read_config, read_state


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="cpu-demo")
    ap.add_argument("--samples", type=int, default=64)
    ap.add_argument("--set", action="append", default=[], help="SECTION.FIELD=VALUE, as genenv-lab run --set")
    ap.add_argument("--run", type=Path, help="probe this run's agent (its config; adapters of --epoch)")
    ap.add_argument("--epoch", type=int, help="with --run: default the last complete epoch")
    args = ap.parse_args(argv)
    cfg = read_config(args.run) if args.run else apply_settings(preset(args.preset), args.set)
    if cfg.loop.domain != "count":
        raise SystemExit(f"this probe reads counts; {args.run or args.preset} runs {cfg.loop.domain}")
    torch.manual_seed(0)
    domain = get_domain("count")
    backend = make_backend(cfg, domain)
    if args.run:
        epoch = int(read_state(args.run).get("last_complete_epoch", 0)) if args.epoch is None else args.epoch
        if epoch:
            backend.load_adapters(adapter_dir(args.run, epoch))
        args.preset = f"{args.run} after epoch {epoch}"
    world = world_class("count")()
    right, tried, slips = collections.Counter(), collections.Counter(), collections.Counter()
    print(f"{args.preset}: count 1 to b, {args.samples} samples at temperature 1 → success (teacher's)")
    for b in range(world.lowest, world.highest + 1):
        spec = domain._parse(f"Task: 1 to {b}", decontaminate=False).spec
        outs = backend.generate("agent", [domain.agent_messages(spec)], n=args.samples,
                                max_new_tokens=cfg.agent.max_completion_length, temperature=1.0)[0]
        wins = sum(domain.score(spec, o) for o in outs)
        for o in outs:
            prev, words = 1, o.split("\n", 1)[0].split()
            for word in words:
                if not word.isdigit() or prev + 1 >= b:
                    break
                tried[prev + 1] += 1
                if int(word) != prev + 1:
                    slips[f"after {prev}: {word}"] += 1
                    break
                right[prev + 1] += 1
                prev = int(word)
            else:  # the words ran out before the end (prev < b always: a step to b is never taken here)
                slips[f"after {prev}: stop"] += 1
        print(f"  {b:3d}: {wins / len(outs):.2f} ({world.success_probability(1, b):.2f})")
    print("step to n: accuracy (teacher's mastery), attempts")
    for n in sorted(tried):
        print(f"  {n:3d}: {right[n] / tried[n]:.2f} ({world.mastery(n):.2f}), {tried[n]}")
    print("the first slip of the counts that went wrong before their end (most common first):")
    for slip, k in slips.most_common(8):
        print(f"  {slip}: {k}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
