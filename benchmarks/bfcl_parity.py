"""Agreement of this package's BFCL verdicts with the official checker's, per category, on synthetic predictions.

    bash scripts/setup_bfcl_official.sh            # the official package (bfcl-eval) in .venv-bfcl
    python benchmarks/bfcl_parity.py --data-dir PATH/TO/bfcl [--categories multiple parallel] [--show 20]
    python benchmarks/bfcl_parity.py --data-dir PATH/TO/bfcl --multi-turn      # the four multi-turn categories

The predictions are built from the answer keys (genenv_lab.evaluation.bfcl_probe: gold calls, every allowed
alternative, one-field perturbations, every output format, Java/JavaScript writing styles, parallel orders,
irrelevance with and without calls), scored here with the default (official) scoring and by the official package
in its own venv (tests/bfcl_official_driver.py). With ``--multi-turn`` the predictions are the multi-turn answer keys
and their mutations (genenv_lab.evaluation.bfcl_multi_turn_probe: a call dropped, added, duplicated, reordered, an
argument changed or removed, a wrong function, an empty turn, a step split in two, a prose step, positional
arguments), scored by the project's official protocol and by the official ``multi_turn_checker`` (through the
eval runner's ``_evaluate_single_multi_turn_entry``). Prints a table per category and the first disagreements; writes
all of them to --out (JSON). ``--data-dir`` may point at the wheel's own data folder
(.venv-bfcl/lib/python3.*/site-packages/bfcl_eval/data) to include the live categories.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from genenv_lab.evaluation import bfcl  # noqa: E402
from genenv_lab.evaluation import bfcl_multi_turn_probe  # noqa: E402
from genenv_lab.evaluation.bfcl_probe import agreement, official_verdicts, probe_predictions  # noqa: E402
from genenv_lab.evaluation.runner import score_safely  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", required=True, help="a BFCL data folder (BFCL_v*_<category>.json, possible_answer/)")
    ap.add_argument("--categories", nargs="*", help="default: every covered category present in the folder")
    ap.add_argument("--python", default=str(ROOT / ".venv-bfcl" / "bin" / "python"),
                    help="the official package's venv python (default .venv-bfcl/bin/python)")
    ap.add_argument("--out", default="runs/bfcl-parity", help="folder for predictions, verdicts and disagreements")
    ap.add_argument("--show", type=int, default=15, help="disagreements to print")
    ap.add_argument("--multi-turn", action="store_true", help="the multi-turn categories (mutated answer keys)")
    args = ap.parse_args()

    data = Path(args.data_dir)
    cats = args.categories or [c for c in bfcl.available_categories(data)
                               if bfcl.mt.is_multi_turn(c) == args.multi_turn]
    items = {c: bfcl.load_category(data, c) for c in cats}
    flat = [it for c in cats for it in items[c]]
    multi = [it for it in flat if isinstance(it, bfcl.mt.MultiTurnItem)]
    single = [it for it in flat if not isinstance(it, bfcl.mt.MultiTurnItem)]
    rows = probe_predictions(single) + bfcl_multi_turn_probe.probe_predictions(multi)
    by_id = {(it.category, it.id): it for c in cats for it in items[c]}
    t0 = time.perf_counter()
    ours = [score_safely(bfcl.SPEC, by_id[(r["category"], r["id"])], r["category"], r["prediction"]).correct
            for r in rows]
    ours_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    theirs = official_verdicts(rows, str(data), args.python, str(ROOT / "tests" / "bfcl_official_driver.py"),
                               args.out)
    theirs_s = time.perf_counter() - t0
    table = agreement(rows, ours, theirs)

    print(f"{len(rows)} predictions on {sum(len(v) for v in items.values())} items; scored here in {ours_s:.1f} s, "
          f"officially in {theirs_s:.1f} s")
    print(f"{'category':<24}{'n':>8}{'agree':>9}{'rate':>10}{'official ok':>13}{'ours ok':>9}{'off. errors':>13}")
    for c in cats + ["all"]:
        t = table[c]
        print(f"{c:<24}{t['n']:>8}{t['agree']:>9}{t['rate']:>10.5f}{t['official_correct']:>13}"
              f"{t['ours_correct']:>9}{t['official_errors']:>13}")
    bad = table["all"]["disagreements"]
    for d in bad[:args.show]:
        print(f"- {d['id']} [{d.get('probe') or d.get('kind')}] ours={d['ours']} official={d['official']} "
              f"{d['official_error'] or ''}\n    {str(d['prediction'])[:300]!r}")
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "disagreements.json").write_text(json.dumps(bad, indent=1, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
