#!/usr/bin/env bash
# End-to-end: onnxkit writes each kind of report for the small test models, and every page
# loads in headless Chromium with no script or console error (tests/report/browser_check.sh);
# one screenshot per kind goes to OUT_DIR.
#
#   tests/report/report_pages_test.sh ONNXKIT SOURCE_DIR OUT_DIR simplify|bench|inspect|quantize
set -euo pipefail
onnxkit=$1
source_dir=$2
out_dir=$3
kind=$4
check="$source_dir/tests/report/browser_check.sh"
models="$source_dir/tests/data/models"
mkdir -p "$out_dir"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

case "$kind" in
  simplify)
    for dir in "$models"/*/; do
      name=$(basename "$dir")
      "$onnxkit" simplify "$dir/model.onnx" "$work/$name.onnx" --report "$work/$name.html" \
        --quiet >/dev/null
      shot=""
      [ "$name" = convnet_bn_tiny ] && shot="$out_dir/simplify_$name.png"
      "$check" "$work/$name.html" $shot
    done
    ;;
  bench)
    a="$models/convnet_bn_tiny/model.onnx"
    b="$models/fpn_dynamic_tiny/model.onnx"
    # A second model side by side, then a peer's JSON (onnxkit's own format here; ORT's
    # ort_bench.js writes the same fields).
    "$onnxkit" bench "$a" --iterations 20 --quiet --report "$work/two_models.html" \
      --against "$b" >/dev/null
    "$check" "$work/two_models.html" "$out_dir/bench_two_models.png"
    "$onnxkit" bench "$b" --iterations 10 --profile "$work/trace.json" --json >"$work/peer.json"
    "$onnxkit" bench "$a" --iterations 10 --quiet --report "$work/peer.html" \
      --against "$work/peer.json" >/dev/null
    "$check" "$work/peer.html"
    ;;
  inspect)
    for dir in "$models"/*/; do
      name=$(basename "$dir")
      "$onnxkit" inspect "$dir/model.onnx" --svg "$work/$name.svg" --quiet >/dev/null
      shot=""
      [ "$name" = lstm_state_tiny ] && shot="$out_dir/inspect_$name.png"
      "$check" "$work/$name.svg" $shot
    done
    ;;
  quantize)
    # Dynamic (MatMul) and static QDQ (Conv) with the comparison, then `compare` on its own.
    "$onnxkit" quantize "$models/bert_tiny/model.onnx" "$work/bert_int8.onnx" --compare \
      --compare-runs 5 --report "$work/bert_dynamic.html" >/dev/null
    "$check" "$work/bert_dynamic.html" "$out_dir/quantize_bert_tiny.png"
    "$onnxkit" quantize "$models/convnet_bn_tiny/model.onnx" "$work/cnn_int8.onnx" --mode static \
      --calibration-samples 4 --compare --compare-runs 5 --report "$work/cnn_static.html" >/dev/null
    "$check" "$work/cnn_static.html"
    "$onnxkit" compare "$models/convnet_bn_tiny/model.onnx" "$work/cnn_int8.onnx" --runs 5 \
      --report "$work/compare.html" >/dev/null
    "$check" "$work/compare.html"
    ;;
  *)
    echo "report_pages_test: unknown kind '$kind'" >&2
    exit 2
    ;;
esac
