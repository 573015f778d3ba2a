#!/bin/bash
# make bench, write profiler part: (a) tick vs raw ioctl, (b) memwrite's
# throughput with and without profiling at 1000 ms, (c) injection stop time.
set -eu
M=${MEMLENS:?} W=${WORKLOADS:?} B=${BUILD:-build}
"$B/bench/bench_writes" "$W" "${REPS:-15}"

secs=${SECS:-6}
alone=$("$W/memwrite" -s "$secs" -r | awk '/MiB\/s/ {print $2}')
"$W/memwrite" -s "$secs" -r >"${TMPDIR:-/tmp}/mw.$$" &
pid=$!
sleep 0.1
"$M" writes -p $pid -i 1000 -q >/dev/null 2>&1 &
ml=$!
wait $pid
kill -INT $ml 2>/dev/null; wait $ml 2>/dev/null || true
profiled=$(awk '/MiB\/s/ {print $2}' "${TMPDIR:-/tmp}/mw.$$")
rm -f "${TMPDIR:-/tmp}/mw.$$"
awk -v a="$alone" -v p="$profiled" 'BEGIN {
	printf "(b) memwrite (64 MiB memset loop): %.0f MiB/s alone, %.0f MiB/s profiled at 1000 ms: %.2fx of alone (%.1f %% slower)\n", a, p, p / a, (1 - p / a) * 100 }'
