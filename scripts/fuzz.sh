#!/usr/bin/env bash
# libFuzzer campaigns (clang-16, ASan + UBSan) in build-fuzz/, a clang build of its own.
#
#   scripts/fuzz.sh TARGET SECONDS   fuzz TARGET (load, simplify, run, tensor_file,
#                                    serve_request)
#   scripts/fuzz.sh --build          build every target (scripts/test.sh does, before the
#                                    60 s runs CTest makes: fuzz_TARGET_60s)
#   --no-build                       CTest's short runs (deterministic: a fixed seed, a fresh
#                                    corpus, a fixed number of executions, SECONDS unused):
#                                    fail instead of building a missing
#                                    binary, and seed with every 4th node model only (the
#                                    seed pass of the model targets would take the minute)
#
# The corpus build-fuzz/corpus/TARGET grows across campaigns; it starts from the seeds:
# libonnx-testdata's node models and onnx 1.23's (campaigns), tests/data's models (model
# targets), fuzz/seeds/TARGET, and the regression inputs tests/data/fuzz/TARGET. A crash lands in
# build-fuzz/crashes/TARGET/: copy it into tests/data/fuzz/TARGET/ with the fix (the
# normal build's fuzz_replay_TARGET test replays it). Each campaign appends a line with
# its executions and coverage (edges) to build-fuzz/stats/TARGET.log.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${ONNXKIT_FUZZ_BUILD_DIR:-build-fuzz}
testdata=${ONNXKIT_TESTDATA_DIR:-/usr/share/libonnx-testdata/data}
targets=(load simplify run tensor_file serve_request)
build=1
if [ "${1:-}" = "--no-build" ]; then
  build=0
  shift
fi

# Campaigns on several targets at once share build-fuzz/: one configure and build at a time.
build_targets() {
  mkdir -p "$build_dir"
  (
    flock 9
    configure_and_build
  ) 9>"$build_dir/.build.lock"
}

