"""Does a world's untrained simulator follow the hint? For parents at chosen levels, the level shift of the
variations the simulator writes before any update, under each hint its context can state ("similar": no attempts
yet, what it is told in epoch 1; "harder": the lineage solved everything; "easier": it solved nothing), and the
untrained agent's success at each level. A simulator can only climb past its seeds if "harder" gives it
variations a level or two above the parent at the agent's frontier: its RWR update sharpens what it writes, it
cannot write what it never samples (docs/research/curriculum_cpu.md, "Does the simulator follow the hint?").

Training side only: a parent is a training task of the domain's world (``task_at``), and one the domain's parser
rejects as a held-out item is skipped, so no held-out item is generated from or scored.

    python -m tools.hint_following --preset cpu-dry [--set world.env_steps=600] [--levels 4 6 8 10 12 14 16]
                                   [--n 48] [--csv FILE]

Written by hand: a measurement of this project's loop pieces, which no library makes.
"""

from __future__ import annotations

import argparse
import random
from typing import Sequence

import pandas as pd

BINS = ("below", "same", "+1..2", "+3 or more", "invalid")
HINTS = ("similar", "harder", "easier")


def shift_bins(parent_level: int, levels: Sequence[int | None]) -> dict[str, float]:
    """The shares of ``levels`` (a variation's level, None when the generation was not a valid task) below the
    parent's, at it, one or two above, three or more above, and invalid; zeros when there is none.

    >>> shift_bins(8, [7, 8, 9, 10, 12, None, 8, 8])
    {'below': 0.125, 'same': 0.375, '+1..2': 0.25, '+3 or more': 0.125, 'invalid': 0.125}
    """
    counts = dict.fromkeys(BINS, 0)
    for level in levels:
        if level is None:
            counts["invalid"] += 1
        else:
            shift = level - parent_level
            counts["below" if shift < 0 else "same" if shift == 0 else "+1..2" if shift <= 2 else "+3 or more"] += 1
    total = len(levels)
    return {k: (v / total if total else 0.0) for k, v in counts.items()}


def hint_stats(hint: str, description: str, group: int):
    """The lineage statistics whose context states ``hint`` (domains.base.Domain.env_messages)."""
    from genenv_lab.domains import LineageStats

    if hint == "similar":
        return LineageStats()
    solved = 1.0 if hint == "harder" else 0.0
    return LineageStats(successes=int(solved * group), rollouts=group, recent=((description, solved),))


def measure(cfg, levels: Sequence[int], n: int, seed: int = 0) -> pd.DataFrame:
    """One row per (hint, parent level): the parent, the shares of :func:`shift_bins` over ``n`` variations, and
    the untrained agent's success on the parent (``n`` rollouts); parents the domain rejects are left out."""
    import torch
    from tqdm.auto import tqdm

    from genenv_lab.backends.factory import make_backend
    from genenv_lab.domains import domain_of
    from genenv_lab.coevolution.simulator import env_sampling

    domain = domain_of(cfg)
    if domain.world is None:
        raise SystemExit(f"domain {domain.name!r} has no world with levels; this tool reads count- and times-like "
                         "domains")
    world, rng = domain.world(), random.Random(seed)
    torch.manual_seed(seed)
    backend = make_backend(cfg, domain)
    g, sampling = cfg.agent.num_generations, env_sampling(cfg, domain)
    rows = []
    for level in tqdm(levels, desc="parent levels"):
        parsed = domain.parse(world.task_at(rng, level))
        if parsed.spec is None:
            print(f"level {level}: no parent ({parsed.reason}); skipped")
            continue
        spec = parsed.spec
        outs = backend.generate("agent", [domain.agent_messages(spec)], n=n, temperature=cfg.agent.temperature,
                                max_new_tokens=cfg.agent.max_completion_length)[0]
        solved = sum(domain.score(spec, o) for o in outs) / n
        for hint in HINTS:
            stats = hint_stats(hint, domain.describe(spec.features), g)
            messages = domain.env_messages(spec, stats, cfg.curriculum.alpha, cfg.curriculum.k_min)
            raw = backend.generate("env", [messages], n=n, **sampling)[0]
            written = []
            for text in raw:
                child = domain.parse((domain.env_prefill or "") + text).spec
                written.append(None if child is None else child.features.get("level"))
            rows.append({"hint": hint, "parent": spec.text, "parent_level": level, "agent_solves": solved,
                         **shift_bins(level, written)})
    return pd.DataFrame(rows)


def main(argv: Sequence[str] | None = None) -> pd.DataFrame:
    from genenv_lab.config import preset
    from genenv_lab.cli.flags import apply_settings

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", default="cpu-dry")
    p.add_argument("--set", action="append", default=[], metavar="SECTION.FIELD=VALUE")
    p.add_argument("--levels", type=int, nargs="+", default=[4, 6, 8, 10, 12, 14, 16])
    p.add_argument("--n", type=int, default=48, help="variations (and agent rollouts) per parent and hint")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--csv", help="also write the table here")
    args = p.parse_args(argv)
    if args.n < 1:
        p.error("--n must be at least 1")
    table = measure(apply_settings(preset(args.preset), args.set), args.levels, args.n, args.seed)
    with pd.option_context("display.width", 160, "display.max_columns", 20):
        print(table.drop(columns="parent").round(2).to_string(index=False))
    if args.csv:
        table.to_csv(args.csv, index=False)
    return table


if __name__ == "__main__":
    main()
