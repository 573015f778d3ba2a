#!/bin/bash
# memlens snapshot on the command line: the --json shape, CSV, periodic
# mode with deltas, -o, spawn mode before main, --pages/--writes columns,
# and the errors (bad usage, no such pid, no permission, target exiting).
set -u
. "$(dirname "$0")/../lib.bash"
M=${MEMLENS:?} W=${WORKLOADS:?}
. "$(dirname "$0")/proc.bash"
PY=/usr/bin/python3
tmp=$(mktemp -d)
tpid=
cleanup() {
	[ -n "$tpid" ] && kill "$tpid" 2>/dev/null
	exec 7>&- 2>/dev/null
	rm -rf "$tmp"
}
t_at_exit cleanup


# A snaptarget kept waiting on a fifo.
mkfifo "$tmp/in"
"$W/snaptarget" 100 <"$tmp/in" >"$tmp/t.out" &
tpid=$!
exec 7>"$tmp/in"
wait_for_line "$tmp/t.out" ready 10
touch_addr=$(awk '/^addr touch/{print $3}' "$tmp/t.out")

# 1. --json: exactly the issue's shape (extra fields allowed)
"$M" snapshot -p "$tpid" --json >"$tmp/one.json"
rc=$?
$PY - "$tmp/one.json" "$touch_addr" <<'PYEOF' >"$tmp/py.out" 2>&1
import json, sys
lines = open(sys.argv[1]).read().splitlines()
recs = [json.loads(l) for l in lines]
snap = [r for r in recs if r["type"] == "snapshot"]
assert len(snap) == 1, "one snapshot record"
o = snap[0]
for k in ("type", "pid", "t_ms", "cycle_us", "totals", "regions"):
    assert k in o, "missing " + k
for k in ("size_pages", "resident_pages", "swapped_pages", "file_pages", "huge_pages", "zero_pages"):
    assert isinstance(o["totals"][k], int), "totals." + k
rk = ("start_addr", "end_addr", "perms", "kind", "path", "size_pages", "resident_pages",
      "swapped_pages", "file_pages", "huge_pages", "zero_pages")
for r in o["regions"]:
    for k in rk:
        assert k in r, "region missing " + k
t = [r for r in o["regions"] if int(r["start_addr"], 16) == int(sys.argv[2], 16)]
assert len(t) == 1 and t[0]["resident_pages"] == 100 and t[0]["kind"] == "anon", t
assert sum(r["resident_pages"] for r in o["regions"]) == o["totals"]["resident_pages"]
assert o["mm"]["VmRSS_kb"] > 0 and "by_kind" in o
print("shape ok")
PYEOF
check_rc json_shape $(( rc != 0 || $? != 0 )) "rc=$rc $(tail -3 "$tmp/py.out")"

# 2. periodic JSON: -n 3 -i 10 gives 3 records with deltas, then a summary
"$M" snapshot -p "$tpid" --json -i 10 -n 3 >"$tmp/per.json"
rc=$?
$PY - "$tmp/per.json" <<'PYEOF' >"$tmp/py.out" 2>&1
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
snaps = [r for r in recs if r["type"] == "snapshot"]
assert [r["seq"] for r in snaps] == [1, 2, 3], snaps
assert "deltas" not in snaps[0] and all("deltas" in r for r in snaps[1:])
assert all(r["deltas"]["vmas_added"] == 0 for r in snaps[1:])
assert snaps[2]["t_ms"] >= snaps[1]["t_ms"] >= snaps[0]["t_ms"] == 0
assert recs[-1]["type"] == "summary" and recs[-1]["cycles"] == 3
assert recs[-1]["stopped_because"] == "count"
PYEOF
check_rc periodic_json $(( rc != 0 || $? != 0 )) "rc=$rc $(tail -3 "$tmp/py.out")"

# 3. CSV: header + (VMAs + 1 total row) per cycle, same column count everywhere
"$M" snapshot -p "$tpid" --csv -i 10 -n 2 >"$tmp/s.csv"
rc=$?
$PY - "$tmp/s.csv" <<'PYEOF' >"$tmp/py.out" 2>&1
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
hdr = rows[0]
assert hdr[:5] == ["seq", "t_ms", "cycle_us", "pid", "start_addr"], hdr
assert all(len(r) == len(hdr) for r in rows), "ragged rows"
tot = [r for r in rows[1:] if r[hdr.index("kind")] == "total"]
assert len(tot) == 2
c1 = [r for r in rows[1:] if r[0] == "1"]
assert sum(int(r[hdr.index("resident_pages")]) for r in c1 if r[7] != "total") == int(tot[0][hdr.index("resident_pages")])
PYEOF
check_rc csv_output $(( rc != 0 || $? != 0 )) "rc=$rc $(tail -3 "$tmp/py.out")"

