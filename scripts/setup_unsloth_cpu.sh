#!/usr/bin/env bash
# Create .venv-unsloth: the real Unsloth (the `gpu` extra's pinned unsloth and unsloth-zoo) over the CPU build of
# torch, for the Unsloth CPU tier (tests/test_unsloth_cpu.py) and for trying the unsloth engine without a GPU
# (GENENV_LAB_UNSLOTH_CPU=1, docs/gpu.md). Safe to run again; quiet unless something fails.
#
# Why a third venv: unsloth 2026.10.9 pins transformers <= 5.17, trl <= 1.15 and datasets < 5, which the core CPU
# stack (.venv: transformers 5.24, trl 1.16, datasets 5.2) cannot share. torch is pinned to the CPU build through a
# constraints file, so that no requirement (torchvision, xformers, bitsandbytes) swaps in a CUDA torch and its
# multi-GB nvidia-* libraries; torchvision is removed after (its compiled operators do not load against the CPU
# torch, and a text model never needs it). This checkout goes in editable with its own dependencies at what
# Unsloth's pins leave.
#
# Usage: bash scripts/setup_unsloth_cpu.sh        (venv path: $GENENV_LAB_UNSLOTH_VENV, default .venv-unsloth)
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${GENENV_LAB_UNSLOTH_VENV:-.venv-unsloth}"
case "$VENV" in /*) ;; *) VENV="$PWD/$VENV" ;; esac
PY="${PYTHON:-python3}"
TORCH_VERSION="${TORCH_VERSION:-2.13.0}"
# the pins of the `gpu` extra (pyproject.toml), so that the CPU tier tests the versions a Colab user installs
pins="$("$PY" scripts/gpu_pins.py)"
check='import unsloth, genenv_lab.backends.unsloth_engine, trl, peft, pytest'

if [ -x "$VENV/bin/python" ] && [ -f "$VENV/.pins" ] && [ "$(cat "$VENV/.pins")" = "$pins torch==$TORCH_VERSION" ] \
    && (cd / && GENENV_LAB_UNSLOTH_CPU=1 "$VENV/bin/python" -c "$check") >/dev/null 2>&1; then
    echo "$VENV already has $pins over torch $TORCH_VERSION (CPU)"
    exit 0
fi

start=$(date +%s)
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
log="$VENV/setup.log"
: >"$log"
pip_q() {
    "$VENV/bin/python" -m pip install "$@" >>"$log" 2>&1 \
        || { echo "unsloth CPU set-up failed (log: $log)" >&2; tail -n 30 "$log" >&2; exit 1; }
}
cons="$VENV/constraints.txt"
echo "torch==${TORCH_VERSION}" >"$cons"
pip_q --upgrade pip
# the CPU build first (the machine's local wheel, else PyTorch's CPU index), then everything under the constraint
"$VENV/bin/python" -m pip install "torch==${TORCH_VERSION}" >>"$log" 2>&1 \
    || pip_q "torch==${TORCH_VERSION}" --index-url https://download.pytorch.org/whl/cpu
# shellcheck disable=SC2086
pip_q -c "$cons" $pins -e ".[dev]"
"$VENV/bin/python" -m pip uninstall -y torchvision >>"$log" 2>&1 || true
if "$VENV/bin/python" -c 'import torch, sys; sys.exit(0 if torch.version.cuda else 1)'; then
    echo "unsloth CPU set-up: a CUDA build of torch was installed; remove $VENV and report the log ($log)" >&2
    exit 1
fi
(cd / && GENENV_LAB_UNSLOTH_CPU=1 "$VENV/bin/python" -c "$check") >>"$log" 2>&1 \
    || { echo "unsloth does not import in $VENV (log: $log)" >&2; tail -n 20 "$log" >&2; exit 1; }
echo "$pins torch==$TORCH_VERSION" >"$VENV/.pins"
versions="$("$VENV/bin/python" -c 'import importlib.metadata as m; print(", ".join(f"{p} {m.version(p)}" for p in ("unsloth", "unsloth-zoo", "torch", "transformers", "trl", "peft", "datasets")))')"
echo "$VENV ready in $(( $(date +%s) - start )) s: $versions"
