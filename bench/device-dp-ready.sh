#!/usr/bin/env bash
# One call on a GPU machine (issue #28): scalescope's own 1-GPU runs now carry the DP engine's bucket ready times
# (train --out: bucket_ready_s) and the tied embedding's sizes; predict from them at 2 and 4 GPUs against the
# scalescope rows measured on 2 × / 4 × H200 NVLink (bench/predict_rows.csv, median efficiency). Also `topo`'s NVLink
# lanes with NVML's error counters and doctor at one rank with its probes (no false finding expected).
#   bench/device-dp-ready.sh       (from the repository root; MODELS="tiny-14m gpt2-124m gpt-1.3b")
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
source bench/device-env.sh
SECONDS=0
device_build scalescope || exit 1
echo "build: ${SECONDS}s"
EXE=build-device/tools/scalescope
$EXE topo --out "$OUT/topo.json" > "$OUT/topo.txt" 2>&1
python3 - "$OUT/topo.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
for d in j["topology"]["devices"]:
    lanes = d.get("nvlinks", [])
    errs = {}
    for l in lanes:
        for k, v in l.get("errors", {}).items():
            errs[k] = errs.get(k, 0) + v
    print(f"{d['label']}: {sum(l['active'] for l in lanes)} of {len(lanes)} NVLinks active, versions "
          f"{sorted(set(l['nvml_version'] for l in lanes))}, error counters summed {errs or 'none readable'}")
PY
$EXE doctor --world-sizes 1 --model mlp-1m --warmup-rounds 1 --rounds 1 --steps-per-round 2 -q --out "$OUT/doctor.json" > "$OUT/doctor.txt" 2>&1
echo "doctor: exit $?"; grep -A2 "^diagnosis" "$OUT/doctor.txt" | head -3
MODELS=${MODELS:-"tiny-14m gpt2-124m gpt-1.3b"}
for m in $MODELS; do
  $EXE train --backend gpu --model "$m" -q --out "$OUT/train-$m.json" > "$OUT/train-$m.txt" 2>&1
  echo "train $m: exit $?"
  $EXE predict "$OUT/train-$m.json" --link H200:NV18 --gpus 2,4 --what-if --out "$OUT/predict-$m.json" > "$OUT/predict-$m.txt" 2>&1
  echo "predict $m: exit $?"
  grep "assumed: bucket\|assumed: tied" "$OUT/predict-$m.txt"
done
python3 - "$OUT" $MODELS <<'PY'
import csv, json, statistics, sys
out, models = sys.argv[1], sys.argv[2:]
rows = list(csv.DictReader(open("bench/predict_rows.csv")))
print("\n| model | 1-GPU step ms | buckets (ready ms: first, last) | ranks | predicted eff. | measured eff. (median of rows) | error |")
print("|---|---:|---|---:|---:|---:|---:|")
for m in models:
    try:
        t = json.load(open(f"{out}/train-{m}.json")); p = json.load(open(f"{out}/predict-{m}.json"))
    except Exception as e:
        print(f"| {m} | failed: {e} |"); continue
    step = t["step_s"]["trimmed_mean"] * 1e3 if isinstance(t.get("step_s"), dict) else float("nan")
    ready = t.get("bucket_ready_s", [])
    rtxt = f"{len(t['bucket_bytes'])} ({ready[0]*1e3:.1f}, {ready[-1]*1e3:.1f})" if ready else f"{len(t['bucket_bytes'])} (none)"
    for q in p["predictions"]:
        n = q["ranks"]
        meas = [float(r["step1_ms"]) / float(r["stepN_ms"]) for r in rows if r["engine"] == "scalescope" and r["model"] == m
                and r["link"] == "nvlink" and int(r["world_size"]) == n and r["step1_ms"] and r["stepN_ms"]]
        me = statistics.median(meas) if meas else None
        err = f"{100 * (me / q['efficiency'] - 1):+.1f} %" if me else "n/a"
        print(f"| {m} | {step:.2f} | {rtxt} | {n} | {100*q['efficiency']:.1f} % | {f'{100*me:.1f} % ({len(meas)})' if me else 'none'} | {err} |")
    for w in p.get("what_if", []):
        if w["label"].startswith("embedding"):
            print(f"|   what-if {w['label']} at {w['ranks']} | | | | {100*w['efficiency']:.1f} % (exposed {w['exposed_comm_ms']:.2f} ms) | | |")
PY
echo "total: ${SECONDS}s"
