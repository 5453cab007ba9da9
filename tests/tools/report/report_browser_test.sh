#!/usr/bin/env bash
# The report in a real browser: a database made by CPU-backend tunes of kernels_src/tiled.cu at
# small shapes (two strategies at one of them), plus stand-in bench rows and counters
# (record_stand_in_rows: CI has no GPU to measure them), written by `tiletune report` as HTML and Markdown, then opened in Debian's
# chromium by report_browser_test.js; then the report of the H200 selection fixture's suite
# (SUITE_SQL, loaded by load_sql_dump), whose long warp_tiled configurations once made the winners
# table wider than the page. The screenshots stay in WORK_DIR.
#
# report_browser_test.sh TILETUNE RECORD_STAND_IN_ROWS LOAD_SQL_DUMP SOURCE_DIR SUITE_SQL WORK_DIR
# Without node, chromium or playwright-core (tools/setup.sh installs them): fails where CI=true,
# else skips (exit 77) with the reason.
set -euo pipefail
tiletune=$1 record_rows=$2 load_dump=$3 source_dir=$4 suite_sql=$5 work=$6
script_dir=$source_dir/tests/tools/report
chromium=${CHROMIUM:-/usr/bin/chromium}

unavailable() {
  if [ "${CI:-}" = true ]; then
    echo "FAIL: $1 (CI=true: the browser test must run; tools/setup.sh installs it)" >&2
    exit 1
  fi
  echo "SKIP: $1 (tools/setup.sh installs it)"
  exit 77
}
command -v node >/dev/null || unavailable "no node on PATH"
[ -x "$chromium" ] || unavailable "no chromium at $chromium"
[ -d "$script_dir/node_modules/playwright-core" ] ||
  unavailable "no playwright-core in $script_dir/node_modules (npm ci --prefix tests/tools/report)"

rm -rf "$work"
mkdir -p "$work"
cd "$work"
export XDG_CACHE_HOME=$work/cache
"$tiletune" tune "$source_dir/kernels_src/tiled.cu" --backend cpu --shape 32x32x32 \
  --shape 64x64x64 --shape 32x96x64 --cases 10 --db report.db
# A second search of one shape, by another strategy: its convergence plot has two lines.
"$tiletune" tune "$source_dir/kernels_src/tiled.cu" --backend cpu --shape 64x64x64 --strategy random \
  --budget 6 --cases 10 --db report.db
"$record_rows" report.db
"$tiletune" report --db report.db --out report.html
"$tiletune" report --db report.db --format md --out report.md
node "$script_dir/report_browser_test.js" stand-in "$work/report.html" "$work/report.png"

"$load_dump" "$suite_sql" h200.db
"$tiletune" report --db h200.db --out h200.html
node "$script_dir/report_browser_test.js" fixture "$work/h200.html" "$work/h200.png"
