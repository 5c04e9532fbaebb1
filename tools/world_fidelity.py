"""Does a carry world model's agent add as its teacher does? Per kind of sum (its length and the columns it carries
into), the success rate of sampled rollouts of the model against the teacher's rate
(:meth:`genenv_lab.domains.carry.CarryWorld.success_probability`); docs/research/curriculum_cpu.md, "the carry world".

    python -m tools.world_fidelity genenv_lab/data/world_models/world-carry-f642c4defa26 --sums 160

Then, over the rollouts that failed, how often each column's sum was written wrong (where the model fumbles: a
dropped carry is one too few in the column after a carry; a column off in both directions is an addition table the
model has not learnt). Sums of uniform digits and uniform length, G rollouts each at temperature 1 (the agent's
sampling in the loop), one torch thread. Written by hand: a loop of ``generate`` calls around the domain's own
prompt and scorer.
"""

from __future__ import annotations

import argparse
import random
from collections import defaultdict
from typing import Sequence


def fidelity(model_dir: str, sums: int = 160, rollouts: int = 8, seed: int = 1,
             wrong: dict[str, int] | None = None) -> list[tuple]:
    """Rows of (digits, carry columns, the model's success rate, the teacher's rate, rollouts), by kind of sum;
    ``wrong``, when given, counts each column written wrong in a failed rollout (by the column's name; ``missing``
    when the reply has fewer columns than the answer)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from genenv_lab.domains.carry import (COLUMN_NAMES, MAX_DIGITS, MIN_DIGITS, CarryDomain, CarryWorld,
                                          carry_columns, column_sums)

    torch.set_num_threads(1)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    domain, world, rng = CarryDomain(), CarryWorld(), random.Random(seed)
    torch.manual_seed(seed)
    wins: dict[tuple, list] = defaultdict(lambda: [0.0, 0, 0.0])
    for _ in range(sums):
        digits = rng.randint(MIN_DIGITS, MAX_DIGITS)
        a, b = (rng.randint(10 ** (digits - 1), 10 ** digits - 1) for _ in range(2))
        spec = domain._parse(f"Task: {a} + {b}", False).spec
        prompt = tokenizer.apply_chat_template(domain.agent_messages(spec), tokenize=False, add_generation_prompt=True)
        ids = tokenizer(prompt, return_tensors="pt").input_ids.repeat(rollouts, 1)
        with torch.no_grad():
            out = model.generate(ids, do_sample=True, temperature=1.0, max_new_tokens=domain.recommended["agent"]
                                 ["max_completion_length"], pad_token_id=tokenizer.pad_token_id)
        texts = tokenizer.batch_decode(out[:, ids.shape[1]:], skip_special_tokens=True)
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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", help="a carry world model's folder")
    parser.add_argument("--sums", type=int, default=160, help="sums drawn (default 160)")
    parser.add_argument("--rollouts", type=int, default=8, help="sampled rollouts of each (default 8)")
    args = parser.parse_args(argv)
    wrong: dict[str, int] = {}
    print(f"{'digits':>6} {'carries into':<14} {'model':>6} {'teacher':>7} {'rollouts':>8}")
    for digits, columns, model, teacher, n in fidelity(args.model, args.sums, args.rollouts, wrong=wrong):
        print(f"{digits:>6} {' '.join(map(str, columns)) or 'none':<14} {model:>6.2f} {teacher:>7.2f} {n:>8}")
    print("columns written wrong in failed rollouts: " + (", ".join(f"{k} {v}" for k, v in wrong.items()) or "none"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
