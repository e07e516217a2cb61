#!/usr/bin/env bash
# Every report (simplify, inspect, bench, quantize) for every model of the model set, each opened in headless Chromium
# (tests/report/browser_check.sh: no script or console error), with the time the pages take:
# Graphviz's layout (as onnxkit reports it) and the page's own render time (performance.now()
# when its script has built the page), plus the browser run's wall time (Chromium's start
# included). bench --report is set beside ONNX Runtime's JSON (node bench/ort_bench.js) when
# bench/node_modules has onnxruntime-node, else beside nothing.
#
#   bench/check_reports.sh [MODELS_DIR] [OUT_DIR]     (defaults: bench/models, /tmp/onnxkit-reports)
#
# Prints a markdown table; exits non-zero when a page fails to render cleanly.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
models=${1:-$root/bench/models}
out=${2:-/tmp/onnxkit-reports}
onnxkit=${ONNXKIT:-$root/build/onnxkit}
check="$root/tests/report/browser_check.sh"
mkdir -p "$out"
have_ort=0
[ -d "$root/bench/node_modules/onnxruntime-node" ] && have_ort=1

failures=0
echo "| model | nodes (before -> after) | dot layout before / after | simplify page: render / browser run | inspect svg | bench page (vs) | quantize page |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
for model in "$models"/*.onnx; do
  name=$(basename "$model" .onnx)
  simplify_log="$out/$name.simplify.txt"
  "$onnxkit" simplify "$model" "$out/$name.simplified.onnx" --check-n 0 --quiet \
    --report "$out/$name.simplify.html" >"$simplify_log"
  nodes=$(grep -E "^nodes " "$simplify_log" | awk '{print $2 " -> " $3}')
  layouts=$(grep -o 'layout [0-9.]* [m]*s' "$out/$name.simplify.html" | awk '{print $2 " " $3}' |
    paste -sd/ -)
  if line=$("$check" "$out/$name.simplify.html" 2>&1); then
    page=$(sed -E 's/.*rendered in ([0-9.]+) ms.*browser run ([0-9]+) ms/\1 ms \/ \2 ms/' <<<"$line")
  else
    page="FAILED"; failures=$((failures + 1)); echo "$line" >&2
  fi
  "$onnxkit" inspect "$model" --svg "$out/$name.svg" --quiet >/dev/null
  if "$check" "$out/$name.svg" >/dev/null 2>&1; then svg="ok"; else svg="FAILED"; failures=$((failures + 1)); fi
  against=()
  peer="-"
  if [ $have_ort = 1 ]; then
    node "$root/bench/ort_bench.js" "$model" --iterations 10 --profile "$out/$name.ort_trace.json" \
      --json >"$out/$name.ort.json"
    against=(--against "$out/$name.ort.json")
    peer="ORT"
  fi
  # One thread, as ort_bench.js's default.
  "$onnxkit" bench "$model" --threads 1 --iterations 10 --quiet --report "$out/$name.bench.html" \
    "${against[@]}" >/dev/null
  if line=$("$check" "$out/$name.bench.html" 2>&1); then
    bench=$(sed -E 's/.*rendered in ([0-9.]+) ms.*/\1 ms/' <<<"$line")" ($peer)"
  else
    bench="FAILED"; failures=$((failures + 1)); echo "$line" >&2
  fi
  # Dynamic int8 twin with its comparison (one sample, a few alternating timed runs).
  "$onnxkit" quantize "$model" "$out/$name.int8.onnx" --compare --compare-samples 1 \
    --compare-runs 3 --report "$out/$name.quantize.html" >/dev/null
  if line=$("$check" "$out/$name.quantize.html" 2>&1); then
    quantize=$(sed -E 's/.*rendered in ([0-9.]+) ms.*/\1 ms/' <<<"$line")
  else
    quantize="FAILED"; failures=$((failures + 1)); echo "$line" >&2
  fi
  echo "| $name | $nodes | $layouts | $page | $svg | $bench | $quantize |"
done
echo
echo "pages in $out; $failures failed"
[ $failures -eq 0 ]
