#!/usr/bin/env bash
# Create .venv-bfcl: the official BFCL checker (the `bfcl-eval` package) in its own environment, for the parity test
# (tests/test_bfcl_parity.py) and benchmarks/bfcl_parity.py. Safe to run again; quiet unless something fails.
#
# Why a separate venv, and why not `pip install bfcl-eval` with all its dependencies: the package pins numpy 1.26
# and pulls sentence-transformers (torch), faiss, vLLM-era SDKs for its model handlers and web-search tasks. The
# checker and the prompting decoder need only tree-sitter and the modules their imports reach (model configs
# import the API SDKs), so the package goes in with --no-deps plus that list. The wheel also ships every category's
# data (live ones included), which the parity test scores.
#
# Usage: bash scripts/setup_bfcl_official.sh      (venv path: $GENENV_LAB_BFCL_VENV, default .venv-bfcl)
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${GENENV_LAB_BFCL_VENV:-.venv-bfcl}"
case "$VENV" in /*) ;; *) VENV="$PWD/$VENV" ;; esac
PY="${PYTHON:-python3}"
BFCL_EVAL_VERSION="${BFCL_EVAL_VERSION:-2026.3.23}"
check='import bfcl_eval.eval_checker.ast_eval.ast_checker, bfcl_eval.model_handler.utils'

if [ -x "$VENV/bin/python" ] \
    && [ "$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("bfcl-eval"))' 2>/dev/null)" = "$BFCL_EVAL_VERSION" ] \
    && (cd / && "$VENV/bin/python" -c "$check") 2>/dev/null; then
    echo "$VENV already has bfcl-eval $BFCL_EVAL_VERSION"
    exit 0
fi

start=$(date +%s)
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
log="$VENV/setup.log"
: >"$log"
pip_q() { "$VENV/bin/python" -m pip install -q "$@" >>"$log" 2>&1 || { echo "bfcl-eval set-up failed (log: $log)" >&2; tail -n 30 "$log" >&2; exit 1; }; }
pip_q --upgrade pip
pip_q --no-deps "bfcl-eval==${BFCL_EVAL_VERSION}" "tree_sitter==0.21.3" "tree-sitter-java==0.21.0" \
    "tree-sitter-javascript==0.21.4"
# What `import ast_checker, model_handler.utils` reaches (model_config imports every handler and its SDK).
pip_q "numpy==1.26.4" "filelock==3.20.0" "mpmath==1.3.0" "networkx==3.3" "rank_bm25==0.2.2" \
    "datamodel-code-generator==0.25.7" "mistralai==1.7.0" "cohere==5.18.0" tenacity requests tqdm pandas pydantic \
    python-dotenv openai anthropic google-genai writer-sdk boto3 overrides typer tabulate qwen-agent soundfile \
    huggingface_hub beautifulsoup4 html2text google-search-results
(cd / && "$VENV/bin/python" -c "$check") >>"$log" 2>&1 || { echo "bfcl-eval does not import (log: $log)" >&2; tail -n 20 "$log" >&2; exit 1; }
echo "$VENV ready (bfcl-eval $BFCL_EVAL_VERSION) in $(( $(date +%s) - start )) s"
