#!/usr/bin/env bash
# Build genenv_lab's wheel into dist/ (the package with its data/ seeds and held-out sets), e.g. to upload to Colab:
# the notebooks' first cell installs /content/genenv_lab-*.whl when it finds one.
# Usage: bash scripts/build_wheel.sh
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip wheel . --no-deps -q -w dist
ls -1 dist/genenv_lab-*.whl | tail -n 1