# 4. -o FILE: what stdout would get goes to FILE (the format is --json's or
# --csv's, never guessed from the name), and nothing to stdout
"$M" snapshot -p "$tpid" -i 10 -n 2 --json -o "$tmp/rec.csv" >"$tmp/o.stdout"
rc=$?
n=$(grep -c '"type":"snapshot"' "$tmp/rec.csv")
s=$(grep -c '"type":"summary"' "$tmp/rec.csv")
check_rc output_file $(( rc != 0 || n != 2 || s != 1 )) "rc=$rc records=$n summaries=$s"
"$M" snapshot -p "$tpid" -i 10 -n 2 -o "$tmp/human.txt" >"$tmp/o2.stdout"
rc=$?
grep -q "by region kind" "$tmp/human.txt" && grep -q "2 cycles" "$tmp/human.txt"
check_rc output_file_human $(( rc != 0 || $? != 0 )) "rc=$rc $(head -3 "$tmp/human.txt")"
check_rc output_file_stdout_unused $(( $(cat "$tmp/o.stdout" "$tmp/o2.stdout" | wc -c) != 0 )) \
	"$(head -3 "$tmp/o.stdout" "$tmp/o2.stdout")"

# 5. --pages and --writes add their fields (--writes: write tracking
# needs PAGEMAP_SCAN and async write-protect, 6.7+; refused before)
"$M" check --json >"$tmp/chk.json" 2>/dev/null
scan=$($PY -c "import json,sys; print(next(f['state'] for f in json.load(open(sys.argv[1]))['features'] if f['name'] == 'pagemap_scan'))" "$tmp/chk.json")
if [ "$scan" = ok ]; then
	"$M" snapshot -p "$tpid" --json --pages --writes -i 20 -n 2 >"$tmp/pw.json"
	rc=$?
else
	"$M" snapshot -p "$tpid" --writes -n 1 >/dev/null 2>"$tmp/w.err"
	check_rc writes_refused_without_pagemap_scan $(( $? != 5 )) "$(cat "$tmp/w.err")"
	"$M" snapshot -p "$tpid" --json --pages -i 20 -n 2 >"$tmp/pw.json"
	rc=$?
fi
$PY - "$tmp/pw.json" "$scan" <<'PYEOF' >"$tmp/py.out" 2>&1
import json, sys
snaps = [json.loads(l) for l in open(sys.argv[1])][:-1]
assert "page_flags" in snaps[0]["totals"] and "anon" in snaps[0]["totals"]["page_flags"]
assert sys.argv[2] != "ok" or "written_pages" in snaps[1]["totals"]
assert snaps[1]["totals"]["swapped_pages"] * 4 == snaps[1]["mm"]["VmSwap_kb"]
PYEOF
check_rc pages_and_writes $(( rc != 0 || $? != 0 )) "rc=$rc $(tail -3 "$tmp/py.out")"

# 6. the target is unaffected: it still answers, its memory intact
echo check >&7
wait_for_line "$tmp/t.out" "check ok" 10
check_rc target_unaffected $? "$(tail -2 "$tmp/t.out")"

# 7. target exits mid-run: periodic mode ends cleanly with the reason
"$M" snapshot -p "$tpid" --json -i 10 -d 20 >"$tmp/exit.json" 2>"$tmp/exit.err" &
mpid=$!
wait_for_file "$tmp/exit.json" 10	# its first snapshot is out
echo exit >&7
exec 7>&-
wait "$tpid"
tpid=
wait "$mpid"
rc=$?
grep -q '"stopped_because":"target_exited"' "$tmp/exit.json"
check_rc target_exits_mid_run $(( rc != 0 || $? != 0 )) "rc=$rc $(tail -c 300 "$tmp/exit.json")"

