#!/usr/bin/env bash
# The tensor-core templates' check on a GPU machine (tf32_mma, tf32x3_mma, and on Hopper tf32_wgmma,
# tf32_wgmma_specialized, tf32_wgmma_rounded_loads, tf32_wgmma_transposed_b, tf32_wgmma_tma,
# tf32x3_wgmma):
#   fuzz     every configuration of each fuzzed on the GPU (100 cases each, the large-index probe);
#   mutants  their mutant suites on the GPU (a sample of 8 configurations per mutant), and
#            warp_tiled's TF32-rounding mutant (an FP32 template must not pass with TF32 inputs);
#   tune     all tuned at the standard suite of 13 shapes (tools/bench/bench_suite.h);
#   bench    each suite's winners timed against cuBLAS: the best TF32 template per shape against
#            cuBLAS in TF32 (bench --precision tf32), and each TF32 template alone; the best 3xTF32
#            template per shape, and each alone, against it in FP32 (--precision tf32x3).
# STEPS picks the steps (default "fuzz mutants tune bench") so that each call of a time-limited
# machine fits: the database and the cubin cache persist in $WORK between calls on one machine,
# and a tune cut short resumes where it stopped. Logs go to $OUT (default ./gpu-tf32-check-out);
# a short table comes last: each step's exit status, time and last line, then the bench tables.
#
#   [STEPS="fuzz mutants"] tools/scripts/gpu_tf32_check.sh [path/to/tiletune]
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN=$(realpath "${1:-build/tools/tiletune}")
OUT=$(realpath -m "${OUT:-gpu-tf32-check-out}")
WORK=${WORK:-/tmp/tiletune-tf32-check}
STEPS=" ${STEPS:-fuzz mutants tune bench} "
mkdir -p "$OUT" "$WORK"
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}:/usr/local/cuda/lib64
export TILETUNE_CACHE_DIR="$WORK/cubins"
DB="$WORK/tf32.db"
TEMPLATES=(kernels_src/tf32_mma.cu kernels_src/tf32x3_mma.cu kernels_src/tf32_wgmma.cu
           kernels_src/tf32_wgmma_specialized.cu kernels_src/tf32_wgmma_rounded_loads.cu
           kernels_src/tf32_wgmma_transposed_b.cu kernels_src/tf32_wgmma_tma.cu
           kernels_src/tf32x3_wgmma.cu)
# The standard suite, as tools/bench/bench_suite.h lists it (bench uses it when given no shape).
SUITE=(1024x1024x1024 2048x2048x2048 4096x4096x4096 8192x8192x8192 1000x1000x1000
       4095x4097x4093 3001x2999x1537 8191x8191x8191 64x4096x4096 4096x64x4096 4096x4096x64
       127x129x8191 17x33x65)

if [ ! -x "$BIN" ]; then
  echo "gpu_tf32_check: no tiletune binary at '$BIN' (usage: tools/scripts/gpu_tf32_check.sh [path/to/tiletune])" >&2
  exit 2
fi
summary=()
step() {  # step NAME COMMAND...: runs it with its output in $OUT/NAME.txt, notes its last line
  local name=$1; shift
  local start=$SECONDS
  "$@" >"$OUT/$name.txt" 2>&1
  local rc=$?
  summary+=("$(printf '%-24s exit %s, %4ss: %s' "$name" "$rc" "$((SECONDS - start))" \
    "$(grep -v '^[[:space:]]*$' "$OUT/$name.txt" | tail -1 | cut -c1-150)")")
}

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.total --format=csv \
  | tee "$OUT/gpu.txt"

if [[ $STEPS == *" fuzz "* ]]; then
  step fuzz-gpu-tf32 "$BIN" fuzz kernels_src/tf32_mma.cu --backend gpu --cases 100
  step fuzz-gpu-tf32x3 "$BIN" fuzz kernels_src/tf32x3_mma.cu --backend gpu --cases 100
  step fuzz-gpu-wgmma "$BIN" fuzz kernels_src/tf32_wgmma.cu kernels_src/tf32_wgmma_specialized.cu \
    kernels_src/tf32_wgmma_rounded_loads.cu kernels_src/tf32_wgmma_transposed_b.cu \
    kernels_src/tf32_wgmma_tma.cu kernels_src/tf32x3_wgmma.cu --backend gpu --cases 100
  grep -hv '^pass' "$OUT/fuzz-gpu-tf32.txt" "$OUT/fuzz-gpu-tf32x3.txt" "$OUT/fuzz-gpu-wgmma.txt" \
    | tail -12
