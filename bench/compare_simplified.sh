#!/usr/bin/env bash
# For each model: simplify it with onnxkit, run ONNX Runtime on the ORIGINAL model, and both
# onnxkit and ONNX Runtime on the SIMPLIFIED one with the same inputs, and compare the
# outputs: "ORT" is onnxkit on the simplified model against ORT on the original (runtime and
# simplifier together); "ORT on both" is ORT on the simplified model against ORT on the
# original (what the simplification alone changed).
# Usage: bench/compare_simplified.sh MODEL.onnx... (after scripts/install_model_tools.sh and
# scripts/build.sh). Prints one line per model: nodes before/after, simplify time, ORT basic
# node count, max abs / max relative output difference.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for model in "$@"; do
  name=$(basename "$model" .onnx)
  mkdir -p "$work/$name"
  start=$(date +%s.%N)
  ./build/onnxkit simplify --json "$model" "$work/$name/simplified.onnx" > "$work/$name/report.json"
  seconds=$(echo "$(date +%s.%N) - $start" | bc)
  node bench/ort_optimize.js "$model" --level basic --optimized "$work/$name/ort_basic.onnx" \
    --random --seed 1 --dim batch=1 --dim seq=128 --save-inputs "$work/$name/inputs" \
    --output-dir "$work/$name/ort_out" --json > "$work/$name/ort.json"
  args=()
  for f in "$work/$name"/inputs/*.npy; do args+=(--input "$(basename "$f" .npy)=$f"); done
  ./build/onnxkit run "$work/$name/simplified.onnx" "${args[@]}" --output-dir "$work/$name/onnxkit_out" > /dev/null
  ort_args=()
  for f in "$work/$name"/inputs/*.npy; do ort_args+=(--input "$(basename "$f" .npy)=$f"); done
  node bench/ort_optimize.js "$work/$name/simplified.onnx" --level basic --no-save \
    "${ort_args[@]}" --output-dir "$work/$name/ort_simplified_out" > /dev/null
  ort_nodes=$(./build/onnxkit inspect --json "$work/$name/ort_basic.onnx" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["nodes"])')
  /usr/bin/python3 - "$work/$name" "$ort_nodes" "$seconds" <<'PY'
import glob, json, os, sys
import numpy as np
d, ort_nodes, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
r = json.load(open(os.path.join(d, "report.json")))
def worst(other):
    worst_abs = worst_rel = 0.0
    for f in glob.glob(os.path.join(d, "ort_out", "*.npy")):
        a = np.load(f).astype(np.float64)
        b = np.load(os.path.join(d, other, os.path.basename(f))).astype(np.float64)
        diff = np.abs(a - b)
        worst_abs = max(worst_abs, float(diff.max()))
        worst_rel = max(worst_rel, float((diff / (np.abs(a) + np.abs(a).mean() + 1e-12)).max()))
    return worst_abs, worst_rel
onnxkit_abs, onnxkit_rel = worst("onnxkit_out")
ort_abs, ort_rel = worst("ort_simplified_out")
print(f"{os.path.basename(d):16s} nodes {r['before']['nodes']:5d} -> {r['after']['nodes']:5d}  "
      f"(ORT basic {ort_nodes:>5s})  simplify {seconds:6.2f}s  check {r['check']['ok']}  "
      f"vs ORT: max abs {onnxkit_abs:.3g}, max rel {onnxkit_rel:.3g}; "
      f"ORT on both: max abs {ort_abs:.3g}, max rel {ort_rel:.3g}")
PY
done
