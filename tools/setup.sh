#!/usr/bin/env bash
# Installs what tiletune builds with (Debian packages) and builds it into ./build.
# The CUDA 13 toolkit (headers and NVRTC) is expected at /usr/local/cuda or $CUDA_HOME.
# For the report's browser test (tests/tools/report): Debian's chromium, node and npm where missing, and
# playwright-core as tests/tools/report/package-lock.json pins it (no browser download). For the Slurm
# test (tests/tools/slurm), which starts a private cluster of its own: Debian's Slurm and munge, whose
# system services stay down without /etc/slurm/slurm.conf.
# With --tiletune-only (the main job): the build packages and the tiletune binary alone.
set -euo pipefail
cd "$(dirname "$0")/.."
tiletune_only=false
case "${1:-}" in
  --tiletune-only) tiletune_only=true ;;
  "") ;;
  *) echo "tiletune setup: unknown argument '$1' (usage: tools/setup.sh [--tiletune-only])" >&2; exit 2 ;;
esac

packages=(cmake ninja-build g++ libsqlite3-dev sqlite3 librapidcheck-dev libcli11-dev
          nlohmann-json3-dev libfmt-dev libboost-context-dev libgtest-dev libgmock-dev libeigen3-dev)
missing=()
for p in "${packages[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
# The browser test's tools; node by command: one from elsewhere (NodeSource's bundles npm) is used.
browser_missing=()
slurm_missing=()
if ! $tiletune_only; then
  dpkg -s chromium >/dev/null 2>&1 || browser_missing+=(chromium)
  command -v node >/dev/null || browser_missing+=(nodejs)
  command -v npm >/dev/null || browser_missing+=(npm)
  for p in slurmctld slurmd slurm-client munge; do
    dpkg -s "$p" >/dev/null 2>&1 || slurm_missing+=("$p")
  done
fi
sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
updated=false
if ((${#missing[@]})); then
  $sudo apt-get update -qq
  updated=true
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
fi
# Not fatal: without them (e.g. a GPU host without network) only the browser test or the Slurm
# test cannot run; it skips, or fails where CI=true.
browser_note="the report's browser test will skip (and fail where CI=true)"
if ((${#browser_missing[@]})); then
  { $updated || { $sudo apt-get update -qq && updated=true; }; } &&
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${browser_missing[@]}" ||
    echo "tiletune setup: could not install ${browser_missing[*]}: $browser_note" >&2
fi
if ((${#slurm_missing[@]})); then
  { $updated || $sudo apt-get update -qq; } &&
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${slurm_missing[@]}" ||
    echo "tiletune setup: could not install ${slurm_missing[*]}: the Slurm test will skip (and" \
         "fail where CI=true)" >&2
fi

cuda_home=${CUDA_HOME:-/usr/local/cuda}
if [ ! -f "$cuda_home/include/nvrtc.h" ]; then
  echo "tiletune setup: no CUDA toolkit at $cuda_home (set CUDA_HOME): its headers and NVRTC are needed" >&2
  exit 3
fi
if ! $tiletune_only && command -v npm >/dev/null &&
   [ ! tests/tools/report/node_modules/.package-lock.json -nt tests/tools/report/package-lock.json ]; then
  npm ci --prefix tests/tools/report --ignore-scripts --no-audit --no-fund --loglevel=error ||
    echo "tiletune setup: npm ci in tests/tools/report failed: $browser_note" >&2
fi

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCUDAToolkit_ROOT="$cuda_home" >/dev/null
if $tiletune_only; then
  cmake --build build --target tiletune
else
  cmake --build build
fi
