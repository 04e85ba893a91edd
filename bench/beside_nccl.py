#!/usr/bin/env python3
"""How much of the compute-kernel growth at N GPUs runs beside NCCL's kernels, from two `--kernel-trace` files.

usage: beside_nccl.py BASE.json OTHER.json [STEPS]

BASE is rank 0 of a 1-GPU run, OTHER a rank of the N-GPU run (Kineto-format traces written by `scalescope train
--kernel-trace`), STEPS the traced steps in each (default 10). A kernel of OTHER runs "beside NCCL" when more than
half of its duration overlaps an NCCL kernel on any stream. Printed per step, in ms:
  - our own kernels (names starting "scalescope"), matched one to one in launch order (same sequence on both
    sides): their time beside NCCL and alone, at 1 and N GPUs — a kernel that slows only beside NCCL is sharing
    SMs or memory bandwidth with it; one that slows alone is slowed by something else;
  - cuBLASLt's GEMM kernels (names starting "nvjet"), in total (their choice of kernel may differ between runs, so
    they are not matched one to one), and how much of OTHER's GEMM time ran beside NCCL;
  - every compute kernel of OTHER that overlaps an NCCL kernel at all, matched to BASE's kernel at the same place
    in launch order, by name: the overlap, the growth over BASE, and their ratio. A kernel whose blocks each own
    a fixed share of its work (a persistent GEMM) and finds some SMs held by NCCL's blocks grows by about the
    overlap (ratio near 1); one that spreads its work over the SMs it gets grows by about the share of SMs
    taken (ratio near NCCL's blocks / SMs).
"""
import collections
import json
import sys


def kernels(path):
    doc = json.load(open(path))
    return [e for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "kernel"]


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    base, other = kernels(sys.argv[1]), kernels(sys.argv[2])
    steps = int(sys.argv[3]) if len(sys.argv) == 4 else 10
    nccl = sorted((e["ts"], e["ts"] + e["dur"]) for e in other if "nccl" in e["name"].lower())

    def overlap(e):
        a, b, total = e["ts"], e["ts"] + e["dur"], 0.0
        for x, y in nccl:
            if y < a:
                continue
            if x > b:
                break
            total += min(b, y) - max(a, x)
        return total

    def beside(e):
        return overlap(e) > 0.5 * e["dur"]

    own_base = [e for e in base if e["name"].startswith("scalescope")]
    own_other = [e for e in other if e["name"].startswith("scalescope")]
    if [e["name"] for e in own_base] != [e["name"] for e in own_other]:
        sys.exit("our kernels differ in sequence between the two traces: not the same model and steps")
    ms = lambda us: us / 1e3 / steps
    split = {True: [0, 0.0, 0.0], False: [0, 0.0, 0.0]}  # count, base µs, other µs
    for a, b in zip(own_base, own_other):
        s = split[beside(b)]
        s[0] += 1
        s[1] += a["dur"]
        s[2] += b["dur"]
    print(f"NCCL kernels in OTHER: {ms(sum(y - x for x, y in nccl)):.3f} ms per step")
    for where, (n, a, b) in (("beside NCCL", split[True]), ("alone", split[False])):
        growth = f"{100 * (b - a) / a:+.1f} %" if a > 0 else "-"
        print(f"our kernels {where:<12} {n / steps:7.1f} per step: {ms(a):7.3f} -> {ms(b):7.3f} ms ({growth})")
    g_base = sum(e["dur"] for e in base if e["name"].startswith("nvjet"))
    g_other = sum(e["dur"] for e in other if e["name"].startswith("nvjet"))
    g_beside = sum(e["dur"] for e in other if e["name"].startswith("nvjet") and beside(e))
    print(f"GEMM kernels (nvjet):  {ms(g_base):7.3f} -> {ms(g_other):7.3f} ms ({ms(g_other - g_base):+.3f}), "
          f"of which {ms(g_beside):.3f} ms ran beside NCCL")

    compute_base = sorted((e for e in base if "nccl" not in e["name"].lower()), key=lambda e: e["ts"])
    compute_other = sorted((e for e in other if "nccl" not in e["name"].lower()), key=lambda e: e["ts"])
    if len(compute_base) != len(compute_other):
        print("compute kernels differ in number between the traces: no overlap-growth table")
        return
    by_name = collections.defaultdict(lambda: [0, 0.0, 0.0])  # count, overlap µs, growth µs
    for a, b in zip(compute_base, compute_other):
        o = overlap(b)
        if o > 0:
            row = by_name[b["name"]]
            row[0] += 1
            row[1] += o
            row[2] += b["dur"] - a["dur"]
    print("kernels overlapping NCCL (ms per step)                         count  overlap   growth  growth/overlap")
    rows = sorted(by_name.items(), key=lambda kv: -kv[1][2])
    for name, (n, o, g) in rows[:8]:
        print(f"  {name[:60]:<60} {n / steps:6.1f} {ms(o):8.3f} {ms(g):+8.3f} {g / o:8.2f}")
    n, o, g = (sum(r[i] for _, r in rows) for i in range(3))
    print(f"  {'all':<60} {n / steps:6.1f} {ms(o):8.3f} {ms(g):+8.3f} {g / o if o else 0:8.2f}")


if __name__ == "__main__":
    main()
