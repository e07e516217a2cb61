#!/usr/bin/env bash
# Installs the onnxkit Python package into .venv (`pip install .`: scikit-build-core builds
# python/'s extension with CMake in build-python/). Run after scripts/build.sh: the library's
# objects then come from ccache (same flags, same relative paths), so only the bindings
# compile. Does nothing when no source changed since the last install. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || scripts/setup_venv.sh scripts/requirements-test.txt scripts/requirements-python.txt
stamp=.venv/.installed-onnxkit
changed=$(find CMakeLists.txt pyproject.toml src include python examples/embed -newer "$stamp" \
  -type f -not -path '*/__pycache__/*' -not -path 'python/tests/*' -print -quit 2>/dev/null || echo all)
if [ -f "$stamp" ] && [ -z "$changed" ] && .venv/bin/python -c "import onnxkit" 2>/dev/null; then
  echo "install_python: onnxkit in .venv is up to date"
  exit 0
fi
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
export CCACHE_NOHASHDIR=1
# The compiler of build/ by the same name: ccache hashes the name it is called by, and
# scikit-build-core would otherwise pick Python's (x86_64-linux-gnu-g++).
build_cxx=$(sed -n 's/^CMAKE_CXX_COMPILER:FILEPATH=//p' "${ONNXKIT_BUILD_DIR:-build}/CMakeCache.txt" 2>/dev/null)
export CXX="${CXX:-${build_cxx:-c++}}"
if [ -f build-python/CMakeCache.txt ] &&
  ! grep -qx "CMAKE_CXX_COMPILER:FILEPATH=$(command -v "$CXX")" build-python/CMakeCache.txt; then
  rm -rf build-python  # configured with another compiler
fi
start=$(date +%s)
# The build tools are .venv's pinned ones (requirements-python.txt): no isolated download.
# build-python/ sits at the depth of build/, so ccache (CCACHE_BASEDIR = the repository) sees
# the same relative paths and flags as build.sh's objects; it stays, so a second install
# rebuilds only what changed.
.venv/bin/python -m pip install --quiet --disable-pip-version-check --no-build-isolation \
  --no-deps --config-settings=build-dir=build-python .
touch "$stamp"
echo "install_python: installed onnxkit into .venv in $(($(date +%s) - start))s"
