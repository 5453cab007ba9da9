#!/usr/bin/env bash
# The runtime library as an application meets it: this build installed into a fresh prefix,
# examples/gemm_client configured and built against that prefix alone (find_package), a database
# made from a real H100 tune (tests/fixtures/tuned/h100_kernels_src.sql, a `sqlite3 .dump`), and
# both clients run on the CPU backend, each checking every element against its own reference.
# Any step that fails fails the test.
#
#   gemm_client_test.sh SOURCE_DIR BINARY_DIR WORK_DIR GENERATOR
set -euo pipefail
source_dir=$1 binary_dir=$2 work=$3 generator=$4
prefix=$work/prefix client=$work/client db=$work/h100.db

rm -rf "$prefix" "$client" "$db" "$work/bundle" "$work/bundle-cpp"
mkdir -p "$work"
step() { printf '\n== %s\n' "$*"; }

step "install into $prefix"
cmake --install "$binary_dir" --prefix "$prefix"

# SQLite and Boost.Context, which a GPU host may lack, come from the prefix.
resolved=$(ldd "$prefix/lib/libtiletune.so")
for dependency in libsqlite3 libboost_context; do
  if ! grep -q "$dependency.* => $prefix/lib/tiletune/" <<<"$resolved"; then
    echo "gemm_client_test: the installed libtiletune.so does not take $dependency from" \
         "$prefix/lib/tiletune:" >&2
    echo "$resolved" >&2
    exit 1
  fi
done

step "a database from the H100 fixture"
sqlite3 -bail "$db" < "$source_dir/tests/fixtures/tuned/h100_kernels_src.sql"

# The kernels the CPU backend builds, and any cubin, are cached under WORK_DIR, not the user's home.
export XDG_CACHE_HOME=$work/cache TILETUNE_CACHE_DIR=$work/cache/tiletune

step "bundles exported by the installed tiletune: a folder, and a source file to compile in"
"$prefix/bin/tiletune" export --db "$db" --out "$work/bundle"
"$prefix/bin/tiletune" export --db "$db" --out "$work/bundle-cpp" --format cpp

step "configure and build examples/gemm_client against $prefix only"
unset CMAKE_PREFIX_PATH
cmake -S "$source_dir/examples/gemm_client" -B "$client" -G "$generator" \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_PREFIX_PATH="$prefix" \
      -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
      -DGEMM_CLIENT_BUNDLE_SOURCE="$work/bundle-cpp/tiletune_bundle.cpp"
found=$(sed -n 's/^tiletune_DIR:PATH=//p' "$client/CMakeCache.txt")
if [ "$found" != "$prefix/lib/cmake/tiletune" ]; then
  echo "gemm_client_test: the client found tiletune at '$found', not in $prefix" >&2
  exit 1
fi
cmake --build "$client"


step "gemm_client --cpu"
"$client/gemm_client" "$db" --cpu

step "gemm_client on the bundle folder --cpu"
"$client/gemm_client" "$work/bundle" --cpu

step "gemm_client on the bundle compiled in --cpu"
"$client/gemm_client" embedded --cpu

step "c_client --cpu"
"$client/c_client" "$db" --cpu
