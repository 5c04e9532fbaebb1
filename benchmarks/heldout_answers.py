"""A run's agent on its domain's held-out items: the greedy answer (what the held-out score counts) beside the
sampled success rate at the rollout temperature (docs/research/curriculum_cpu.md, count).

    python benchmarks/heldout_answers.py runs/demo/runs/cpu-demo_genenv-s0            # the last epoch's agent
    python benchmarks/heldout_answers.py runs/demo/runs/cpu-demo_genenv-s0 --epoch 0  # the untrained agent
    python benchmarks/heldout_answers.py --comparison runs/cmp-count [--per-item]     # every run of a comparison:
        greedy and sampled held-out success, untrained and last epoch, then per arm (mean ± std over seeds) and,
        with --per-item, each held-out item's sampled success per arm

Sampled success (the mean over items of the share of ``--samples`` answers at the rollout temperature that are
right) is what GRPO moves directly; greedy exact match counts an item only once its most likely answer is right, so
a comparison can differ in one and not the other. Only for reading runs: nothing here is ever used to choose a
setting, and the held-out score the runs log stays the greedy one.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import torch

from genenv_lab.backends.factory import make_backend
from genenv_lab.domains import domain_of
from genenv_lab.rundir.layout import adapter_dir
from genenv_lab.rundir.read import read_config, read_state


def answers(run: Path, epoch: int | None, samples: int, backend=None):
    """(epoch, greedy rate, sampled rate, rows of (item text, greedy right, sampled rate, greedy answer), backend).
    A given backend is reused with the epoch's adapters loaded; epoch 0 (the untrained agent) gets a fresh one."""
    cfg = read_config(run)
    domain = domain_of(cfg)
    items = domain.heldout_tasks()
    if not items:
        raise SystemExit(f"domain {cfg.loop.domain!r} has no held-out set")
    epoch = int(read_state(run).get("last_complete_epoch", 0)) if epoch is None else epoch
    if backend is None or not epoch:
        backend = make_backend(cfg, domain)
    if epoch:
        backend.load_adapters(adapter_dir(run, epoch))
    messages = [domain.agent_messages(t.spec) for t in items]
    tokens = cfg.agent.max_completion_length
    greedy = backend.generate("agent", messages, n=1, max_new_tokens=tokens, temperature=0.0)
    torch.manual_seed(0)
    sampled = backend.generate("agent", messages, n=samples, max_new_tokens=tokens, temperature=cfg.agent.temperature)
    threshold = cfg.agent.success_threshold
    rows = []
    for item, (g,), outs in zip(items, greedy, sampled):
        ok = domain.safe_score(item.spec, g)[0] >= threshold
        rate = sum(domain.safe_score(item.spec, o)[0] >= threshold for o in outs) / len(outs)
        rows.append((item.spec.text.splitlines()[0], ok, rate, (g.splitlines() or [""])[0]))
    return epoch, sum(r[1] for r in rows) / len(rows), sum(r[2] for r in rows) / len(rows), rows, backend


def one_run(args) -> None:
    epoch, greedy, sampled, rows, _ = answers(args.run, args.epoch, args.samples)
    cfg = read_config(args.run)
    print(f"{args.run} after epoch {epoch}: item, greedy right?, sampled success ({args.samples} at temperature "
          f"{cfg.agent.temperature}), greedy answer")
    for text, ok, rate, answer in rows:
        print(f"  {text[:24]:24s} {'yes' if ok else 'no ':3s} {rate:.2f}  {answer[:70]}")
    print(f"greedy: {sum(r[1] for r in rows)}/{len(rows)} = {greedy:.3f}; sampled: {sampled:.3f}")


def comparison(args) -> None:
    runs = sorted(p for p in (args.comparison / "runs").iterdir() if (p / "state.json").is_file())
    per_arm: dict[str, list[tuple[float, float, float, float]]] = {}
    per_item: dict[str, dict[str, list[float]]] = {}
    # the untrained agent is the same model in every run of a comparison (one preset, adapters start as identity)
    _, g0, s0, rows0, backend = answers(runs[0], 0, args.samples)
    print(f"{'run':32s} {'greedy 0':>9s} {'greedy end':>10s} {'sampled 0':>10s} {'sampled end':>11s}")
    for run in runs:
        epoch, g1, s1, rows, backend = answers(run, None, args.samples, backend)
        arm = run.name.rsplit("-s", 1)[0]
        per_arm.setdefault(arm, []).append((g0, g1, s0, s1))
        for text, _, rate, _ in rows:
            per_item.setdefault(text, {}).setdefault(arm, []).append(rate)
        print(f"{run.name:32s} {g0:9.3f} {g1:10.3f} {s0:10.3f} {s1:11.3f}   (epoch {epoch})")
    print(f"\nper arm, mean ± std over seeds ({args.samples} samples per item)")
    for arm, values in per_arm.items():
        cols = list(zip(*values))
        fmt = [f"{statistics.mean(c):.3f} ± {statistics.pstdev(c):.3f}" for c in cols]
        print(f"{arm:32s} greedy {fmt[0]} → {fmt[1]}   sampled {fmt[2]} → {fmt[3]}")
    if args.per_item:
        arms = list(per_arm)
        print(f"\nsampled success per held-out item, untrained and per arm at the end (mean over seeds)\n"
              f"{'item':24s} {'untrained':>9s} " + " ".join(f"{a.split('_', 1)[-1][:14]:>14s}" for a in arms))
        for text, _, rate0, _ in rows0:
            print(f"{text[:24]:24s} {rate0:9.2f} "
                  + " ".join(f"{statistics.mean(per_item[text][a]):14.2f}" for a in arms))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", type=Path, nargs="?")
    ap.add_argument("--comparison", type=Path, help="a `genenv-lab compare --out` folder: every run in it")
    ap.add_argument("--epoch", type=int, default=None, help="default: the last complete epoch (0: untrained)")
    ap.add_argument("--samples", type=int, default=16)
    ap.add_argument("--per-item", action="store_true", help="with --comparison: sampled success per held-out item")
    args = ap.parse_args(argv)
    if (args.run is None) == (args.comparison is None):
        ap.error("give a run directory or --comparison DIR")
    comparison(args) if args.comparison else one_run(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
