#!/usr/bin/env bash
# Creates the project's Python environment .venv with Debian's python3-venv and installs the
# pinned packages of the given requirements files (default: scripts/requirements-test.txt).
# Does nothing when they are installed already. Safe to run again. ONNXKIT_VENV names another
# environment folder (for pins that conflict with .venv's).
set -euo pipefail
cd "$(dirname "$0")/.."
requirements=("$@")
[ ${#requirements[@]} -gt 0 ] || requirements=(scripts/requirements-test.txt)
venv=${ONNXKIT_VENV:-.venv}
if [ ! -x "$venv/bin/python" ]; then
  echo "setup_venv: creating $venv"
  /usr/bin/python3 -m venv "$venv"
fi
# A stamp per requirements file: pip runs again only when the file changed.
for file in "${requirements[@]}"; do
  stamp="$venv/.installed-$(basename "$file")"
  if [ -f "$stamp" ] && cmp -s "$file" "$stamp"; then continue; fi
  echo "setup_venv: installing $file"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$file"
  cp "$file" "$stamp"
done
