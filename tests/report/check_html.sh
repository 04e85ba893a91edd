#!/usr/bin/env bash
# The HTML report in a real browser (issues #29, #39): pages written by analyze, predict, doctor and profile --html
# are rendered by headless Chromium (Debian's `chromium`); each must name its command, open with the answer (the
# verdict, the primary cause or the job's failure: report/answer.h), hold the sections its inputs fill and no empty
# one, render with no script or console error, fetch nothing, escape what came from the inputs, and give a
# screenshot of the window's size.
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
# A job that fails by itself: its page leads with the failure.
"$exe" profile --html "$tmp/profile.html" -- python3 -c 'raise RuntimeError("planted failure for the page")' > "$tmp/profile.log" 2>&1
"$exe" doctor --backend cpu --world-sizes 1,2 --model mlp-1m --warmup-rounds 1 --rounds 1 --steps-per-round 2 -q \
  --html "$tmp/doctor.html" > "$tmp/doctor.log" 2>&1 || fail "doctor --html: $(tail -3 "$tmp/doctor.log")"

# The sections each page must have, in order after the answer (what its inputs fill; nothing else, nothing empty).
declare -A want=(
  [analyze]="answer diagnosis scaling waterfall busbw swimlanes topology provenance"
  [evil]="answer diagnosis scaling waterfall provenance"
  [predict]="answer scaling provenance"
  [doctor]="answer diagnosis scaling waterfall provenance"
  [profile]="answer diagnosis provenance"
)
declare -A command=([analyze]=analyze [evil]=analyze [predict]=predict [doctor]=doctor [profile]=profile)
for page in analyze predict doctor profile evil; do
  html=$tmp/$page.html
  [ -s "$html" ] || { fail "$page: no page written"; continue; }
  # Offline: nothing to fetch, nothing to run.
  grep -qiE '(src|href)=["'"'"']?(https?:)?//' "$html" && fail "$page: the page refers to something outside it"
  grep -qi '<script' "$html" && fail "$page: a <script> element (inputs must be escaped; the page has no script)"
  # Its command named in the title and the heading; the answer first; the sections its inputs fill, none empty.
  python3 - "$html" "${command[$page]}" "${want[$page]}" <<'PY' || fail "$page: structure (above)"
import re, sys
html, command, want = open(sys.argv[1], encoding="utf-8").read(), sys.argv[2], sys.argv[3].split()
ok = True
def bad(msg):
    global ok
    ok = False
    print("  " + msg)
for tag in ("title", "h1"):
    m = re.search(rf"<{tag}>(.*?)</{tag}>", html, re.S)
    if not m or not m.group(1).startswith(f"scalescope {command} "):
        bad(f"<{tag}> does not name 'scalescope {command}': {m.group(1)[:80] if m else None!r}")
sections = re.findall(r'<section(?: id="([^"]*)")?[^>]*>(.*?)</section>', html, re.S)
ids = [i for i, _ in sections if i]
if not sections or sections[0][0] != "answer":
    bad(f"the first section is {sections[0][0] if sections else None!r}, not the answer")
m = re.search(r'<p class="headline">(.*?)</p>', html, re.S)
if not m or len(m.group(1).strip()) < 20:
    bad("the answer has no headline sentence")
for i, body in sections:
    rest = re.sub(r"<h2>.*?</h2>", "", body, count=1, flags=re.S)
    if not re.sub(r"<[^>]+>|\s", "", rest):
        bad(f"section {i or '(untitled)'} is empty")
    if re.fullmatch(r'\s*<p class="none">.*?</p>\s*', rest, re.S):
        bad(f"section {i} only says it has nothing to show")
if [i for i in ids if i in want] != want or any(i not in want for i in ids):
    bad(f"sections {ids}, expected {want}")
sys.exit(0 if ok else 1)
PY
  # Rendered: the DOM after load keeps every section; the console has no error; the screenshot has the window's size.
  "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --dump-dom "file://$html" > "$tmp/$page.dom" 2> "$tmp/$page.dom.err"
  for id in ${want[$page]}; do
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
# The failed job's page says it failed, with its exception, in its first section.
grep -q 'class="answer k-failure"' "$tmp/profile.html" || fail "profile: the failed job's answer is not its failure"
grep -q 'planted failure for the page' "$tmp/profile.html" || fail "profile: the exception's line is not on the page"
[ -n "${KEEP_HTML:-}" ] && cp "$tmp"/*.html "$tmp"/*.png "$KEEP_HTML"/
exit $status
