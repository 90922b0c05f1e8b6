#!/usr/bin/env bash
# Documented check (not part of `make test`): open a rendered report folder in headless Chromium and
# screenshot the index page and one report, so a human (or an agent with an image viewer) can confirm
# that the pages render and the figures are visible.
#
#   scripts/check_report_in_browser.sh [REPORT_DIR [REPORT_NAME [OUT_DIR]]]
#
# REPORT_DIR defaults to reports/ (what `make demo` writes), REPORT_NAME to reliability, OUT_DIR to
# REPORT_DIR/screenshots. Needs Debian's chromium (apt-get install -y chromium).
set -euo pipefail
dir=$(cd "${1:-reports}" && pwd)
name=${2:-reliability}
out=${3:-$dir/screenshots}
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$browser" ]; then
  echo "check_report_in_browser: no chromium on PATH; install it with 'apt-get install -y chromium'" >&2
  exit 1
fi
for page in index "$name"; do
  [ -f "$dir/$page.html" ] || { echo "check_report_in_browser: $dir/$page.html not found (render it with 'speedaudit report ... --out $dir')" >&2; exit 1; }
done
mkdir -p "$out"
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
shoot() {  # $1 = page stem, $2 = window height
  "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$profile" --hide-scrollbars --screenshot="$out/$1.png" --window-size="1280,$2" \
    "file://$dir/$1.html" >/dev/null 2>&1
  [ -s "$out/$1.png" ] || { echo "check_report_in_browser: no screenshot of $1.html" >&2; exit 1; }
  echo "$out/$1.png"
}
shoot index 1200
shoot "$name" 4000
