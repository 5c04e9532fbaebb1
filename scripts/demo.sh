#!/usr/bin/env bash
# Set up (see setup.sh), then run the cpu-dry comparison on CPU: GenEnv against the fixed set (`static`) in the
# counting world whose fixed set is soon mostly solved (easy seeds, a simulator that copies their level;
# docs/curriculum_cpu.md, "Two regimes"), one seed each. It ends with the
# verdict: genenv's final held-out score against static's, the agent rollouts genenv needed to reach it, whether
# the curriculum paid, and whether the fixed set ran dry; then the spread that one seed's difference sits in. Extra arguments go to `genenv-lab compare` (e.g. --epochs 6, --seeds 3, --out runs/demo2).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh dev
. .venv/bin/activate
out=runs/demo  # the folder the lab line below names: the last --out among the extra arguments, else runs/demo
prev=""
for arg in "$@"; do
  if [ "$prev" = --out ]; then out="$arg"; fi
  case "$arg" in --out=*) out="${arg#--out=}" ;; esac
  prev="$arg"
done
# --spread-from: one seed has no spread, and numbers differ across machines (floating point makes the runs part
# after the first epochs), so the verdict ends with the per-seed differences of the committed study beside this one
# --jobs 2: the two arms run side by side, each on half the cores (after the world model is built, once)
genenv-lab compare --presets cpu-dry --variants genenv static --seeds 1 --out runs/demo --jobs 2 \
  --spread-from docs/studies/cpu-dry_paired_by_seed.csv "$@"
echo "Next: the lab on these runs: python app.py --runs $out/runs · the full comparison (4 arms, 3 seeds; the" \
     "finished runs are skipped): genenv-lab compare --presets cpu-dry --variants genenv static online_filter" \
     "random_env --seeds 3 --out $out"
echo "The world where the curriculum pays (a simulator that follows the hint, 40 epochs; its model takes 17-21 min" \
     "once, the comparison about 30 min): genenv-lab compare --presets cpu-dry-hint-long --variants genenv static" \
     "random_env online_filter --seeds 8 --first-seed 36 --jobs 2 --out runs/prereg-long (docs/curriculum_cpu.md)"
