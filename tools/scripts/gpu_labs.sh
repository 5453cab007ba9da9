#!/usr/bin/env bash
# The labs on a GPU machine: `tiletune lab bank-conflicts` and `tiletune lab tiling` with their
# tables kept in $OUT (default ./gpu-labs-out), the labs' GPU test, and, as a cross-check of the
# lab's counters, ncu's own Source Counters section on the stride-32 kernel (its "L1 Shared
# Excessive Wavefronts" should equal the lab's excessive column for stride32).
#
#   tools/scripts/gpu_labs.sh [path/to/tiletune] [path/to/lab_tests]
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN=${1:-build/tools/tiletune}
TESTS=${2:-build/tests/tools/lab_tests}
OUT=${OUT:-gpu-labs-out}
mkdir -p "$OUT"
export PATH=$PATH:/usr/local/cuda/bin
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}:/usr/local/cuda/lib64

status=0
for lab in bank-conflicts tiling; do
  "$BIN" lab "$lab" --out "$OUT"
  code=$?
  echo "lab $lab: exit $code"
  [ "$code" -eq 0 ] || status=1
done
"$TESTS" --gtest_filter='LabsOnGpu.*' >"$OUT/lab_tests.txt" 2>&1 || status=1
tail -3 "$OUT/lab_tests.txt"
ncu --clock-control none --section SourceCounters -k regex:bank_stride32 \
  "$BIN" lab-kernel bank-conflicts stride32 >"$OUT/ncu-stride32-source-counters.txt" 2>&1
grep -i "excessive\|wavefronts" "$OUT/ncu-stride32-source-counters.txt" | head -5
echo "labs: $([ $status -eq 0 ] && echo passed || echo FAILED); tables in $OUT"
exit $status
