#!/usr/bin/env bash
# The verdicts' check on a GPU machine, in one call: the faulty kernels of tests/fixtures/kernels
# fuzzed, compiled and tuned on the GPU (each must end as its opening comment says), the GPU unit
# tests, and the main job's GPU tune of the shipped templates. Full logs go to $OUT (default
# ./gpu-verdicts-out); a short table comes last, one line per check with "ok" or "UNEXPECTED".
#
#   tools/scripts/gpu_verdicts_check.sh [path/to/tiletune] [folder of GPU test binaries]
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN=${1:-build/tools/tiletune}
TESTS=${2:-}
OUT=${OUT:-gpu-verdicts-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}:/usr/local/cuda/lib64
export TILETUNE_CACHE_DIR=$(mktemp -d)  # everything compiled afresh
K=tests/fixtures/kernels
DB="$OUT/faulty.db"
summary=()
# expect NAME EXIT PATTERN COMMAND...: runs COMMAND with its output in $OUT/NAME.txt; ok when it
# exits with EXIT and its output has a line matching PATTERN (an extended regular expression).
expect() {
  local name=$1 want=$2 pattern=$3; shift 3
  local start=$SECONDS verdict=ok
  timeout 300 "$@" >"$OUT/$name.txt" 2>&1
  local rc=$?
  { [ "$rc" -eq "$want" ] && grep -Eq -- "$pattern" "$OUT/$name.txt"; } || verdict=UNEXPECTED
  summary+=("$(printf '%-24s %-10s exit %3s (want %s) %4ss  %s' "$name" "$verdict" "$rc" "$want" \
    "$((SECONDS - start))" "$(grep -Em1 -- "$pattern" "$OUT/$name.txt" | cut -c1-100)")")
}

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$OUT/gpu.txt"

expect fuzz-floor-grid 1 '^FAIL .*(cannot run|grid)' "$BIN" fuzz "$K/floor_grid.cu" --cases 50
expect tune-floor-grid 1 'no correct configuration' \
  "$BIN" tune "$K/floor_grid.cu" --shape 1000x1000x1000 --db "$DB"
expect query-floor-grid 1 '.' "$BIN" query --shape 1000x1000x1000 --kernel floor_grid --db "$DB"
expect fuzz-rows-of-eight 0 '^2 configurations passed' "$BIN" fuzz "$K/rows_of_eight.cu" --cases 100
expect tune-rows-of-eight 0 'rows_of_eight .*BLOCK_X' \
  "$BIN" tune "$K/rows_of_eight.cu" --shape 1000x1000x1000 --db "$DB"
expect fuzz-swapped-signature 1 'contract' "$BIN" fuzz "$K/swapped_signature.cu" --cases 20
expect tune-swapped-signature 1 'no correct configuration' \
  "$BIN" tune "$K/swapped_signature.cu" --shape 512x512x512 --db "$DB"
expect compile-misspelt-entry 1 'misspelt_entry_gemm' "$BIN" compile "$K/misspelt_entry.cu"
expect fuzz-far-write 1 '^FAIL far_write \[FAR=1\]' "$BIN" fuzz "$K/far_write.cu" --cases 20
expect tune-far-write 0 'launch_error' \
  "$BIN" tune "$K/far_write.cu" --shape 512x512x512 --db "$DB" --watchdog 10
expect tune-endless-loop 0 'timeout' \
  "$BIN" tune "$K/endless_loop.cu" --shape 512x512x512 --db "$DB" --watchdog 10
expect tune-fault-zoo 0 'settled: .*launch_error' \
  "$BIN" tune "$K/fault_zoo.cu" --shape 1000x1000x1000 --db "$DB" --watchdog 5
# A template whose index arithmetic lives in a header beside it (a relative #include).
local_include=$(mktemp -d)
sed 's|const int col = blockIdx.x \* TT_BLOCK_X + threadIdx.x;|#include "naive_index.h"\n  const int col = COLUMN;|' \
  kernels_src/naive.cu >"$local_include/naive_included.cu"
echo '#define COLUMN (blockIdx.x * TT_BLOCK_X + threadIdx.x)' >"$local_include/naive_index.h"
expect fuzz-relative-include 0 'configurations passed, 0 failed' \
  "$BIN" fuzz "$local_include/naive_included.cu" --cases 30 --sample 4
expect fuzz-workers-capped 0 'capped to' "$BIN" tune kernels_src/naive.cu --shape 1024x1024x1024 \
  --strategy random --budget 4 --fuzz-workers 100000 --db "$OUT/capped.db"
expect sanitize-private-logs 0 'configurations passed, 0 failed' \
  "$BIN" fuzz kernels_src/tiled.cu --sample 2 --cases 10 --sanitize --sanitize-cases 2
if [ -n "$TESTS" ]; then
  for t in gpu_pipeline_tests fuzz_gpu_tests entry_contract_tests device_library_gpu_tests; do
    expect "gtest-$t" 0 '^\[  PASSED  \]' "$TESTS/$t"
  done
  # The CLI tests that need a GPU (the others run in CI).
  expect gtest-cli-gpu 0 '^\[  PASSED  \]' "$TESTS/cli_tests" --gtest_filter='Cli.GpuFuzz*'
fi
expect main-job-tune 0 '^settled: ' \
  "$BIN" tune kernels_src/*.cu --shape 4096x4096x4096 --db "$OUT/main_job.db"
tail -n 12 "$OUT/main-job-tune.txt"

echo
printf '%s\n' "${summary[@]}"
