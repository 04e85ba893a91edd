#!/usr/bin/env bash
# Builds scalescope's libFuzzer targets (clang, ASan + UBSan) in build-fuzz/ and runs each for a given time,
# one after the other on one job. Seeds come from ../shared/corpus (copied at run time into
# build-fuzz/seeds/, never committed) plus a few inline lines of each format. One target at a time, one
# process each (2 shared cores: no -jobs/-fork); crashes are written to
# build-fuzz/crashes/<target>/ and listed at the end (exit status 1 when there is any).
#
#   tests/fuzz/run-fuzzers.sh                 # every target, 600 s each (issue #6: at least 10 minutes)
#   tests/fuzz/run-fuzzers.sh 120 nccl_log    # one target for 2 minutes
#
# Environment: CXX (default clang++-14), FUZZ_MAX_LEN (default 65536 bytes), FUZZ_TIMEOUT (per input,
# default 10 s), FUZZ_RSS_MB (default 2048).
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds="${1:-600}"
shift || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(nccl_log watchdog input_kind nccl_tests smi_topo trace_reader)
cxx="${CXX:-clang++-14}"
max_len="${FUZZ_MAX_LEN:-65536}"
timeout="${FUZZ_TIMEOUT:-10}"
rss="${FUZZ_RSS_MB:-2048}"
corpus="$(pwd)/../shared/corpus"

command -v "$cxx" >/dev/null || { echo "run-fuzzers: $cxx not found (apt-get install clang-14 libclang-rt-14-dev)" >&2; exit 1; }
mkdir -p build-fuzz
echo "run-fuzzers: building in build-fuzz/ with $cxx (log: build-fuzz/build.log)"
if ! { cmake -S . -B build-fuzz -G Ninja -DSCALESCOPE_FUZZ=ON -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
       cmake --build build-fuzz --target $(printf 'fuzz_%s ' "${targets[@]}"); } > build-fuzz/build.log 2>&1; then
  tail -30 build-fuzz/build.log >&2
  echo "run-fuzzers: build failed" >&2
  exit 1
fi

