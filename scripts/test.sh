#!/usr/bin/env bash
# Set up (see setup.sh) and run the whole test suite that this machine can run (CPU; GPU tests skip themselves).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh dev
. .venv/bin/activate
python -m pytest -q "$@"
