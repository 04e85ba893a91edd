#!/usr/bin/env bash
# The wheel of scripts/wheel.sh, pip-installed into a fresh virtual environment, gives a working CLI there:
#   check_wheel.sh BUILD_DIR        # run by ctest (Install.WheelHasAWorkingCli), BUILD_DIR already built
# Builds the wheel from BUILD_DIR (no compile), creates a venv of /usr/bin/python3 with its system site-packages
# (Debian's python3-torch visible), `pip install --no-index` the wheel, then checks: `scalescope --version`,
# `python -m scalescope --version` and scalescope.__version__ agree; `scalescope analyze` of the host-sync fixture
# names host-sync; the CLI loads the venv's GPU module (CUDA builds); where torch imports, `scalescope profile` of a
# tiny one-process CPU torch job exits 0, prints its diagnosis and points the job at the venv's shim and NCCL plugin;
# `pip uninstall` removes what was installed. Everything is written under one temporary directory (TMPDIR, HOME
# and pip's cache there too), removed on exit.
# Exit status: 0 passed; 1 a check failed (what failed is printed); 77 skipped (no python3, no venv/ensurepip, no
# pip in the venv, no wheel module to pack with: the reason is printed). The torch part alone is skipped, with a
# message, when torch does not import.
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/scalescope_wheel_check.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export TMPDIR=$tmp HOME=$tmp/home XDG_CACHE_HOME=$tmp/home/.cache PIP_CONFIG_FILE=/dev/null
mkdir -p "$HOME"
fail() { echo "FAIL: $*"; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }

python=/usr/bin/python3
[ -x "$python" ] || python=$(command -v python3) || skip "no python3"
packer=""
for p in python3 /usr/bin/python3; do
  command -v "$p" > /dev/null 2>&1 && "$p" -m wheel version > /dev/null 2>&1 && packer=$p && break
done
[ -n "$packer" ] || skip "no Python with the wheel module to pack the wheel (Debian: python3-wheel, scripts/setup.sh)"

# The wheel, from the tree already built.
bash "$src/scripts/wheel.sh" "$build" "$tmp/dist" > "$tmp/wheel.log" 2>&1 || { cat "$tmp/wheel.log"; fail "scripts/wheel.sh failed"; }
cat "$tmp/wheel.log"
whl=$(ls "$tmp"/dist/scalescope-*-py3-none-linux_*.whl)

# A fresh venv that sees the system's packages (torch), and pip in it.
venv=$tmp/venv
if ! "$python" -m venv --system-site-packages "$venv" > "$tmp/venv.log" 2>&1; then
  cat "$tmp/venv.log"
  skip "$python -m venv failed (Debian: python3-venv, scripts/setup.sh)"
fi
"$venv/bin/python" -m pip --version > /dev/null 2>&1 || skip "the venv has no pip (ensurepip unavailable; Debian: python3-venv)"
"$venv/bin/python" -m pip install --no-index --no-deps --no-cache-dir --disable-pip-version-check -q "$whl" \
  > "$tmp/pip.log" 2>&1 || { cat "$tmp/pip.log"; fail "pip install $whl failed"; }

# The same layout as cmake --install, under the venv's prefix.
exe=$venv/bin/scalescope
for f in bin/scalescope lib/scalescope/libscalescope-nccl-profiler.so share/scalescope/python/sitecustomize.py \
         share/scalescope/python/_scalescope_capture.py share/doc/scalescope/README.md; do
  [ -e "$venv/$f" ] || fail "missing in the venv after pip install: $f"
done
[ -x "$exe" ] || fail "$exe is not executable"

version_line=$("$exe" --version) || fail "$exe --version failed"
echo "$version_line"
version=$(echo "$version_line" | awk 'NR == 1 {print $2}')
[[ "$whl" == */scalescope-$version-py3-none-* ]] || fail "the wheel's name $(basename "$whl") has not the CLI's version $version"
[ "$("$venv/bin/python" -m scalescope --version)" = "$version_line" ] || fail "python -m scalescope --version differs from scalescope --version"
[ "$("$venv/bin/python" -c 'import scalescope; print(scalescope.__version__)')" = "$version" ] ||
  fail "scalescope.__version__ is not $version"

"$exe" analyze "$src/tests/fixtures/profile-h200/host-sync" --out "$tmp/x.json" > "$tmp/analyze.log" 2>&1 ||
  { tail -20 "$tmp/analyze.log"; fail "scalescope analyze of the host-sync fixture failed"; }
cause=$("$venv/bin/python" -c 'import json, sys; print(json.load(open(sys.argv[1]))["diagnosis"]["primary"]["cause"])' "$tmp/x.json")
[ "$cause" = host-sync ] || fail "analyze's primary cause is '$cause', not host-sync"
echo "analyze: primary cause $cause"

# CUDA builds: the installed CLI loads the venv's GPU module (topo names it, with or without a GPU).
if ! echo "$version_line" | grep -q "built without CUDA"; then
  [ -e "$venv/lib/scalescope/libscalescope-gpu.so" ] || fail "missing in the venv: lib/scalescope/libscalescope-gpu.so"
  "$exe" topo > "$tmp/topo.log" 2>&1 || true
  grep -q "GPU module $venv/lib/scalescope/libscalescope-gpu.so" "$tmp/topo.log" ||
    { cat "$tmp/topo.log"; fail "the venv's CLI did not load the venv's GPU module"; }
  echo "topo: the venv's GPU module loaded"
fi

# A tiny single-process CPU torch job under profile, from the venv.
if "$venv/bin/python" -c 'import torch' > /dev/null 2>&1; then
  cat > "$tmp/job.py" <<'EOF'
import torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))
for step in range(8):
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
print("job done, loss", float(loss))
EOF
  (cd "$tmp" && env -u SCALESCOPE_SHIM_DIR -u SCALESCOPE_NCCL_PLUGIN "$exe" profile --steps 2 --warmup 2 --keep "$tmp/job" \
     -- "$venv/bin/python" "$tmp/job.py" > "$tmp/profile.log" 2>&1) ||
    { tail -30 "$tmp/profile.log"; fail "scalescope profile of a CPU torch job exited non-zero"; }
  grep -q "job done" "$tmp/profile.log" || { tail -30 "$tmp/profile.log"; fail "the job's output is not in profile's"; }
  grep -A2 "^diagnosis:" "$tmp/profile.log" | grep -q "primary:" || { tail -30 "$tmp/profile.log"; fail "profile printed no diagnosis"; }
  grep -A2 "^diagnosis:" "$tmp/profile.log"
  grep -q "$venv/share/scalescope/python" "$tmp/job/job.json" || fail "profile did not use the venv's shim"
  grep -q "$venv/lib/scalescope/libscalescope-nccl-profiler.so" "$tmp/job/job.json" || fail "profile did not use the venv's NCCL plugin"
  echo "profile: a CPU torch job profiled with the venv's shim and plugin"
else
  echo "torch does not import in the venv ($python has no torch; Debian: python3-torch): the profile check is skipped"
fi

# pip's record of the wheel is complete: uninstalling removes the CLI and what lies beside it.
"$venv/bin/python" -m pip uninstall -y -q scalescope > "$tmp/uninstall.log" 2>&1 || { cat "$tmp/uninstall.log"; fail "pip uninstall failed"; }
for f in bin/scalescope lib/scalescope/libscalescope-nccl-profiler.so share/scalescope/python/sitecustomize.py; do
  [ ! -e "$venv/$f" ] || fail "pip uninstall left $f"
done
echo "wheel OK: $(basename "$whl") ($(du -h "$whl" | cut -f1)) installs, runs and uninstalls"
