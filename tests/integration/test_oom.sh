#!/bin/bash
# memlens oom: a real OOM kill in a memory cgroup limited to 64 MiB, checked
# against the cgroup's own OOM counter and the kernel log.
. "$(dirname "$0")/bpf_common.bash"

CG_NAME=memlens-oom-test.$$
CG=""
CG_VER=""

cgroup_make() {
	if [ -f /sys/fs/cgroup/cgroup.controllers ] &&
	   grep -qw memory /sys/fs/cgroup/cgroup.controllers; then
		CG_VER=2
		CG=/sys/fs/cgroup/$CG_NAME
		grep -qw memory /sys/fs/cgroup/cgroup.subtree_control ||
			echo +memory >/sys/fs/cgroup/cgroup.subtree_control
		mkdir "$CG" && echo 64M >"$CG/memory.max" || return 1
		[ -f "$CG/memory.swap.max" ] && echo 0 >"$CG/memory.swap.max"
	elif [ -d /sys/fs/cgroup/memory ]; then
		CG_VER=1
		CG=/sys/fs/cgroup/memory/$CG_NAME
		mkdir "$CG" && echo 64M >"$CG/memory.limit_in_bytes" || return 1
		[ -f "$CG/memory.memsw.limit_in_bytes" ] && echo 64M >"$CG/memory.memsw.limit_in_bytes"
	else
		return 1
	fi
	return 0
}

oom_kills() {	# the cgroup's own count of OOM kills
	if [ "$CG_VER" = 2 ]; then
		awk '$1 == "oom_kill" {print $2}' "$CG/memory.events"
	else
		awk '$1 == "oom_kill" {print $2}' "$CG/memory.oom_control"
	fi
}

test_cgroup_oom_kill() {
	local n=oom_cgroup_64MiB_kill_matches_counters_and_kernel_log hog line ok=1
	if ! cgroup_make; then
		skip $n "no memory cgroup controller to create a 64 MiB cgroup in"; return
	fi
	echo "# cgroup v$CG_VER: $CG"
	if ! tracer_start oom oom --json; then
		notok $n "tracer did not start: $(cat "$TR_ERR")"; rmdir "$CG"; return
	fi
	# the hog joins the cgroup, then becomes the hog: its own pid is the victim
	sh -c "echo \$\$ >$CG/cgroup.procs && exec $WORKLOADS/hog 1024" 2>"$T_TMP/hog.err" &
	hog=$!
	wait $hog
	local hog_rc=$?
	# the event is in the ring buffer already: until memlens printed it
	wait_for_line "$TR_OUT" "\"victim_pid\":$hog," 10
	tracer_stop
	line=$(dmesg | grep "Killed process $hog (" | tail -n 1)
	if [ -z "$line" ] && [ "$(stat -Lc %i /proc/self/ns/pid)" != 4026531836 ]; then
		# in a PID namespace the kernel logs the global pid, memlens ours
		line=$(dmesg | grep "Killed process [0-9]* (hog)" | tail -n 1)
	fi
	echo "# hog exit $hog_rc; kernel: ${line#*] }"
	echo "# memlens: $(cat "$TR_OUT")"
	# memlens traces the whole machine: another job's OOM kill (in a cgroup
	# of its own) may come too; this test's are those in its cgroup
	local own=$T_TMP/oom-own.jsonl
	grep -F "\"cgroup\":\"/$CG_NAME\"" "$TR_OUT" >"$own"
	[ "$(grep -c '"type":"oom_kill"' "$TR_OUT")" = "$(grep -c '"type":"oom_kill"' "$own")" ] ||
		echo "# other OOM kills on this machine meanwhile: $(grep -vF "\"cgroup\":\"/$CG_NAME\"" "$TR_OUT" | grep -c oom_kill)"
	TR_OUT=$own
	expect $n "hog was SIGKILLed" [ $hog_rc = 137 ] || ok=0
	expect $n "one oom_kill line" [ "$(grep -c '"type":"oom_kill"' "$TR_OUT")" = 1 ] || ok=0
	expect $n "cgroup counter oom_kill == 1" [ "$(oom_kills)" = 1 ] || ok=0
	expect $n "victim, scope, limit, cgroup" [ "$(jsonl "$TR_OUT" oom_kill "(d['victim_pid'], d['victim_comm'], d['scope'], d['limit_kb'], d['cgroup'])")" = "($hog, 'hog', 'cgroup', 65536, '/$CG_NAME')" ] || ok=0
	expect $n "trigger is the hog (it allocated)" [ "$(jsonl "$TR_OUT" oom_kill "(d['trigger_pid'], d['trigger_comm'])")" = "($hog, 'hog')" ] || ok=0
	if [ -z "$line" ]; then
		echo "#   no 'Killed process $hog' line in dmesg"; ok=0
	else
		local tvm anon file
		tvm=$(echo "$line" | sed -n 's/.*total-vm:\([0-9]*\)kB.*/\1/p')
		anon=$(echo "$line" | sed -n 's/.*anon-rss:\([0-9]*\)kB.*/\1/p')
		file=$(echo "$line" | sed -n 's/.*file-rss:\([0-9]*\)kB.*/\1/p')
		local got
		got=$(jsonl "$TR_OUT" oom_kill "(d['total_vm_kb'], d['anon_rss_kb'], d['file_rss_kb'])")
		# exact on every kernel: memlens reads the counters the way the
		# kernel's report does (from Linux 7.0 the per-CPU sums)
		expect $n "RSS and VM as the kernel logged them" [ "$got" = "($tvm, $anon, $file)" ] || ok=0
	fi
	rmdir "$CG" 2>/dev/null
	[ $ok = 1 ] && ok $n || notok $n
}