# Seeds: the shared corpus files that fit each target, and inline lines of every format.
seed() {  # seed TARGET NAME TEXT
  printf '%b' "$3" > "build-fuzz/seeds/$1/inline_$2"
}
for t in "${targets[@]}"; do
  rm -rf "build-fuzz/seeds/$t"
  mkdir -p "build-fuzz/seeds/$t" "build-fuzz/crashes/$t" "build-fuzz/work/$t"
  case "$t" in
    nccl_log|watchdog|input_kind) dirs=(nccl-logs nccl-tests) ;;
    nccl_tests) dirs=(nccl-tests) ;;
    smi_topo) dirs=(topo) ;;
    trace_reader) dirs=(traces); cp tests/fuzz/trace_seeds/* "build-fuzz/seeds/$t/" ;;  # plus our own seeds
  esac
  [ "$t" = input_kind ] && dirs+=(topo scaling)
  if [ -d "$corpus" ]; then
    for d in "${dirs[@]}"; do
      [ -d "$corpus/$d" ] && find "$corpus/$d" -type f -size -64k -exec cp {} "build-fuzz/seeds/$t/" \;
    done
  else
    echo "run-fuzzers: no shared corpus at $corpus; inline seeds only"
  fi
done
for t in "${targets[@]}"; do
  case "$t" in
    nccl_log|input_kind)
      seed "$t" info 'h:1:2 [0] NCCL INFO NCCL version 2.18.3+cuda12.1\n[1,0]<stdout>:h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\n'
      seed "$t" net 'h:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [RO]; OOB eth0:10.0.0.1<0>\nh:1:2 [0] NCCL INFO Channel 02/0 : 1[1] -> 9[1] [receive] via NET/IB/0/GDRDMA\n'
      seed "$t" warn 'h:1:2 [0] transport/net_ib.cc:1296 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<1> with error 12, opcode 0, len\n0, vendor err 129 (Recv)\nh:1:2 [0] NCCL INFO proxy.cc:858 -> 6 [Proxy Thread]\n'
      seed "$t" glued 'h:1:1 [2] NCCL INFO h:2:2 [7] NCCL INFO Broadcast: opCount 1f sendbuff 0x1 recvbuff 0x1 count 53 datatype 4 op 0 root 0 comm 0x7f [nranks=8] stream 0x5\n'
      seed "$t" comm 'h:7:8 [1] NCCL INFO ncclCommInitRank comm 0x5 rank 1 nranks 2 cudaDev 1 nvmlDev 1 busId 34000 commId 0x76 - Init COMPLETE\nh:7:8 [1] NCCL INFO Init timings - ncclCommInitRank: rank 1 nranks 2 total 0.5 (kernels 0.1, bootstrap 0.2)\nh:7:8 [1] NCCL INFO Trees [0] 5/-1/-1->4->3|3->4->5/-1/-1 [1] 14/4/-1->12->-1\nh:7:8 [1] NCCL INFO NCCL_P2P_DISABLE set by environment to 1\n'
      ;;
  esac
  case "$t" in
    watchdog|input_kind)
      seed "$t" old '[E ProcessGroupNCCL.cpp:737] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=469508, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1802212 milliseconds before timing out.\n'
      seed "$t" new '[rank0]:[E321 02:07:08.408 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=_REDUCE_SCATTER_BASE, NumelIn=80, NumelOut=10, Timeout(ms)=600000) ran for 600060 milliseconds before timing out.\n[rank0]:[E321 02:07:08.465 ProcessGroupNCCL.cpp:1664] [PG 0 (default_pg) Rank 0] Exception (either an error or timeout) detected by watchdog at work: 7, last enqueued NCCL work: 9, last completed NCCL work: 6.\n'
      seed "$t" shape '  what():  [PG ID 0 PG GUID 0(default_pg) Rank 3] Process group watchdog thread terminated with exception: [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(OpType=BROADCAST, TensorShape=[8, 2], Timeout(ms)=1) ran for 90 milliseconds before timing out.\n'
      ;;
  esac
  case "$t" in
    nccl_tests|input_kind)
      seed "$t" table '#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n     1048576        262144     float     sum      -1    20.00   52.43   91.75      0    19.90   52.69   92.21      0\n'
      ;;
  esac
  case "$t" in
    smi_topo|input_kind)
      seed "$t" topo '\tGPU0\tGPU1\tNIC0\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tNV12\tPIX\t0-23\t0\nGPU1\tNV12\t X \tSYS\t24-47\t1\nNIC0\tPIX\tSYS\t X \n\nNIC Legend:\n\n  NIC0: mlx5_0\n'
      ;;
  esac
  case "$t" in
    input_kind)
      seed "$t" json '{"schema": "scalescope.doctor/1", "verdict": {"verdict": "watch", "reasons": []}}'
      seed "$t" trace '{"schemaVersion": 1, "distributedInfo": {"rank": 0}, "traceEvents": []}'
      ;;
  esac
done

status=0
summary=()
for t in "${targets[@]}"; do
  echo "run-fuzzers: fuzz_$t for ${seconds}s (max_len $max_len, timeout ${timeout}s per input)"
  log="build-fuzz/fuzz_$t.log"
  dict=()
  [ -f "tests/fuzz/${t%_reader}.dict" ] && dict=(-dict="tests/fuzz/${t%_reader}.dict")  # trace_reader: trace.dict
  set +e
  build-fuzz/tests/fuzz/fuzz_"$t" "${dict[@]}" -max_total_time="$seconds" -max_len="$max_len" -timeout="$timeout" -rss_limit_mb="$rss" \
    -print_final_stats=1 -artifact_prefix="build-fuzz/crashes/$t/" \
    "build-fuzz/work/$t" "build-fuzz/seeds/$t" > "$log" 2>&1
  rc=$?
  set -e
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  took=$(grep -o 'Done [0-9]* runs in [0-9]* second' "$log" | tail -1)
  crashes=$(find "build-fuzz/crashes/$t" -type f | wc -l)
  summary+=("fuzz_$t: exit $rc, ${execs:-?} executions${took:+ ($took(s))}, $crashes crash/timeout/leak input(s)")
  if [ "$rc" -ne 0 ] || [ "$crashes" -ne 0 ]; then
    status=1
    grep -E "ERROR: |SUMMARY: |runtime error" "$log" | head -5 >&2 || true
  fi
done
printf 'run-fuzzers: %s\n' "${summary[@]}"
[ $status -eq 0 ] || echo "run-fuzzers: inputs that failed are in build-fuzz/crashes/ (logs: build-fuzz/fuzz_*.log)" >&2
exit $status
