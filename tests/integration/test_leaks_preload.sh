#!/bin/bash
# memlens leaks --sample BYTES -- CMD with the sampler preloaded into CMD
# (libmemlens-sample.so): the process decides which allocations are
# sampled, and only those and their frees reach the two uprobes.
#
# workloads/leaksites leaks N blocks of each of 1000 (malloc), 3000
# (calloc), 4000 (realloc of a 500-byte block), 6000 (posix_memalign,
# aligned_alloc, memalign) and 5000 bytes (from 4 threads), each from a
# function of its own; it frees everything else, and forks a child that
# allocates on its own. The estimates are checked against the known truth
# within 5 standard errors (S sqrt(N (w - 1)), w = 1 / (1 - exp(-S /
# BYTES)): beyond 5 once in 1.7 million runs), and no timing is measured.
. "$(dirname "$0")/bpf_common.bash"

N=2000
B=4096

# check_sites NAME FILE.json FILE.err: the estimates per size and their stacks
check_sites() {
	local n=$1 out=$2 err=$3 res
	res=$(python3 - "$out" $N $B <<'PY'
import json, math, sys
d = json.loads([l for l in open(sys.argv[1]).read().splitlines() if l.startswith('{')][-1])
n, b = int(sys.argv[2]), int(sys.argv[3])
bad = []
if d.get('sampler') != 'preload': bad.append("sampler %s" % d.get('sampler'))
sites = {1000: 'leak_malloc_1000', 3000: 'leak_calloc_3000', 4000: 'leak_realloc_4000',
         5000: 'leak_thread_5000', 6000: 'leak_aligned_6000'}
for s, fn in sites.items():
    w = 1 / (1 - math.exp(-s / b))
    se = s * math.sqrt(n * (w - 1))
    row = [r for r in d['by_size'] if r['size'] == s]
    if not row:
        bad.append("no row of %d bytes" % s)
        continue
    if abs(row[0]['bytes'] - n * s) > 5 * se:
        bad.append("%d: bytes %d, want %d +- 5 * %.0f" % (s, row[0]['bytes'], n * s, se))
    # the stacks of that size begin at its function: none in the sampler
    # (--stacks dwarf: copies the ring buffer had no room for, while memlens
    # was unwinding others, leave their blocks without a stack, counted)
    st = [x for x in d['by_stack'] if x['stack'] and x['stack'][0].startswith(fn)]
    if not st: bad.append("no stack beginning at %s" % fn)
    elif not d['stacks_lost'] and abs(sum(x['bytes'] for x in st) - n * s) > 5 * se:
        bad.append("%s: bytes %d" % (fn, sum(x['bytes'] for x in st)))
# freed: the churn's 2000, 1000 and 2000 bytes, the 500 bytes realloc moved,
# the child's 700 (another process)
for s in (500, 700, 2000):
    if [r for r in d['by_size'] if r['size'] == s]: bad.append("%d bytes outstanding" % s)
first = [x['stack'][0] for x in d['by_stack'] if x['stack']]
if [f for f in first if 'libmemlens-sample' in f or 'mls_' in f or f.startswith('0x')]:
    bad.append("a stack begins in the sampler: %s" % first[:4])
if d['missed_frees']: bad.append("missed_frees %d" % d['missed_frees'])
lost = d['stacks_lost_by_reason']
if d['stacks_lost'] != lost.get('dropped', 0): bad.append("stacks lost: %s" % lost)
if d['mallocs'] - d['frees'] != d['sampled_outstanding']: bad.append("identity")
print("good" if not bad else "; ".join(bad))
PY
)
	echo "# $n: $(json "$out" "(d.get('sampler'), d['mode'], d['mallocs'], d['frees'], d['outstanding'], d['outstanding_bytes'], d['stacks_lost'])") (sampler, mode, sampled, freed, blocks, bytes, stacks lost)"
	if [ "$res" = good ] && grep -q 'leaksites: child ok' "$err"; then
		ok $n
	else
		notok $n "$res $(cat "$err")"
	fi
}

