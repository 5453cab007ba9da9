#!/usr/bin/env bash
# The SGEMM benchmark on a GPU machine, in one call: tune the fast template for every shape of the
# suite (or the shapes given), then time each winner against cuBLAS SGEMM in the same run. The
# bench table comes last; the tuning log and the database go to $OUT (default ./gpu-bench-out).
#
#   tools/scripts/gpu_bench.sh [path/to/tiletune] [--shape MxNxK ...]
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN=${1:-build/tools/tiletune}
shift || true
OUT=${OUT:-gpu-bench-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}:/usr/local/cuda/lib64

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
start=$(date +%s)
"$BIN" bench kernels_src/warp_tiled.cu "$@" --db "$OUT/bench.db" >"$OUT/bench.txt" 2>"$OUT/bench.log"
status=$?
echo "bench: exit $status after $(( $(date +%s) - start )) s"
cat "$OUT/bench.txt"
