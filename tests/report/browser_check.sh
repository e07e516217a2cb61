#!/usr/bin/env bash
# Loads a report page (or SVG picture) in headless Chromium and checks that it rendered:
# an HTML report must reach data-render="ok" on <body> (its own script sets it after building
# the page, and sets "error" on any script error or console.error); an SVG must come back as
# an <svg> document. Takes a screenshot when asked. Prints the page's own render time
# (performance.now() when its script finished) and the wall time of the browser run.
#
#   tests/report/browser_check.sh PAGE.html|PICTURE.svg [SCREENSHOT.png]
set -euo pipefail
page=$(realpath "$1")
screenshot=${2:-}
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
  echo "browser_check: chromium is not installed (scripts/install_deps.sh installs it)" >&2
  exit 1
fi
# A throwaway profile, so runs neither share state nor touch the user's.
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
# --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start; the page is our own.
flags=(--headless --no-sandbox --disable-gpu --no-first-run --disable-extensions
       --user-data-dir="$profile" --virtual-time-budget=20000)
start=$(date +%s%N)
dom=$("$browser" "${flags[@]}" --dump-dom "file://$page" 2>"$profile/stderr") || {
  cat "$profile/stderr" >&2
  echo "browser_check: chromium failed on $page" >&2
  exit 1
}
wall_ms=$((($(date +%s%N) - start) / 1000000))
case "$page" in
  *.svg)
    if ! grep -q "<svg" <<<"$dom"; then
      echo "browser_check: $page did not load as an SVG document" >&2
      exit 1
    fi
    echo "browser_check: $page loaded (browser run ${wall_ms} ms)"
    ;;
  *)
    state=$(grep -o 'data-render="[a-z]*"' <<<"$dom" | head -1 || true)
    render_ms=$(grep -o 'data-render-ms="[0-9.]*"' <<<"$dom" | head -1 | grep -o '[0-9.]*' || true)
    if [ "$state" != 'data-render="ok"' ]; then
      echo "browser_check: $page did not render cleanly (${state:-no render signal})" >&2
      # What the page logged: rerun with Chromium's console output on stderr.
      "$browser" "${flags[@]}" --enable-logging=stderr --v=0 --dump-dom "file://$page" 2>&1 \
        >/dev/null | grep -i "CONSOLE" >&2 || true
      exit 1
    fi
    echo "browser_check: $page rendered in ${render_ms} ms (page script), browser run ${wall_ms} ms"
    ;;
esac
if [ -n "$screenshot" ]; then
  rm -f "$screenshot"
  "$browser" "${flags[@]}" --hide-scrollbars --window-size=1400,900 \
    --screenshot="$(realpath -m "$screenshot")" "file://$page" 2>"$profile/stderr" >/dev/null || {
    cat "$profile/stderr" >&2
    exit 1
  }
  if [ ! -s "$screenshot" ]; then
    echo "browser_check: no screenshot written to $screenshot" >&2
    exit 1
  fi
  echo "browser_check: screenshot $screenshot ($(stat -c %s "$screenshot") bytes)"
fi
