#!/usr/bin/env bash
# Set up (see setup.sh) and run a short co-evolution on CPU with SmolLM2-135M-Instruct.
# Extra arguments go to `genenv-lab run` (e.g. --epochs 6 --out runs/demo).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh dev
. .venv/bin/activate
genenv-lab run --preset cpu-demo "$@"
