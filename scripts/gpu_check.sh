#!/usr/bin/env bash
# The device check: on a machine with a CUDA GPU and no network, install the wheels carried in .whl/gpu
# (scripts/gpu_wheels.sh, built for that machine's Python) offline into a folder of their own that goes first on
# PYTHONPATH, over the machine's torch/transformers/accelerate; then the gpu test tier and benchmarks/gpu_epoch.py with
# --engine unsloth (the agent's two trainers) and --engine hf on the tiny model (hidden 256). Every step is
# time-limited (the whole check is sized for 8 minutes, the most useful steps first; a dry run gets 3x); one failing step does not stop
# the others. Writes to $OUT (default runs/gpu-check): summary.json (each step's exit code and seconds), versions.txt,
# gpu-tier.xml, unsloth.json, unsloth-high_entropy.json and hf.json (gpu_epoch.py's figures), figures.md (the table
# for docs/gpu.md) and each step's log.
#
#   bash scripts/gpu_check.sh              on the GPU machine
#   bash scripts/gpu_check.sh --dry-run    anywhere (CI runs it in the Unsloth CPU tier): the current environment,
#                                          GENENV_LAB_UNSLOTH_CPU=1 and gpu_epoch.py --allow-cpu, so that it fails
#                                          only where a GPU is missing (the gpu tier's tests skip themselves)
set -uo pipefail
cd "$(dirname "$0")/.."
dry=0
[ "${1:-}" = --dry-run ] && dry=1
OUT="${OUT:-$PWD/runs/gpu-check}"
mkdir -p "$OUT"
PY="${PYTHON:-python3}"
WHEELS="${GENENV_LAB_GPU_WHEELS:-.whl/gpu}"
summary="$OUT/summary.json"
echo "{" >"$summary"
first=1

# The limits below size the GPU check (8 minutes in all). A dry run only checks that every step works, on a CPU
# whose speed and load vary (a CI machine beside other work), so its limits are 3x as long.
slack=1
[ "$dry" = 1 ] && slack=3
step() {  # step NAME SECONDS command...: run with a time limit, log to $OUT/NAME.log, record rc and seconds
    local name="$1" limit="$2" t0=$SECONDS rc
    shift 2
    timeout "$((limit * slack))" "$@" >"$OUT/$name.log" 2>&1
    rc=$?
    printf '  %-16s rc %3s  %4ss\n' "$name" "$rc" "$((SECONDS - t0))"
    [ "$first" = 1 ] || echo "," >>"$summary"
    first=0
    printf '  "%s": {"rc": %s, "seconds": %s}' "$name" "$rc" "$((SECONDS - t0))" >>"$summary"
    return 0
}

echo "gpu check ($([ $dry = 1 ] && echo "dry run, no GPU needed" || echo GPU)) -> $OUT"
if [ "$dry" = 0 ]; then
    [ -d "$WHEELS" ] || { echo "no wheels at $WHEELS: run bash scripts/gpu_wheels.sh where there is a network" >&2; exit 2; }
    site="${GENENV_LAB_GPU_SITE:-/tmp/genenv-gpu-site}"
    step install 60 "$PY" -m pip install -q --no-index --no-deps --no-compile --upgrade --target "$site" "$WHEELS"/*.whl
    export PYTHONPATH="$site:$PWD${PYTHONPATH:+:$PYTHONPATH}"
    export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1 UNSLOTH_ENABLE_LOGGING=1
    nvidia-smi >"$OUT/nvidia-smi.txt" 2>&1
else
    export GENENV_LAB_UNSLOTH_CPU=1
fi
export GENENV_LAB_CACHE="${GENENV_LAB_CACHE:-$OUT/cache}"  # one tiny model for the tier and the benchmarks
step versions 90 "$PY" -c '
import importlib, importlib.metadata as m, torch
for p in ("torch", "transformers", "peft", "accelerate", "trl", "datasets", "unsloth", "unsloth-zoo", "bitsandbytes",
          "xformers", "vllm", "pandas", "pyarrow"):
    try:
        print(p, m.version(p))
    except m.PackageNotFoundError:
        print(p, "absent")
print("cuda", torch.version.cuda, "device", torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none")
import unsloth, genenv_lab.backends.unsloth_engine, genenv_lab.loop
print("imports ok")'
cp "$OUT/versions.log" "$OUT/versions.txt"
step gpu-tier 180 "$PY" -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu.py tests/test_unsloth_gpu.py \
    --junitxml "$OUT/gpu-tier.xml"
allow=()
[ "$dry" = 1 ] && allow=(--allow-cpu)
step epoch-unsloth 120 "$PY" benchmarks/gpu_epoch.py --engine unsloth --epochs 2 --json "$OUT/unsloth.json" "${allow[@]}"
step epoch-unsloth-he 90 "$PY" benchmarks/gpu_epoch.py --engine unsloth --trainer high_entropy --epochs 1 \
    --json "$OUT/unsloth-high_entropy.json" "${allow[@]}"
step epoch-hf 60 "$PY" benchmarks/gpu_epoch.py --engine hf --epochs 2 --json "$OUT/hf.json" "${allow[@]}"
# Whether the GRPO trainer Unsloth compiled keeps TRL's entropy mask (top_entropy_quantile): its lines, if any
grep -n "top_entropy_quantile\|entropy_mask" unsloth_compiled_cache/*GRPO*.py >"$OUT/entropy-mask.txt" 2>&1
printf '\n}\n' >>"$summary"
reports=()
for f in "$OUT/unsloth.json" "$OUT/unsloth-high_entropy.json" "$OUT/hf.json"; do [ -f "$f" ] && reports+=("$f"); done
if [ "${#reports[@]}" -gt 0 ]; then
    { echo "Measured $(date -u +%Y-%m-%d) by scripts/gpu_check.sh$([ $dry = 1 ] && echo ' --dry-run (CPU: no GPU figures)')"
      echo; "$PY" benchmarks/gpu_epoch.py --report "${reports[@]}"; } >"$OUT/figures.md"
fi
cat "$summary"
