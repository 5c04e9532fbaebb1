"""Does a world model's agent answer as its teacher does? Read for the worlds whose difficulty the task's text does
not show (docs/research/curriculum_cpu.md, "the carry world" and "the facts world"); the world is the model's own
(its ``genenv_world.json``).

    python -m tools.world_fidelity genenv_lab/data/world_models/world-carry-f642c4defa26 --sums 160

``carry``: per kind of sum (its length and the columns it carries into), the success rate of sampled rollouts of the
model against the teacher's rate (:meth:`genenv_lab.domains.carry.CarryWorld.success_probability`); then, over the
rollouts that failed, how often each column's sum was written wrong (a dropped carry is one too few in the column
after a carry; a column off in both directions is an addition table the model has not learnt).

``facts``: per sum (under ten as one class, then 10-18), how often the model writes a fact of that sum right, against
the teacher's mastery (:meth:`genenv_lab.domains.facts.FactsWorld.mastery`), and how often a wrong one is the
fact's own slip (:func:`genenv_lab.domains.facts.slip`).

Tasks of uniform digits and uniform length, G rollouts each at temperature 1 (the agent's sampling in the loop), one
torch thread. Written by hand: a loop of ``generate`` calls around the domain's own prompt and scorer.
"""

from __future__ import annotations

import argparse
import random
from collections import defaultdict
from typing import Sequence


def _sampler(model_dir: str, domain, rollouts: int, seed: int):
    """``replies(spec)``: ``rollouts`` sampled replies of the model in ``model_dir`` to the domain's agent prompt of
    ``spec`` (temperature 1, one torch thread)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(1)
    torch.manual_seed(seed)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    limit = domain.recommended["agent"]["max_completion_length"]

    def replies(spec) -> list[str]:
        prompt = tokenizer.apply_chat_template(domain.agent_messages(spec), tokenize=False, add_generation_prompt=True)
        ids = tokenizer(prompt, return_tensors="pt").input_ids.repeat(rollouts, 1)
        with torch.no_grad():
            out = model.generate(ids, do_sample=True, temperature=1.0, max_new_tokens=limit,
                                 pad_token_id=tokenizer.pad_token_id)
        return tokenizer.batch_decode(out[:, ids.shape[1]:], skip_special_tokens=True)

    return replies


def fidelity(model_dir: str, sums: int = 160, rollouts: int = 8, seed: int = 1,
             wrong: dict[str, int] | None = None) -> list[tuple]:
    """Carry: rows of (digits, carry columns, the model's success rate, the teacher's rate, rollouts), by kind of
    sum; ``wrong``, when given, counts each column written wrong in a failed rollout (by the column's name;
    ``missing`` when the reply has fewer columns than the answer)."""
    from genenv_lab.domains.carry import (COLUMN_NAMES, MAX_DIGITS, MIN_DIGITS, CarryDomain, CarryWorld,
                                          carry_columns, column_sums)

    domain, world, rng = CarryDomain(), CarryWorld(), random.Random(seed)
    replies = _sampler(model_dir, domain, rollouts, seed)
    wins: dict[tuple, list] = defaultdict(lambda: [0.0, 0, 0.0])
    for _ in range(sums):
        digits = rng.randint(MIN_DIGITS, MAX_DIGITS)
        a, b = (rng.randint(10 ** (digits - 1), 10 ** digits - 1) for _ in range(2))
        spec = domain._parse(f"Task: {a} + {b}", False).spec
        texts = replies(spec)
        row = wins[(digits, carry_columns(a, b))]
        scores = [domain.score(spec, t) for t in texts]
        row[0] += sum(scores)
        if wrong is not None:
            answer = column_sums(a, b).split(", ")
            for text, score in zip(texts, scores):
                written = text.strip().split(", ")
                for name, want, got in zip(COLUMN_NAMES, answer, written + ["missing"] * len(answer)):
                    if score < 1 and want != got:
                        key = "missing" if got == "missing" else name
                        wrong[key] = wrong.get(key, 0) + 1
        row[1] += rollouts
        row[2] = world.success_probability(a, b)
    return [(d, c, s / n, p, n) for (d, c), (s, n, p) in sorted(wins.items())]


def facts_fidelity(model_dir: str, tasks: int = 160, rollouts: int = 8, seed: int = 1) -> list[tuple]:
    """Facts: rows of (sum class, the model's rate of writing such a fact right, the teacher's mastery, the share of
    its wrong sums that are the fact's own slip, facts read), the class ``0`` standing for every sum under ten. A
    reply with fewer sums than pairs counts its missing facts as wrong."""
    from genenv_lab.domains.facts import PAIRS_MAX, PAIRS_MIN, TEN, FactsDomain, FactsWorld, slip, task_text

    domain, world, rng = FactsDomain(), FactsWorld(), random.Random(seed)
    replies = _sampler(model_dir, domain, rollouts, seed)
    counts: dict[int, list[int]] = defaultdict(lambda: [0, 0, 0])  # right, slips, read
    for _ in range(tasks):
        pairs = [(rng.randint(1, 9), rng.randint(1, 9)) for _ in range(rng.randint(PAIRS_MIN, PAIRS_MAX))]
        spec = domain._parse(task_text(pairs), False).spec
        for text in replies(spec):
            written = text.split("\n", 1)[0].strip().rstrip(".").split()
            for (x, y), got in zip(pairs, written + [""] * len(pairs)):
                row = counts[x + y if x + y >= TEN else 0]
                row[0] += got == str(x + y)
                row[1] += got == str(slip(x, y))
                row[2] += 1
    return [(s, right / n, world.mastery(s or TEN - 1), slips / max(n - right, 1), n)
            for s, (right, slips, n) in sorted(counts.items())]


def _model_domain(model_dir: str) -> str:
    import json
    from pathlib import Path

    from genenv_lab.models.world import MARKER

    try:
        return str(json.loads((Path(model_dir) / MARKER).read_text())["domain"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SystemExit(f"{model_dir}: not a world model's folder ({MARKER} unreadable: {exc})") from None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", help="a carry or facts world model's folder")
    parser.add_argument("--sums", type=int, default=160, help="tasks drawn (default 160)")
    parser.add_argument("--rollouts", type=int, default=8, help="sampled rollouts of each (default 8)")
    args = parser.parse_args(argv)
    domain = _model_domain(args.model)
    if domain == "facts":
        print(f"{'sum':>5} {'model':>6} {'teacher':>7} {'slips of wrong':>14} {'facts':>6}")
        for total, model, teacher, slips, n in facts_fidelity(args.model, args.sums, args.rollouts):
            print(f"{total or '<10':>5} {model:>6.2f} {teacher:>7.2f} {slips:>14.2f} {n:>6}")
        return 0
    if domain != "carry":
        raise SystemExit(f"{args.model}: a {domain} world model; this tool reads the carry and facts worlds")
    wrong: dict[str, int] = {}
    print(f"{'digits':>6} {'carries into':<14} {'model':>6} {'teacher':>7} {'rollouts':>8}")
    for digits, columns, model, teacher, n in fidelity(args.model, args.sums, args.rollouts, wrong=wrong):
        print(f"{digits:>6} {' '.join(map(str, columns)) or 'none':<14} {model:>6.2f} {teacher:>7.2f} {n:>8}")
    print("columns written wrong in failed rollouts: " + (", ".join(f"{k} {v}" for k, v in wrong.items()) or "none"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
