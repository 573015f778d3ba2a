#!/bin/bash
# make bench: every bench/*.sh in turn (writes, snapshot, agent, bpf, stop_time:
# the stop time a target sees, writes_cost: what write tracking costs it). BENCH=pattern runs only matching ones.
set -u
cd "$(dirname "$0")/.."
export BUILD=${BUILD:-build}
export MEMLENS="$PWD/$BUILD/memlens" WORKLOADS="$PWD/$BUILD/workloads"
rc=0
for b in bench/*.sh; do
	[ "$b" = bench/run.sh ] && continue
	[ -n "${BENCH:-}" ] && [[ "$b" != *${BENCH}* ]] && continue
	echo "=== $b"
	bash "$b" || rc=1
done
exit $rc
