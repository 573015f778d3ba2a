#!/bin/bash
# memlens writes on the command line: usage and error paths, JSON Lines,
# hot detection on memwrite, blocked targets whose syscalls must be
# unaffected, target exit, signals, and a clean detach.
set -u
. "$(dirname "$0")/../lib.bash"
M=${MEMLENS:?} W=${WORKLOADS:?}
. "$(dirname "$0")/proc.bash"
tmp=$(mktemp -d); t_at_exit 'kill $(jobs -p) 2>/dev/null; rm -rf "$tmp"'
run() { "$@" >"$tmp/out" 2>"$tmp/err"; echo $? >"$tmp/rc"; }
rc() { cat "$tmp/rc"; }

# --- usage ---------------------------------------------------------------
run "$M" writes --help
check help '[ "$(rc)" = 0 ] && grep -q "usage: memlens writes" "$tmp/out"'
run "$M" writes
check no_target_is_usage_error '[ "$(rc)" = 2 ] && grep -q "give either -p PID" "$tmp/err"'
for bad in "-p abc" "-p 0" "-i 5" "-i x" "-t 0" "-t 1.5" "-t nan" "-c 0" "-c 11" "-d -1"; do
	run "$M" writes $bad
	check "bad_option_${bad// /_}" '[ "$(rc)" = 2 ] && [ -s "$tmp/err" ]' "$(cat "$tmp/err")"
done

# --- targets that cannot be profiled --------------------------------------
run "$M" writes -p 4000000 -d 1
check nonexistent_pid '[ "$(rc)" = 3 ] && grep -q "no process with pid 4000000" "$tmp/err"' "$(cat "$tmp/err")"
kt=$(kthread_pid)
if [ -n "$kt" ]; then
	run "$M" writes -p "$kt" -d 1
	check kernel_thread '[ "$(rc)" = 2 ] && grep -q "kernel thread" "$tmp/err"' "$(cat "$tmp/err")"
else
	echo "skip - kernel_thread: no kernel thread is visible in this PID namespace"
fi
"$W/memwrite" -s 30 >"$tmp/mw0" &
victim=$!
wait_for_line "$tmp/mw0" writes 10
if command -v setpriv >/dev/null; then
	run setpriv --reuid=65534 --regid=65534 --clear-groups "$M" writes -p $victim -d 1
	check no_permission '[ "$(rc)" = 4 ] && grep -q "root" "$tmp/err"' "rc=$(rc)" "$(cat "$tmp/err")"
else
	echo "skip - no_permission: setpriv (util-linux) is not installed"
fi
kill $victim; wait $victim 2>/dev/null

# userfaultfd missing (seccomp makes it ENOSYS, as on a kernel without it)
"$W/noufd" "$W/memwrite" -s 30 >"$tmp/mw1" &
nf=$!
wait_for_line "$tmp/mw1" writes 10
run "$M" writes -p $nf -d 1
check missing_kernel_feature '[ "$(rc)" = 5 ] && grep -q "userfaultfd() is not available" "$tmp/err"' "rc=$(rc)" "$(cat "$tmp/err")"
check missing_feature_target_unharmed 'kill -0 $nf && [ "$(grep -c uw /proc/$nf/smaps)" = 0 ]'
kill $nf; wait $nf 2>/dev/null

