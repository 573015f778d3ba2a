#!/bin/bash
# case-timeout: 600
# memlens migrate --postcopy -m 0 (no pre-dump round): the final lazy dump
# leaves all of the private memory at the source, the destination restores
# the tree at once and fetches every page while it runs. migwork in its own
# PID namespace (the source keeps the tree, stopped, until the last page),
# to a directory here, with the project's CRIU; migwork then checks its own
# memory. It takes a minute or more under emulation, so it runs only when
# asked for: CASES=postcopy-m0 tests/kernels/run.sh 6.12.
set -u
cd "$(dirname "$0")/../../.." || exit 1
if [[ "${memlens_cases:-}" != *postcopy-m0* ]]; then
	echo "skip - migrate_postcopy_m0: runs only when asked for (CASES=postcopy-m0 tests/kernels/run.sh 6.12)"
	exit 0
fi
. tests/kernels/cases/criu_lib.bash

postcopy_m0() {
	local criu=$2 out=$tmp/m0.out j=$tmp/m0.json p rc new bad=
	start "$out" unshare --pid --fork setsid "$WORKLOADS/migwork" -H 8 -I 24 -C 0 -t 1 ||
		{ notok migrate_postcopy_m0 "migwork did not start: $(tail -n 2 "$out")"; return; }
	p=$(cat /proc/"$P"/task/*/children 2>/dev/null | awk '{print $1; exit}')
	[ -n "$p" ] || { notok migrate_postcopy_m0 "no migwork under unshare $P"; return; }
	pids+=("$p")
	timeout -k 5 400 "$MEMLENS" migrate -p "$p" --to "$tmp/m0-dest" -D "$tmp/m0-src" --criu "$criu" \
		-m 0 --postcopy --timeout 150 --json >"$j" 2>"$tmp/m0.err"
	rc=$?
	if [ $rc -ne 0 ]; then
		notok migrate_postcopy_m0 "exit $rc: $(tail -n 3 "$tmp/m0.err")"
		return
	fi
	# one round, the final dump, none of its private pages written: all of
	# them come after the restore, from the source (no parent images)
	jcheck "migrate postcopy -m 0" "$j" 'j["ok"] and j["postcopy"] and not j["precopy"]' \
		'len(j["rounds"]) == 1 and j["rounds"][0]["kind"] == "dump"' \
		'j["lazy"]["pages_left"] >= (8 + 24) * 256' \
		'j["lazy"]["pages_parent"] == 0' \
		'j["lazy"]["pages_copied"] == j["lazy"]["pages_left"]' \
		'j["lazy"]["bytes"] == 4096 * j["lazy"]["pages_copied"]' \
		'j["total_bytes"] == sum(r["stored_bytes"] for r in j["rounds"]) + j["lazy"]["bytes"]' \
		'0 < j["downtime_ms"] <= j["lazy"]["last_page_ms"]'
	bad=$JBAD
	"$PY" -c 'import json,sys; j=json.load(open(sys.argv[1])); print("# -m 0 --postcopy: downtime %d ms (restore %d ms), %d pages after the restore, the last %d ms after the freeze, %d faults waited on" % (j["downtime_ms"], j["restore_ms"], j["lazy"]["pages_copied"], j["lazy"]["last_page_ms"], j["lazy"]["faults"]))' "$j" 2>/dev/null
	new=$(jget "$j" 'j["restored_pid"]')
	pids+=("$new")
	kill -TERM "$new" 2>/dev/null
	wait_for_line "$out" "migwork: (correct|WRONG)" 120 || bad+=" the restored target did not answer"
	grep -q "migwork: correct" "$out" || bad+=" restored memory: $(tail -n 1 "$out")"
	[ -z "$bad" ] && ok migrate_postcopy_m0 || notok migrate_postcopy_m0 "$bad"
}

WHICH=page
for_criu migrate_postcopy_m0 postcopy_m0 ""
exit 0
