#!/usr/bin/env bash
# The README's multi-node commands for CPU ranks, on one machine: two network namespaces (each with its own
# hostname, UTS namespace) stand for two hosts joined by a veth link, and Open MPI's mpirun starts its daemon on the
# second "host" through an rsh agent that enters that namespace instead of ssh. Then
#   mpirun -np 4 -npernode 2 --host h1:2,h2:2 scalescope train --backend cpu --world-size 4 …
#   mpirun -np 2 -npernode 1 --host h1,h2 scalescope comm --backend cpu -g 2 …
# run as documented (docs/measuring.md, "Across nodes"), the ranks really on two hosts (checked: the report's
# hosts), their traffic over the veth (TCP between namespaces: no shared-memory path).
#   two_hosts.sh SCALESCOPE_EXE
# Exit 77 (ctest: skipped) when network namespaces cannot be made here (not root, no iproute2, a container
# without CAP_SYS_ADMIN).
set -uo pipefail
exe=$1
skip() { echo "two-host test skipped: $*"; exit 77; }
command -v ip >/dev/null || skip "no 'ip' command (iproute2)"
command -v unshare >/dev/null || skip "no 'unshare' (util-linux)"
command -v mpirun >/dev/null || skip "no mpirun (Open MPI)"
[ "$(id -u)" = 0 ] || skip "network namespaces need root"
tag=ss$$
ns1=${tag}a ns2=${tag}b
tmp=$(mktemp -d "${TMPDIR:-/tmp}/scalescope_2hosts.XXXXXX")
cleanup() {
  ip netns del "$ns1" 2>/dev/null
  ip netns del "$ns2" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
ip netns add "$ns1" 2>"$tmp/err" || skip "cannot create a network namespace: $(cat "$tmp/err")"
ip netns add "$ns2" || skip "cannot create a second network namespace"
ip link add "${tag}1" netns "$ns1" type veth peer name "${tag}2" netns "$ns2" 2>"$tmp/err" ||
  skip "cannot create a veth pair: $(cat "$tmp/err")"
ip -n "$ns1" addr add 10.231.0.1/24 dev "${tag}1" && ip -n "$ns2" addr add 10.231.0.2/24 dev "${tag}2" || exit 1
for ns in "$ns1" "$ns2"; do ip -n "$ns" link set lo up; done
ip -n "$ns1" link set "${tag}1" up && ip -n "$ns2" link set "${tag}2" up || exit 1

# The hosts are named by their addresses on the mpirun line; each gets its hostname in a UTS namespace of its own,
# so that Open MPI does not take the two for one node.
cat > "$tmp/agent" <<AGENT
#!/bin/sh
# Open MPI's rsh agent: "agent HOST COMMAND…" → COMMAND in HOST's namespaces.
host=\$1; shift
case "\$host" in
  10.231.0.1) ns=$ns1 name=h1 ;;
  10.231.0.2) ns=$ns2 name=h2 ;;
  *) echo "agent: unknown host \$host" >&2; exit 1 ;;
esac
exec ip netns exec "\$ns" unshare --uts sh -c "hostname \$name; exec \$*"
AGENT
chmod +x "$tmp/agent"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi=(mpirun --oversubscribe --mca plm_rsh_agent "$tmp/agent" --mca btl tcp,self --mca btl_tcp_if_include 10.231.0.0/24
     --mca oob_tcp_if_include 10.231.0.0/24 -x PATH -x OMPI_ALLOW_RUN_AS_ROOT -x OMPI_ALLOW_RUN_AS_ROOT_CONFIRM)
[ -n "${LD_LIBRARY_PATH:-}" ] && mpi+=(-x LD_LIBRARY_PATH)
in_h1() { ip netns exec "$ns1" unshare --uts sh -c 'hostname h1; exec "$@"' sh "$@"; }

fail() { echo "two-host test FAILED: $*"; for f in "$tmp"/*.log; do echo "--- $f"; tail -30 "$f"; done; exit 1; }

# 1. Which host each rank runs on: the hostnames prove two hosts.
in_h1 "${mpi[@]}" -np 2 -npernode 1 --host 10.231.0.1,10.231.0.2 hostname > "$tmp/hostname.log" 2>&1 ||
  fail "mpirun could not start ranks on both namespaces"
sort "$tmp/hostname.log" | tr '\n' ' ' | grep -q "h1 h2" || fail "the ranks did not run on h1 and h2: $(cat "$tmp/hostname.log")"

# 2. train across the two hosts, as docs/measuring.md writes it.
in_h1 "${mpi[@]}" -np 4 -npernode 2 --host 10.231.0.1:2,10.231.0.2:2 "$exe" train --backend cpu --world-size 4 \
  --model tiny-14m --steps-per-round 2 --warmup-rounds 1 --rounds 3 --out "$tmp/train.json" > "$tmp/train.log" 2>&1 ||
  fail "train across two hosts exited non-zero"
[ -s "$tmp/train.json" ] || fail "train wrote no report"
grep -q '"world_size": 4' "$tmp/train.json" || fail "the report is not of world size 4"

# 3. comm across the two hosts: an all-reduce sweep over the veth.
in_h1 "${mpi[@]}" -np 2 -npernode 1 --host 10.231.0.1,10.231.0.2 "$exe" comm --backend cpu -g 2 -b 8 -e 1M -f 4 \
  --out "$tmp/comm.json" > "$tmp/comm.log" 2>&1 || fail "comm across two hosts exited non-zero"
grep -q '"busbw' "$tmp/comm.json" || fail "comm wrote no bandwidth"
echo "two hosts OK: hostnames $(sort "$tmp/hostname.log" | tr '\n' ' '); train and comm ran across them"
