#!/usr/bin/env bash
# Nsight Compute on a GPU machine: the best recorded configuration for one shape against cuBLAS's
# SGEMM kernel, both profiled from one `tiletune bench` of that shape, plus the SASS of the
# configuration. Reports go to $OUT (default ./gpu-profile-out); the key counters are printed last.
#
#   tools/scripts/gpu_profile.sh path/to/tiletune DATABASE [MxNxK]
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN=$1
DB=$2
SHAPE=${3:-4096x4096x4096}
OUT=${OUT:-gpu-profile-out}
mkdir -p "$OUT"
export PATH=$PATH:/usr/local/cuda/bin
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}:/usr/local/cuda/lib64

config=$("$BIN" query --db "$DB" --shape "$SHAPE" --exact --json | sed -n 's/.*"config": *"\([^"]*\)".*/\1/p')
echo "best recorded for $SHAPE: $config"
"$BIN" compile kernels_src/warp_tiled.cu --config "$config" --cubin-dir "$OUT/cubin" >"$OUT/compile.txt"
cuobjdump -sass "$OUT"/cubin/*.cubin >"$OUT/sass.txt"
echo "SASS instruction mix:"
grep -oE '^\s+/\*[0-9a-f]+\*/\s+[A-Z0-9_.]+' "$OUT/sass.txt" | awk '{print $2}' | sed 's/\..*//' |
  sort | uniq -c | sort -rn | head -12

sections=(--section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables
          --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats
          --section InstructionStats)
ncu --clock-control none -k warp_tiled_gemm -c 1 "${sections[@]}" \
  "$BIN" bench --db "$DB" --shape "$SHAPE" >"$OUT/ncu-ours.txt" 2>&1
ncu --clock-control none -k 'regex:^(?!warp_tiled|reference|compare)' -c 1 "${sections[@]}" \
  "$BIN" bench --db "$DB" --shape "$SHAPE" >"$OUT/ncu-cublas.txt" 2>&1
for side in ours cublas; do
  echo "== $side"
  grep -E '^\s+[a-z]+_?.*\(\)|^  [A-Za-z_0-9]+.*\(|SM Frequency|Duration|Compute \(SM\) Throughput|Registers Per|Achieved Occupancy|Issue Slots Busy|Executed Ipc Active|No Eligible|Warp Cycles Per Issued|Shared Memory|Bank' "$OUT/ncu-$side.txt" | head -30
done
