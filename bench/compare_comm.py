#!/usr/bin/env python3
"""Side-by-side comparison of `scalescope comm --out` (ours) with an nccl-tests output read back through
`scalescope comm --from FILE --out` (theirs), size by size: time and bus bandwidth ratios.

usage: compare_comm.py OURS.json THEIRS.json [label]

Prints a table and a summary line: the smallest busbw ratio (ours / nccl-tests) over sizes >= 1 MiB and the
mean time ratio over sizes <= 64 KiB (the small-message regime), the two parity goals of issue #4. At one rank
busbw is 0 by definition (factor 2(n-1)/n), so algbw is compared instead.
"""
import json
import sys


def rows(doc):
    """Rows of the first sweep of a scalescope comm report (live or --from)."""
    if "reports" in doc:
        sweep = doc["reports"][0]["sweep"]
    else:
        sweep = doc["sweep"]
    return sweep.get("ranks"), {r["size_bytes"]: r["out_of_place"] for r in sweep["rows"]}


def main():
    ours_doc, theirs_doc = (json.load(open(p)) for p in sys.argv[1:3])
    label = sys.argv[3] if len(sys.argv) > 3 else ""
    ranks, ours = rows(ours_doc)
    _, theirs = rows(theirs_doc)
    bw = "busbw_gbps" if ranks and ranks > 1 else "algbw_gbps"
    print(f"# {label} ranks={ranks} comparing {bw} (ours / nccl-tests) and time (ours / nccl-tests)")
    print(f"{'size':>12} {'nccl us':>10} {'ours us':>10} {'t ratio':>8} {'nccl bw':>9} {'ours bw':>9} {'bw ratio':>9}")
    big, small = [], []
    for size in sorted(set(ours) & set(theirs)):
        o, t = ours[size], theirs[size]
        if not o.get("time_us") or not t.get("time_us"):
            continue
        tr = o["time_us"] / t["time_us"]
        ob, tb = o.get(bw) or 0.0, t.get(bw) or 0.0
        br = ob / tb if tb > 0 else float("nan")
        print(f"{size:>12} {t['time_us']:>10.2f} {o['time_us']:>10.2f} {tr:>8.3f} {tb:>9.2f} {ob:>9.2f} {br:>9.3f}")
        if size >= (1 << 20) and tb > 0:
            big.append(br)
        if 0 < size <= (64 << 10):
            small.append(tr)
    summary = []
    if big:
        summary.append(f"min {bw} ratio over sizes >= 1 MiB: {min(big):.3f} (goal >= 0.98)")
    if small:
        summary.append(f"mean time ratio over sizes <= 64 KiB: {sum(small) / len(small):.3f} (goal <= 1.05)")
    print(f"# {label} " + "; ".join(summary))


if __name__ == "__main__":
    main()
