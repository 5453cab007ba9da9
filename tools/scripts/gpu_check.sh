#!/usr/bin/env bash
# The end-to-end check on a GPU machine, in one call: tune naive and tiled for three shapes,
# query each, fuzz every shipped configuration and run the mutant suites, then time the winners against
# cuBLAS in the same run. Full logs go to $OUT (default ./gpu-check-out); a short table comes last.
#
#   tools/scripts/gpu_check.sh [path/to/tiletune]
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN=${1:-build/tools/tiletune}
OUT=${OUT:-gpu-check-out}
mkdir -p "$OUT"
DB="$OUT/tiletune.db"
SHAPES=(1024x1024x1024 4095x4097x4093 3001x2999x1537)
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}:/usr/local/cuda/lib64
summary=()
note() { summary+=("$1"); }

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"

shape_args=(); for s in "${SHAPES[@]}"; do shape_args+=(--shape "$s"); done
time "$BIN" tune kernels_src/naive.cu kernels_src/tiled.cu "${shape_args[@]}" --db "$DB" \
  >"$OUT/tune.txt" 2>"$OUT/tune.log"
note "tune: exit $? ($(tail -1 "$OUT/tune.txt"))"
cat "$OUT/tune.txt"

for s in "${SHAPES[@]}"; do
  for k in naive tiled; do
    "$BIN" query --shape "$s" --kernel "$k" --db "$DB" | tee -a "$OUT/query.txt"
  done
done

"$BIN" fuzz kernels_src/naive.cu kernels_src/tiled.cu --cases 100 >"$OUT/fuzz.txt" 2>&1
note "fuzz shipped: exit $? ($(tail -1 "$OUT/fuzz.txt"))"
"$BIN" mutants fuzz/mutants/*.json --backend gpu >"$OUT/mutants.txt" 2>"$OUT/mutants.log"
note "mutant suites on the GPU: exit $? ($(tail -1 "$OUT/mutants.txt"))"

for k in naive tiled; do
  "$BIN" bench --kernel "$k" "${shape_args[@]}" --db "$DB" 2>>"$OUT/bench.log" | tee -a "$OUT/bench.txt"
done

echo
printf '%s\n' "${summary[@]}"