# --- JSON Lines and hot detection on memwrite -------------------------------
# paced (-P): the whole 8 MiB buffer written once per interval, however
# little CPU memwrite gets on a loaded machine
"$W/memwrite" -P -m 8 -s 60 >"$tmp/mw" &
mw=$!
wait_for_line "$tmp/mw" writes 10
buf=$(awk '/writes/ {split($5, r, "-"); print r[1]}' "$tmp/mw")
run "$M" writes -p $mw -i 200 -d 3 --json
check json_exit_ok '[ "$(rc)" = 0 ]' "$(cat "$tmp/err")"
/usr/bin/env python3 - "$tmp/out" "$buf" >"$tmp/py" 2>&1 <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
buf = int(sys.argv[2], 16)
iv = [l for l in lines if l["type"] == "interval"]
sm = [l for l in lines if l["type"] == "summary"]
assert len(iv) >= 4, f"only {len(iv)} intervals"
assert len(sm) == 1 and lines[-1]["type"] == "summary", "summary must be last and unique"
for l in iv:
    for k in ("t_ms", "dirty", "regions"):
        assert k in l, k
    for k in ("dirty_pages", "dirty_bytes", "dirty_rate_pages_per_sec", "cumulative_dirty_bytes", "avg_dirty_rate"):
        assert k in l["dirty"], k
    for r in l["regions"]:
        for k in ("start_addr", "end_addr", "kind", "total_pages", "dirty_pages", "written_ratio", "consecutive_hot", "hot"):
            assert k in r, k
        assert r["start_addr"].startswith("0x") and r["end_addr"].startswith("0x")
for k in ("pid", "total_vmas", "hot_vmas", "regions", "dirty"):
    assert k in sm[0], k
def buf_region(l):
    return [r for r in l["regions"] if int(r["start_addr"], 16) <= buf < int(r["end_addr"], 16)]
# hot once 3 intervals in a row saw it written above the threshold (0.3):
# paced, it is written whole in most intervals; how soon depends on how
# much CPU the writer got, so only that it turned hot, and by the rule
hot_at = [l["seq"] for l in iv if any(r["hot"] for r in buf_region(l))]
assert hot_at, f"buffer never hot in {len(iv)} intervals"
r = [x for x in buf_region(iv[hot_at[0] - iv[0]["seq"]])][0]
assert r["kind"] == "anon" and r["total_pages"] == 2048, r
assert r["hot"] and r["written_ratio"] > 0.3 and r["consecutive_hot"] >= 3, r
for l in iv:
    for x in buf_region(l):
        assert x["hot"] == (x["consecutive_hot"] >= 3), x
assert any(int(x["start_addr"], 16) <= buf < int(x["end_addr"], 16) for x in sm[0]["regions"])
# read-only or idle VMAs are never hot: the lib-text/text ones are not even tracked
for l in iv:
    for x in l["regions"]:
        assert x["kind"] not in ("text", "lib-text", "vdso", "vvar"), x
        if x["dirty_pages"] == 0:
            assert x["consecutive_hot"] == 0 and not x["hot"], x
c = [l["dirty"]["cumulative_dirty_bytes"] for l in iv]
assert c == sorted(c) and c[-1] == sum(l["dirty"]["dirty_bytes"] for l in iv)
print("fine")
PY
check json_shape_and_memwrite_hot 'grep -q fine "$tmp/py"' "$(cat "$tmp/py")"
check detached_no_uw 'kill -0 $mw && [ "$(grep -c " uw" /proc/$mw/smaps)" = 0 ]'
check detached_no_uffd_fd '! ls -l /proc/$mw/fd | grep -q userfaultfd'

# human output and SIGINT: summary printed, exit 0
"$M" writes -p $mw -i 200 >"$tmp/h" 2>&1 &
ml=$!
sleep 1.2	# the thing tested: SIGINT after some intervals of profiling
kill -INT $ml; wait $ml; r=$?
check sigint_summary '[ $r = 0 ] && grep -q "summary: pid $mw" "$tmp/h" && grep -q "stopped because interrupted" "$tmp/h" && grep -q "^  ADDRESS " "$tmp/h"' "$(tail -5 "$tmp/h")"
check sigint_target_alive 'kill -0 $mw && [ "$(grep -c " uw" /proc/$mw/smaps)" = 0 ]'
# memlens killed outright (SIGKILL, OOM killer): the kernel closes its uffd,
# which drops every registration; the target carries on untouched
"$M" writes -p $mw -i 100 -q >/dev/null 2>&1 &
ml=$!
uw_during=0
for _ in $(seq 100); do
	uw_during=$(grep -c " uw" /proc/$mw/smaps)
	[ "$uw_during" -gt 0 ] && break
	sleep 0.1
