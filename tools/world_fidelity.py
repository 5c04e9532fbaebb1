"""Does a carry world model's agent add as its teacher does? Per kind of sum (its length and the columns it carries
into), the success rate of sampled rollouts of the model against the teacher's rate
(:meth:`genenv_lab.domains.carry.CarryWorld.success_probability`); docs/research/curriculum_cpu.md, "the carry world".

    python -m tools.world_fidelity genenv_lab/data/world_models/world-carry-f642c4defa26 --sums 160

Sums of uniform digits and uniform length, G rollouts each at temperature 1 (the agent's sampling in the loop), one
torch thread. Written by hand: a loop of ``generate`` calls around the domain's own prompt and scorer.
"""

from __future__ import annotations

import argparse
import random
from collections import defaultdict
from typing import Sequence


def fidelity(model_dir: str, sums: int = 160, rollouts: int = 8, seed: int = 1) -> list[tuple]:
    """Rows of (digits, carry columns, the model's success rate, the teacher's rate, rollouts), by kind of sum."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from genenv_lab.domains.carry import MAX_DIGITS, MIN_DIGITS, CarryDomain, CarryWorld, carry_columns

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
        row[0] += sum(domain.score(spec, t) for t in texts)
        row[1] += rollouts
        row[2] = world.success_probability(a, b)
    return [(d, c, s / n, p, n) for (d, c), (s, n, p) in sorted(wins.items())]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", help="a carry world model's folder")
    parser.add_argument("--sums", type=int, default=160, help="sums drawn (default 160)")
    parser.add_argument("--rollouts", type=int, default=8, help="sampled rollouts of each (default 8)")
    args = parser.parse_args(argv)
    print(f"{'digits':>6} {'carries into':<14} {'model':>6} {'teacher':>7} {'rollouts':>8}")
    for digits, columns, model, teacher, n in fidelity(args.model, args.sums, args.rollouts):
        print(f"{digits:>6} {' '.join(map(str, columns)) or 'none':<14} {model:>6.2f} {teacher:>7.2f} {n:>8}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
