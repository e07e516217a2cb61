#!/usr/bin/env bash
# Quick start, command 1: install what is missing, build, and simplify the bundled example
# model (a PyTorch-style export: BatchNorm beside each Conv, a shape chain, leftovers),
# printing the before/after table and the equivalence check.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/build.sh
echo
./build/onnxkit simplify examples/models/tiny_cnn.onnx build/tiny_cnn.simplified.onnx
