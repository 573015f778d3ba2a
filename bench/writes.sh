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

# (d) how long `memlens writes` stops the target to set up (the userfaultfd
# created in it), as it reports it (attach.stopped_ms), over RUNS attaches
# to a fresh memwrite: idle, then beside two busy loops per CPU
stops() {	# LABEL
	local i
	for i in $(seq "${RUNS:-10}"); do
		"$W/memwrite" -m 64 >/dev/null 2>&1 &
		local mw=$!
		sleep 0.2
		"$M" writes -p $mw -i 100 -d 0.2 --json 2>/dev/null | grep '"type":"summary"'
		kill $mw 2>/dev/null
		wait $mw 2>/dev/null || true
	done >"${TMPDIR:-/tmp}/stops.$$"
	python3 - "${TMPDIR:-/tmp}/stops.$$" "$1" <<'PY'
import json, sys
v = sorted(json.loads(l)["attach"]["stopped_ms"] for l in open(sys.argv[1]))
print("(d) target stopped for setup%s: %d attaches, min %.2f / median %.2f / max %.2f ms"
      % (sys.argv[2], len(v), v[0], v[len(v) // 2], v[-1]))
PY
	rm -f "${TMPDIR:-/tmp}/stops.$$"
}
stops ""
hogs=()
for _ in $(seq $((2 * $(nproc)))); do
	bash -c 'while :; do :; done' &
	hogs+=($!)
done
stops " beside $((2 * $(nproc))) busy loops on $(nproc) CPUs"
kill "${hogs[@]}" 2>/dev/null
wait "${hogs[@]}" 2>/dev/null || true
