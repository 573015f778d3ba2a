#!/bin/bash
# memlens faults: counts checked against the kernel's own getrusage() numbers.
. "$(dirname "$0")/bpf_common.bash"

# gated_run NAME MODE-ARGS -- FAULTGEN-ARGS: faultgen -w waits on a fifo; the
# tracer (-p) attaches while it is blocked (once it says it is ready: the
# kernel's counters memlens reads before attaching must not move before the
# touching starts), then it touches its pages, blocks
# again while the tracer is stopped, and prints its getrusage() deltas.
# Sets G_OUT (faultgen's line), G_PID, TR_OUT.
gated_run() {
	local name=$1 fifo=$T_TMP/$1.fifo
	shift
	local targs=()
	while [ "$1" != -- ]; do targs+=("$1"); shift; done
	shift
	mkfifo "$fifo"
	"$WORKLOADS/faultgen" -w "$@" <"$fifo" >"$T_TMP/$name.fg" 2>"$T_TMP/$name.fgerr" &
	G_PID=$!
	T_BG+=("$G_PID")
	exec 7>"$fifo"
	wait_for_line "$T_TMP/$name.fgerr" ready 10	# set up, waiting for the first line
	if ! tracer_start "$name" faults -p "$G_PID" --json "${targs[@]}"; then
		exec 7>&-
		wait "$G_PID"
		return 1
	fi
	echo >&7		# touch
	wait_for_line "$T_TMP/$name.fgerr" touched 120	# until faultgen says it is done
	tracer_stop
	echo >&7		# exit
	exec 7>&-
	wait "$G_PID"
	G_OUT=$(cat "$T_TMP/$name.fg")
}

field() { echo "$G_OUT" | tr ' ' '\n' | sed -n "s/^$1=//p"; }

