#!/usr/bin/env bash
# Configures (Release, Ninja, ccache when present) and builds into build/.
# Extra arguments go to CMake, e.g. scripts/build.sh -DONNXKIT_SANITIZE=ON.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${ONNXKIT_BUILD_DIR:-build}
# Let ccache share objects between checkouts (a CI clone and a work tree): paths below the
# repository are hashed relative to it, and the build folder's own path is not hashed.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
export CCACHE_NOHASHDIR=1
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=${CMAKE_BUILD_TYPE:-Release} "$@" >/dev/null
# Two jobs: the machines this runs on have two cores and compile units are heavy.
ninja -C "$build_dir" -j "${ONNXKIT_JOBS:-$(nproc)}"
