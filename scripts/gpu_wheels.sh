#!/usr/bin/env bash
# Download the wheels scripts/gpu_check.sh installs offline on a CUDA machine that ships torch, transformers, peft and
# accelerate but reaches no network: the gpu extra's Unsloth pins, the TRL and datasets they pin, and what those
# need beyond that machine's stack. Written to .whl/gpu (git-ignored; carried beside the checkout). Safe to run again.
#
# Left out on purpose, to stay under the 64 MiB a device call carries: bitsandbytes (42 MB; only 4-bit bases need it,
# and the check runs the tiny model in 16 bit: Unsloth then imports without it) and vLLM (GBs; the check runs without
# fast_inference). Usage: bash scripts/gpu_wheels.sh        (folder: $GENENV_LAB_GPU_WHEELS, default .whl/gpu)
set -euo pipefail
cd "$(dirname "$0")/.."
dest="${GENENV_LAB_GPU_WHEELS:-.whl/gpu}"
PY="${PYTHON:-python3}"
pins="$("$PY" scripts/gpu_pins.py)"
mkdir -p "$dest"
# shellcheck disable=SC2086
"$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.11 -d "$dest" $pins \
    "trl==1.15.0" "datasets==4.8.5" "tyro" "cut_cross_entropy" "torchao" "msgspec" "hf_transfer" "dill<0.4.2" \
    "xxhash" "multiprocess<0.70.20" "sentencepiece" "xformers==0.0.35" "docstring-parser" "typeguard" "shtab"
size=$(du -sm "$dest" | cut -f1)
echo "$dest: $(ls "$dest" | wc -l) wheels, ${size} MiB"
if [ "$size" -gt 60 ]; then
    echo "over the 60 MiB a device call can carry beside the checkout; remove what the device already has" >&2
    exit 1
fi
