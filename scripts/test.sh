#!/usr/bin/env bash
# Quick start, command 2: install what is missing, build, run the whole test suite.
# Ends with the line "N passed, N failed"; exits non-zero when anything failed.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/build.sh
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
ctest --test-dir build -j "$(nproc)" --output-on-failure --timeout 600 2>&1 | tee "$log" || status=$?
# ctest's own summary: "97% tests passed, 3 tests failed out of 100".
summary=$(grep -E "tests passed, [0-9]+ tests? failed out of [0-9]+" "$log" | tail -1 || true)
if [ -z "$summary" ]; then
  echo "test.sh: ctest printed no summary" >&2
  echo "0 passed, 1 failed"
  exit 1
fi
failed=$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\1/' <<<"$summary")
total=$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\2/' <<<"$summary")
grep -h "\[ measured \]" build/Testing/Temporary/LastTest.log 2>/dev/null | sort -u || true
echo "$((total - failed)) passed, $failed failed"
[ "$status" -eq 0 ] && [ "$failed" -eq 0 ]