done
kill -KILL $ml; wait $ml 2>/dev/null
# the kernel releases the dead tracer's userfaultfd copy; the target closes
# its own: until both are gone (or 10 s)
t_wait 10 sh -c "! grep -q ' uw' /proc/$mw/smaps && ! ls -l /proc/$mw/fd | grep -q userfaultfd"
check sigkill_leaves_target_clean '[ "$uw_during" -gt 0 ] && kill -0 $mw && [ "$(grep -c " uw" /proc/$mw/smaps)" = 0 ] && ! ls -l /proc/$mw/fd | grep -q userfaultfd' "uw during: $uw_during"
kill $mw; wait $mw 2>/dev/null

# --- the target exits mid-profile ------------------------------------------
"$W/memwrite" -s 1 >"$tmp/mw2" &
short=$!
wait_for_line "$tmp/mw2" writes 10
run "$M" writes -p $short -i 100 -d 20
check target_exit_clean '[ "$(rc)" = 0 ] && grep -q "exited" "$tmp/err" && grep -q "the target exited" "$tmp/out"' "rc=$(rc)" "$(cat "$tmp/err")"

# --- spawn mode ---------------------------------------------------------------
run "$M" writes -i 100 --json -- "$W/memwrite" -s 1
check spawn_mode '[ "$(rc)" = 0 ] && grep -q "\"type\":\"summary\"" "$tmp/out" && grep -q "\"stopped_because\":\"target_exited\"" "$tmp/out"' "$(tail -3 "$tmp/err")"
# memlens stops first (-d): the command it started is stopped too, and its
# signal mask is not memlens's (it must not ignore SIGTERM)
timeout 30 "$M" writes -q -i 200 -d 1 -o "$tmp/sp.out" -- "$W/memwrite" -m 4 >"$tmp/sp.child" 2>&1
r=$?
cpid=$(awk '/memwrite pid/ {print $3}' "$tmp/sp.child")
check spawn_duration_stops_child '[ $r = 0 ] && [ -n "$cpid" ] && ! kill -0 "$cpid" 2>/dev/null && grep -q "duration elapsed" "$tmp/sp.out"' "rc=$r pid=$cpid"
run "$M" writes -- /nonexistent/program
check spawn_missing_program '[ "$(rc)" = 127 ] && grep -q "cannot run" "$tmp/err"' "$(cat "$tmp/err")"

# --- blocked targets: their system calls behave as if nobody looked --------
for mode in nanosleep read poll futex; do
	"$W/sleeper" $mode 2000 >"$tmp/s_$mode" &
	sp=$!
	wait_for_line "$tmp/s_$mode" ready 10
	wait_for_state $sp S 10	# inside its blocking call
	sleep 0.3	# the thing tested: memlens attaches well into the call
	"$M" writes -p $sp -i 100 -d 0.8 >/dev/null 2>"$tmp/e_$mode"
	wait $sp
	read -r _ us _ res _ err < <(grep elapsed "$tmp/s_$mode")
	case $mode in
	nanosleep) want_res=0 want_err=0 ;;
	read) want_res=-1 want_err=4 ;;		# EINTR from its own SIGALRM
	poll) want_res=0 want_err=0 ;;
	futex) want_res=-1 want_err=110 ;;	# ETIMEDOUT
	esac
	# the call must not end early nor restart from scratch (that would take
	# 2.3 s or more: memlens attaches 0.3 s in), and must return what it would
	# have. The limit, 2.2 s, leaves the scheduler of a loaded machine 200 ms
	# to wake the sleeper up (its wake-up is not what is tested).
	limit=2200000
	check "blocked_${mode}_unchanged" '[ "$res" = "$want_res" ] && [ "$err" = "$want_err" ] && [ "$us" -ge 2000000 ] && [ "$us" -lt $limit ]' \
		"elapsed_us=$us result=$res errno=$err (want $want_res/$want_err, 2 s, limit ${limit} us)" "$(cat "$tmp/e_$mode")"
done
