"""Fuzz every domain's parse and score with hostile text; print what happened and how long each call took.

    python benchmarks/fuzz_domains.py              # 10,000 texts per domain
    python benchmarks/fuzz_domains.py --n 1000 --domain times

Target (issue "nothing lost, nothing stuck"): 0 uncaught exceptions, every call ≤ 1 s, every rejection with a reason.
The texts are :func:`tools.hostile.hostile_cases` and random recombinations of hostile atoms.
"""

from __future__ import annotations

import argparse
import collections
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repository's tools/ (not installed)

from genenv_lab.domains import DOMAINS  # noqa: E402 - after the path
from tools.hostile import hostile_cases, random_hostile  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--domain", choices=sorted(DOMAINS), action="append")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    worst_overall = 0.0
    for name in args.domain or sorted(DOMAINS):
        domain = DOMAINS[name]()
        spec = domain.seed_tasks()[0].spec
        rng = random.Random(args.seed)
        texts = hostile_cases() + [random_hostile(rng) for _ in range(max(0, args.n - len(hostile_cases())))]
        uncaught, no_reason, valid = 0, 0, 0
        reasons: collections.Counter[str] = collections.Counter()
        score_errors: collections.Counter[str] = collections.Counter()
        worst, total = 0.0, 0.0
        for text in texts:
            for call in ("parse", "score"):
                start = time.perf_counter()
                try:
                    if call == "parse":
                        parsed = domain.safe_parse(text)
                        if parsed.valid:
                            valid += 1
                        elif parsed.reason:
                            reasons[parsed.reason.split(":")[0][:60]] += 1
                        else:
                            no_reason += 1
                    else:
                        _, error = domain.safe_score(spec, text)
                        if error:
                            score_errors[error[:60]] += 1
                except Exception:  # noqa: BLE001 - counting what the guard let through is the point
                    uncaught += 1
                took = time.perf_counter() - start
                worst, total = max(worst, took), total + took
        worst_overall = max(worst_overall, worst)
        print(f"{name}: {len(texts)} texts, uncaught {uncaught}, rejections without a reason {no_reason}, "
              f"valid {valid}, slowest call {worst * 1000:.1f} ms, mean {total / (2 * len(texts)) * 1000:.2f} ms")
        print(f"  top rejections: {reasons.most_common(4)}")
        if score_errors:
            print(f"  score errors (reward 0): {score_errors.most_common(4)}")
    print(f"slowest call overall: {worst_overall * 1000:.1f} ms (target ≤ 1000 ms)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
