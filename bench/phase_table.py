#!/usr/bin/env python3
"""Phase breakdown of several `scalescope train --out` results side by side, one line per file.

usage: phase_table.py RESULT.json...

Columns (ms per step, mean over the timed steps of rank 0's phases; step = the headline trimmed mean of the
slowest rank): forward, backward, exposed communication, optimizer, the sum of the all-reduce durations and
their busbw (GB/s, GB = 1e9) as they ran beside backward, the embedding exchange's all-gathers (0 when the tied
embedding was all-reduced whole), the host's time issuing the step and its time waiting
for the staging buffer (host clock; 0 in results written before these fields).
"""
import json
import os
import sys


def main():
    print(f"{'run':<28} {'N':>2} {'prio':<8} {'step':>7} {'fwd':>6} {'bwd':>6} {'exposed':>7} {'optim':>6} "
          f"{'allred':>7} {'busbw':>6} {'allgat':>6} {'host':>6} {'hwait':>6}")
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    bad = 0
    for path in sys.argv[1:]:
        name = os.path.basename(path)
        name = name[:-5] if name.endswith(".json") else name
        try:
            doc = json.load(open(path))
            c, p = doc["config"], doc["phases"]
            ms = lambda key: p[key] * 1e3
            busbw = doc.get("all_reduce_busbw_GBps")
            print(f"{name:<28} {c['world_size']:>2} {c.get('stream_priority', 'equal'):<8} "
                  f"{doc['step_s']['trimmed_mean'] * 1e3:>7.2f} {ms('forward_s'):>6.2f} {ms('backward_s'):>6.2f} "
                  f"{ms('exposed_comm_s'):>7.2f} {ms('optimizer_s'):>6.2f} {ms('all_reduce_s'):>7.2f} "
                  f"{busbw if busbw is None else round(busbw, 1)!s:>6} {p.get('all_gather_s', 0) * 1e3:>6.2f} "
                  f"{ms('host_issue_s') if 'host_issue_s' in p else 0:>6.2f} "
                  f"{ms('host_stage_s') if 'host_stage_s' in p else 0:>6.2f}")
        except (OSError, ValueError) as e:
            print(f"{name:<28} unreadable: {e}")
            bad += 1
        except (KeyError, TypeError, IndexError) as e:
            print(f"{name:<28} not a scalescope train result (missing or mistyped {e})")
            bad += 1
    if bad:
        sys.exit(1)

if __name__ == "__main__":
    main()
