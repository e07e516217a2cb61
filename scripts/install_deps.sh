#!/usr/bin/env bash
# Installs the Debian packages onnxkit needs to build and test; does nothing when all are
# present. Safe to run again. Needs root (or sudo).
set -euo pipefail

packages=(
  g++ cmake ninja-build ccache pkg-config
  libprotobuf-dev libonnx-dev          # ONNX format, checker, shape inference
  libcli11-dev libfmt-dev nlohmann-json3-dev
  libdnnl-dev ocl-icd-opencl-dev       # oneDNN (its CMake config also wants OpenCL headers)
  libjpeg-dev libpng-dev libwebp-dev libtiff-dev libopenjp2-7-dev  # ImageDecoder's formats
  libre2-dev                           # RE2, the regex syntax of ONNX's RegexFullMatch
  libgtest-dev libgmock-dev            # tests
  libonnx-testdata                     # ONNX backend test data (round trip, conformance)
  python3-venv                         # .venv: onnx 1.23 from PyPI for its node cases
  libgraphviz-dev                      # graph pictures of the reports (dot layout, SVG)
  chromium                             # headless browser that checks the HTML reports
  libboost1.81-dev prometheus-cpp-dev libhiredis-dev libxxhash-dev  # onnxkit serve
  libsimdjson-dev zlib1g-dev           # serve: JSON request bodies, gzip/deflate bodies
  redis-server                         # the server's cache tests (started on a free port)
  libb64-0d                            # Triton's perf_analyzer (the server's tests) links it
  clang-16 libfuzzer-16-dev libclang-rt-16-dev  # fuzz targets (libFuzzer, ASan, UBSan)
)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install_deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install_deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo_cmd=(sudo)
fi
echo "install_deps: installing ${missing[*]}"
"${sudo_cmd[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
