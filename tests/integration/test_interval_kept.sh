#!/bin/bash
# memlens snapshot -i MS says when it could not keep the interval, in text
# ("the interval was not kept: N of the M cycles ...") and in JSON
# (interval_kept false, cycles_wanted), and says nothing of it when the
# interval was kept.
#   slow: --pages on 256 MiB of written memory makes every cycle read
#         64K pages of /proc/kpageflags and kpagecount; with -i 1 each
#         cycle is longer than the interval. That precondition is taken
#         from what memlens itself reports (cycle_us_min), never timed here.
#   kept: -n 5 -i 100 stops when the count is reached: every cycle asked
#         for was taken, whatever the load.
set -u
. "$(dirname "$0")/../lib.bash"
M=${MEMLENS:?} W=${WORKLOADS:?}
PY=${PYTHON:-python3}
t_tmpdir interval_kept

start_ready bigmap "$tmp/bm" "$W/bigmap" 256 8
bm=$ready_pid

# jget FILE EXPR: a Python expression on the summary line s of FILE
jget() {
	$PY -c 'import json,sys
s=[j for j in map(json.loads, open(sys.argv[1])) if j.get("type")=="summary"][-1]
print(eval(sys.argv[2]))' "$1" "$2"
}

if [ ! -r /proc/kpageflags ]; then
	skip interval_not_kept_json "no readable /proc/kpageflags (--pages needs root)"
	skip interval_not_kept_text "no readable /proc/kpageflags (--pages needs root)"
else
	"$M" snapshot -p $bm -i 1 -d 1 --pages --json -o "$tmp/slow.jsonl" 2>"$tmp/slow.err"
	rc=$?
	got=$(jget "$tmp/slow.jsonl" \
		'" ".join(str(x) for x in (s["cycle_us_min"], s["interval_ms"], s["cycles"], s["cycles_wanted"], s["interval_kept"]))' \
		2>&1)
	read -r cmin iv n want kept <<<"$got"
	if [ $rc -ne 0 ] || [ -z "${kept:-}" ]; then
		notok interval_not_kept_json "exit $rc: $got $(cat "$tmp/slow.err")"
	elif [ "$cmin" -le $((iv * 1000)) ]; then
		# memlens says a cycle was shorter than the interval: nothing forced
		skip interval_not_kept_json "a cycle took ${cmin} us, not longer than -i $iv"
	else
		check interval_not_kept_json '[ "$kept" = False ] && [ "$n" -lt "$want" ]' \
			"summary: cycles $n, wanted $want, interval_kept $kept"
	fi

	"$M" snapshot -p $bm -i 1 -d 1 --pages >"$tmp/slow.txt" 2>"$tmp/slow.txt.err"
	rc=$?
	# the note, with the run's own count of cycles
	n=$(sed -n 's/^\([0-9]*\) cycles; cycle time min \([0-9.]*\) .*/\1 \2/p' "$tmp/slow.txt")
	read -r n cmin_ms <<<"$n"
	note=$(tr '\n' ' ' <"$tmp/slow.txt" | tr -s ' ' |
		grep -oE 'the interval was not kept: [0-9]+ of the [0-9]+ cycles one every 1 ms')
	if [ $rc -ne 0 ] || [ -z "${n:-}" ]; then
		notok interval_not_kept_text "exit $rc: $(tail -n 5 "$tmp/slow.txt") $(cat "$tmp/slow.txt.err")"
	elif $PY -c 'import sys; sys.exit(float(sys.argv[1]) > 1.0)' "$cmin_ms"; then
		skip interval_not_kept_text "a cycle took $cmin_ms ms, not longer than -i 1"
	else
		check interval_not_kept_text '[[ "$note" == "the interval was not kept: $n of the "* ]]' \
			"$(tail -n 6 "$tmp/slow.txt")"
	fi
fi

# kept: every cycle asked for was taken; no note in either form
"$M" snapshot -p $bm -i 100 -n 5 --json -o "$tmp/kept.jsonl" 2>"$tmp/kept.err"
rc=$?
got=$(jget "$tmp/kept.jsonl" '" ".join(str(x) for x in (s["cycles"], s["cycles_wanted"], s["interval_kept"], s["stopped_because"]))' 2>&1)
check interval_kept_json '[ $rc -eq 0 ] && [ "$got" = "5 5 True count" ]' \
	"exit $rc: $got $(cat "$tmp/kept.err")"
"$M" snapshot -p $bm -i 100 -n 5 >"$tmp/kept.txt" 2>"$tmp/kept.txt.err"
rc=$?
check interval_kept_text '[ $rc -eq 0 ] && grep -q "^5 cycles; cycle time" "$tmp/kept.txt" &&
	! grep -q "not kept" "$tmp/kept.txt" "$tmp/kept.txt.err"' \
	"exit $rc: $(tail -n 6 "$tmp/kept.txt") $(cat "$tmp/kept.txt.err")"
t_done
