#!/usr/bin/env bash
# One call on a GPU machine (issue #31): doctor's machine probes on the lent GPU(s). Builds scalescope (CUDA), then
# `topo --probe` (platform + per-GPU copy and GEMM probes, timed) and nvidia-smi's own view for comparison, then a
# short doctor at world size 1 (the probes feed its diagnosis; --html page kept). Logs under $OUT; the table last.
#   bench/device-probes.sh      (from the repository root)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
source bench/device-env.sh
SECONDS=0
{ date -u; nvidia-smi -L; git rev-parse HEAD 2>/dev/null; } > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"
device_build scalescope || exit 1
echo "build: ${SECONDS}s"
EXE=build-device/tools/scalescope
t0=$SECONDS
/usr/bin/time -f "%e s %M KB" -o "$OUT/topo-probe.time" $EXE topo --probe --out "$OUT/topo-probe.json" > "$OUT/topo-probe.txt" 2>&1
echo "topo --probe: exit $? in $((SECONDS - t0)) s"
sed -n '/^platform/,$p' "$OUT/topo-probe.txt"
nvidia-smi -q -d PCIE,CLOCK,POWER,PERFORMANCE > "$OUT/nvidia-smi-q.txt" 2>&1
$EXE doctor --world-sizes 1 --model mlp-1m --warmup-rounds 1 --rounds 1 --steps-per-round 2 -q --out "$OUT/doctor.json" \
  --html "$OUT/doctor.html" > "$OUT/doctor.txt" 2>&1
echo "doctor: exit $?"
sed -n '/^GPU probes/,/^$/p' "$OUT/doctor.txt"
python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
j = json.load(open(f"{out}/topo-probe.json"))
g = j.get("gpu_probes", {})
print("\n| GPU | H2D GB/s | D2H GB/s | PCIe under load (max) | GEMM TFLOP/s | SM MHz (max) | power W (limit) | throttle |")
print("|---|---:|---:|---|---:|---|---|---|")
gem = {x["device"]: x for x in g.get("gemms", [])}
for c in g.get("copies", []):
    n, m = c["nvml"], gem.get(c["device"], {}).get("nvml", {})
    print(f"| {c['device']} {c['name']} | {c['h2d_gbps']:.1f} | {c['d2h_gbps']:.1f} | Gen{n['pcie_gen']} x{n['pcie_width']} (Gen{n['pcie_max_gen']} x{n['pcie_max_width']}) "
          f"| {gem.get(c['device'], {}).get('tflops', 0):.0f} | {m.get('sm_mhz')} ({m.get('max_sm_mhz')}) | {m.get('power_w')} ({m.get('power_limit_w')}) "
          f"| {', '.join(m.get('clock_event_reasons', [])) or 'none'} |")
print(f"probes: {g.get('seconds', 0):.2f} s; notes: {g.get('notes')}")
p = j.get("platform", {})
print(f"platform: iommu {p.get('iommu')}, hypervisor {p.get('hypervisor')}, shm {p.get('shm_bytes')}, bridges {len(p.get('bridges', []))} "
      f"(+{p.get('bridges_unreadable')} unreadable), rdma {p.get('rdma_devices')}, nics {[n['name'] for n in p.get('nics', [])]}")
PY
