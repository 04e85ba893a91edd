#!/usr/bin/env python3
"""Independent figures from Kineto traces, to check scalescope's trace analysis by hand (stdlib only).

Usage: trace_figures.py TRACE.json[.gz] ...

For each trace: the NCCL kernels (name starts with "nccl") of the busiest device, their count and total
duration; then for each ProfilerStep#N window, the unions of compute kernels (the other kernels) and of NCCL
kernels clipped to the window, their intersection (overlap) and comm minus compute (exposed), in µs.
With several traces that all carry distributedInfo.rank, it also matches the k-th NCCL kernel of every rank,
aligns each rank's clock by the median of (lowest rank's end - its end), and prints each rank's lateness
(start - earliest start) and wait (min(latest start - start, duration)) summed over the matches, in ms.
Numbers are read as decimal.Decimal: at ts around 4.5e12 µs a float keeps only about 0.5 ns, and sums drift.
"""
import decimal
import gzip
import json
import sys


def load(path):
    with (gzip.open if path.endswith('.gz') else open)(path, 'rt') as f:
        return json.load(f, parse_float=decimal.Decimal)


def union(iv):
    out = []
    for a, b in sorted(iv):
        if b <= a:
            continue
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def length(iv):
    return sum(b - a for a, b in iv)


def clip(iv, lo, hi):
    return [[max(a, lo), min(b, hi)] for a, b in iv if min(b, hi) > max(a, lo)]


def intersect(x, y):
    out, i, j = [], 0, 0
    while i < len(x) and j < len(y):
        lo, hi = max(x[i][0], y[j][0]), min(x[i][1], y[j][1])
        if lo < hi:
            out.append([lo, hi])
        if x[i][1] < y[j][1]:
            i += 1
        else:
            j += 1
    return out


def nccl_kernels(d):
    kernels = [e for e in d['traceEvents'] if e.get('ph') == 'X' and e.get('cat') == 'kernel']
    busy = {}
    for e in kernels:
        dev = e.get('args', {}).get('device', 0)
        busy[dev] = busy.get(dev, 0) + e['dur']
    dev = max(busy, key=busy.get) if busy else 0
    kernels = [e for e in kernels if e.get('args', {}).get('device', 0) == dev]
    nccl = [e for e in kernels if e['name'].lower().startswith('nccl')]
    compute = [e for e in kernels if not e['name'].lower().startswith('nccl')]
    return nccl, compute


def per_step(path, d):
    nccl, compute = nccl_kernels(d)
    print(path, 'rank', d.get('distributedInfo', {}).get('rank'))
    print('  nccl kernels', len(nccl), 'total dur us', sum(e['dur'] for e in nccl))
    steps = sorted((e for e in d['traceEvents'] if e.get('ph') == 'X' and e.get('name', '').startswith('ProfilerStep#')),
                   key=lambda e: e['ts'])
    c_all = union([[e['ts'], e['ts'] + e['dur']] for e in compute])
    m_all = union([[e['ts'], e['ts'] + e['dur']] for e in nccl])
    for s in steps:
        lo, hi = s['ts'], s['ts'] + s['dur']
        c, m = clip(c_all, lo, hi), clip(m_all, lo, hi)
        ov = length(intersect(c, m))
        print(f"  {s['name']}: step {s['dur']} compute {length(c)} comm {length(m)} overlap {ov} "
              f"exposed {length(m) - ov}")


def cross_rank(traces):
    ranks = {}
    for d in traces:
        nccl, _ = nccl_kernels(d)
        ranks[d['distributedInfo']['rank']] = sorted((e['ts'], e['ts'] + e['dur']) for e in nccl)
    n = min(len(v) for v in ranks.values())
    ref = min(ranks)
    offset = {}
    for r, ops in ranks.items():
        diffs = sorted(ranks[ref][i][1] - ops[i][1] for i in range(n))
        k = len(diffs)
        offset[r] = diffs[k // 2] if k % 2 else diffs[k // 2 - 1] + (diffs[k // 2] - diffs[k // 2 - 1]) / 2
    late = {r: 0 for r in ranks}
    wait = {r: 0 for r in ranks}
    for i in range(n):
        starts = {r: ranks[r][i][0] + offset[r] for r in ranks}
        for r in ranks:
            late[r] += starts[r] - min(starts.values())
            wait[r] += min(max(starts.values()) - starts[r], ranks[r][i][1] - ranks[r][i][0])
    for r in sorted(ranks):
        print(f'  rank {r}: offset {offset[r]} us, late {late[r] / 1000} ms, wait {wait[r] / 1000} ms')


def main(paths):
    traces = []
    for p in paths:
        d = load(p)
        per_step(p, d)
        traces.append(d)
    if len(traces) > 1 and all('rank' in d.get('distributedInfo', {}) for d in traces):
        cross_rank(traces)


if __name__ == '__main__':
    main(sys.argv[1:])