# 8. spawn mode: cycle 1 at exec (no libc mapped, main has not run), later ones after
# (records to a file: the child writes to the same stdout)
sleep 0.5 | "$M" snapshot -i 5 --json -o "$tmp/spawn.json" -- "$W/snaptarget" 3 >"$tmp/spawn.out"
rc=$?
$PY - "$tmp/spawn.json" <<'PYEOF' >"$tmp/py.out" 2>&1
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
snaps = [r for r in recs if r["type"] == "snapshot"]
paths = lambda r: " ".join(x["path"] for x in r["regions"])
assert snaps[0]["seq"] == 1 and snaps[0]["t_ms"] == 0
assert "libc.so" not in paths(snaps[0]) and "[heap]" not in paths(snaps[0]), paths(snaps[0])
assert any("libc.so" in paths(r) for r in snaps[1:]), "never saw libc"
PYEOF
check_rc spawn_first_cycle_before_main $(( rc != 0 || $? != 0 )) "rc=$rc $(tail -3 "$tmp/py.out")"
grep -q '"stopped_because":"target_exited"' "$tmp/spawn.json"
check_rc spawn_follows_to_exit $? "$(tail -c 300 "$tmp/spawn.json")"

# 8b. a command we started is stopped when memlens stops (count, or a signal
# sent to memlens alone): nothing is left behind, and memlens does not hang
# (unique sleep lengths: other runs of this test may be going on)
s1=$((200000 + $$)) s2=$((300000 + $$))
timeout 20 "$M" snapshot -n 2 -i 20 -o /dev/null -- /bin/sleep "$s1" >/dev/null; rc=$?
left=$(pgrep -f -x "/bin/sleep $s1" | wc -l)
check_rc spawn_stopped_at_count $(( rc != 0 || left != 0 )) "rc=$rc left=$left"
timeout -s INT --preserve-status 1 "$M" snapshot -i 20 -o /dev/null -- /bin/sleep "$s2" >/dev/null; rc=$?
left=$(pgrep -f -x "/bin/sleep $s2" | wc -l)
check_rc spawn_stopped_on_sigint $(( rc != 0 || left != 0 )) "rc=$rc left=$left"

# 9. errors and exit codes
"$M" snapshot -p 4194000 >/dev/null 2>"$tmp/e"; rc=$?
check_rc no_such_pid $(( rc != 3 )) "rc=$rc"
grep -q "no process with pid" "$tmp/e" || notok no_such_pid_message "$(cat "$tmp/e")"
kt=$(kthread_pid)
if [ -n "$kt" ]; then
	"$M" snapshot -p "$kt" >/dev/null 2>"$tmp/e"; rc=$?
	grep -q "kernel thread" "$tmp/e"
	check_rc kernel_thread $(( rc != 2 || $? != 0 )) "rc=$rc $(cat "$tmp/e")"
else
	echo "skip - kernel_thread: no kernel thread is visible in this PID namespace"
fi
"$M" snapshot -p 1 --json --csv >/dev/null 2>&1; rc1=$?
"$M" snapshot -p abc >/dev/null 2>&1; rc2=$?
"$M" snapshot >/dev/null 2>&1; rc3=$?
"$M" snapshot -p 1 -i 0 >/dev/null 2>&1; rc4=$?
check_rc bad_usage $(( rc1 != 2 || rc2 != 2 || rc3 != 2 || rc4 != 2 )) "rc=$rc1 $rc2 $rc3 $rc4"
"$M" snapshot --help | grep -q -- "--pages"
check_rc help $? "no --help text"
"$M" snapshot -- /nonexistent/cmd >/dev/null 2>&1; rc=$?
check_rc spawn_missing_command $(( rc != 127 )) "rc=$rc"
if command -v setpriv >/dev/null; then
	setpriv --reuid=65534 --regid=65534 --clear-groups "$M" snapshot -p 1 >/dev/null 2>"$tmp/e"; rc=$?
	check_rc no_permission $(( rc != 4 )) "rc=$rc $(cat "$tmp/e")"
	setpriv --reuid=65534 --regid=65534 --clear-groups "$M" snapshot --pages -- /bin/sleep 5 >/dev/null 2>"$tmp/e"; rc=$?
	check_rc pages_need_root $(( rc != 4 )) "rc=$rc $(cat "$tmp/e")"
	# without --pages an unprivileged user snapshots its own process
	setpriv --reuid=65534 --regid=65534 --clear-groups "$M" snapshot -n 1 --json -- /bin/sleep 0.2 >"$tmp/u.json" 2>"$tmp/e"; rc=$?
	check_rc unprivileged_own_process $(( rc != 0 )) "rc=$rc $(cat "$tmp/e")"
