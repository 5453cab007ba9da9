#!/usr/bin/env bash
# The fuzzer's check on a GPU machine, in one call. Group "seeds": naive and tiled fuzzed on the GPU
# and on the CPU backend (cases per second for both), their mutant suites on both backends, and
# compute-sanitizer over them and over tiled with a barrier removed. Group "warp_tiled": every
# configuration of warp_tiled fuzzed on the GPU, its mutant suite on the GPU over a sample of 8
# configurations per mutant, and compute-sanitizer over a sample of 16 configurations.
# Full logs go to $OUT (default ./gpu-fuzz-check-out); a short table comes last.
#
#   tools/scripts/gpu_fuzz_check.sh [path/to/tiletune] [seeds] [warp_tiled]   (default: both groups)
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN=${1:-build/tools/tiletune}
shift || true
groups=" ${*:-seeds warp_tiled} "
OUT=${OUT:-gpu-fuzz-check-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}:/usr/local/cuda/lib64
export XDG_CACHE_HOME=$(mktemp -d)  # the CPU backend builds every kernel afresh, as in CI
summary=()
step() {  # step NAME COMMAND...: runs it with its output in $OUT/NAME.txt, notes its last line
  local name=$1; shift
  local start=$SECONDS
  "$@" >"$OUT/$name.txt" 2>&1
  local rc=$?
  summary+=("$(printf '%-22s exit %s, %4ss: %s' "$name" "$rc" "$((SECONDS - start))" "$(tail -1 "$OUT/$name.txt")")")
}

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$OUT/gpu.txt"

if [[ $groups == *" seeds "* ]]; then
  step fuzz-gpu "$BIN" fuzz kernels_src/naive.cu kernels_src/tiled.cu --cases 100
  step fuzz-cpu "$BIN" fuzz kernels_src/naive.cu kernels_src/tiled.cu --backend cpu --cases 100
  step mutants-gpu "$BIN" mutants fuzz/mutants/naive.json fuzz/mutants/tiled.json --backend gpu
  step mutants-cpu "$BIN" mutants fuzz/mutants/naive.json fuzz/mutants/tiled.json --backend cpu
  step sanitize-shipped "$BIN" fuzz kernels_src/naive.cu kernels_src/tiled.cu --cases 20 --sanitize
  # A positive control for racecheck: tiled without its second barrier.
  control=$(mktemp -d)/tiled_missing_sync.cu
  grep -v 'everyone is done reading before the next load' kernels_src/tiled.cu >"$control"
  step sanitize-missing-sync "$BIN" fuzz "$control" --cases 20 --sanitize
  grep -A20 '^mutant ' "$OUT/mutants-gpu.txt"
  echo
  grep -h '^FAIL sanitize' "$OUT/sanitize-missing-sync.txt" | cut -c1-60
  grep -h 'racecheck: ' "$OUT/sanitize-missing-sync.txt" | cut -c1-200 | head -3
  echo
fi
if [[ $groups == *" warp_tiled "* ]]; then
  step fuzz-gpu-warp-tiled "$BIN" fuzz kernels_src/warp_tiled.cu --cases 100
  step mutants-gpu-warp-tiled "$BIN" mutants fuzz/mutants/warp_tiled.json --backend gpu --sample 8
  step sanitize-warp-tiled "$BIN" fuzz kernels_src/warp_tiled.cu --cases 20 --sanitize --sample 16
  grep -v '^pass' "$OUT/fuzz-gpu-warp-tiled.txt" | tail -5
  grep -A20 '^mutant ' "$OUT/mutants-gpu-warp-tiled.txt"
  echo
fi
printf '%s\n' "${summary[@]}"
