#!/usr/bin/env bash
# Set up (see setup.sh) and run the cpu-demo co-evolution on CPU (the times-tables world, docs/curriculum_cpu.md).
# Extra arguments go to `genenv-lab run` (e.g. --epochs 6 --out runs/demo).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh dev
. .venv/bin/activate
genenv-lab run --preset cpu-demo "$@"
