#!/usr/bin/env bash
# tools/slurm/tune_on_slurm.sh refuses, in one line with exit 2 and before anything is submitted,
# what Slurm would misread: a comma (the next --export variable) or a % (an --output pattern) in a
# path, and a --tasks too large to list. No Slurm is needed: nothing gets as far as sbatch.
#   submit_refusals_test.sh SOURCE_DIR
set -uo pipefail
source_dir=$1
submit=$source_dir/tools/slurm/tune_on_slurm.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
refused() {  # refused WHAT EXPECTED_TEXT ARGS...: expects exit 2 and one line holding the text
  local what=$1 expected=$2
  shift 2
  local rc=0
  timeout 20 bash "$submit" "$@" >"$work/out" 2>"$work/err" || rc=$?
  if [ "$rc" != 2 ] || [ "$(wc -l <"$work/err")" != 1 ] || ! grep -qF -- "$expected" "$work/err"; then
    echo "FAIL $what: exit $rc, stderr: $(cat "$work/err")"
    failures=$((failures + 1))
  else
    echo "ok   $what: $(cat "$work/err")"
  fi
}
template=$source_dir/kernels_src/tiled.cu
refused "--tasks of 20 digits" "from 1 to 100000" \
  --tasks 99999999999999999999 --results "$work/r" -- "$template" --shape 64x64x64
refused "--tasks 100001" "from 1 to 100000" --tasks 100001 --results "$work/r" -- "$template" --shape 64x64x64
refused "a comma in --local-dir" "comma or %" \
  --tasks 2 --results "$work/r" --local-dir "$work/local,LD_PRELOAD=x" -- "$template" --shape 64x64x64
refused "a % in --results" "comma or %" --tasks 2 --results "$work/res%j" -- "$template" --shape 64x64x64
[ ! -e "$work/res%j" ] && [ ! -e "$work/r" ] || { echo "FAIL a refused submission created its folder"; failures=$((failures + 1)); }
echo "$failures of 4 refusals failed"
exit $((failures > 0))
