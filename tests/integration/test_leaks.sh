#!/bin/bash
# memlens leaks: a program leaking exactly K blocks of 4096 bytes.
. "$(dirname "$0")/bpf_common.bash"

K=1000

test_spawned_exact() {
	local n=leaks_spawned_exactly_K_blocks_of_4096 out=$T_TMP/spawn.json
	"$MEMLENS" leaks --json -v -- "$WORKLOADS/leaky" $K >"$out" 2>"$T_TMP/spawn.err"
	echo "# $n: $(json "$out" "{k: d[k] for k in ('mallocs','frees','untracked_frees','outstanding')}") by_size $(json "$out" "d['by_size'][:3]")"
	# leaky: per round 9 allocations (malloc x3 incl. the leak, calloc,
	# realloc(NULL), realloc grow, aligned_alloc, memalign, posix_memalign), 8 frees
	if [ "$(json "$out" "d['by_size'][0] == {'size': 4096, 'count': $K, 'bytes': 4096 * $K}")" = True ] &&
	   [ "$(json "$out" "(d['mallocs'], d['frees'], d['untracked_frees'], d['outstanding'])")" = "($((9 * K)), $((8 * K)), 0, $K)" ]; then
		ok $n
	else
		notok $n "$(cat "$out" "$T_TMP/spawn.err")"
	fi
	n=leaks_by_stack_points_at_main
	# every leak is accounted to a stack group; the kernel may fail to walk
	# the odd user stack (bpf_get_stackid), which lands in the group with
	# an empty stack, so the main+ group must hold at least 99 % of them
	if [ "$(json "$out" "sum(s['count'] for s in d['by_stack'] if s['bytes'] % 4096 == 0 and s['bytes'] // max(s['count'], 1) == 4096) == $K and d['by_stack'][0]['count'] >= $K * 99 // 100 and d['by_stack'][0]['stack'][0].startswith('main+')")" = True ]; then
		ok $n
	else
		notok $n "$(json "$out" "d['by_stack'][:2]")"
	fi
	n=leaks_free_probe_on_emulated_instruction
	if [ "$(uname -m)" != x86_64 ]; then
		skip $n "x86-64 only"
	elif grep -q 'uprobe free at .*emulated push' "$T_TMP/spawn.err"; then
		ok $n	# and the counts above, with that attach point, are exact
	elif grep -q 'uprobe free at' "$T_TMP/spawn.err"; then
		skip $n "this libc's free() does not start with 'test %rdi,%rdi; je': probed at its entry"
	else
		notok $n "$(cat "$T_TMP/spawn.err")"
	fi
}

test_pid_untracked_frees() {
	local n=leaks_pid_counts_untracked_frees fifo=$T_TMP/leaky.fifo p
	mkfifo "$fifo"
	"$WORKLOADS/leaky" -w 500 <"$fifo" >"$T_TMP/leaky.out" 2>"$T_TMP/leaky.err" &
	p=$!
	T_BG+=("$p")
	exec 7>"$fifo"
	# the shell opened the fifo before exec'ing leaky: wait until leaky has
	# made its first allocations (and so mapped libc)
	wait_for_line "$T_TMP/leaky.err" waiting 10
	if ! tracer_start pid leaks -p $p --json; then
		exec 7>&-; notok $n "$(cat "$TR_ERR")"; return
	fi
	echo >&7	# frees its 500 earlier blocks, leaks 500 new ones
	wait_for_line "$T_TMP/leaky.err" done 60	# until it waits again
	echo >&7	# exits: memlens stops by itself
	exec 7>&-
	wait $p
	wait "$TR_PID"
	TR_RC=$?
	echo "# $n: $(json "$TR_OUT" "{k: d[k] for k in ('mallocs','frees','untracked_frees','outstanding')}")"
	if [ $TR_RC = 0 ] &&
	   [ "$(json "$TR_OUT" "(d['untracked_frees'], d['mallocs'], d['frees'])")" = "(500, 4500, 4000)" ] &&
	   [ "$(json "$TR_OUT" "[s for s in d['by_size'] if s['size'] == 4096][0]['count']")" = 500 ] &&
	   grep -q 'exited' "$TR_ERR"; then
		ok $n
	else
		notok $n "rc=$TR_RC $(cat "$TR_OUT" "$TR_ERR")"
	fi
}

# A program whose malloc is jemalloc's (preloaded, as services do): memlens
# probes jemalloc, not libc, whose malloc is never called there; the counts
# stay exact. Both ways of finding it: -- CMD and -p PID.
test_jemalloc() {
	local n=leaks_jemalloc_preloaded je out=$T_TMP/je.json k=300 p
	je=$(ls /usr/lib/*/libjemalloc.so.2 /usr/lib/libjemalloc.so.2 2>/dev/null | head -n 1)
	if [ -z "$je" ]; then
		skip $n "libjemalloc.so.2 is not installed (apt-get install libjemalloc2)"
		skip leaks_jemalloc_pid "libjemalloc.so.2 is not installed (apt-get install libjemalloc2)"
		return
	fi
	# -- CMD inherits memlens's environment: memlens runs with jemalloc too,
	# which an ASan build of memlens refuses (its runtime must come first)
	if ! LD_PRELOAD=$je "$MEMLENS" --version >/dev/null 2>&1; then
		skip $n "this memlens cannot run with LD_PRELOAD=$je (an ASan build); the -p case below runs"
	else
	LD_PRELOAD=$je "$MEMLENS" leaks --json -v -- "$WORKLOADS/leaky" $k >"$out" 2>"$T_TMP/je.err"
	# jemalloc's libstdc++ adds its own start-up allocation or two, never of 4096 bytes
	if [ "$(json "$out" "(d['allocator'].endswith('/libjemalloc.so.2'), [s for s in d['by_size'] if s['size'] == 4096], d['frees'], d['untracked_frees'], $((9 * k)) <= d['mallocs'] < $((9 * k + 16)))")" = "(True, [{'size': 4096, 'count': $k, 'bytes': $((4096 * k))}], $((8 * k)), 0, True)" ] &&
	   grep -q "in place of libc's malloc" "$T_TMP/je.err"; then
		ok $n
	else
		notok $n "$(cat "$out" "$T_TMP/je.err")"
	fi
	fi
	n=leaks_jemalloc_pid
	mkfifo "$T_TMP/je.fifo"
	LD_PRELOAD=$je "$WORKLOADS/leaky" -w 200 <"$T_TMP/je.fifo" >/dev/null 2>"$T_TMP/je-p.err" &
	p=$!
	T_BG+=("$p")
	exec 7>"$T_TMP/je.fifo"
	wait_for_line "$T_TMP/je-p.err" waiting 10
	if ! tracer_start jep leaks -p $p --json; then
		exec 7>&-; notok $n "$(cat "$TR_ERR")"; return
	fi
	echo >&7	# frees its 200 earlier blocks, leaks 200 new ones
	wait_for_line "$T_TMP/je-p.err" done 60
	echo >&7
	exec 7>&-
	wait $p
	wait "$TR_PID"
	if [ "$(json "$TR_OUT" "(d['allocator'].endswith('/libjemalloc.so.2'), d['untracked_frees'], d['mallocs'], d['frees'], [s['count'] for s in d['by_size'] if s['size'] == 4096])")" = "(True, 200, 1800, 1600, [200])" ]; then
		ok $n
	else
		notok $n "$(cat "$TR_OUT" "$TR_ERR")"
	fi
}

# memlens in its own PID namespace: the uprobes' pid filter matches the
# target as memlens sees it (pid 2 there), and the counts stay exact
test_pid_namespace() {
	local n=leaks_in_pid_namespace out=$T_TMP/ns.json k=300
	pidns_usable $n || return
	unshare --pid --fork --mount-proc "$MEMLENS" leaks --json -- "$WORKLOADS/leaky" $k \
		>"$out" 2>"$T_TMP/ns.err"
	if [ "$(json "$out" "(d['pid'], d['mallocs'], d['frees'], d['untracked_frees'], d['outstanding'])")" = "(2, $((9 * k)), $((8 * k)), 0, $k)" ]; then
		ok $n
	else
		notok $n "$(cat "$out" "$T_TMP/ns.err")"
	fi
}

test_errors() {
	local n=leaks_static_binary_clear_error rc
	"$MEMLENS" leaks -- /sbin/ldconfig -p >/dev/null 2>"$T_TMP/st.err"
	rc=$?
	if ! file -L /sbin/ldconfig 2>/dev/null | grep -q 'static'; then
		skip $n "no statically linked program here (/sbin/ldconfig is dynamic)"
	elif [ $rc != 0 ] && grep -q 'statically linked' "$T_TMP/st.err"; then
		ok $n
	else
		notok $n "rc=$rc $(cat "$T_TMP/st.err")"
	fi
	n=leaks_no_such_pid_exit_3
	"$MEMLENS" leaks -p 4194303 >/dev/null 2>"$T_TMP/e1"
	rc=$?
	[ $rc = 3 ] && grep -q 'no process' "$T_TMP/e1" && ok $n || notok $n "rc=$rc $(cat "$T_TMP/e1")"
	n=leaks_needs_a_target_exit_2
	"$MEMLENS" leaks -d 1 >/dev/null 2>&1
	[ $? = 2 ] && ok $n || notok $n
	n=leaks_not_root_exit_4
	setpriv --reuid=65534 --regid=65534 --clear-groups "$MEMLENS" leaks -- /bin/true >/dev/null 2>"$T_TMP/nr"
	rc=$?
	[ $rc = 4 ] && grep -q root "$T_TMP/nr" && ok $n || notok $n "rc=$rc $(cat "$T_TMP/nr")"
}

# leakmix: 8 threads mixing every entry point, leaking N blocks of sizes
# of their own (3000 + 8 * fn, fn = leak number % 9). Checked on every run:
# exactly N outstanding blocks of those sizes (each size its exact count),
# mallocs - frees - missed_frees = outstanding, no missed frees, no call
# record left stale. From the start (-- CMD): no untracked free at all (the
# frees glibc's per-thread caches make at thread exit are exit_frees).
# Attached mid-run (-p, while every thread is inside the allocator): the
# untracked frees are the blocks the 8 threads held at the instant tracing
# began (a churn round holds at most 10 each), plus those whose malloc was
# under way then (unpaired_returns).
# make test: LM_RUNS runs of each (3), the threads churning LM_ROUNDS rounds
# (100) after their leaks; make test-long (MEMLENS_TEST_LONG=1): 20 runs of
# 500 rounds. Each with the two links of uprobe_multi, and LM_PERF_RUNS
# (1; long: 5) with one perf-event uprobe per probe (kernels before 6.6).
LM_N=900
if [ -n "${MEMLENS_TEST_LONG:-}" ]; then
	LM_RUNS=${LM_RUNS:-20} LM_ROUNDS=${LM_ROUNDS:-500} LM_PERF_RUNS=${LM_PERF_RUNS:-5}
else
	LM_RUNS=${LM_RUNS:-3} LM_ROUNDS=${LM_ROUNDS:-100} LM_PERF_RUNS=${LM_PERF_RUNS:-1}
fi
lm_check() {	# lm_check FILE MODE PROBES: prints "good" or what is wrong
	python3 - "$1" "$2" "$LM_N" "$3" <<'PY'
import json, sys
path, mode, n, probes = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
try:
    d = json.loads([l for l in open(path).read().splitlines() if l.strip()][-1])
except Exception as e:
    print("no report:", e); sys.exit()
want = {3000 + 8 * f: n // 9 + (f < n % 9) for f in range(9)}
got = {s['size']: s['count'] for s in d['by_size'] if s['size'] in want}
bad = []
if got != want: bad.append("leak sizes %s, want %s" % (got, want))
if d['mallocs'] - d['frees'] - d['missed_frees'] != d['outstanding']: bad.append("identity")
if d['missed_frees'] or d['stale_calls'] or d['lost'] or d['table_unread']: bad.append("missed/stale/lost")
if mode == 'spawn' and (d['untracked_frees'] or d['unpaired_returns'] or d['exit_frees'] == 0): bad.append("untracked/exit")
if mode == 'pid' and d['untracked_frees'] > 8 * 10 + d['unpaired_returns']: bad.append("untracked beyond the blocks live at the start")
if mode == 'pid' and d['outstanding'] != n: bad.append("outstanding")
if d['mode'] != probes and not (probes == 'auto' and d['mode'] in ('uprobe_multi', 'uprobe')):
    bad.append("mode %s, want %s" % (d['mode'], probes))
k = ('mallocs', 'frees', 'untracked_frees', 'exit_frees', 'unpaired_returns', 'outstanding')
print("good" if not bad else "; ".join(bad) + " " + str({x: d[x] for x in k}))
PY
}

# lm_spawned NAME RUNS PROBES [LEAKS-ARGS]
lm_spawned() {
	local n=$1 runs=$2 probes=$3 out=$T_TMP/lm.json bad=0 r res
	shift 3
	for r in $(seq 1 "$runs"); do
		"$MEMLENS" leaks --json -T 0 "$@" -- "$WORKLOADS/leakmix" $LM_N "$LM_ROUNDS" \
			>"$out" 2>"$T_TMP/lm.err"
		res=$(lm_check "$out" spawn "$probes")
		[ "$res" = good ] || { bad=$((bad + 1)); echo "#   run $r: $res"; }
	done
	echo "# $n: $((runs - bad)) of $runs runs exact; last: $(json "$out" "{k: d[k] for k in ('mode','mallocs','frees','untracked_frees','exit_frees','outstanding')}")"
	[ $bad = 0 ] && ok $n || notok $n "$bad of $runs runs not exact"
}

# lm_pid NAME RUNS PROBES [LEAKS-ARGS]: attached while the 8 threads churn
# (niced, so that memlens attaches without waiting for a CPU; they are
# still preempted in the middle of their calls)
lm_pid() {
	local n=$1 runs=$2 probes=$3 bad=0 r res p
	shift 3
	for r in $(seq 1 "$runs"); do
		rm -f "$T_TMP/lm.fifo"
		mkfifo "$T_TMP/lm.fifo"
		nice -n 19 "$WORKLOADS/leakmix" -w $LM_N "$LM_ROUNDS" <"$T_TMP/lm.fifo" >/dev/null \
			2>"$T_TMP/lmp.err" &
		p=$!
		T_BG+=("$p")
		exec 7>"$T_TMP/lm.fifo"
		wait_for_line "$T_TMP/lmp.err" churning 10
		if ! tracer_start lmp leaks -p $p --json -T 0 "$@"; then
			exec 7>&-; kill $p; bad=$((bad + 1)); echo "#   run $r: $(cat "$TR_ERR")"; continue
		fi
		echo >&7	# the leaks begin
		wait_for_line "$T_TMP/lmp.err" done 30
		echo >&7	# exits: memlens stops by itself
		exec 7>&-
		wait $p
		wait "$TR_PID"
		res=$(lm_check "$TR_OUT" pid "$probes")
		[ "$res" = good ] || { bad=$((bad + 1)); echo "#   run $r: $res"; }
	done
	echo "# $n: $((runs - bad)) of $runs runs exact; last: $(json "$TR_OUT" "{k: d[k] for k in ('mode','mallocs','frees','untracked_frees','exit_frees','unpaired_returns','outstanding')}")"
	[ $bad = 0 ] && ok $n || notok $n "$bad of $runs runs not exact"
}

test_leakmix() {
	lm_spawned leakmix_spawned_exact_in_all_runs "$LM_RUNS" auto
	lm_pid leakmix_pid_mid_run_exact_in_all_runs "$LM_RUNS" auto
	lm_spawned leakmix_spawned_perf_uprobes_exact "$LM_PERF_RUNS" uprobe --perf-uprobes
	lm_pid leakmix_pid_perf_uprobes_exact "$LM_PERF_RUNS" uprobe --perf-uprobes
}

# more outstanding blocks than the table holds (--max-blocks 20000; the
# default, 1000000, fills the same way, only slower): a report all the
# same, saying the table was full and how many allocations it lost
test_table_full() {
	local n=leaks_table_full_reported out=$T_TMP/full.json
	"$MEMLENS" leaks --json --no-stacks --max-blocks 20000 -- "$WORKLOADS/leakmix" -f 24000 \
		>"$out" 2>"$T_TMP/full.err"
	echo "# $n: $(json "$out" "{k: d[k] for k in ('mallocs','lost','table_full','outstanding')}")"
	if [ "$(json "$out" "(d['mallocs'], d['lost'], d['table_full'], d['outstanding'], d['by_size'][0]['count'])")" = "(20000, 4000, True, 20000, 20000)" ]; then
		ok $n
	else
		notok $n "$(cat "$out" "$T_TMP/full.err")"
	fi
}

# Call stacks are kept by content: leakstacks N makes N blocks from N
# distinct stacks and frees nothing. With the default table every one of
# them has its stack (a 16384-bucket stack-trace map lost ~470 of 4000 to
# bucket collisions, silently). With --max-stacks S < N the table fills:
# exactly N - S allocations have no stack, counted by reason, and exactly
# those make the [stack not recorded] group, in the JSON and in the text.
test_stacks_lost() {
	local n=leaks_distinct_stacks_all_kept out=$T_TMP/st.json
	"$MEMLENS" leaks --json --top 0 -- "$WORKLOADS/leakstacks" 4000 >"$out" 2>"$T_TMP/st.err"
	echo "# $n: $(json "$out" "{k: d[k] for k in ('mallocs','outstanding','stacks_kept','stacks_lost','outstanding_no_stack')}")"
	if [ "$(json "$out" "(d['mallocs'], d['outstanding'], d['stacks_kept'], d['stacks_lost'], d['outstanding_no_stack'], len(d['by_stack']), all(s['count'] == 1 and s['stack'][0].startswith('leaf+') for s in d['by_stack']))")" = "(4000, 4000, 4000, 0, 0, 4000, True)" ]; then
		ok $n
	else
		notok $n "$(head -c 2000 "$out") $(cat "$T_TMP/st.err")"
	fi
	n=leaks_stack_table_full_counted_exactly
	out=$T_TMP/stf.json
	"$MEMLENS" leaks --json --top 0 --max-stacks 500 -- "$WORKLOADS/leakstacks" 2000 \
		>"$out" 2>"$T_TMP/stf.err"
	echo "# $n: $(json "$out" "{k: d[k] for k in ('mallocs','stacks_kept','stacks_lost','stacks_lost_by_reason','outstanding_no_stack','outstanding_no_stack_bytes')}")"
	if [ "$(json "$out" "(d['mallocs'], d['outstanding'], d['max_stacks'], d['stacks_kept'], d['stacks_lost'], d['stacks_lost_by_reason'], d['outstanding_no_stack'], d['outstanding_no_stack_bytes'], d['outstanding_no_stack_by_reason']['table_full'], [(s['count'], s['bytes']) for s in d['by_stack'] if not s['stack']], len([s for s in d['by_stack'] if s['stack'] and s['count'] == 1]))")" = "(2000, 2000, 500, 500, 1500, {'table_full': 1500, 'not_walked': 0, 'hash_collision': 0, 'dropped': 0}, 1500, 36000, {'count': 1500, 'bytes': 36000}, [(1500, 36000)], 500)" ]; then
		ok $n
	else
		notok $n "$(head -c 2000 "$out") $(cat "$T_TMP/stf.err")"
	fi
	n=leaks_stack_table_full_in_text
	"$MEMLENS" leaks --top 0 --max-stacks 500 -- "$WORKLOADS/leakstacks" 2000 >"$T_TMP/stf.txt" 2>&1
	if tr '\n' ' ' <"$T_TMP/stf.txt" | tr -s ' ' |
		grep -q 'warning: 1500 allocations recorded without their call stack (1500 because the table of 500 stacks was full (--max-stacks makes it larger)); 1500 of them outstanding, 35K, shown as \[stack not recorded\]' &&
	   [ "$(grep -B1 -x '    \[stack not recorded\]' "$T_TMP/stf.txt" | head -n 1)" = "1500 blocks, 35K outstanding from:" ] &&
	   [ "$(grep -c 'leaf+' "$T_TMP/stf.txt")" = 500 ]; then
		ok $n
	else
		notok $n "$(head -c 2000 "$T_TMP/stf.txt")"
	fi
}

# A real program: Debian's git, git log -p --stat over a repository of
# GIT_COMMITS (300) commits made here (about 2400 distinct call stacks; the
# 16384-bucket stack-trace map lost the stacks of a dozen or more of its
# outstanding blocks). Every outstanding block has its stack, and the
# blocks and bytes outstanding at exit are valgrind's: its "in use at
# exit", which is the sum of definitely, indirectly, possibly lost and
# still reachable (memlens leaks reports every block not freed, reachable
# or not). valgrind adds variables to its client's environment and git
# copies its environment into an array it allocates: git runs under
# memlens with the same environment, valgrind's LD_PRELOAD renamed. The
# 6.12 guest, where valgrind runs emulated, takes 60 commits.
GIT_COMMITS=${GIT_COMMITS:-300}
test_git_vs_valgrind() {
	local n=leaks_git_log_stacks_and_bytes_as_valgrind repo=$T_TMP/repo out=$T_TMP/git.json res
	local -a base venv
	if ! command -v git >/dev/null || ! command -v valgrind >/dev/null; then
		skip $n "needs git and valgrind (apt-get install git valgrind)"
		return
	fi
	git init -q "$repo" && python3 - "$GIT_COMMITS" <<'PY' | git -C "$repo" fast-import --quiet && git -C "$repo" symbolic-ref HEAD refs/heads/main
import sys
files, out = {}, []
for c in range(1, int(sys.argv[1]) + 1):
    touched = sorted({c % 20, c * 7 % 20, c * 13 % 20})
    out.append('commit refs/heads/main\nmark :%d\ncommitter t <t@example.org> %d +0000\ndata <<EOT\ncommit %d\nEOT\n'
               % (c, 1700000000 + 60 * c, c))
    if c > 1:
        out.append('from :%d\n' % (c - 1))
    for f in touched:
        files[f] = files.get(f, '') + 'line of commit %d\n' % c
        out.append('M 644 inline f%02d.txt\ndata %d\n%s\n' % (f, len(files[f]), files[f]))
sys.stdout.write(''.join(out))
PY
	if [ $? != 0 ]; then
		notok $n "could not make the repository"
		return
	fi
	base=(PATH=/usr/bin:/bin HOME=$T_TMP LC_ALL=C GIT_CONFIG_NOSYSTEM=1)
	[ -n "${ASAN_OPTIONS:-}" ] && base+=("ASAN_OPTIONS=$ASAN_OPTIONS")
	[ -n "${UBSAN_OPTIONS:-}" ] && base+=("UBSAN_OPTIONS=$UBSAN_OPTIONS")
	mapfile -d '' venv < <(cd "$repo" && env -i "${base[@]}" valgrind -q /usr/bin/env -0 |
		sed -z 's/^LD_PRELOAD=/MEMLENS_TEST_UNUSED_PRELOAD=/')
	if [ "${#venv[@]}" -lt "${#base[@]}" ]; then
		notok $n "valgrind's environment came back empty: git would run with another one"
		return
	fi
	(cd "$repo" && env -i "${base[@]}" valgrind --leak-check=full --show-leak-kinds=all \
		--run-libc-freeres=no --run-cxx-freeres=no git --no-pager log -p --stat \
		>/dev/null 2>"$T_TMP/vg.err")
	(cd "$repo" && env -i "${venv[@]}" "$MEMLENS" leaks --json --top 0 -o "$out" -- \
		git --no-pager log -p --stat >/dev/null 2>"$T_TMP/git.err")
	res=$(python3 - "$out" "$T_TMP/vg.err" "$GIT_COMMITS" <<'PY'
import json, re, sys
d = json.loads([l for l in open(sys.argv[1]).read().splitlines() if l.startswith('{')][-1])
vg = open(sys.argv[2]).read().replace(',', '')
use = re.search(r'in use at exit: (\d+) bytes in (\d+) blocks', vg)
kinds = [re.search(r'%s: (\d+) bytes in (\d+) blocks' % k, vg)
         for k in ('definitely lost', 'indirectly lost', 'possibly lost', 'still reachable')]
if not use or not all(kinds):
    print('no valgrind summary'); sys.exit()
vb, vn = int(use.group(1)), int(use.group(2))
sb, sn = sum(int(k.group(1)) for k in kinds), sum(int(k.group(2)) for k in kinds)
mine = (d['outstanding_bytes'], d['outstanding'])
good = (mine == (vb, vn) == (sb, sn) and d['stacks_lost'] == 0 and d['outstanding_no_stack'] == 0
        and all(s['stack'] for s in d['by_stack']) and d['stacks_kept'] > 6 * int(sys.argv[3]))
print('memlens %d bytes in %d blocks, %d stacks kept, %d lost, %d outstanding without; '
      'valgrind in use at exit %d bytes in %d blocks, the four kinds %d in %d: %s'
      % (mine + (d['stacks_kept'], d['stacks_lost'], d['outstanding_no_stack'], vb, vn, sb, sn,
                 'good' if good else 'bad')))
PY
)
	echo "# $n: $res"
	[ "${res##*: }" = good ] && ok $n || notok $n "$(head -c 1500 "$out") $(cat "$T_TMP/git.err") $(tail -n 20 "$T_TMP/vg.err")"
}

# -i: live blocks while tracing, the last one marked; their interval
# counts add up to the final report's (read once the probes are detached)
test_interval() {
	local n=leaks_interval_blocks_add_up out=$T_TMP/iv.json
	"$MEMLENS" leaks --json -i 50 -- "$WORKLOADS/leakmix" $LM_N "$LM_ROUNDS" >"$out" 2>"$T_TMP/iv.err"
	echo "# $n: $(intervals "$out" leaks "(len(iv), [x['outstanding'] for x in iv][-3:], d['outstanding'])")"
	if [ "$(intervals "$out" leaks "len(iv) >= 2 and iv[-1]['last'] and sum(x['interval_mallocs'] for x in iv) == d['mallocs'] and sum(x['interval_frees'] for x in iv) == d['frees'] and d['type'] == 'leaks'")" = True ]; then
		ok $n
	else
		notok $n "$(tail -c 3000 "$out") $(cat "$T_TMP/iv.err")"
	fi
}

# --folded FILE: one "outer;...;inner BYTES" line per stack; the values add
# up to outstanding_bytes, and the leak's stack has main in it
test_folded() {
	local n=leaks_folded_stacks_sum_to_outstanding out=$T_TMP/fold.json
	"$MEMLENS" leaks --json --folded "$T_TMP/fold.txt" -- "$WORKLOADS/leaky" $K >"$out" 2>"$T_TMP/fold.err"
	echo "# $n: $(head -c 300 "$T_TMP/fold.txt")"
	if [ "$(python3 - "$T_TMP/fold.txt" "$(json "$out" "d['outstanding_bytes']")" <<'PY'
import re, sys
ls = open(sys.argv[1]).read().splitlines()
ok = all(re.fullmatch(r'[^ ;][^;]*(;[^;]+)* \d+', l) for l in ls)
tot = sum(int(l.rsplit(' ', 1)[1]) for l in ls)
main = [int(l.rsplit(' ', 1)[1]) for l in ls if 'main (leaky)' in l.rsplit(' ', 1)[0].split(';')]
print(ok and tot == int(sys.argv[2]) and sum(main) >= 4096 * 990)
PY
)" = True ]; then
		ok $n
	else
		notok $n "$(cat "$T_TMP/fold.txt" "$T_TMP/fold.err")"
	fi
	n=leaks_folded_unwritable_exit_1
	"$MEMLENS" leaks --folded /nonexistent/dir/f -- "$WORKLOADS/leaky" 10 >/dev/null 2>"$T_TMP/fold2.err"
	[ $? = 1 ] && grep -q 'cannot write the folded stacks' "$T_TMP/fold2.err" && ok $n ||
		notok $n "$(cat "$T_TMP/fold2.err")"
}

# --pprof FILE: a gzipped profile.proto, read back with Debian's
# python3-protobuf (the module generated by protoc from
# proto/pprof_profile.proto here): the samples' inuse_objects and
# inuse_space add up to the report's outstanding blocks and bytes exactly,
# and the leak's location is leaky.c's malloc line in main (from DWARF)
pprof_check() {	# pprof_check PROFILE JSON-REPORT [leaky]: prints "good" or what is wrong
	local leak_line=0	# leaky's: the line of its leaking malloc; leakmix's: 0
	[ "${3:-}" = leaky ] && leak_line=$(grep -n 'never freed' "$PROTO_DIR/../workloads/leaky.c" | cut -d: -f1)
	/usr/bin/python3 - "$1" "$2" "$T_TMP/pb" "$leak_line" <<'PY'
import gzip, json, sys
sys.path.insert(0, sys.argv[3])
import pprof_profile_pb2 as pb
prof, rep, leak_line = sys.argv[1], sys.argv[2], int(sys.argv[4] or 0)
d = json.loads([l for l in open(rep).read().splitlines() if l.startswith('{')][-1])
p = pb.Profile()
p.ParseFromString(gzip.open(prof).read())
S = p.string_table
bad = []
if S[0] != '': bad.append('string_table[0] is not ""')
if [(S[t.type], S[t.unit]) for t in p.sample_type] != [('inuse_objects', 'count'), ('inuse_space', 'bytes')]: bad.append('sample types')
if S[p.default_sample_type] != 'inuse_space': bad.append('default sample type')
objs, space = sum(s.value[0] for s in p.sample), sum(s.value[1] for s in p.sample)
if (objs, space) != (d['outstanding'], d['outstanding_bytes']): bad.append('values %s != report %s' % ((objs, space), (d['outstanding'], d['outstanding_bytes'])))
loc = {l.id: l for l in p.location}; fn = {f.id: f for f in p.function}; mp = {m.id: m for m in p.mapping}
if any(i not in loc for s in p.sample for i in s.location_id) or any(ln.function_id not in fn for l in p.location for ln in l.line) or any(l.mapping_id and l.mapping_id not in mp for l in p.location): bad.append('dangling ids')
lines = [(S[fn[ln.function_id].name], S[fn[ln.function_id].filename], ln.line, s.value[0]) for s in p.sample for ln in loc[s.location_id[0]].line]
main = [x for x in lines if x[0] == 'main' and x[1].endswith('/workloads/leaky.c')]
if leak_line and (not main or main[0][2] != leak_line or main[0][3] < d['outstanding'] * 99 // 100): bad.append('no main at leaky.c:%d with the leaks: %s' % (leak_line, lines[:4]))
if leak_line and not any(S[m.filename].endswith('/leaky') and m.has_functions and m.has_line_numbers for m in p.mapping): bad.append('mapping of leaky')
if not leak_line and not [x for x in lines if x[1].endswith('/workloads/leakmix.c') and x[2] > 0]: bad.append('no leakmix.c line: %s' % lines[:4])
print('good' if not bad else '; '.join(bad))
PY
}

test_pprof() {
	local n=leaks_pprof_read_back_exact out=$T_TMP/pp.json res
	PROTO_DIR=$(cd "$(dirname "$0")/../../proto" && pwd)
	if ! command -v protoc >/dev/null; then
		skip $n "no protoc to make the Python module (apt-get install protobuf-compiler)"
	elif ! /usr/bin/python3 -c 'import google.protobuf' 2>/dev/null; then
		skip $n "Debian's python3 has no protobuf module (apt-get install python3-protobuf)"
	elif ! mkdir -p "$T_TMP/pb" || ! protoc -I"$PROTO_DIR" --python_out="$T_TMP/pb" "$PROTO_DIR/pprof_profile.proto"; then
		notok $n "protoc failed on proto/pprof_profile.proto"
	else
		"$MEMLENS" leaks --json --pprof "$T_TMP/pp.pb.gz" -- "$WORKLOADS/leaky" $K >"$out" 2>"$T_TMP/pp.err"
		res=$(pprof_check "$T_TMP/pp.pb.gz" "$out" leaky 2>&1)
		echo "# $n: $res ($(stat -c %s "$T_TMP/pp.pb.gz" 2>/dev/null) bytes)"
		[ "$res" = good ] && ok $n || notok $n "$(cat "$T_TMP/pp.err")"
		# 8 threads, every entry point, one stack per leak site, inlined
		n=leaks_pprof_leakmix_exact
		"$MEMLENS" leaks --json --pprof "$T_TMP/pm.pb.gz" -- "$WORKLOADS/leakmix" $LM_N 10 \
			>"$T_TMP/pm.json" 2>"$T_TMP/pm.err"
		res=$(pprof_check "$T_TMP/pm.pb.gz" "$T_TMP/pm.json" 2>&1)
		echo "# $n: $res"
		[ "$res" = good ] && ok $n || notok $n "$(cat "$T_TMP/pm.err")"
	fi
	n=leaks_pprof_unwritable_exit_1
	"$MEMLENS" leaks --pprof /nonexistent/dir/p -- "$WORKLOADS/leaky" 10 >/dev/null 2>"$T_TMP/pp2.err"
	[ $? = 1 ] && grep -q 'cannot write the pprof profile to /nonexistent/dir/p' "$T_TMP/pp2.err" && ok $n ||
		notok $n "$(cat "$T_TMP/pp2.err")"
	n=leaks_pprof_needs_stacks_exit_2
	"$MEMLENS" leaks --pprof "$T_TMP/x" --no-stacks -- "$WORKLOADS/leaky" 10 >/dev/null 2>"$T_TMP/pp3.err"
	[ $? = 2 ] && grep -q 'needs the call stacks' "$T_TMP/pp3.err" && ok $n || notok $n "$(cat "$T_TMP/pp3.err")"
}

# Source lines through elfutils' libdw: leakinl (built -O2 -g) leaks from
# leak_block, a static always_inline function inlined into main. Each stack
# shows the inlined function at the line of its malloc, then main at the
# line of the call (both found by their marker comments in the source), in
# the text report and in the JSON frames. Then the same binary with its
# DWARF stripped into a separate debug file: found by build id under
# --debug-dir DIR (DIR/.build-id/xx/rest.debug), and, stripped of every
# symbol too, by its .gnu_debuglink name under DIR (main's name then comes
# from the debug file's symbol table); and libc's lines from its Debian
# debug package.
INL_K=300
inl_check() {	# inl_check JSON-REPORT TEXT-REPORT OBJECT: prints "good" or what is wrong
	python3 - "$1" "$2" "$3" "$INL_MALLOC" "$INL_CALL" "$INL_K" <<'PY'
import json, re, sys
rep, text, obj, lm, lc, k = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
bad = []
try:
    d = json.loads([l for l in open(rep).read().splitlines() if l.startswith('{')][-1])
except Exception as e:
    print('no JSON report:', e); sys.exit()
if [s for s in d['by_size'] if s['size'] == 4000] != [{'size': 4000, 'count': k, 'bytes': 4000 * k}]:
    bad.append('by_size %s' % d['by_size'][:3])
st = d['by_stack'][0]
fr = [{x: f.get(x) for x in ('function', 'inlined', 'line')} for f in st.get('frames', [])[:2]]
if fr != [{'function': 'leak_block', 'inlined': True, 'line': lm}, {'function': 'main', 'inlined': False, 'line': lc}]:
    bad.append('frames %s, want leak_block (inlined) at %d, main at %d' % (st.get('frames', [])[:2], lm, lc))
elif not all(f['file'].endswith('/workloads/leakinl.c') and f['object'].endswith('/' + obj) for f in st['frames'][:2]):
    bad.append('files/objects %s' % st['frames'][:2])
elif st['frames'][1].get('offset') is None or not st['stack'][0].startswith('main+0x%x (%s)' % (st['frames'][1]['offset'], obj)):
    bad.append('stack %s and offset %s' % (st['stack'][:1], st['frames'][1].get('offset')))
if st['count'] < k * 99 // 100: bad.append('the stack holds %d of %d blocks' % (st['count'], k))
t = open(text).read()
m = re.search(r'outstanding from:\n    leak_block \[inlined\] \(%s\) at leakinl\.c:%d\n    main\+0x[0-9a-f]+ \(%s\) at leakinl\.c:%d\n' % (obj, lm, obj, lc), t)
if not m: bad.append('text report: %s' % t[t.find('outstanding from'):][:300])
print('good' if not bad else '; '.join(bad))
PY
}

test_source_lines() {
	local n=leaks_inlined_function_and_lines src res id dbg
	src=$(cd "$(dirname "$0")/../.." && pwd)/workloads/leakinl.c
	INL_MALLOC=$(grep -n 'leakinl: the leaking malloc' "$src" | cut -d: -f1)
	INL_CALL=$(grep -n 'leakinl: the call of leak_block' "$src" | cut -d: -f1)
	"$MEMLENS" leaks --json -- "$WORKLOADS/leakinl" $INL_K >"$T_TMP/inl.json" 2>"$T_TMP/inl.err"
	"$MEMLENS" leaks -- "$WORKLOADS/leakinl" $INL_K >"$T_TMP/inl.txt" 2>&1
	res=$(inl_check "$T_TMP/inl.json" "$T_TMP/inl.txt" leakinl)
	if [ "$res" != good ] && ! grep -q ' at leakinl\.c:' "$T_TMP/inl.txt" &&
	   ! ldd "$MEMLENS" 2>/dev/null | grep -q 'libdw\.so'; then
		skip $n "memlens was built without libdw (install libdw-dev and rebuild)"
		skip leaks_build_id_debug_file "memlens was built without libdw"
		skip leaks_debuglink_fully_stripped "memlens was built without libdw"
		return
	fi
	echo "# $n: leak_block at leakinl.c:$INL_MALLOC inlined into main at leakinl.c:$INL_CALL: $res"
	[ "$res" = good ] && ok $n || notok $n "$res $(cat "$T_TMP/inl.err")"

	n=leaks_build_id_debug_file
	if ! command -v objcopy >/dev/null || ! command -v readelf >/dev/null; then
		skip $n "no objcopy/readelf (apt-get install binutils)"
		skip leaks_debuglink_fully_stripped "no objcopy/readelf (apt-get install binutils)"
		return
	fi
	mkdir -p "$T_TMP/bin" "$T_TMP/dbg" "$T_TMP/dbg2"
	cp "$WORKLOADS/leakinl" "$T_TMP/bin/leakbid"
	id=$(readelf -n "$T_TMP/bin/leakbid" | awk '/Build ID:/ { print $3 }')
	if [ -z "$id" ]; then
		skip $n "the workloads are linked without a build id (ld --build-id)"
	else
		mkdir -p "$T_TMP/dbg/.build-id/${id:0:2}"
		dbg=$T_TMP/dbg/.build-id/${id:0:2}/${id:2}.debug
		objcopy --only-keep-debug "$T_TMP/bin/leakbid" "$dbg" &&
			objcopy --strip-debug "$T_TMP/bin/leakbid"
		# without the directory: no lines, and no debuginfod server asked
		# (libdebuginfod, when installed, logs each query it makes)
		DEBUGINFOD_URLS=http://127.0.0.1:9 DEBUGINFOD_VERBOSE=1 \
			"$MEMLENS" leaks -- "$T_TMP/bin/leakbid" $INL_K >"$T_TMP/bid0.txt" 2>&1
		"$MEMLENS" leaks --json --debug-dir "$T_TMP/dbg" -- "$T_TMP/bin/leakbid" $INL_K \
			>"$T_TMP/bid.json" 2>"$T_TMP/bid.err"
		"$MEMLENS" leaks --debug-dir "$T_TMP/dbg" -- "$T_TMP/bin/leakbid" $INL_K >"$T_TMP/bid.txt" 2>&1
		res=$(inl_check "$T_TMP/bid.json" "$T_TMP/bid.txt" leakbid)
		if readelf -S "$T_TMP/bin/leakbid" | grep -q '\.debug_info'; then
			notok $n "objcopy --strip-debug left .debug_info in the binary"
		elif grep -q ' at leakinl\.c:' "$T_TMP/bid0.txt"; then
			notok $n "source lines without the debug file: $(cat "$T_TMP/bid0.txt")"
		elif grep -qE 'server response|^url [0-9]|debuginfod' "$T_TMP/bid0.txt"; then
			notok $n "a debuginfod server was asked: $(cat "$T_TMP/bid0.txt")"
		else
			[ "$res" = good ] && ok $n || notok $n "$res $(cat "$T_TMP/bid.err")"
		fi
	fi

	# no build id, no symbol table: the debug file by its .gnu_debuglink
	# name, under DIR + the binary's directory (as gdb looks in
	# /usr/lib/debug/usr/bin/x.debug for /usr/bin/x)
	n=leaks_debuglink_fully_stripped
	cp "$WORKLOADS/leakinl" "$T_TMP/bin/leakdl"
	mkdir -p "$T_TMP/dbg2$T_TMP/bin"
	objcopy --only-keep-debug "$T_TMP/bin/leakdl" "$T_TMP/leakdl.debug" &&
		objcopy --strip-all --remove-section=.note.gnu.build-id \
			--add-gnu-debuglink="$T_TMP/leakdl.debug" "$T_TMP/bin/leakdl" &&
		mv "$T_TMP/leakdl.debug" "$T_TMP/dbg2$T_TMP/bin/"
	"$MEMLENS" leaks --json --debug-dir "$T_TMP/dbg2" -- "$T_TMP/bin/leakdl" $INL_K \
		>"$T_TMP/dl.json" 2>"$T_TMP/dl.err"
	"$MEMLENS" leaks --debug-dir "$T_TMP/dbg2" -- "$T_TMP/bin/leakdl" $INL_K >"$T_TMP/dl.txt" 2>&1
	res=$(inl_check "$T_TMP/dl.json" "$T_TMP/dl.txt" leakdl)
	if readelf -s "$T_TMP/bin/leakdl" | grep -qw main; then
		notok $n "objcopy --strip-all left main in the symbol tables"
	else
		[ "$res" = good ] && ok $n || notok $n "$res $(cat "$T_TMP/dl.err")"
	fi
	# a library's debug file from a Debian debug package: libc's (libc6-dbg)
	# under /usr/lib/debug/.build-id, for the malloc strdup makes; its line
	# as gdb reads it from the same debug file
	n=leaks_debug_package_by_build_id
	"$MEMLENS" leaks --json -- "$WORKLOADS/leakinl" -s $INL_K >"$T_TMP/sd.json" 2>"$T_TMP/sd.err"
	local libc fr0 gline
	libc=$(json "$T_TMP/sd.json" "d['by_stack'][0]['frames'][0].get('object', '')" 2>/dev/null)
	id=$(readelf -n "$libc" 2>/dev/null | awk '/Build ID:/ { print $3 }')
	fr0=$(json "$T_TMP/sd.json" "(lambda f: '%s %s %s %s' % (f.get('function'), f.get('offset'), f.get('file'), f.get('line')))(d['by_stack'][0]['frames'][0])" 2>/dev/null)
	if [ -z "$id" ] || [ ! -e "/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug" ]; then
		skip $n "no debug file for ${libc:-libc} (build id ${id:-?}) under /usr/lib/debug (apt-get install libc6-dbg)"
	elif ! command -v gdb >/dev/null; then
		skip $n "no gdb to read the line with (apt-get install gdb)"
	else
		set -- $fr0
		gline=$(gdb -nx -batch -ex "info line *($1+$2-1)" "$libc" 2>/dev/null |
			sed -n 's/^Line \([0-9]*\) of "\([^"]*\)".*/\1 \2/p' | head -n 1)
		echo "# $n: $fr0 ($libc); gdb: line $gline"
		if [ "$1" = strdup ] && [[ "$3" == *strdup.c ]] && [ -n "$gline" ] &&
		   [ "$4" = "${gline%% *}" ] && [[ "${gline#* }" == *"${3##*/}" ]] &&
		   [ "$(json "$T_TMP/sd.json" "[s for s in d['by_size'] if s['size'] == 39]")" = "[{'size': 39, 'count': $INL_K, 'bytes': $((39 * INL_K))}]" ]; then
			ok $n
		else
			notok $n "frame 0: $fr0, gdb: ${gline:-nothing} $(head -c 600 "$T_TMP/sd.json") $(cat "$T_TMP/sd.err")"
		fi
	fi
	n=leaks_debug_dir_not_a_directory_exit_2
	"$MEMLENS" leaks --debug-dir "$T_TMP/nonexistent" -- "$WORKLOADS/leakinl" 1 >/dev/null 2>"$T_TMP/dd.err"
	[ $? = 2 ] && grep -q -- "--debug-dir $T_TMP/nonexistent: .*give a directory of debug files" "$T_TMP/dd.err" &&
		ok $n || notok $n "$(cat "$T_TMP/dd.err")"
}

# a process that allocates nothing while traced: the output says so in
# words, without an empty table (sampled or not); exit 0
test_nothing_outstanding() {
	local n=leaks_nothing_outstanding_said p bad= m
	"$WORKLOADS/memwrite" -m 4 -P >"$T_TMP/no.mw" 2>&1 &
	p=$!
	wait_for_line "$T_TMP/no.mw" "first pass written" 20
	for m in "" "--sample 512K"; do
		"$MEMLENS" leaks -p $p -d 1 $m >"$T_TMP/no.out" 2>"$T_TMP/no.err" || bad+=" $m: exit $?;"
		grep -q "^no leak seen: no .*block is outstanding" "$T_TMP/no.out" || bad+=" $m: not said;"
		grep -q "COUNT" "$T_TMP/no.out" && bad+=" $m: an empty table;"
	done
	kill $p; wait $p 2>/dev/null
	[ -z "$bad" ] && ok $n || notok $n "$bad" "$(cat "$T_TMP/no.out" "$T_TMP/no.err")"
}

test_spawned_exact
test_nothing_outstanding
test_source_lines
test_folded
test_pprof
test_interval
test_table_full
test_stacks_lost
test_git_vs_valgrind
test_leakmix
test_pid_untracked_frees
test_jemalloc
test_pid_namespace
test_errors
t_done