# check_exact NAME [UNSEEN]: the -p row equals getrusage exactly; so do the
# kernel's own counters memlens read, and the faults the mode did not see
# (UNSEEN minor in tracepoint mode, default 0; always 0 in fentry mode)
# make up the difference
check_exact() {
	local name=$1 want_unseen=${2:-0} ok=1 minor major rows kern unseen
	rows=$(json "$TR_OUT" "len(d['rows'])")
	minor=$(json "$TR_OUT" "sum(r['minor'] for r in d['rows'] if r['pid'] == $G_PID)")
	major=$(json "$TR_OUT" "sum(r['major'] for r in d['rows'] if r['pid'] == $G_PID)")
	kern=$(json "$TR_OUT" "(d['kernel']['minor'], d['kernel']['major'])")
	unseen=$(json "$TR_OUT" "(d['not_seen']['minor'], d['not_seen']['major'])")
	[ "$(json "$TR_OUT" "d['mode']")" = fentry ] && want_unseen=0
	echo "# $name: faultgen says $G_OUT; memlens minor=$minor major=$major (rows $rows), kernel $kern, not seen $unseen"
	expect "$name" "one row, for the pid" [ "$rows" = 1 ] || ok=0
	# exact against the kernel's own counters over the same window;
	# faultgen's getrusage covers only its touch, and its handshake with
	# the test around it (a read, a write, a stack page) may fault once or
	# twice more inside memlens's window
	local kmin=${kern#(}
	kmin=${kmin%%,*}
	expect "$name" "minor + not seen == the kernel's minor count" \
		[ $((minor + $(json "$TR_OUT" "d['not_seen']['minor']"))) = "$kmin" ] || ok=0
	expect "$name" "major == getrusage majflt" [ "$major" = "$(field majflt)" ] || ok=0
	expect "$name" "the kernel's counters memlens read == getrusage (+ the handshake's faults)" \
		[ "$kmin" -ge "$(field minflt)" ] && [ "$kmin" -le $(($(field minflt) + 3)) ] &&
		[ "$kern" = "($kmin, $(field majflt))" ] || ok=0
	expect "$name" "not seen == $want_unseen minor, 0 major" [ "$unseen" = "($want_unseen, 0)" ] || ok=0
	[ $ok = 1 ]
}

test_anon_minor_matches_getrusage() {
	local n=faults_anon_256MiB_minor_equals_getrusage
	if ! gated_run anon -- anon 256; then
		notok $n "tracer did not start: $(cat "$TR_ERR")"; return
	fi
	if check_exact $n && [ "$(field minflt)" -ge 65536 ] &&
	   [ "$(json "$TR_OUT" "sum(d['minor_hist_us'])")" = "$(field minflt)" ]; then
		ok $n
	else
		notok $n "histogram total $(json "$TR_OUT" "sum(d['minor_hist_us'])")"
	fi
}

test_file_major_matches_getrusage() {
	local n=faults_file_64MiB_major_equals_getrusage f=/var/tmp/memlens-faults-test.$$.bin
	T_DIRS+=("$f")
	dd if=/dev/urandom of=$f bs=1M count=64 status=none conv=fsync
	if ! gated_run file -- file $f; then
		notok $n "tracer did not start: $(cat "$TR_ERR")"; rm -f $f; return
	fi
	rm -f $f
	if [ "$(field cached_before)" != 0 ]; then
		skip $n "the file stayed in the page cache ($(field cached_before) pages) after POSIX_FADV_DONTNEED"
		return
	fi
	if check_exact $n && [ "$(field majflt)" -gt 0 ] &&
	   [ "$(json "$TR_OUT" "sum(d['major_hist_us'])")" = "$(field majflt)" ]; then
		ok $n
	else
		notok $n "major histogram total $(json "$TR_OUT" "sum(d['major_hist_us'])")"
	fi
}

# Faults the kernel takes for a system call, charged to the caller
# (get_user_pages, no user registers): process_vm_readv of 64 MiB of a
# child's untouched memory, MADV_POPULATE_WRITE of 64 MiB of its own, and
# an O_DIRECT read of 64 MiB into untouched memory (its pages pinned).
# getrusage counts them; the fentry mode sees them (handle_mm_fault); the
# tracepoint mode cannot (no perf event) and says so: not_seen = 16384.
test_gup_faults() {
	local mode n arg f=/var/tmp/memlens-faults-odirect.$$.bin
	T_DIRS+=("$f")
	dd if=/dev/zero of=$f bs=1M count=64 status=none conv=fsync
	for mode in gup populate odirect; do
		n=faults_${mode}_64MiB_counted_or_reported_not_seen
		arg=64
		[ $mode = odirect ] && arg=$f
		if [ $mode = odirect ] && ! dd if=$f of=/dev/null bs=4096 count=1 iflag=direct status=none 2>/dev/null; then
			skip $n "/var/tmp does not take O_DIRECT"; continue
		fi
		if ! gated_run $mode -- $mode $arg; then
			notok $n "tracer did not start: $(cat "$TR_ERR")"; continue
		fi
		if [ "$(json "$TR_OUT" "d['mode']")" = tracepoint ] &&
		   [ "$(json "$TR_OUT" "d['not_seen']['paths']")" != get_user_pages ]; then
			notok $n "the paths not seen are not named: $(cat "$TR_OUT")"
		elif check_exact $n 16384 && [ "$(field pages)" = 16384 ]; then
			ok $n
		else
			notok $n "$(cat "$TR_OUT")"
		fi
	done
	n=faults_gup_text_says_not_seen
	if [ "$(json "$TR_OUT" "d['mode']")" = fentry ]; then
		skip $n "fentry mode sees these faults"
		return
	fi
	rm -f $f
	"$MEMLENS" faults -- "$WORKLOADS/faultgen" gup 64 >"$T_TMP/gup.txt" 2>/dev/null
	# the note is wrapped to 80 columns: its lines joined again
	if sed -z 's/\n  / /g' "$T_TMP/gup.txt" | grep -q '^not seen in tracepoint mode: 16384 minor, 0 major: faults taken inside the kernel by get_user_pages()'; then
		ok $n
	else
		notok $n "$(cat "$T_TMP/gup.txt")"
	fi
}

# four threads: alive from before tracing to after it, alive before and
# exiting during it, and two started and exited during it: the kernel's
# counters memlens adds up (each thread's at its exit, or at the end) match
# getrusage exactly, and so do the counts
test_threads() {
	local n=faults_threads_started_exited_alive_exact
	if ! gated_run threads -- threads 64; then
		notok $n "tracer did not start: $(cat "$TR_ERR")"; return
	fi
	if check_exact $n && [ "$(field minflt)" -ge 16384 ]; then
		ok $n
	else
		notok $n "$(cat "$TR_OUT")"
	fi
}

test_mode_reported_and_fallback() {
	local n=faults_tracepoint_fallback_forced_is_exact
	if ! gated_run forced --mode tracepoint -- anon 64; then
		notok $n "tracer did not start: $(cat "$TR_ERR")"; return
	fi
	if grep -q 'mode tracepoint' "$TR_ERR" && check_exact $n &&
	   [ "$(json "$TR_OUT" "d['mode']")" = tracepoint ] &&
	   [ "$(json "$TR_OUT" "d['rows'][0]['retried']")" = None ]; then
		ok $n
	else
		notok $n "stderr: $(cat "$TR_ERR")"
	fi
	n=faults_auto_mode_says_which
	"$MEMLENS" faults -v -d 1.5 --json >"$T_TMP/auto.json" 2>"$T_TMP/auto.err" &
	local mp=$!
	# something to count once the tracer is attached (it says so on stderr)
	wait_for_line "$T_TMP/auto.err" 'tracing' 10
	"$WORKLOADS/faultgen" anon 16 >/dev/null
	wait $mp
	if grep -Eq 'mode (fentry|tracepoint)' "$T_TMP/auto.err" &&
	   [ "$(json "$T_TMP/auto.json" "all(r['pid'] is None and sorted(r) == ['comm','major','minor','pid','retried'] for r in d['rows']) and len(d['rows']) > 0")" = True ]; then
		ok $n
		echo "# $(grep mode "$T_TMP/auto.err")"
	else
		notok $n "$(cat "$T_TMP/auto.err")"
	fi
}

test_fentry_mode() {
	local n=faults_fentry_mode_is_exact rc
	"$MEMLENS" faults --mode fentry -d 0.1 >/dev/null 2>"$T_TMP/fentry.err"
	rc=$?
	if [ $rc = 5 ] || [ $rc = 4 ]; then
		skip $n "this kernel refuses fentry/fexit (exit $rc: $(cat "$T_TMP/fentry.err")); the tracepoint fallback is tested instead"
		return
	fi
	if ! gated_run fentry --mode fentry -- anon 64; then
		notok $n "tracer did not start: $(cat "$TR_ERR")"; return
	fi
	if check_exact $n && [ "$(json "$TR_OUT" "d['mode']")" = fentry ]; then
		ok $n
	else
		notok $n
	fi
}

# -- CMD: counted from the exec. faultgen's own getrusage() at its very end
# (its totals since its fork) = the faults memlens saw + those the mode
# could not see + those before tracing began (from the fork to the end of
# execve, which memlens reads from the kernel at the exec stop), exactly.
test_spawned_command() {
	local n out=$T_TMP/spawn.json mode got want
	for mode in "anon 256" "file FILE" "gup 64" "threads 64"; do
		n=faults_spawned_${mode%% *}_exact_from_the_exec
		if [ "$mode" = "file FILE" ]; then
			mode="file /var/tmp/memlens-faults-spawn.$$.bin"
			T_DIRS+=("${mode#file }")
			dd if=/dev/urandom of="${mode#file }" bs=1M count=16 status=none conv=fsync
		fi
		# shellcheck disable=SC2086
		"$MEMLENS" faults --json -- "$WORKLOADS/faultgen" $mode >"$out" 2>"$T_TMP/spawn.err"
		want=$(grep '^total_minflt=' "$out" | sed 's/total_minflt=\([0-9]*\) total_majflt=\([0-9]*\)/(\1, \2)/')
		got=$(json "$out" "(sum(r['minor'] for r in d['rows']) + d['not_seen']['minor'] + d['before_tracing']['minor'], sum(r['major'] for r in d['rows']) + d['not_seen']['major'] + d['before_tracing']['major'])")
		echo "# $n: faultgen's getrusage at its end $want; memlens seen + not seen + before tracing $got ($(json "$out" "(d['mode'], [(r['minor'], r['major']) for r in d['rows']], d['kernel'], d['not_seen'], d['before_tracing'])"))"
		if [ -n "$want" ] && [ "$got" = "$want" ] &&
		   [ "$(json "$out" "len(d['rows']) == 1 and d['rows'][0]['pid'] is not None and d['before_tracing']['minor'] > 0 and (d['kernel']['minor'], d['kernel']['major']) == (d['rows'][0]['minor'] + d['not_seen']['minor'], d['rows'][0]['major'] + d['not_seen']['major'])")" = True ]; then
			ok $n
		else
			notok $n "$(cat "$out" "$T_TMP/spawn.err")"
		fi
	done
}

# memlens in its own PID namespace (a container, a pod): the target's pid is
# matched and reported as memlens sees it (2: the first process memlens,
# pid 1 there, starts), not as the kernel's global pid
test_pid_namespace() {
	local n=faults_in_pid_namespace out=$T_TMP/ns.json fg minor want
	pidns_usable $n || return
	unshare --pid --fork --mount-proc "$MEMLENS" faults --json -- \
		"$WORKLOADS/faultgen" anon 32 >"$out" 2>"$T_TMP/ns.err"
	fg=$(grep '^pages=' "$out")
	want=$(echo "$fg" | tr ' ' '\n' | sed -n 's/^minflt=//p')
	minor=$(json "$out" "sum(r['minor'] for r in d['rows'] if r['pid'] == 2 and r['comm'] == 'faultgen')")
	echo "# $n: $fg $(grep '^total_minflt=' "$out"); memlens rows $(json "$out" "[(r['comm'], r['pid'], r['minor']) for r in d['rows']]"), before tracing $(json "$out" "d['before_tracing']")"
	# the kernel's counters are read per thread as memlens sees them (pid 2)
	if [ -n "$want" ] && [ "$minor" -ge "$want" ] && [ "$minor" -lt $((want + 4096)) ] &&
	   [ "$(json "$out" "len(d['rows'])")" = 1 ] &&
	   [ "$(json "$out" "d['kernel']['minor'] + d['before_tracing']['minor']")" = "$(grep '^total_minflt=' "$out" | sed 's/total_minflt=\([0-9]*\) .*/\1/')" ]; then
		ok $n
	else
		notok $n "$(cat "$T_TMP/ns.err")"
	fi
}

# -o FILE: the report goes to FILE, the command's own output stays on stdout
test_output_file() {
	local n=faults_output_file_keeps_cmd_stdout out=$T_TMP/o.json rc
	"$MEMLENS" faults --json -o "$out" -- "$WORKLOADS/faultgen" anon 8 \
		>"$T_TMP/o.stdout" 2>"$T_TMP/o.err"
	rc=$?
	if [ $rc = 0 ] && [ "$(wc -l <"$out")" = 1 ] && [ "$(json "$out" "d['type']")" = faults ] &&
	   grep -q '^pages=' "$T_TMP/o.stdout" && ! grep -q '"type"' "$T_TMP/o.stdout"; then
		ok $n
	else
		notok $n "rc=$rc stdout: $(cat "$T_TMP/o.stdout") file: $(cat "$out") $(cat "$T_TMP/o.err")"
	fi
	n=faults_output_unwritable_exit_1
	"$MEMLENS" faults -d 0.1 -o /nonexistent/dir/x >/dev/null 2>"$T_TMP/o2.err"
	rc=$?
	if [ $rc = 1 ] && grep -q 'cannot create the output file /nonexistent/dir/x' "$T_TMP/o2.err"; then
		ok $n
	else
		notok $n "rc=$rc $(cat "$T_TMP/o2.err")"
	fi
}

test_errors() {
	local n=faults_no_such_pid_exit_3 rc
	"$MEMLENS" faults -p 4194303 -d 0.1 >/dev/null 2>"$T_TMP/e1"
	rc=$?
	if [ $rc = 3 ] && grep -q 'no process' "$T_TMP/e1"; then ok $n; else notok $n "rc=$rc $(cat "$T_TMP/e1")"; fi
	n=faults_not_root_exit_4
	setpriv --reuid=65534 --regid=65534 --clear-groups "$MEMLENS" faults -d 0.1 >/dev/null 2>"$T_TMP/e2"
	rc=$?
	if [ $rc = 4 ] && grep -q 'root' "$T_TMP/e2"; then ok $n; else notok $n "rc=$rc $(cat "$T_TMP/e2")"; fi
	n=faults_bad_usage_exit_2
	"$MEMLENS" faults -d abc >/dev/null 2>&1
	rc=$?
	if [ $rc = 2 ]; then ok $n; else notok $n "rc=$rc"; fi
	n=faults_target_exits_midrun
	"$WORKLOADS/faultgen" anon 8 >/dev/null &
	local p=$!
	"$MEMLENS" faults -p $p --json >"$T_TMP/e4" 2>"$T_TMP/e4.err"
	rc=$?
	wait $p 2>/dev/null
	if { [ $rc = 0 ] && json "$T_TMP/e4" "d['type']" | grep -q faults; } || [ $rc = 3 ]; then
		ok $n
	else
		notok $n "rc=$rc $(cat "$T_TMP/e4.err")"
	fi
}

# -i: one object per interval, the last one marked; the intervals add up
# to the run's totals, rows and histograms alike
test_interval() {
	local n=faults_interval_blocks_add_up out=$T_TMP/iv.json
	"$MEMLENS" faults --json -i 50 -- "$WORKLOADS/faultgen" anon 128 >"$out" 2>"$T_TMP/iv.err"
	echo "# $n: $(intervals "$out" faults "(len(iv), [sum(r['minor'] for r in x['rows']) for x in iv][:8])")"
	if [ "$(intervals "$out" faults "len(iv) >= 2 and iv[-1]['last'] and not any(x['last'] for x in iv[:-1]) and sum(r['minor'] for x in iv for r in x['rows'] if r['comm'] == 'faultgen') == sum(r['minor'] for r in d['rows'] if r['comm'] == 'faultgen') > 32768 and sum(sum(x['minor_hist_us']) for x in iv) == sum(d['minor_hist_us'])")" = True ]; then
		ok $n
	else
		notok $n "$(cat "$out" "$T_TMP/iv.err" | head -c 3000)"
	fi
	n=faults_interval_text_blocks
	"$MEMLENS" faults -i 100 -- "$WORKLOADS/faultgen" anon 64 >"$T_TMP/iv.txt" 2>"$T_TMP/ivt.err"
	rc=$?
	# the last interval may have seen none of the faults (faultgen took
	# them all before it): "(end): no page faults" then
	if [ $rc = 0 ] && grep -Eq '^--- .* s \(end\): (page faults in this interval|no page faults)$' "$T_TMP/iv.txt" &&
	   [ "$(grep -c '^COMM' "$T_TMP/iv.txt")" -ge 2 ]; then
		ok $n
	else
		notok $n "exit $rc; stdout: $(cat "$T_TMP/iv.txt")" "stderr: $(cat "$T_TMP/ivt.err")"
	fi
	n=faults_bad_interval_exit_2
	"$MEMLENS" faults -i 0 -d 1 >/dev/null 2>"$T_TMP/iv0.err"
	[ $? = 2 ] && grep -q -- '--interval MS must be' "$T_TMP/iv0.err" && ok $n || notok $n "$(cat "$T_TMP/iv0.err")"
}

test_interval
test_anon_minor_matches_getrusage
test_file_major_matches_getrusage
test_gup_faults
test_threads
test_mode_reported_and_fallback
test_fentry_mode
test_spawned_command
test_pid_namespace
test_output_file
test_errors
t_done
