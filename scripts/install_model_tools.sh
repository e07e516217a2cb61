#!/usr/bin/env bash
# Installs the tools the model benchmarks need (bench/): Debian's PyTorch, torchvision, ONNX
# and NumPy for /usr/bin/python3 (bench/export_models.py), espeak-ng and sox (speech for
# bench/real_models.py), and ONNX Runtime for Node
# (bench/ort_optimize.js) into bench/node_modules. Idempotent: does nothing that is already
# done. Needs root (or sudo) for the Debian part.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

packages=(python3-torch python3-torchvision python3-onnx python3-numpy nodejs npm espeak-ng sox)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    # Node may come from elsewhere (e.g. NodeSource); count it present if the commands exist.
    case "$package" in
      nodejs) command -v node >/dev/null && continue ;;
      npm) command -v npm >/dev/null && continue ;;
    esac
    missing+=("$package")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install_model_tools: Debian packages present"
else
  sudo_cmd=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "install_model_tools: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
    sudo_cmd=(sudo)
  fi
  echo "install_model_tools: installing ${missing[*]}"
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# ONNX Runtime for Node. --ignore-scripts: the package's install script tries to download
# CUDA parts, which fails here; the CPU binaries ship inside the npm package itself.
cd "$root/bench"
if node -e "require('onnxruntime-node')" >/dev/null 2>&1; then
  echo "install_model_tools: onnxruntime-node $(node -p "require('onnxruntime-node/package.json').version") present"
else
  echo "install_model_tools: installing onnxruntime-node into bench/node_modules"
  if [ -f package-lock.json ]; then
    npm ci --ignore-scripts --no-audit --no-fund
  else
    npm install --ignore-scripts --no-audit --no-fund
  fi
  node -e "require('onnxruntime-node')"
  echo "install_model_tools: onnxruntime-node $(node -p "require('onnxruntime-node/package.json').version") installed"
fi
