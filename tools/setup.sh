#!/usr/bin/env bash
# Installs what tiletune builds with (Debian packages) and builds it into ./build.
# The CUDA 13 toolkit (headers and NVRTC) is expected at /usr/local/cuda or $CUDA_HOME.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(cmake ninja-build g++ libsqlite3-dev sqlite3 librapidcheck-dev libcli11-dev
          nlohmann-json3-dev libfmt-dev libboost-context-dev libgtest-dev libgmock-dev libeigen3-dev)
missing=()
for p in "${packages[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if ((${#missing[@]})); then
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
fi

cuda_home=${CUDA_HOME:-/usr/local/cuda}
if [ ! -f "$cuda_home/include/nvrtc.h" ]; then
  echo "tiletune setup: no CUDA toolkit at $cuda_home (set CUDA_HOME): its headers and NVRTC are needed" >&2
  exit 3
fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCUDAToolkit_ROOT="$cuda_home" >/dev/null
cmake --build build
