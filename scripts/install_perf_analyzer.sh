#!/usr/bin/env bash
# Installs Triton's perf_analyzer (scripts/requirements-perf-analyzer.txt) into
# .venv-serve/perf_analyzer/{bin,lib} for the server's end-to-end tests; run it with
# LD_LIBRARY_PATH=.venv-serve/perf_analyzer/lib. Does nothing when it is installed already.
# Needs .venv-serve (scripts/test.sh makes it) and Debian's libb64-0d (install_deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
requirements=scripts/requirements-perf-analyzer.txt
dest=.venv-serve/perf_analyzer
if [ -x "$dest/bin/perf_analyzer" ] && cmp -s "$requirements" "$dest/.installed"; then exit 0; fi
echo "install_perf_analyzer: installing $requirements"
download=$(mktemp -d)
trap 'rm -rf "$download"' EXIT
.venv-serve/bin/python -m pip download --quiet --disable-pip-version-check --no-deps \
  --only-binary=:all: --platform manylinux1_x86_64 --platform manylinux2014_x86_64 \
  --require-hashes -r "$requirements" -d "$download"
rm -rf "$dest"
mkdir -p "$dest/bin" "$dest/lib"
.venv-serve/bin/python - "$download" "$dest" <<'PYTHON'
import glob, os, sys, zipfile
download, dest = sys.argv[1:]
wanted = {"/data/bin/perf_analyzer": "bin", "nvidia/cuda_runtime/lib/libcudart.so.12": "lib"}
found = set()
for wheel in glob.glob(os.path.join(download, "*.whl")):
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            for suffix, folder in wanted.items():
                if name.endswith(suffix):
                    with open(os.path.join(dest, folder, os.path.basename(name)), "wb") as out:
                        out.write(archive.read(name))
                    found.add(suffix)
missing = set(wanted) - found
if missing:
    sys.exit("install_perf_analyzer: the wheels hold no " + ", ".join(sorted(missing)))
PYTHON
chmod +x "$dest/bin/perf_analyzer"
cp "$requirements" "$dest/.installed"
