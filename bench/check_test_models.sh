#!/usr/bin/env bash
# Runs ONNX Runtime on every test case under a folder (default tests/data/models/: NAME/model.onnx
# + NAME/test_data_set_0/) and compares its outputs with the PyTorch references there.
# Needs scripts/install_model_tools.sh. Exits 1 if any case differs.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${1:-$root/tests/data/models}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
failed=0
for model in "$dir"/*/model.onnx; do
  case_dir="$(dirname "$model")"
  name="$(basename "$case_dir")"
  args=()
  i=0
  for input in $(/usr/bin/python3 -c "import onnx, sys
g = onnx.load(sys.argv[1]).graph
inits = {t.name for t in g.initializer}
print(' '.join(v.name for v in g.input if v.name not in inits))" "$model"); do
    args+=(--input "$input=$case_dir/test_data_set_0/input_$i.pb")
    i=$((i + 1))
  done
  echo "== $name"
  node "$root/bench/ort_optimize.js" "$model" --optimized "$out/$name.ort_basic.onnx" "${args[@]}" \
    --output-dir "$out/$name" | grep -E '^(model|optimized)'
  /usr/bin/python3 "$root/bench/compare_outputs.py" "$case_dir/test_data_set_0" "$out/$name" \
    --model "$model" --atol 1e-7 | grep -v ' passed, ' || failed=1
done
exit $failed
