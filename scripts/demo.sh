#!/usr/bin/env bash
# Set up (see setup.sh), then run the cpu-demo comparison on CPU: GenEnv against the fixed set (`static`) in the
# counting world, whose skills must be learnt in order (docs/curriculum_cpu.md), one seed each. It ends with the
# verdict: genenv's final held-out score against static's, the agent rollouts genenv needed to reach it, and whether
# the curriculum paid. Extra arguments go to `genenv-lab compare` (e.g. --epochs 6, --seeds 3, --out runs/demo2).
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
genenv-lab compare --presets cpu-demo --variants genenv static --seeds 1 --out runs/demo "$@"
echo "Next: the lab on these runs: python app.py --runs $out/runs · the full comparison (4 arms, 3 seeds; the" \
     "finished runs are skipped): genenv-lab compare --presets cpu-demo --variants genenv static online_filter" \
     "random_env --seeds 3 --out $out"