# memlens oom in its own PID namespace, with the victim in it: the victim's
# and the trigger's pids are the ones memlens sees, not the kernel's global ones
test_pid_namespace() {
	local n=oom_in_pid_namespace
	pidns_usable $n || return
	CG_NAME=memlens-oom-ns-test.$$
	if ! cgroup_make; then
		skip $n "no memory cgroup controller to create a 64 MiB cgroup in"; return
	fi
	unshare --pid --fork --mount-proc /bin/bash -c '
		"$1" oom --json -d 60 >"$3/ns.out" 2>"$3/ns.err" &
		m=$!
		for _ in $(seq 1 300); do grep -qs tracing "$3/ns.err" && break; sleep 0.1; done
		sh -c "echo \$\$ >$4/cgroup.procs && exec $2 1024" 2>/dev/null &
		h=$!
		wait $h
		echo "$h" >"$3/ns.hog"
		# the event is in the ring buffer already: until memlens printed it
		for _ in $(seq 1 200); do grep -qs "\"victim_pid\":$h," "$3/ns.out" && break; sleep 0.05; done
		kill -INT $m
		wait $m' _ "$MEMLENS" "$WORKLOADS/hog" "$T_TMP" "$CG"
	local hog
	hog=$(cat "$T_TMP/ns.hog" 2>/dev/null)
	echo "# hog was pid $hog in the namespace; memlens: $(cat "$T_TMP/ns.out")"
	if [ -n "$hog" ] && [ "$(jsonl "$T_TMP/ns.out" oom_kill "(d['victim_pid'], d['victim_comm'], d['trigger_pid'])")" = "($hog, 'hog', $hog)" ]; then
		ok $n
	else
		notok $n "$(cat "$T_TMP/ns.err")"
	fi
	rmdir "$CG" 2>/dev/null
}

test_modes() {
	local n=oom_mode_reported
	"$MEMLENS" oom -v -d 0.2 >"$T_TMP/m.out" 2>"$T_TMP/m.err"
	if [ $? = 0 ] && grep -Eq 'mode (fentry|tracepoint)' "$T_TMP/m.err" &&
	   grep -Eq '^[0-9]+ OOM kills? seen' "$T_TMP/m.out"; then
		ok $n
		echo "# $(grep mode "$T_TMP/m.err")"
	else
		notok $n "$(cat "$T_TMP/m.out" "$T_TMP/m.err")"
	fi
	n=oom_fentry_oom_control_path
	if grep -q 'mode tracepoint' "$T_TMP/m.err"; then
		skip $n "this kernel refuses fentry/oom_kill_process; the mark_victim-only fallback is what the kill test above checked"
	else
		ok $n	# the kill test above ran through oom_control
	fi
	n=oom_not_root_exit_4
	setpriv --reuid=65534 --regid=65534 --clear-groups "$MEMLENS" oom -d 0.1 >/dev/null 2>"$T_TMP/nr"
	[ $? = 4 ] && grep -q root "$T_TMP/nr" && ok $n || notok $n "$(cat "$T_TMP/nr")"
}

# -i: one object per interval, then the summary (no OOM here: 0 kills).
# How many intervals a run of 0.9 s has depends on the CPU the tracer got
# (a tick that comes late skips the ones it missed): at most 5, each one
# at or after its own 200 ms mark, only the last marked last, at 0.9 s or
# later.
test_interval() {
	local n=oom_interval_and_summary out=$T_TMP/iv.json
	"$MEMLENS" oom --json -i 200 -d 0.9 >"$out" 2>"$T_TMP/iv.err"
	local rc=$?
	if [ $rc = 0 ] && [ "$(intervals "$out" oom "1 <= len(iv) <= 5 and iv[-1]['last'] and not any(x['last'] for x in iv[:-1]) and all(x['elapsed_ms'] >= 200 * (k + 1) for k, x in enumerate(iv[:-1])) and iv[-1]['elapsed_ms'] >= 900 and [x['elapsed_ms'] for x in iv] == sorted(x['elapsed_ms'] for x in iv) and sum(x['kills'] for x in iv) == 0")" = True ] &&
	   [ "$(jsonl "$out" oom_summary "(sorted(d), d['kills'])")" = "(['kills', 'lost', 'recursion_misses', 'type'], 0)" ]; then
		ok $n
	else
		notok $n "exit $rc; output:"
		sed 's/^/#   /' "$out" "$T_TMP/iv.err"
	fi
}

test_interval
test_cgroup_oom_kill
test_pid_namespace
test_modes
t_done