test_sites() {
	local out=$T_TMP/sites.json err=$T_TMP/sites.err
	"$MEMLENS" leaks --json -T 0 --sample $B -- "$WORKLOADS/leaksites" $N >"$out" 2>"$err"
	check_sites leaks_preload_estimates_per_site "$out" "$err"
	out=$T_TMP/dw.json err=$T_TMP/dw.err
	if ! "$MEMLENS" leaks --json -T 0 --stacks dwarf --sample $B -- "$WORKLOADS/leaksites" $N \
		>"$out" 2>"$err"; then
		if grep -q 'without elfutils' "$err"; then
			skip leaks_preload_dwarf_stacks "memlens built without libdw"
		elif grep -q 'the kernel refused the program' "$err" &&
			! "$MEMLENS" leaks --json -T 0 --stacks dwarf --sample $B --sampler uprobe -- \
				"$WORKLOADS/leaky" 10 >/dev/null 2>&1; then
			skip leaks_preload_dwarf_stacks "this kernel's verifier refuses --stacks dwarf, with uprobes too"
		else
			notok leaks_preload_dwarf_stacks "$(cat "$err")"
		fi
		return
	fi
	check_sites leaks_preload_dwarf_stacks "$out" "$err"
}

# --sample 1: every block of 45 bytes or more is sampled, with a weight of
# exactly 1: leaky's 300 leaked blocks of 4096 bytes, counted exactly
test_sample_1() {
	local n=leaks_preload_sample_1_exact out=$T_TMP/s1.json k=300
	"$MEMLENS" leaks --json -T 0 --sample 1 -- "$WORKLOADS/leaky" $k >"$out" 2>"$T_TMP/s1.err"
	echo "# $n: $(json "$out" "(d.get('sampler'), [(s['size'], s['count']) for s in d['by_size']][:4], d['missed_frees'])")"
	if [ "$(json "$out" "(d.get('sampler'), [(s['count'], s['bytes']) for s in d['by_size'] if s['size'] >= 45], d['missed_frees'], d['allocation_calls'] >= 9 * $k)")" = "('preload', [($k, $((4096 * k)))], 0, True)" ]; then
		ok $n
	else
		notok $n "$(cat "$out" "$T_TMP/s1.err")"
	fi
}

# the text report and -v say which sampler took the decision
test_says_mode() {
	local n=leaks_preload_text_says_sampler out=$T_TMP/t.txt
	"$MEMLENS" leaks -v --sample 512K -- "$WORKLOADS/leaky" 200 >"$out" 2>"$T_TMP/t.err"
	if grep -q '^sampler: preload' "$out" && grep -q 'sampler preloaded' "$T_TMP/t.err" &&
	   grep -q 'LD_PRELOAD=.*libmemlens-sample.so' "$T_TMP/t.err"; then
		ok $n
	else
		notok $n "$(cat "$out" "$T_TMP/t.err")"
	fi
	n=leaks_sampler_uprobe_forced
	"$MEMLENS" leaks --json -T 0 --sample 4096 --sampler uprobe -- "$WORKLOADS/leaky" 200 \
		>"$T_TMP/u.json" 2>"$T_TMP/u.err"
	if [ "$(json "$T_TMP/u.json" "(d.get('sampler'), d['mode'] in ('uprobe_session', 'uprobe_multi', 'uprobe'))")" = "('uprobe', True)" ]; then
		ok $n
	else
		notok $n "$(cat "$T_TMP/u.json" "$T_TMP/u.err")"
	fi
}

# the user's own LD_PRELOAD stays in force, after the sampler
test_user_preload() {
	local n=leaks_preload_keeps_user_ld_preload so=$T_TMP/userpre.so out=$T_TMP/up.json pid
	if ! printf '%s\n' '#include <stdio.h>' '#include <unistd.h>' \
		'__attribute__((constructor)) static void hi(void) { fprintf(stderr, "user preload ran in %d\n", (int)getpid()); }' |
		cc -shared -fPIC -o "$so" -x c - 2>"$T_TMP/cc.err"; then
		skip $n "cannot build a shared object here: $(head -n 1 "$T_TMP/cc.err")"
		return
	fi
	if ! LD_PRELOAD=$so "$MEMLENS" --version >/dev/null 2>&1; then
		skip $n "this memlens cannot run with LD_PRELOAD=$so (an ASan build)"
		return
	fi
	LD_PRELOAD=$so "$MEMLENS" leaks --json -T 0 --sample 4096 -- "$WORKLOADS/leaky" 300 \
		>"$out" 2>"$T_TMP/up.err"
	pid=$(json "$out" "d['pid']")
	if grep -q "user preload ran in $pid\$" "$T_TMP/up.err" &&
	   [ "$(json "$out" "(d.get('sampler'), bool([s for s in d['by_size'] if s['size'] == 4096]))")" = "('preload', True)" ]; then
		ok $n
	else
		notok $n "pid $pid: $(cat "$out" "$T_TMP/up.err")"
	fi
}