configure_and_build() {
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}" CCACHE_NOHASHDIR=1
  # One OpenMP runtime, libgomp, as in the g++ build (oneDNN uses it): clang gets a copy of
  # GCC's omp.h alone (not GCC's whole include folder), less the GCC-only
  # __malloc__(deallocator) attribute clang rejects.
  local gomp_include="$PWD/$build_dir/gomp-include"
  mkdir -p "$gomp_include"
  local gcc_omp
  gcc_omp=$(ls /usr/lib/gcc/x86_64-linux-gnu/*/include/omp.h | sort -V | tail -1)
  sed -E 's/__malloc__ \(omp_free\),? ?//g' "$gcc_omp" >"$gomp_include/omp.h.new"
  cmp -s "$gomp_include/omp.h.new" "$gomp_include/omp.h" 2>/dev/null &&
    rm "$gomp_include/omp.h.new" || mv "$gomp_include/omp.h.new" "$gomp_include/omp.h"
  local libgomp
  libgomp=$(g++ -print-file-name=libgomp.so)
  # -O0: the instrumented library's cold build is what CI pays for on two cores; the
  # optimizer's share of it is the larger one (see the README's Fuzzing section).
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_CXX_COMPILER=clang++-16 \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="${ONNXKIT_FUZZ_OPT:--O0}" \
    -DONNXKIT_FUZZ=ON -DONNXKIT_BUILD_TESTS=OFF \
    -DOpenMP_CXX_FLAGS="-fopenmp=libgomp -isystem $gomp_include" -DOpenMP_CXX_LIB_NAMES=gomp \
    -DOpenMP_gomp_LIBRARY="$libgomp" >/dev/null
  ninja -C "$build_dir" -j "${ONNXKIT_JOBS:-$(nproc)}" "${targets[@]/#/fuzz_}"
}

if [ "${1:-}" = "--build" ]; then
  build_targets
  exit 0
fi
if [ $# -ne 2 ] || [[ ! " ${targets[*]} " =~ " $1 " ]] || ! [[ "$2" =~ ^[0-9]+$ ]]; then
  echo "usage: scripts/fuzz.sh [--no-build] TARGET SECONDS | --build  (TARGET: ${targets[*]})" >&2
  exit 2
fi
target=$1
seconds=$2
binary="$build_dir/fuzz_$target"
if [ $build -eq 1 ]; then
  # A campaign fuzzes the code as it is now: an existing binary may predate the last change
  # (ninja rebuilds only what changed).
  build_targets
elif [ ! -x "$binary" ]; then
  echo "fuzz.sh: $binary is missing: build it with scripts/fuzz.sh --build" >&2
  exit 1
fi

corpus="$build_dir/corpus/$target"
crashes="$build_dir/crashes/$target"
# CTest's short runs are deterministic: a fixed seed, a fresh corpus and a number of
# executions instead of a time, no corpus reloads (a timer), and the address space not
# randomized where the kernel lets setarch turn that off (a container's seccomp may not): the
# passes iterate hash maps keyed by pointers, whose order follows the addresses, and that
# order changes which code runs, and libFuzzer's comparison tracing feeds pointer values into
# its mutations. The run, simplify, tensor_file and serve_request runs then end with the same
# edges, features and corpus (their stats line) pass after pass; load still varies by a few
# edges. -timeout is wall time: the short runs allow an input 120 s (the largest seed takes
# about 3 s alone, but over 30 s on a machine loaded 5 times over), so only a hang fails.
# Campaigns run for SECONDS and keep their corpus.
length=(-max_total_time="$seconds")
timeout=30
launcher=()
if [ $build -eq 0 ]; then
  setarch "$(uname -m)" -R true 2>/dev/null && launcher=(setarch "$(uname -m)" -R)
  corpus=$(mktemp -d)
  trap 'rm -rf "$corpus"' EXIT
  case $target in
    load) runs=2400 ;;
    simplify) runs=800 ;;
    run) runs=1000 ;;
    tensor_file) runs=10000 ;;
    serve_request) runs=500000 ;;
  esac
  length=(-seed=1 -runs="$runs" -reload=0)
  timeout=120
fi
mkdir -p "$corpus" "$crashes" "$build_dir/stats"
seeds="$build_dir/seeds/$target"
stride=1
if [ $build -eq 0 ]; then
  seeds="$build_dir/seeds/$target-ci"
  stride=4
fi
if [ ! -d "$seeds" ]; then
  mkdir -p "$seeds.tmp"
  if [ "$target" = "serve_request" ]; then
    : # HTTP requests: fuzz/seeds/serve_request only
  elif [ "$target" = "tensor_file" ]; then
    # Tensor files of the backend cases, behind the byte that picks TensorProto's parser.
    for file in "$testdata"/node/test_[a-c]*/test_data_set_0/input_0.pb; do
      name=$(basename "$(dirname "$(dirname "$file")")")
      { printf '\001'; cat "$file"; } >"$seeds.tmp/$name.pb"
    done
  else
    # One tar each way rather than a cp per file (libFuzzer reads folders recursively).
    (cd "$testdata" && find node -name model.onnx | sort | awk "NR % $stride == 0" |
      tar -cf - -T -) | tar -C "$seeds.tmp" -xf -
    # onnx 1.23's node cases, where scripts/test.sh generated them: 1,294 of them import
    # opsets 18 to 24, which libonnx-testdata (onnx 1.12) has none of, so the newest ops and
    # versions were reached only by mutating an op type. Campaigns only: the CI run's minute
    # has enough to do with the others.
    if [ $build -eq 1 ] && [ -d build/onnx123_node ]; then
      find build/onnx123_node -name model.onnx -size -256k | while read -r model; do
        cp "$model" "$seeds.tmp/onnx123_$(basename "$(dirname "$model")").onnx"
      done
    fi
    # The project's small models (under 256 KiB) and the hostile ones.
    find tests/data/models examples/models tests/data/hostile -name '*.onnx' -size -256k -print0 |
      tar -cf - --null -T - | tar -C "$seeds.tmp" -xf -
  fi
  mv "$seeds.tmp" "$seeds"
fi
seed_dirs=("$seeds")
[ -d "fuzz/seeds/$target" ] && seed_dirs+=("fuzz/seeds/$target")
[ -d "tests/data/fuzz/$target" ] && seed_dirs+=("tests/data/fuzz/$target")

# Leaks count in the parsers; the executor's targets keep process-wide caches (oneDNN's
# primitives, the inter-op pool) that a per-input leak check would report.
leaks=1
case $target in simplify | run) leaks=0 ;; esac
# libFuzzer's -timeout is wall time: the largest seed (tests/data/models' 600-node GPT-2)
# takes about 5 CPU-s through simplify in this -O0 instrumented build, so 10 s failed it on a
# loaded machine; 30 s still catches a hang.
dict=()
[ -f "fuzz/$target.dict" ] && dict=(-dict="fuzz/$target.dict")
log=$(mktemp)
trap 'rm -f "$log"; [ $build -eq 0 ] && rm -rf "$corpus"' EXIT
status=0
OMP_NUM_THREADS=1 ASAN_OPTIONS=${ASAN_OPTIONS:-allocator_may_return_null=1} \
  "${launcher[@]}" "$binary" "$corpus" "${seed_dirs[@]}" "${length[@]}" -timeout="$timeout" \
  -rss_limit_mb=2048 -max_len=262144 -detect_leaks=$leaks -print_final_stats=1 \
  -artifact_prefix="$crashes/" "${dict[@]}" >"$log" 2>&1 || status=$?
# "#123456<tab>DONE   cov: 4567 ft: 12345 corp: 890/1234Kb ..."
done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -1 || true)
# A campaign stopped by a finding has no DONE line: its last progress line has the coverage.
[ -n "$done_line" ] || done_line=$(grep -E '^#[0-9]+[[:space:]].* cov: ' "$log" | tail -1 || true)
execs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo 0)
edges=$(sed -nE 's/.* cov: ([0-9]+).*/\1/p' <<<"$done_line")
features=$(sed -nE 's/.* ft: ([0-9]+).*/\1/p' <<<"$done_line")
units=$(sed -nE 's/.* corp: ([0-9]+)\/.*/\1/p' <<<"$done_line")
summary="fuzz $target: ${seconds}s, $execs execs, cov ${edges:-?} edges, ft ${features:-?}, corpus ${units:-?} units, rc $status"
echo "$(date -u +%FT%TZ) $summary" >>"$build_dir/stats/$target.log"
if [ $status -ne 0 ]; then
  grep -E 'ERROR|SUMMARY|==[0-9]+==|runtime error|Test unit written|abort' "$log" | head -40 >&2 || true
  tail -30 "$log" >&2
fi
echo "$summary"
exit $status
