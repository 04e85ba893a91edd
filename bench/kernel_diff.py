#!/usr/bin/env python3
"""Per-kernel time of two `scalescope train --kernel-trace` runs side by side (GPU time per step by kernel name).

usage: kernel_diff.py BASE_TRACE.json OTHER_TRACE.json [TOP]   (one trace twice: its kernels by time)

Each trace is one rank's file (DIR/rank<R>.json). For every kernel name: its summed duration per step (the
steps are the ProfilerStep#N annotations; kernels are counted whole, by the step count), in both runs and the
difference, largest absolute difference first; then the totals of compute kernels, NCCL kernels, and the idle
time between consecutive compute kernels on the busiest stream (launch gaps), all ms per step; then the kernel
boundaries with all streams merged (a CUDA graph spreads one stream's kernels over several): compute kernels per
step, the time no compute kernel runs in gaps shorter than 50 µs (ms per step) and the median such gap (µs);
then the CUDA API calls per step that put work on a stream (launches, memsets, events).
"""
import collections
import json
import statistics
import sys

BOUNDARY_US = 50.0  # a gap shorter than this between compute kernels is a kernel boundary, not a wait


def is_nccl(name):
    """NCCL kernels as `scalescope analyze` counts them: nccl*/rccl* names and NCCL's one-rank reduction."""
    low = name.lower()
    return low.startswith(("nccl", "rccl")) or "onerankreduce" in low


def load(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            doc = json.load(f)
        events = doc["traceEvents"]
        if not isinstance(events, list):
            raise TypeError("traceEvents is not a list")
        events = [e for e in events if isinstance(e, dict) and isinstance(e.get("name"), str)
                  and isinstance(e.get("ts", 0), (int, float)) and isinstance(e.get("dur", 0), (int, float))]
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.exit(f"kernel_diff.py: {path}: not a readable trace ({e}); pass DIR/rank<R>.json of train --kernel-trace")
    steps = sum(1 for e in events if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#"))
    kernels = [e for e in events if e.get("cat") == "kernel"]
    per_name = collections.defaultdict(float)
    by_stream = collections.defaultdict(list)
    for k in kernels:
        per_name[k["name"]] += k["dur"] / 1e3
        by_stream[(k.get("args") or {}).get("stream", -1)].append((k["ts"], k["ts"] + k["dur"]))
    steps = max(steps, 1)
    compute_stream = max(by_stream, key=lambda s: sum(b - a for a, b in by_stream[s])) if by_stream else None
    gaps = 0.0
    if compute_stream is not None:
        spans = sorted(by_stream[compute_stream])
        for (a0, b0), (a1, b1) in zip(spans, spans[1:]):
            gaps += max(0.0, a1 - b0) / 1e3
    calls = collections.Counter(e["name"].split("_v")[0] for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver"))
    load.calls[path] = {n: c / steps for n, c in calls.items()}
    # All streams merged: the gaps in the union of the compute kernels' intervals.
    compute = sorted((k["ts"], k["ts"] + k["dur"]) for k in kernels if not is_nccl(k["name"]))
    boundary = []
    if compute:
        end = compute[0][1]
        for a, b in compute[1:]:
            if end < a < end + BOUNDARY_US:
                boundary.append(a - end)
            end = max(end, b)
    load.boundaries[path] = (len(compute) / steps, sum(boundary) / 1e3 / steps,
                             statistics.median(boundary) if boundary else 0.0)
    return {n: v / steps for n, v in per_name.items()}, gaps / steps, steps


load.calls = {}
load.boundaries = {}


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    base, base_gaps, nb = load(sys.argv[1])
    other, other_gaps, no = load(sys.argv[2])
    try:
        top = int(sys.argv[3]) if len(sys.argv) > 3 else 15
    except ValueError:
        sys.exit(f"kernel_diff.py: TOP must be a whole number, not {sys.argv[3]!r}")
    top = max(top, 0)
    # Largest change first; ties (a trace against itself: all zero) by the larger time.
    names = sorted(set(base) | set(other), key=lambda n: (-abs(other.get(n, 0) - base.get(n, 0)),
                                                          -max(base.get(n, 0), other.get(n, 0))))
    print(f"{'kernel (ms per step)':<70} {'base':>8} {'other':>8} {'diff':>8}")
    for n in names[:top]:
        b, o = base.get(n, 0.0), other.get(n, 0.0)
        print(f"{n[:70]:<70} {b:8.3f} {o:8.3f} {o - b:+8.3f}")
    def total(d, nccl):
        return sum(v for n, v in d.items() if is_nccl(n) == nccl)
    print(f"{'all compute kernels':<70} {total(base, False):8.3f} {total(other, False):8.3f} "
          f"{total(other, False) - total(base, False):+8.3f}")
    print(f"{'all NCCL kernels':<70} {total(base, True):8.3f} {total(other, True):8.3f} "
          f"{total(other, True) - total(base, True):+8.3f}")
    print(f"{'gaps between kernels on the compute stream':<70} {base_gaps:8.3f} {other_gaps:8.3f} "
          f"{other_gaps - base_gaps:+8.3f}")
    (kb, ib, mb), (ko, io, mo) = load.boundaries[sys.argv[1]], load.boundaries[sys.argv[2]]
    print(f"{'compute kernels per step':<70} {kb:8.1f} {ko:8.1f} {ko - kb:+8.1f}")
    print(f"{'idle at kernel boundaries, all streams merged (gaps < 50 µs)':<70} {ib:8.3f} {io:8.3f} {io - ib:+8.3f}")
    print(f"{'median gap at a kernel boundary, µs':<70} {mb:8.2f} {mo:8.2f} {mo - mb:+8.2f}")
    print(f"(steps: {nb} and {no})")
    a, b = load.calls[sys.argv[1]], load.calls[sys.argv[2]]
    for n in ("cuLaunchKernelEx", "cudaLaunchKernel", "cudaMemsetAsync", "cudaEventRecord", "cudaStreamWaitEvent"):
        print(f"{n + ' calls per step':<70} {a.get(n, 0):8.1f} {b.get(n, 0):8.1f}")


if __name__ == "__main__":
    main()
