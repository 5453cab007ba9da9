#!/usr/bin/env bash
# The declared precision on a GPU machine, in one call: the GPU tests that judge by precision (the
# full-shape verifier's bound per precision, bench against cuBLAS TF32 with the errors of both),
# then bench of the TF32 fixture (tests/fixtures/kernels/tf32_naive.cu) against cuBLAS TF32 at a few
# shapes, and of warp_tiled against cuBLAS SGEMM, errors beside the speeds. Logs and the database
# go to $OUT (default ./gpu-precision-out).
#
#   tools/scripts/gpu_precision_check.sh [build-dir]
set -uo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
OUT=${OUT:-gpu-precision-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}:/usr/local/cuda/lib64
status=0

nvidia-smi --query-gpu=name,driver_version --format=csv | tee "$OUT/gpu.txt"
"$BUILD/tests/tuner/gpu_pipeline_tests" --gtest_filter='*DeclaredPrecision*:*ChecksAnyLaunch*' \
  >"$OUT/gpu_pipeline_tests.txt" 2>&1 || status=1
tail -3 "$OUT/gpu_pipeline_tests.txt"
"$BUILD/tests/tools/precision_cli_tests" >"$OUT/precision_cli_tests.txt" 2>&1 || status=1
tail -3 "$OUT/precision_cli_tests.txt"
for precision in tf32 fp32; do
  kernel=tests/fixtures/kernels/tf32_naive.cu
  [ "$precision" = fp32 ] && kernel=kernels_src/warp_tiled.cu
  "$BUILD/tools/tiletune" bench "$kernel" --precision "$precision" --shape 1024x1024x1024 \
    --shape 1000x1000x1000 --shape 127x129x8191 --db "$OUT/bench.db" \
    >"$OUT/bench-$precision.txt" 2>"$OUT/bench-$precision.log" || status=1
  cat "$OUT/bench-$precision.txt"
done
exit $status
