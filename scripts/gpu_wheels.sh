#!/usr/bin/env bash
# Download the wheels scripts/gpu_check.sh installs offline on a CUDA machine that ships torch, transformers,
# accelerate and the common scientific stack but reaches no network: the gpu extra's Unsloth pins, the TRL, peft and
# datasets the CPU tiers test, and what those need beyond that machine's stack, for that machine's Python
# ($GENENV_LAB_GPU_PYTHON_VERSION, default 3.12: the device machines' python3; a wheel for another Python would not
# install there). Written to .whl/gpu (git-ignored; carried beside the checkout). Safe to run again.
#
# To stay under the 64 MiB a device call carries: bitsandbytes keeps only the library of the machine's CUDA
# ($GENENV_LAB_GPU_CUDA, default 130; Unsloth's model loading imports bitsandbytes even for a 16-bit base), Unsloth
# goes without its Studio web app (scripts/slim_wheel.py), vLLM is left out (GBs; the check runs without
# fast_inference) and so is xformers (its wheel is built for one torch; against another it cannot load and Unsloth
# takes PyTorch's attention anyway). Usage: bash scripts/gpu_wheels.sh        (folder: $GENENV_LAB_GPU_WHEELS)
set -euo pipefail
cd "$(dirname "$0")/.."
dest="${GENENV_LAB_GPU_WHEELS:-.whl/gpu}"
PY="${PYTHON:-python3}"
pins="$("$PY" scripts/gpu_pins.py)"
mkdir -p "$dest"
# shellcheck disable=SC2086
pyver="${GENENV_LAB_GPU_PYTHON_VERSION:-3.12}"
platforms=()
for tag in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_24_x86_64 manylinux_2_17_x86_64 \
           manylinux2014_x86_64 manylinux1_x86_64; do platforms+=(--platform "$tag"); done
rm -f "$dest"/*.whl  # one version of each: two would stop the offline install
# shellcheck disable=SC2086
"$PY" -m pip download -q --no-deps --only-binary=:all: --python-version "$pyver" --implementation cp \
    "${platforms[@]}" -d "$dest" $pins \
    "trl==1.15.0" "peft==0.21.2" "datasets==4.8.5" "tyro" "cut_cross_entropy" "torchao" "msgspec" "hf_transfer" \
    "dill<0.4.2" "multiprocess<0.70.20" "docstring-parser" "typeguard" "shtab" "nest-asyncio" "json5" "structlog" \
    "pydantic==2.14.4" "pydantic-core==2.50.5" "annotated-types" "typing-inspection" "bitsandbytes==0.50.2"
"$PY" scripts/slim_wheel.py "$dest"/bitsandbytes-*.whl --keep-lib "libbitsandbytes_cuda${GENENV_LAB_GPU_CUDA:-130}.so"
"$PY" scripts/slim_wheel.py "$dest"/unsloth-20*.whl studio/
size=$(du -sm "$dest" | cut -f1)
echo "$dest: $(ls "$dest" | wc -l) wheels, ${size} MiB"
if [ "$size" -gt 60 ]; then
    echo "over the 60 MiB a device call can carry beside the checkout; remove what the device already has" >&2
    exit 1
fi
