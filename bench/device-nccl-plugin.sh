#!/usr/bin/env bash
# One call on a one-GPU machine (issue #27, item 5): scalescope's NCCL profiler plugin against a real NCCL.
# Builds the CLI and libscalescope-nccl-profiler.so (CPU-only build: the plugin needs no CUDA), then
#  (1) an all-reduce sweep (bench/nccl_plugin_job.py, 2 ranks on GPU 0 with separate NCCL_HOSTIDs: NCCL's socket
#      transport and proxy threads) plain and with the plugin, alternating twice: the plugin's median GPU time per
#      size against CUDA-event time, and the events' time with and without it (overhead);
#  (2) the same sweep at one rank with the plugin (what NCCL reports for a one-rank communicator);
#  (3) bench/profile_job.py (DDP) at 2 ranks on GPU 0, plain and under `scalescope profile` (plugin on), a
#      GPU-bound and a launch-bound size, alternating twice: overhead outside the profiled window;
#  (4) `scalescope analyze` of one kept job directory.
# Logs under $OUT; tables last.   bench/device-nccl-plugin.sh   (from the repository root)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
source bench/device-env.sh
SECONDS=0
{ date -u; nvidia-smi -L; python3 -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version())';
  git rev-parse HEAD 2>/dev/null; } > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"
device_build_cpu scalescope scalescope_nccl_profiler || exit 1
echo "build: ${SECONDS}s"
EXE=build-device-cpu/tools/scalescope
PLUGIN=$PWD/build-device-cpu/src/libscalescope-nccl-profiler.so
TR="torchrun --standalone --nproc_per_node"
for r in 1 2; do
  $TR 2 bench/nccl_plugin_job.py --same-gpu > "$OUT/sweep.plain.$r.log" 2>&1
  mkdir -p "$OUT/sweep.plugin.$r"
  NCCL_PROFILER_PLUGIN=$PLUGIN SCALESCOPE_NCCL_PROFILE_DIR=$OUT/sweep.plugin.$r NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV \
    $TR 2 bench/nccl_plugin_job.py --same-gpu > "$OUT/sweep.plugin.$r.log" 2>&1
  echo "sweep rep $r done (${SECONDS}s)"
done
grep -h "profiler plugin\|PROFILER" "$OUT"/sweep.plugin.1.log | head -5
mkdir -p "$OUT/sweep.one"
NCCL_PROFILER_PLUGIN=$PLUGIN SCALESCOPE_NCCL_PROFILE_DIR=$OUT/sweep.one $TR 1 bench/nccl_plugin_job.py --max-bytes 1048576 \
  > "$OUT/sweep.one.log" 2>&1
echo "one-rank sweep: exit $? (${SECONDS}s)"
step_of() { grep -o 'step_time [0-9.]*' "$1" | tail -1 | awk '{print $2}'; }
for r in 1 2; do
  for size in gpu launch; do
    args="--steps 200 --same-gpu --width 2048 --depth 4"; [ $size = launch ] && args="--steps 300 --same-gpu --width 512 --depth 4 --batch 256"
    $TR 2 bench/profile_job.py $args > "$OUT/ddp.$size.plain.$r.log" 2>&1
    $EXE profile --keep "$OUT/ddp.$size.job.$r" --out "$OUT/ddp.$size.report.$r.json" -- $TR 2 bench/profile_job.py $args \
      > "$OUT/ddp.$size.profiled.$r.log" 2>&1
    echo "ddp $size rep $r: plain $(step_of "$OUT/ddp.$size.plain.$r.log") ms, profiled $(step_of "$OUT/ddp.$size.profiled.$r.log") ms (${SECONDS}s)"
  done
done
$EXE analyze "$OUT"/ddp.gpu.job.1/nccl-profile.*.jsonl > "$OUT/analyze.plugin.txt" 2>&1
head -30 "$OUT/analyze.plugin.txt"
python3 - "$OUT" <<'PY'
import glob, json, re, statistics, sys
out = sys.argv[1]
def events(path):
    return {int(m[0]): float(m[1]) for m in re.findall(r"size_bytes (\d+) event_us ([0-9.]+)", open(path).read())}
def plugin(d, rank=0):
    per = {}
    for f in glob.glob(f"{d}/nccl-profile.*.r{rank}.jsonl"):
        lines = open(f).read().splitlines()
        for l in lines[1:]:
            j = json.loads(l)
            if j.get("op") == "AllReduce" and "gpu_ns" in j:
                per.setdefault(j["count"] * 4, []).append(j["gpu_ns"] / 1e3)
    return per
print("\n| size | events plain µs (2 runs) | events with plugin µs | plugin median GPU µs | plugin / events |\n|---:|---:|---:|---:|---:|")
p1, p2 = events(f"{out}/sweep.plain.1.log"), events(f"{out}/sweep.plain.2.log")
q1, q2 = events(f"{out}/sweep.plugin.1.log"), events(f"{out}/sweep.plugin.2.log")
g = plugin(f"{out}/sweep.plugin.1")
for s in sorted(p1):
    gm = statistics.median(g[s][-20:]) if s in g else None
    ev = q1.get(s)
    print(f"| {s} | {p1[s]:.1f} / {p2.get(s, 0):.1f} | {ev or 0:.1f} / {q2.get(s, 0):.1f} | "
          f"{gm if gm is None else round(gm, 1)} | {'' if not (gm and ev) else f'{gm / ev:.3f}'} |")
one = glob.glob(f"{out}/sweep.one/nccl-profile.*.jsonl")
if one:
    recs = [json.loads(l) for l in open(one[0]).read().splitlines()[1:]]
    print(f"\none rank: {len(recs)} records, {sum('gpu_ns' in r for r in recs)} with GPU time")
else:
    print("\none rank: no plugin file")
print("\n| job | plain ms/step (2 runs) | under profile ms/step | change |\n|---|---:|---:|---:|")
for size in ("gpu", "launch"):
    def st(kind, r):
        m = re.findall(r"step_time ([0-9.]+)", open(f"{out}/ddp.{size}.{kind}.{r}.log").read())
        return float(m[-1]) if m else None
    a, b = [st("plain", r) for r in (1, 2)], [st("profiled", r) for r in (1, 2)]
    ch = f"{100 * (statistics.mean(b) / statistics.mean(a) - 1):+.2f} %" if all(a) and all(b) else ""
    print(f"| {size} | {a} | {b} | {ch} |")
    try:
        d = json.load(open(f"{out}/ddp.{size}.report.1.json"))["diagnosis"]["primary"]
        print(f"|  diagnosis | {d['cause'] if d else None} | | |")
    except Exception as e:
        print(f"|  diagnosis | none ({e}) | | |")
PY
tar -czf "$OUT/jobs.tgz" -C "$OUT" $(cd "$OUT" && ls -d ddp.* sweep.* 2>/dev/null) && rm -rf "$OUT"/ddp.* "$OUT"/sweep.*
