#!/usr/bin/env bash
# The demo: set up .venv (scripts/setup.sh), then GenEnv against the fixed set (`static`) in the world where this
# project's pre-registered study shows the curriculum paying on every seed (`cpu-dry-hint-long`: a counting world
# whose fixed set runs dry; docs/research/README.md), one seed each, side by side. Ends with the verdict at a glance.
#   bash scripts/demo.sh                                   genenv and static (about 2 min after set-up on 2 cores)
#   bash scripts/demo.sh --variants genenv static random_env   add the untrained simulator (random_env)
# Other arguments go to `genenv-lab compare` (e.g. --first-seed 5, --out runs/demo2).
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
# --jobs 2: the arms run side by side, each on its share of the cores; the world model ships with the package.
# --spread-from: one seed is one draw, and runs on another machine part in floating point after the first epochs,
# so the verdict ends with the spread of the committed study's per-seed differences.
genenv-lab compare --presets cpu-dry-hint-long --variants genenv static --seeds 1 --out runs/demo --jobs 2 \
  --spread-from docs/research/studies/cpu-dry-hint-long_paired_by_seed.csv "$@"
echo
echo "Next: the lab on these runs: python app.py --runs $out/runs"