# a statically linked program: no dynamic loader to preload into; uprobes
test_static_falls_back() {
	local n=leaks_preload_static_falls_back exe=$T_TMP/leaky-static out=$T_TMP/st.json
	if ! cc -static -O2 -g -o "$exe" "$(dirname "$0")/../../workloads/leaky.c" 2>"$T_TMP/cc.err"; then
		skip $n "cannot link statically here: $(head -n 1 "$T_TMP/cc.err")"
		return
	fi
	"$MEMLENS" leaks --json -T 0 --sample 4096 -- "$exe" 300 >"$out" 2>"$T_TMP/st.err"
	if [ "$(json "$out" "(d.get('sampler'), bool([s for s in d['by_size'] if s['size'] == 4096]))")" = "('uprobe', True)" ] &&
	   grep -q 'statically linked: sampling with uprobes' "$T_TMP/st.err"; then
		ok $n
	else
		notok $n "$(cat "$out" "$T_TMP/st.err")"
	fi
	n=leaks_preload_static_refused_when_asked
	"$MEMLENS" leaks --sample 4096 --sampler preload -- "$exe" 3 >/dev/null 2>"$T_TMP/sr.err"
	[ $? = 2 ] && grep -q 'statically linked' "$T_TMP/sr.err" && ok $n || notok $n "$(cat "$T_TMP/sr.err")"
}

# a program with an allocator of its own (je_malloc beside libc's): its
# calls would not reach a preloaded malloc; uprobes, on both
test_own_allocator() {
	local n=leaks_preload_own_allocator_falls_back out=$T_TMP/pfx.json
	"$MEMLENS" leaks --json -T 0 --sample 4096 -- "$WORKLOADS/leakpfx" 300 >"$out" 2>"$T_TMP/pfx.err"
	if [ "$(json "$out" "(d.get('sampler'), d.get('allocator_prefixed', '').endswith('/leakpfx'))")" = "('uprobe', True)" ] &&
	   grep -q 'allocator of its own (it defines je_malloc)' "$T_TMP/pfx.err"; then
		ok $n
	else
		notok $n "$(cat "$out" "$T_TMP/pfx.err")"
	fi
}

# where memlens finds no sampler (a copy of it alone in a directory, and
# none installed): an error saying what to do
test_missing() {
	local n=leaks_preload_missing_sampler_says_what_to_do dir=$T_TMP/bin rc
	mkdir -p "$dir" && cp "$MEMLENS" "$dir/memlens"
	"$dir/memlens" leaks --sample 4096 -- /bin/true >/dev/null 2>"$T_TMP/m.err"
	rc=$?
	if [ $rc = 0 ]; then
		skip $n "a sampler is installed on this machine: $(grep -o '/[^ ]*libmemlens-sample.so' "$T_TMP/m.err" | head -n 1)"
	elif [ $rc = 1 ] && grep -q 'libmemlens-sample.so' "$T_TMP/m.err" &&
	     grep -q -- '--sampler uprobe' "$T_TMP/m.err"; then
		ok $n
	else
		notok $n "rc=$rc $(cat "$T_TMP/m.err")"
	fi
}

test_usage() {
	local n rc
	n=leaks_sampler_needs_sample
	"$MEMLENS" leaks --sampler uprobe -- /bin/true >/dev/null 2>"$T_TMP/u1.err"
	rc=$?
	[ $rc = 2 ] && grep -q -- '--sample' "$T_TMP/u1.err" && ok $n || notok $n "rc=$rc $(cat "$T_TMP/u1.err")"
	n=leaks_sampler_preload_refuses_pid
	"$MEMLENS" leaks --sample 4096 --sampler preload -p $$ >/dev/null 2>"$T_TMP/u2.err"
	rc=$?
	[ $rc = 2 ] && grep -q -- 'uprobe' "$T_TMP/u2.err" && ok $n || notok $n "rc=$rc $(cat "$T_TMP/u2.err")"
	n=leaks_sampler_in_help
	"$MEMLENS" leaks --help | grep -q -- '--sampler' && ok $n || notok $n
}

test_sites
test_sample_1
test_says_mode
test_user_preload
test_static_falls_back
test_own_allocator
test_missing
test_usage
t_done
