#!/usr/bin/env bash
# Time and peak memory of scalescope against large and hostile inputs (issue #40), each generated here:
#   1. analyze on a 1.5 GB plain Kineto trace (about 9.6 M kernel events);
#   2. analyze on a gzip bomb: about 8 GB of valid events compressed to a few tens of MB (read up to its bound);
#   3. analyze on a directory of 100 000 small files no reader knows;
#   4. profile of a job that prints 100 MB to stdout, beside the job alone.
# Figures by GNU time (elapsed seconds, peak resident set of the largest process). Needs python3, gzip, /usr/bin/time.
#   bench/adversarial_bounds.sh BUILD_DIR [WORK_DIR]     (WORK_DIR needs about 2 GB free; removed at the end)
set -euo pipefail
exe=$(realpath "${1:?usage: bench/adversarial_bounds.sh BUILD_DIR [WORK_DIR]}")/tools/scalescope
work=$(mktemp -d "${2:-${TMPDIR:-/tmp}}/scalescope-bounds.XXXXXX")
trap 'rm -rf "$work"' EXIT
measure() {  # LABEL COMMAND...: one row "LABEL | exit | seconds | peak MB"
  local label=$1; shift
  local rc=0
  /usr/bin/time -f "%e %M" -o "$work/time.txt" "$@" > "$work/out.txt" 2>&1 || rc=$?
  read -r secs kb < <(tail -1 "$work/time.txt")
  printf '| %s | %s | %.2f | %.0f |\n' "$label" "$rc" "$secs" "$((kb / 1024))"
  grep -m1 -E "error|holds more than" "$work/out.txt" | cut -c1-160 | sed 's/^/|   | | | | /' || true
}

python3 - "$work" <<'EOF'
import gzip, os, sys, zlib
work = sys.argv[1]
ev = lambda i: ('{"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm_bf16bf16_bf16f32", "pid": 0, "tid": 7, '
                '"ts": %d.%03d, "dur": 4.250, "args": {"device": 0, "stream": 7, "correlation": %d, '
                '"External id": %d, "grid": [132, 1, 1], "block": [384, 1, 1]}}' % (1000 + i * 5, i % 1000, i, i))
# 1. a 1.5 GB plain trace
with open(os.path.join(work, "big.json"), "w") as f:
    f.write('{"schemaVersion": 1, "traceEvents": [\n')
    i, size = 0, 0
    while size < 1_500_000_000:
        chunk = ",\n".join(ev(i + k) for k in range(10000)) + ",\n"
        f.write(chunk); size += len(chunk); i += 10000
    f.write(ev(i) + "\n]}\n")
# 2. a gzip bomb: the same event 8 GB over, compressed once per 64 MiB block and the block repeated (gzip members)
one = (ev(7) + ",\n").encode()
block = one * ((64 << 20) // len(one))
member = gzip.compress(block, compresslevel=9)
with open(os.path.join(work, "bomb.json.gz"), "wb") as f:
    f.write(gzip.compress(b'{"traceEvents": [\n'))
    for _ in range((8 << 30) // len(block)):
        f.write(member)
    f.write(gzip.compress(ev(8).encode() + b"\n]}\n"))
# 3. 100 000 small files
d = os.path.join(work, "many")
os.mkdir(d)
for k in range(100_000):
    with open(os.path.join(d, "f%06d.txt" % k), "w") as f:
        f.write("nothing a reader knows %d\n" % k)
EOF
echo "inputs: big.json $(du -h "$work/big.json" | cut -f1), bomb.json.gz $(du -h "$work/bomb.json.gz" | cut -f1) (8 GiB inflated), 100 000 files"
echo
echo "| run | exit | seconds | peak MB |"
echo "|---|---:|---:|---:|"
measure "analyze big.json (1.5 GB trace)" "$exe" analyze "$work/big.json"
measure "analyze bomb.json.gz (default bound 4 GiB)" "$exe" analyze "$work/bomb.json.gz"
measure "analyze many/ (100 000 files, default --max-files 10 000)" "$exe" analyze "$work/many" --out "$work/many.json"
echo "|   | | | many.json: $(du -h "$work/many.json" | cut -f1) |"
job=(sh -c 'yes 0123456789abcdefghijklmnopqrstu | head -c 104857600')
measure "the job alone (100 MB to stdout, into a file)" "${job[@]}"
measure "profile of the job (stdout into a file)" "$exe" profile --keep "$work/job" -- "${job[@]}"
