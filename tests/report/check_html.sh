#!/usr/bin/env bash
# The HTML report in a real browser (issue #29): pages written by analyze, predict and doctor --html are rendered by
# headless Chromium (Debian's `chromium`); each must render with no script or console error, hold every section,
# fetch nothing, escape what came from the inputs, and give a screenshot of the window's size.
#   check_html.sh SCALESCOPE_EXE        (exit 77: no chromium, the test is skipped)
set -uo pipefail
exe=$1
cd "$(dirname "$0")/../.."
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
[ -n "$browser" ] || { echo "no chromium on PATH (Debian: apt-get install chromium): the HTML test is skipped"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/scalescope_html.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
F=tests/fixtures
status=0
fail() { echo "FAIL: $*"; status=1; }

# Inputs with markup in them: a log line and a file name a page must show as text, not run.
evil="$tmp/<b>evil<script>alert(1).log"
printf 'host:1:1 [0] NCCL INFO NCCL_P2P_DISABLE set by environment to 1.\nhost:1:1 [0] NCCL INFO Channel 00 : 0[0] -> 1[1] via SHM/direct/direct\n' > "$evil"
# A report whose model name and device carry markup.
sed 's/"name": "tiny-14m"/"name": "<script>alert(2)<\/script>"/; s/"device": "cpu (1 core/"device": "<img src=x onerror=alert(3)> (1 core/' \
  "$F/diagnosis/compute-contention/doctor.json" > "$tmp/evil-doctor.json"

"$exe" analyze "$F/diagnosis/compute-contention/doctor.json" "$F/diagnosis/pcie-host-bridge-path/all_reduce.txt" \
  "$F/diagnosis/cross-socket-path/topo.txt" "$F/profile-h200/host-sync" "$evil" --html "$tmp/analyze.html" > "$tmp/analyze.log" 2>&1
"$exe" analyze "$evil" "$tmp/evil-doctor.json" --html "$tmp/evil.html" > "$tmp/evil.log" 2>&1
"$exe" predict "$F/diagnosis/compute-contention/doctor.json" --link H200:NV18 --gpus 2,4,8,64 --what-if --html "$tmp/predict.html" > "$tmp/predict.log" 2>&1 ||
  fail "predict --html: $(tail -3 "$tmp/predict.log")"
"$exe" doctor --backend cpu --world-sizes 1,2 --model mlp-1m --warmup-rounds 1 --rounds 1 --steps-per-round 2 -q \
  --html "$tmp/doctor.html" > "$tmp/doctor.log" 2>&1 || fail "doctor --html: $(tail -3 "$tmp/doctor.log")"

for page in analyze predict doctor evil; do
  html=$tmp/$page.html
  [ -s "$html" ] || { fail "$page: no page written"; continue; }
  # Offline: nothing to fetch, nothing to run.
  grep -qiE '(src|href)=["'"'"']?(https?:)?//' "$html" && fail "$page: the page refers to something outside it"
  grep -qi '<script' "$html" && fail "$page: a <script> element (inputs must be escaped; the page has no script)"
  for id in diagnosis scaling waterfall busbw swimlanes topology provenance; do
    grep -q "<section id=\"$id\"" "$html" || fail "$page: no section '$id'"
  done
  # Rendered: the DOM after load keeps every section; the console has no error; the screenshot has the window's size.
  "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --dump-dom "file://$html" > "$tmp/$page.dom" 2> "$tmp/$page.dom.err"
  for id in diagnosis scaling waterfall busbw swimlanes topology provenance; do
    grep -q "id=\"$id\"" "$tmp/$page.dom" || fail "$page: section '$id' missing after rendering"
  done
  "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1100,2400 --enable-logging=stderr --v=0 \
    --screenshot="$tmp/$page.png" "file://$html" > "$tmp/$page.shot" 2>&1
  grep -E 'CONSOLE|Uncaught|Refused to' "$tmp/$page.shot" && fail "$page: console errors while rendering"
  size=$(od -An -tu1 -j16 -N8 "$tmp/$page.png" 2>/dev/null | awk '{print $1*16777216+$2*65536+$3*256+$4 "x" $5*16777216+$6*65536+$7*256+$8}')
  [ "$size" = "1100x2400" ] || fail "$page: screenshot ${size:-missing}, expected 1100x2400"
  echo "$page: $(wc -c < "$html") bytes, sections ok, screenshot $size"
done
# The markup of the inputs shows as text.
grep -q '&lt;script&gt;alert(2)&lt;/script&gt;' "$tmp/evil.html" || fail "evil: the model name's markup was not shown escaped"
grep -q '&lt;img src=x onerror=alert(3)&gt;' "$tmp/evil.html" || fail "evil: the device's markup was not shown escaped"
grep -qi '<img' "$tmp/evil.html" && fail "evil: an <img> element from an input"
grep -q 'evil&lt;script&gt;' "$tmp/analyze.html" || fail "analyze: the file name was not shown escaped"
[ -n "${KEEP_HTML:-}" ] && cp "$tmp"/*.html "$tmp"/*.png "$KEEP_HTML"/
exit $status
