#!/usr/bin/env bash
# Quick start, command 1: install what is missing, build, and run onnxkit on the bundled
# example model.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/build.sh
echo
./build/onnxkit inspect examples/models/tiny_cnn.onnx