else
	echo "skip - no_permission: setpriv (util-linux) is not installed"
fi

# --method: the PAGEMAP_SCAN walk or the read of every VMA's pagemap entries
# (what a kernel without PAGEMAP_SCAN gets): the same counts, and the JSON
# says which; the kernel's answer decides the default, not its version
"$M" snapshot --method bogus -p 1 >/dev/null 2>"$tmp/e"; rc=$?
check_rc method_bad_value $(( rc != 2 )) "rc=$rc $(cat "$tmp/e")"
mkfifo "$tmp/in2"
"$W/snaptarget" 100 <"$tmp/in2" >"$tmp/t2.out" &
tpid=$!
exec 7>"$tmp/in2"
for _ in $(seq 100); do grep -q ready "$tmp/t2.out" && break; sleep 0.05; done
"$M" snapshot -p "$tpid" --json --method read >"$tmp/rd.json" 2>"$tmp/rd.err"; rc=$?
"$M" snapshot -p "$tpid" --json >"$tmp/auto.json" 2>"$tmp/auto.err"; rc2=$?
"$M" snapshot -p "$tpid" --json --method read >"$tmp/rd2.json" 2>>"$tmp/rd.err"
"$M" snapshot -p "$tpid" --method scan -n 1 >/dev/null 2>"$tmp/sc.err"; rc3=$?
$PY - "$tmp/rd.json" "$tmp/auto.json" "$tmp/rd2.json" "$scan" <<'PYEOF' >"$tmp/py.out" 2>&1
import json, sys
rd, auto, rd2 = [[json.loads(l) for l in open(f)][0] for f in sys.argv[1:4]]
want = "pagemap_scan" if sys.argv[4] == "ok" else "pagemap_read"
assert rd["method"] == "pagemap_read" and auto["method"] == want, (rd["method"], auto["method"])
assert rd["pagemap_reads"] > 0 and rd["zero_and_huge_known"] is True
# the target is still: both reads agree with the default method on every VMA
key = lambda o: [(r["start_addr"], r["resident_pages"], r["swapped_pages"], r["file_pages"],
                  r["huge_pages"], r["zero_pages"]) for r in o["regions"]]
assert key(rd) == key(rd2), "the target moved between the two reads"
assert key(rd) == key(auto), [(a, b) for a, b in zip(key(rd), key(auto)) if a != b][:3]
print("same counts, %s by default" % want)
PYEOF
check_rc method_read_same_counts_as_default $(( rc != 0 || rc2 != 0 || $? != 0 )) "rc=$rc $rc2 $(tail -3 "$tmp/py.out") $(cat "$tmp/rd.err" "$tmp/auto.err")"
if [ "$scan" = ok ]; then
	check_rc method_scan_where_the_kernel_has_it $(( rc3 != 0 )) "rc=$rc3 $(cat "$tmp/sc.err")"
else
	grep -q "no PAGEMAP_SCAN ioctl" "$tmp/sc.err"
	check_rc method_scan_refused_without_pagemap_scan_exit_5 $(( rc3 != 5 || $? != 0 )) "rc=$rc3 $(cat "$tmp/sc.err")"
fi
exec 7>&-
wait "$tpid" 2>/dev/null
tpid=
if command -v setpriv >/dev/null; then
	# without root the kernel hides page frames: the read cannot tell zero
	# or huge pages, and says so
	setpriv --reuid=65534 --regid=65534 --clear-groups "$M" snapshot --method read -n 1 --json -- /bin/sleep 0.2 >"$tmp/u2.json" 2>"$tmp/e"; rc=$?
	$PY -c "import json,sys; o=json.loads(open(sys.argv[1]).readline()); assert o['method'] == 'pagemap_read' and o['zero_and_huge_known'] is False and o['totals']['resident_pages'] > 0, o" "$tmp/u2.json" 2>"$tmp/py.out"
	check_rc method_read_unprivileged_says_zero_and_huge_unknown $(( rc != 0 || $? != 0 )) "rc=$rc $(cat "$tmp/e" "$tmp/py.out")"
else
	echo "skip - method_read_unprivileged_says_zero_and_huge_unknown: setpriv (util-linux) is not installed"
fi
