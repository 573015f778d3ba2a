#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Write N "interval" lines (and a "summary") in the shape of
`memlens writes --json`, for the report's large-input test: 12 VMAs, one
written in bursts that make it hot, one growing, the rest quiet."""
import json
import sys

n = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
base = 0x7f0000000000
vmas = [(base + i * 0x1000000, base + i * 0x1000000 + (i + 1) * 0x40000,
         ['anon', 'heap', 'lib-data', 'data', 'bss', 'stack'][i % 6]) for i in range(12)]
cum = 0
out = sys.stdout
for seq in range(1, n + 1):
    regions, dirty = [], 0
    for i, (s, e, kind) in enumerate(vmas):
        pages = (e - s) // 4096
        if i == 0:
            ratio = 1.0 if (seq // 500) % 2 == 0 else 0.05
        elif i == 1:
            ratio = (seq % 1000) / 1000.0
        elif i == 2:
            ratio = 0.5 if seq > n // 2 else 0.0
        else:
            ratio = 0.0
        written = int(pages * ratio)
        dirty += written
        regions.append({'start_addr': hex(s), 'end_addr': hex(e), 'kind': kind,
                        'total_pages': pages, 'dirty_pages': written,
                        'written_ratio': written / pages, 'consecutive_hot': 0,
                        'hot': i == 0 and ratio > 0.3 and seq % 500 >= 3})
    cum += dirty * 4096
    line = {'type': 'interval', 'pid': 31337, 'seq': seq, 't_ms': seq * 100,
            'interval_s': 0.1, 'total_vmas': 40, 'tracked_vmas': 12,
            'hot_vmas': 1, 'tick_us': 500,
            'dirty': {'dirty_pages': dirty, 'dirty_bytes': dirty * 4096,
                      'dirty_rate_pages_per_sec': dirty / 0.1,
                      'cumulative_dirty_bytes': cum, 'avg_dirty_rate': cum / (seq * 0.1),
                      'timestamp_ms': 1700000000000 + seq * 100},
            'regions': regions}
    out.write(json.dumps(line, separators=(',', ':')) + '\n')
out.write(json.dumps({'type': 'summary', 'pid': 31337, 'intervals': n, 'total_vmas': 40,
                      'tracked_vmas': 12, 'hot_vmas': 1,
                      'stopped_because': 'the duration elapsed', 'regions': [],
                      'dirty': {'dirty_pages': 0, 'dirty_bytes': 0,
                                'dirty_rate_pages_per_sec': 0,
                                'cumulative_dirty_bytes': cum,
                                'avg_dirty_rate': cum / (n * 0.1),
                                'timestamp_ms': 0}}, separators=(',', ':')) + '\n')
