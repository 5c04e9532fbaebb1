"""A run's agent on its domain's held-out items: the greedy answer (what the held-out score counts) beside the
sampled success rate at the rollout temperature (docs/curriculum_cpu.md, count).

    python benchmarks/heldout_answers.py runs/demo/runs/cpu-demo_genenv-s0            # the last epoch's agent
    python benchmarks/heldout_answers.py runs/demo/runs/cpu-demo_genenv-s0 --epoch 0  # the untrained agent

Only for reading a run: nothing here is ever used to choose a setting.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch

from genenv_lab.backends.factory import make_backend
from genenv_lab.domains import domain_of
from genenv_lab.runlog import adapter_dir, read_config, read_state


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", type=Path)
    ap.add_argument("--epoch", type=int, default=None, help="default: the last complete epoch (0: untrained)")
    ap.add_argument("--samples", type=int, default=16)
    args = ap.parse_args(argv)
    cfg = read_config(args.run)
    domain = domain_of(cfg)
    items = domain.heldout_tasks()
    if not items:
        raise SystemExit(f"domain {cfg.loop.domain!r} has no held-out set")
    epoch = int(read_state(args.run).get("last_complete_epoch", 0)) if args.epoch is None else args.epoch
    backend = make_backend(cfg, domain)
    if epoch:
        backend.load_adapters(adapter_dir(args.run, epoch))
    messages = [domain.agent_messages(t.spec) for t in items]
    tokens = cfg.agent.max_completion_length
    greedy = backend.generate("agent", messages, n=1, max_new_tokens=tokens, temperature=0.0)
    torch.manual_seed(0)
    sampled = backend.generate("agent", messages, n=args.samples, max_new_tokens=tokens,
                               temperature=cfg.agent.temperature)
    print(f"{args.run} after epoch {epoch}: item, greedy right?, sampled success ({args.samples} at temperature "
          f"{cfg.agent.temperature}), greedy answer")
    right = 0
    for item, (g,), outs in zip(items, greedy, sampled):
        ok = domain.safe_score(item.spec, g)[0] >= cfg.agent.success_threshold
        right += ok
        rate = sum(domain.safe_score(item.spec, o)[0] >= cfg.agent.success_threshold for o in outs) / len(outs)
        print(f"  {item.spec.text.splitlines()[0][:24]:24s} {'yes' if ok else 'no ':3s} {rate:.2f}  "
              f"{(g.splitlines() or [''])[0][:70]}")
    print(f"greedy: {right}/{len(items)} = {right / len(items):.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