fi
if [[ $STEPS == *" mutants "* ]]; then
  step mutants-gpu-tf32 "$BIN" mutants fuzz/mutants/tf32_mma.json --backend gpu --sample 8
  step mutants-gpu-tf32x3 "$BIN" mutants fuzz/mutants/tf32x3_mma.json --backend gpu --sample 8
  step mutants-gpu-wgmma "$BIN" mutants fuzz/mutants/tf32_wgmma.json \
    fuzz/mutants/tf32_wgmma_specialized.json fuzz/mutants/tf32_wgmma_rounded_loads.json \
    fuzz/mutants/tf32_wgmma_transposed_b.json fuzz/mutants/tf32_wgmma_tma.json \
    fuzz/mutants/tf32x3_wgmma.json --backend gpu --sample 8
  step mutant-gpu-fp32-rounded "$BIN" mutants fuzz/mutants/warp_tiled.json --backend gpu \
    --mutant inputs_rounded_to_tf32 --sample 8
  grep -hA20 '^mutant ' "$OUT"/mutants-gpu-tf32.txt "$OUT"/mutants-gpu-tf32x3.txt \
    "$OUT"/mutants-gpu-wgmma.txt \
    "$OUT"/mutant-gpu-fp32-rounded.txt
fi
if [[ $STEPS == *" tune "* ]]; then
  shape_args=(); for s in "${SUITE[@]}"; do shape_args+=(--shape "$s"); done
  step tune "$BIN" tune "${TEMPLATES[@]}" "${shape_args[@]}" --db "$DB"
  tail -40 "$OUT/tune.txt"
fi
if [[ $STEPS == *" bench "* ]]; then
  # A binary whose bench has no --precision compares everything with cuBLAS SGEMM (FP32): said
  # in the table, never silently.
  if "$BIN" bench --help 2>/dev/null | grep -q -- '--precision'; then
    tf32_args=(--precision tf32) tf32x3_args=(--precision tf32x3)
  else
    tf32_args=() tf32x3_args=()
    summary+=("bench: this tiletune has no --precision: both compared with cuBLAS SGEMM (FP32)")
  fi
  step bench-tf32 "$BIN" bench "${tf32_args[@]}" --db "$DB"
  step bench-tf32-mma "$BIN" bench --kernel tf32_mma "${tf32_args[@]}" --db "$DB"
  step bench-tf32-wgmma "$BIN" bench --kernel tf32_wgmma "${tf32_args[@]}" --db "$DB"
  step bench-tf32-specialized "$BIN" bench --kernel tf32_wgmma_specialized "${tf32_args[@]}" \
    --db "$DB"
  step bench-tf32-rounded-loads "$BIN" bench --kernel tf32_wgmma_rounded_loads "${tf32_args[@]}" \
    --db "$DB"
  step bench-tf32-transposed-b "$BIN" bench --kernel tf32_wgmma_transposed_b "${tf32_args[@]}" \
    --db "$DB"
  step bench-tf32-tma "$BIN" bench --kernel tf32_wgmma_tma "${tf32_args[@]}" --db "$DB"
  step bench-tf32x3 "$BIN" bench "${tf32x3_args[@]}" --db "$DB"
  step bench-tf32x3-mma "$BIN" bench --kernel tf32x3_mma "${tf32x3_args[@]}" --db "$DB"
  step bench-tf32x3-wgmma "$BIN" bench --kernel tf32x3_wgmma "${tf32x3_args[@]}" --db "$DB"
  cp "$DB" "$OUT/" 2>/dev/null
fi

echo
printf '%s\n' "${summary[@]}"
for b in bench-tf32 bench-tf32-mma bench-tf32-wgmma bench-tf32-specialized bench-tf32-rounded-loads \
  bench-tf32-transposed-b bench-tf32-tma \
  bench-tf32x3 bench-tf32x3-mma bench-tf32x3-wgmma; do
  if [ -f "$OUT/$b.txt" ] && [[ $STEPS == *" bench "* ]]; then
    echo; echo "== $b"; grep -v '^[[:space:]]*$' "$OUT/$b.txt" | tail -16
  fi
done
