#!/usr/bin/env bash
# The device check: on a machine with a CUDA GPU and no network, install the wheels carried in .whl/gpu
# (scripts/gpu_wheels.sh, built for that machine's Python) offline into a folder of their own that goes first on
# PYTHONPATH, over the machine's torch/transformers/accelerate; then, most useful first:
#   the T4 and L4 presets measured at their models' true shapes (benchmarks/gpu_epoch.py --shape: random weights of
#   Qwen3-0.6B / Qwen3-1.7B, GPU memory capped at a T4's / an L4's, the agent update's time scaled from a few of its
#   steps) with the unsloth engine, the gpu test tier, the T4 shape with the hf engine, and the tiny model's two
#   epochs through the real loop (unsloth, then its high_entropy trainer, then hf).
# Every step is time-limited and the whole check keeps to $GENENV_LAB_CHECK_BUDGET seconds (default 540: one device
# call is at most 10 minutes); a step that would pass the budget gets what is left, or is skipped. One failing step
# does not stop the others; the exit code is 1 when any step failed. Writes to $OUT (default runs/gpu-check):
# summary.json (each step's exit code and seconds), versions.txt, gpu-tier.xml, shape-*.json and the tiny runs'
# unsloth.json, unsloth-high_entropy.json, hf.json (gpu_epoch.py's figures), figures.md (the tables for docs/gpu.md)
# and each step's log.
#
#   bash scripts/gpu_check.sh              on the GPU machine
#   bash scripts/gpu_check.sh --dry-run    anywhere, no GPU: the same steps on CPU (gpu_epoch.py --allow-cpu, the
#                                          shapes at a slice: 2 layers, the real vocabulary and hidden size, a few
#                                          tokens), limits 3x; with an Unsloth in $PYTHON (the Unsloth CPU venv) its
#                                          steps run on Unsloth's CPU backend, without one they are skipped. Exits 0
#                                          when every step that ran passed (the gpu tier's tests skip themselves)
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
budget="${GENENV_LAB_CHECK_BUDGET:-540}"
[ "$dry" = 1 ] && budget=$((budget * slack))
failed=0
record() {  # record NAME RC SECONDS
    printf '  %-18s rc %7s  %4ss\n' "$1" "$2" "$3"
    [ "$first" = 1 ] || echo "," >>"$summary"
    first=0
    printf '  "%s": {"rc": %s, "seconds": %s}' "$1" "$([ "$2" = skipped ] && echo '"skipped"' || echo "$2")" "$3" \
        >>"$summary"
}
step() {  # step NAME SECONDS command...: run with a time limit, log to $OUT/NAME.log, record rc and seconds
    local name="$1" limit=$(($2 * slack)) t0=$SECONDS rc
    shift 2
    [ $((SECONDS + limit)) -gt "$budget" ] && limit=$((budget - SECONDS))
    if [ "$limit" -lt 20 ]; then
        echo "skipped: the check's budget ($budget s) is spent" >"$OUT/$name.log"
        record "$name" skipped 0
        return 0
    fi
    timeout "$limit" "$@" >"$OUT/$name.log" 2>&1
    rc=$?
    [ "$rc" = 0 ] || failed=1
    record "$name" "$rc" "$((SECONDS - t0))"
    return 0
}
skip() {  # skip NAME WHY
    echo "skipped: $2" >"$OUT/$1.log"
    record "$1" skipped 0
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
export GENENV_LAB_CACHE="${GENENV_LAB_CACHE:-$OUT/cache}"  # the tiny model and the shapes, built once
has_unsloth=1
"$PY" -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("unsloth") is None)' || has_unsloth=0
step versions 90 "$PY" -c '
import importlib, importlib.metadata as m, torch
for p in ("torch", "transformers", "peft", "accelerate", "trl", "datasets", "unsloth", "unsloth-zoo", "bitsandbytes",
          "xformers", "vllm", "pandas", "pyarrow"):
    try:
        print(p, m.version(p))
    except m.PackageNotFoundError:
        print(p, "absent")
print("cuda", torch.version.cuda, "device", torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none")
if importlib.util.find_spec("unsloth") is not None:
    import unsloth, genenv_lab.backends.unsloth_engine
import genenv_lab.coevolution.loop
print("imports ok")'
cp "$OUT/versions.log" "$OUT/versions.txt"
allow=()
shape=(--epochs 1)
few=(3 2)  # the agent update's steps run of the T4's 19 and the L4's 35 (their time is scaled to the epoch's)
if [ "$dry" = 1 ]; then allow=(--allow-cpu); shape=(--epochs 1 --slice --allow-cpu); few=(1 1); fi
unsloth_step() {  # unsloth_step NAME SECONDS command...: a step of the unsloth engine, skipped without Unsloth
    if [ "$has_unsloth" = 1 ]; then step "$@"; else skip "$1" "no unsloth in $PY"; fi
}
unsloth_step shape-t4-unsloth 150 "$PY" benchmarks/gpu_epoch.py --shape colab-t4 --engine unsloth \
    --grpo-steps "${few[0]}" "${shape[@]}" --json "$OUT/shape-colab-t4-unsloth.json"
unsloth_step shape-l4-unsloth 150 "$PY" benchmarks/gpu_epoch.py --shape colab-l4 --engine unsloth \
    --grpo-steps "${few[1]}" "${shape[@]}" --json "$OUT/shape-colab-l4-unsloth.json"
step gpu-tier 120 "$PY" -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu.py tests/test_unsloth_gpu.py \
    --junitxml "$OUT/gpu-tier.xml"
step shape-t4-hf 90 "$PY" benchmarks/gpu_epoch.py --shape colab-t4 --engine hf --grpo-steps "${few[0]}" "${shape[@]}" \
    --json "$OUT/shape-colab-t4-hf.json"
unsloth_step epoch-unsloth 90 "$PY" benchmarks/gpu_epoch.py --engine unsloth --epochs 2 --json "$OUT/unsloth.json" \
    "${allow[@]}"
unsloth_step epoch-unsloth-he 60 "$PY" benchmarks/gpu_epoch.py --engine unsloth --trainer high_entropy --epochs 1 \
    --json "$OUT/unsloth-high_entropy.json" "${allow[@]}"
step epoch-hf 60 "$PY" benchmarks/gpu_epoch.py --engine hf --epochs 2 --json "$OUT/hf.json" "${allow[@]}"
# Whether the GRPO trainer Unsloth compiled keeps TRL's entropy mask (top_entropy_quantile): its lines, if any
grep -n "top_entropy_quantile\|entropy_mask" unsloth_compiled_cache/*GRPO*.py >"$OUT/entropy-mask.txt" 2>&1
printf '\n}\n' >>"$summary"
reports=()
for f in "$OUT/unsloth.json" "$OUT/unsloth-high_entropy.json" "$OUT/hf.json"; do [ -f "$f" ] && reports+=("$f"); done
shapes=()
for f in "$OUT"/shape-*.json; do [ -f "$f" ] && shapes+=("$f"); done
{ echo "Measured $(date -u +%Y-%m-%d) by scripts/gpu_check.sh$([ $dry = 1 ] && echo ' --dry-run (CPU: no GPU figures)')"
  if [ "${#shapes[@]}" -gt 0 ]; then echo; "$PY" benchmarks/gpu_epoch.py --shape-report "${shapes[@]}"; fi
  if [ "${#reports[@]}" -gt 0 ]; then echo; "$PY" benchmarks/gpu_epoch.py --report "${reports[@]}"; fi
} >"$OUT/figures.md"
cat "$summary"
exit "$failed"
