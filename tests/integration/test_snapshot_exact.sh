#!/bin/bash
# memlens snapshot totals are exact while the target's VMAs change under
# the scan: mapchurn -u maps an untouched 512 KiB region right below a
# resident 4 MiB one (the kernel merges the two into one VMA) and unmaps it,
# in a loop; its resident memory never changes. Every cycle of a 100 Hz run
# must count exactly VmRSS: never the untouched half as resident, never the
# resident half as absent. CHURN_SECONDS (default 10; make test-long: 60).
# Then the same with the pagemap read (--method read), for half as long.
set -u
. "$(dirname "$0")/../lib.bash"
M=${MEMLENS:?} W=${WORKLOADS:?}
PY=/usr/bin/python3
secs=${CHURN_SECONDS:-10}
tmp=$(mktemp -d)
tpid=
cleanup() {
	[ -n "$tpid" ] && kill "$tpid" 2>/dev/null
	rm -rf "$tmp"
}
t_at_exit cleanup

churn() {	# NAME-SUFFIX SECONDS [SNAPSHOT-OPTION...]
	local sfx=$1 secs=$2
	shift 2
	"$W/mapchurn" -u 512 >"$tmp/t.out" &
	tpid=$!
	wait_for_line "$tmp/t.out" ready 10
	region=$(awk '/^ready/{print $3}' "$tmp/t.out")
	"$M" snapshot -p "$tpid" -i 10 -d "$secs" --json "$@" >"$tmp/s.json" 2>"$tmp/e"
	rc=$?
	$PY - "$tmp/s.json" "$region" <<-'PYEOF' >"$tmp/py.out" 2>&1
	import json, sys
	recs = [json.loads(l) for l in open(sys.argv[1])]
	snaps = [r for r in recs if r["type"] == "snapshot"]
	region = int(sys.argv[2], 16)
	off = [s for s in snaps if s["totals"]["resident_pages"] * 4 != s["mm"]["VmRSS_kb"]]
	# the 4 MiB region is counted whole in every cycle, alone or with its
	# untouched neighbour below: its VMA's count never moves, and holds the
	# region's 1024 pages (more where the loader left an anonymous mapping
	# right above it, which the kernel merged with it too)
	rpages = []
	for s in snaps:
    r = [v for v in s["regions"]
         if int(v["start_addr"], 16) <= region < int(v["end_addr"], 16)]
    rpages.append(r[0]["resident_pages"] if r else -1)
	bad_r = sum(1 for p in rpages if p != rpages[0] or p < 1024)
	recounted = sum(1 for s in snaps if s["recounts"] > 0)
	print("# %d cycles, %d off VmRSS, %d with the resident region miscounted, %d recounted; "
	      "the region's VMA: %s resident pages" % (len(snaps), len(off), bad_r, recounted,
	                                               sorted(set(rpages))[:5]))
	for s in off[:3]:
    print("# off: seq %d resident %d kB VmRSS %d kB recounts %d"
          % (s["seq"], s["totals"]["resident_pages"] * 4, s["mm"]["VmRSS_kb"], s["recounts"]))
	assert len(snaps) >= 5, "too few cycles"
	assert not off and not bad_r
	PYEOF
	pyrc=$?
	cat "$tmp/py.out" | grep '^#'
	if [ "$rc" -eq 0 ] && [ "$pyrc" -eq 0 ]; then
		echo "ok - untouched_churn_exact_totals_${secs}s$sfx"
	else
		echo "not ok - untouched_churn_exact_totals_${secs}s$sfx: rc=$rc $(tail -2 "$tmp/py.out") $(cat "$tmp/e")"
	fi
	kill "$tpid" 2>/dev/null
	wait "$tpid" 2>/dev/null
	tpid=
}
churn "" "$secs"
churn _pagemap_read $(((secs + 1) / 2)) --method read
