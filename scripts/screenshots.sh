#!/usr/bin/env bash
# The four HTML pages as the README and docs/ show them (issue #39), rendered by headless Chromium into
# docs/screenshots/{profile,doctor,analyze,predict}.png (1100 px wide, the page's first 2000 px):
#   profile  a genuine 2-rank DDP job on CPU ranks (tests/profile/ddp_job.py under torchrun, Debian's python3-torch)
#   doctor   doctor --backend cpu on world sizes 1 and 2 (mlp-1m, one round)
#   analyze  the recorded H200 job directory tests/fixtures/profile-h200/host-sync
#   predict  that H200's `none` job directory at 2, 4 and 8 GPUs over NV18, with the what-if table
#   scripts/screenshots.sh            (after scripts/build.sh; needs chromium, and torch for the profile page)
# Errors: a page that cannot be made is named and the others are still made; the exit status is then 1.
set -uo pipefail
cd "$(dirname "$0")/.."
exe=${SCALESCOPE:-build/tools/scalescope}
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
[ -n "$browser" ] || { echo "screenshots: no chromium on PATH (Debian: apt-get install chromium)" >&2; exit 1; }
[ -x "$exe" ] || { echo "screenshots: no $exe: run scripts/build.sh first" >&2; exit 1; }
out=docs/screenshots
tmp=$(mktemp -d "${TMPDIR:-/tmp}/scalescope_shots.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"
status=0
shot() {  # PAGE: the page's HTML under $tmp to docs/screenshots/PAGE.png
  if [ ! -s "$tmp/$1.html" ]; then echo "screenshots: $1: no page ($(tail -2 "$tmp/$1.log"))" >&2; status=1; return; fi
  "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1100,2000 \
    --screenshot="$out/$1.png" "file://$tmp/$1.html" > "$tmp/$1.shot" 2>&1 || { echo "screenshots: $1: chromium failed" >&2; status=1; return; }
  echo "wrote $out/$1.png"
}
case "$tmp" in /*) ;; *) tmp=$PWD/$tmp ;; esac
"$exe" profile --html "$tmp/profile.html" -- /usr/bin/python3 -m torch.distributed.run --standalone --nproc_per_node 2 \
  --redirects 1 --tee 1 tests/profile/ddp_job.py --steps 40 > "$tmp/profile.log" 2>&1
shot profile
"$exe" doctor --backend cpu --world-sizes 1,2 --model mlp-1m --warmup-rounds 1 --rounds 1 --steps-per-round 2 -q \
  --html "$tmp/doctor.html" > "$tmp/doctor.log" 2>&1
shot doctor
"$exe" analyze tests/fixtures/profile-h200/host-sync --html "$tmp/analyze.html" > "$tmp/analyze.log" 2>&1
shot analyze
"$exe" predict tests/fixtures/profile-h200/none --link H200:NV18 --gpus 2,4,8 --what-if --html "$tmp/predict.html" > "$tmp/predict.log" 2>&1
shot predict
exit $status
