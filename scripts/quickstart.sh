#!/usr/bin/env bash
# Quick start, command 1: install what is missing, build, install the Python package into
# .venv, and simplify the bundled example model (a PyTorch-style export: BatchNorm beside
# each Conv, a shape chain, leftovers), printing the before/after table and the check.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/build.sh
# The Python package into .venv: `.venv/bin/python -c "import onnxkit"`.
scripts/setup_venv.sh scripts/requirements-test.txt scripts/requirements-python.txt
scripts/install_python.sh
echo
./build/onnxkit simplify examples/models/tiny_cnn.onnx build/tiny_cnn.simplified.onnx
