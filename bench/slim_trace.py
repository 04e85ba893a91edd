#!/usr/bin/env python3
"""Makes a PyTorch profiler trace small enough to keep as a test fixture, without changing what scalescope reads.

Keeps every event of the kinds scalescope's trace reader keeps (src/readers/trace/trace_event_names.h: kernels, copies,
memsets, CUDA runtime and driver calls, the CPU ranges it names — ProfilerStep#N, aten::item, DataLoader, NCCL and
c10d ranges, DDP's own ranges — and metadata) and drops the other CPU operators (aten::*, which it skips), then writes
the trace gzip-compressed. Nothing is edited in the events kept.

Usage: slim_trace.py IN.json[.gz] OUT.json.gz
"""
import gzip
import json
import sys

KEEP_CPU_PREFIXES = ("ProfilerStep#", "aten::item", "aten::_local_scalar_dense", "record_param_comms", "nccl:", "c10d::",
                     "gloo:", "DistributedDataParallel.", "_DDPSink")


def kept(e):
    cat = (e.get("cat") or "").lower()
    if e.get("ph") != "X":
        return True  # metadata, flows, instants: small and kept as they are
    if cat in ("cpu_op", "user_annotation", "python_function", "operator"):
        name = e.get("name", "")
        return (name.startswith(KEEP_CPU_PREFIXES) or "dataloader" in name.lower() or "ddp.reducer::" in name
                or "Collective name" in (e.get("args") or {}))
    return True


def main():
    src, dst = sys.argv[1], sys.argv[2]
    opener = gzip.open if src.endswith(".gz") else open
    with opener(src, "rt") as f:
        trace = json.load(f)
    before = len(trace["traceEvents"])
    trace["traceEvents"] = [e for e in trace["traceEvents"] if kept(e)]
    with gzip.open(dst, "wt") as f:
        json.dump(trace, f, separators=(",", ":"))
    print(f"{src}: {before} events, {len(trace['traceEvents'])} kept -> {dst}")


if __name__ == "__main__":
    main()
