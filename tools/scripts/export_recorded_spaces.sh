#!/usr/bin/env bash
# Writes the results a database recorded for one template as a test fixture (tab-separated: shape,
# configuration, status, median ms), headed by the template's declarations and the GPU, so that
# tests can replay the search strategies on real measured spaces without a GPU or the database.
#
#   tools/scripts/export_recorded_spaces.sh DATABASE TEMPLATE > tests/fixtures/search/NAME.tsv
set -euo pipefail
db=$1 template=$2
[ -f "$db" ] || { echo "export_recorded_spaces: no database at $db" >&2; exit 2; }
query() { sqlite3 -separator $'\t' "$db" "$1"; }
version="(select id from template_versions where name = '$template' and is_current)"
echo "# $template: every configuration recorded at each shape, exported from $(basename "$db")"
query "select '# on ' || name || ' (sm_' || cc_major || cc_minor || ', ' || sm_count || ' SMs, driver API ' ||
       driver_version || ', NVRTC ' || nvrtc_version || ')' from gpus"
echo "# the template's declarations when it was tuned:"
query "select source from template_versions where id = $version" | grep '^// tiletune:' | sed 's/^/# /'
printf 'shape\tconfig\tstatus\tmedian_ms\n'
query "select s.m || 'x' || s.n || 'x' || s.k, r.config, r.status, printf('%.6f', r.median_ms)
       from results r join shapes s on s.id = r.shape_id
       where r.template_id = $version order by s.m, s.n, s.k, r.config"
