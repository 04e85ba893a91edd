#!/usr/bin/env python3
"""Independent figures from Kineto traces, to check scalescope's trace analysis by hand (stdlib only).

Usage: trace_figures.py [--gpu-windows] TRACE.json[.gz] ...

For each trace: the NCCL kernels (name starts with "nccl") of the busiest device, their count and total
duration; then for each ProfilerStep#N window, the unions of compute kernels (the other kernels) and of NCCL
kernels clipped to the window, their intersection (overlap) and comm minus compute (exposed), in µs.
With several traces that all carry distributedInfo.rank, it also matches the k-th NCCL kernel of every rank,
aligns each rank's clock by the median of (lowest rank's end - its end), and prints each rank's lateness
(start - earliest start) and wait (min(latest start - start, duration)) summed over the matches, in ms.
With --gpu-windows a step's window is not the ProfilerStep#N CPU range but runs from the first GPU activity
(kernel, copy, memset on that device) whose launching runtime/driver call (same args "correlation") lies in
that range, to the first one of the next step; the last step ends with the end of its last such activity.
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


def gpu_side_windows(d, steps, device):
    """[(name, lo, hi)]: the windows of the GPU work launched in each step (see --gpu-windows)."""
    calls = {}
    for e in d['traceEvents']:
        if e.get('ph') == 'X' and e.get('cat') in ('cuda_runtime', 'cuda_driver') and 'correlation' in e.get('args', {}):
            calls.setdefault(e['args']['correlation'], e['ts'])
    spans = {}
    for e in d['traceEvents']:
        if e.get('ph') != 'X' or e.get('cat') not in ('kernel', 'gpu_memcpy', 'gpu_memset'):
            continue
        if e.get('args', {}).get('device', 0) != device:
            continue
        t = calls.get(e.get('args', {}).get('correlation'))
        if t is None:
            continue
        for s in steps:
            if s['ts'] <= t < s['ts'] + s['dur']:
                lo, hi = spans.get(s['name'], (e['ts'], e['ts'] + e['dur']))
                spans[s['name']] = (min(lo, e['ts']), max(hi, e['ts'] + e['dur']))
    out = []
    for k, s in enumerate(steps):
        lo, hi = spans[s['name']]
        out.append((s['name'], lo, spans[steps[k + 1]['name']][0] if k + 1 < len(steps) else hi))
    return out


def per_step(path, d, gpu_windows=False):
    nccl, compute = nccl_kernels(d)
    print(path, 'rank', d.get('distributedInfo', {}).get('rank'))
    print('  nccl kernels', len(nccl), 'total dur us', sum(e['dur'] for e in nccl))
    steps = sorted((e for e in d['traceEvents'] if e.get('ph') == 'X' and e.get('cat') == 'user_annotation'
                    and e.get('name', '').startswith('ProfilerStep#')), key=lambda e: e['ts'])
    windows = [(s['name'], s['ts'], s['ts'] + s['dur']) for s in steps]
    if gpu_windows:
        windows = gpu_side_windows(d, steps, (compute + nccl)[0].get('args', {}).get('device', 0))
    c_all = union([[e['ts'], e['ts'] + e['dur']] for e in compute])
    m_all = union([[e['ts'], e['ts'] + e['dur']] for e in nccl])
    for name, lo, hi in windows:
        c, m = clip(c_all, lo, hi), clip(m_all, lo, hi)
        ov = length(intersect(c, m))
        print(f"  {name}: window {lo} to {hi}, step {hi - lo} compute {length(c)} comm {length(m)} overlap {ov} "
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


def main(args):
    gpu_windows = '--gpu-windows' in args
    paths = [a for a in args if a != '--gpu-windows']
    traces = []
    for p in paths:
        d = load(p)
        per_step(p, d, gpu_windows)
        traces.append(d)
    if len(traces) > 1 and all('rank' in d.get('distributedInfo', {}) for d in traces):
        cross_rank(traces)


if __name__ == '__main__':
    main(sys.argv[1:])
