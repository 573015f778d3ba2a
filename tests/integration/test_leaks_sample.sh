#!/bin/bash
# memlens leaks --sample BYTES: allocations sampled by bytes in the BPF
# program (--sampler uprobe; the sampler preloaded into the command, the
# default for -- CMD, has tests/integration/test_leaks_preload.sh),
# estimates weighted by 1 / (1 - exp(-size / BYTES)).
#
# Exact where the arithmetic allows it: with --sample 1 every block of 45
# bytes or more is sampled (the countdown never exceeds 44 bytes) and weighs
# exactly 1, so the report must equal the exact one, count for count. The
# estimates of a program leaking N blocks of S bytes are checked against a
# statistical bound: within 5 standard errors of the known truth, where the
# standard error of the bytes is S sqrt(N (w - 1)), w = 1 / (1 - exp(-S /
# BYTES)) (a normal deviation beyond 5 happens once in 1.7 million runs).
. "$(dirname "$0")/bpf_common.bash"

# exact and --sample 1 runs of the same program: the same counts
# same_as_exact NAME all|large CMD...: "large": the blocks of 45 bytes or
# more only (a preloaded allocator's start-up makes a few smaller ones, which
# --sample 1 samples with probability 1 - exp(-size))
# SAMPLER: the --sampler of the sampled run (default uprobe)
same_as_exact() {
	local n=$1 what=$2 ex=$T_TMP/exact.json sa=$T_TMP/s1.json res
	shift 2
	"$MEMLENS" leaks --json -T 0 -- "$@" >"$ex" 2>"$T_TMP/ex.err"
	"$MEMLENS" leaks --json -T 0 --sample 1 --sampler "${SAMPLER:-uprobe}" -- "$@" >"$sa" 2>"$T_TMP/s1.err"
	res=$(python3 - "$ex" "$sa" "$what" <<'PY'
import json, sys
def last(p):
    return json.loads([l for l in open(p).read().splitlines() if l.startswith('{')][-1])
e, s = last(sys.argv[1]), last(sys.argv[2])
keys = ('mallocs', 'frees', 'missed_frees', 'failed', 'lost', 'outstanding', 'outstanding_bytes')
if sys.argv[3] == 'large': keys = ('missed_frees', 'failed', 'lost')
bad = ["%s %s != %s" % (k, s[k], e[k]) for k in keys if s[k] != e[k]]
big = 0 if sys.argv[3] == 'all' else 45
sizes = lambda d: sorted((r['size'], r['count'], r['bytes']) for r in d['by_size'] if r['size'] >= big)
if sizes(s) != sizes(e): bad.append("by_size %s != %s" % (sizes(s)[:4], sizes(e)[:4]))
# frames without a symbol are shown as addresses, which differ from run to run
name = lambda f: '?' if f.startswith('0x') else f
stacks = lambda d: sorted((r['count'], r['bytes'], tuple(map(name, r['stack']))) for r in d['by_stack'] if r['bytes'] >= big * r['count'])
if sys.argv[3] == 'all' and stacks(s) != stacks(e): bad.append("by_stack %s != %s" % (stacks(s)[:3], stacks(e)[:3]))
if not (s['estimated'] is True and e['estimated'] is False and s['sample_bytes'] == 1): bad.append("estimated/sample_bytes")
if s['mode'] not in ('uprobe_session', 'uprobe_multi'): bad.append("mode " + s['mode'])
if sys.argv[3] == 'all' and (s['sampled_outstanding'] != s['outstanding'] or s['outstanding_bytes_stderr'] != 0): bad.append("weights not 1")
if s['allocation_calls'] < s['mallocs']: bad.append("allocation_calls")
print("good" if not bad else "; ".join(bad))
PY
)
	echo "# $n: exact $(json "$ex" "(d['mallocs'], d['frees'], d['outstanding'])"), sampled $(json "$sa" "(d['mode'], d['mallocs'], d['frees'], d['outstanding'])")"
	[ "$res" = good ] && ok $n || notok $n "$res $(cat "$T_TMP/s1.err")"
}

test_sample_1_is_exact() {
	same_as_exact leaks_sample_1_equals_exact all "$WORKLOADS/leaky" 1000
	# 8 threads through every entry point (realloc, reallocarray,
	# posix_memalign...); leaks of 3000-3064 bytes, churn from 24 bytes up
	same_as_exact leaks_sample_1_equals_exact_threads all "$WORKLOADS/leakmix" 900 100
}

# N blocks of S bytes leaked, everything else freed: the estimate within 5
# standard errors, of the bytes and of the blocks, in total and by size
test_estimate_bound() {
	local n=leaks_sample_estimate_within_5_stderr out=$T_TMP/est.json N=20000 S=256 B=4096 res
	"$MEMLENS" leaks --json -T 0 --sample $B --sampler uprobe -- "$WORKLOADS/leaky" $N $S >"$out" 2>"$T_TMP/est.err"
	res=$(python3 - "$out" $N $S $B <<'PY'
import json, math, sys
d = json.loads([l for l in open(sys.argv[1]).read().splitlines() if l.startswith('{')][-1])
n, s, b = map(int, sys.argv[2:5])
w = 1 / (1 - math.exp(-s / b))
se_bytes, se_count = s * math.sqrt(n * (w - 1)), math.sqrt(n * (w - 1))
row = [r for r in d['by_size'] if r['size'] == s]
bad = []
if not row: bad.append("no row of %d bytes" % s)
else:
    r = row[0]
    if abs(r['bytes'] - n * s) > 5 * se_bytes: bad.append("bytes %d, want %d +- 5 * %.0f" % (r['bytes'], n * s, se_bytes))
    if abs(r['count'] - n) > 5 * se_count: bad.append("count %d, want %d +- 5 * %.0f" % (r['count'], n, se_count))
    if not r['estimated'] or abs(r['count'] - r['sampled'] * w) > 1: bad.append("weight")
# everything else leaky allocates is freed: no other size outstanding
if [r for r in d['by_size'] if r['size'] != s]: bad.append("other sizes %s" % [r for r in d['by_size'] if r['size'] != s][:3])
if abs(d['outstanding_bytes'] - n * s) > 5 * se_bytes: bad.append("total bytes %d" % d['outstanding_bytes'])
# the standard error it reports is the estimate of this one
if not (0.5 * se_bytes < d['outstanding_bytes_stderr'] < 1.5 * se_bytes): bad.append("stderr %d, want about %.0f" % (d['outstanding_bytes_stderr'], se_bytes))
if d['mallocs'] - d['frees'] - d['missed_frees'] != d['sampled_outstanding']: bad.append("identity")
if d['allocation_calls'] != 9 * n: bad.append("allocation_calls %d, want %d" % (d['allocation_calls'], 9 * n))
print("good" if not bad else "; ".join(bad))
PY
)
	echo "# $n: $N blocks of $S bytes at --sample $B: $(json "$out" "(d['sampled_outstanding'], d['outstanding'], d['outstanding_bytes'], d['outstanding_bytes_stderr'])") (sampled, blocks, bytes, stderr)"
	[ "$res" = good ] && ok $n || notok $n "$res $(cat "$T_TMP/est.err")"
}

# every block freed: nothing of that size outstanding, though thousands were sampled
test_free_heavy() {
	local n=leaks_sample_free_heavy_leaves_nothing out=$T_TMP/fh.json
	"$MEMLENS" leaks --json -T 0 --sample 4096 --sampler uprobe -- "$WORKLOADS/mallocbench" 50000 200 \
		>"$out" 2>"$T_TMP/fh.err"
	echo "# $n: $(json "$out" "{k: d[k] for k in ('mallocs', 'frees', 'allocation_calls', 'outstanding', 'outstanding_bytes')}")"
	if [ "$(json "$out" "(not [r for r in d['by_size'] if r['size'] == 200], d['mallocs'] > 1000, d['mallocs'] - d['frees'] == d['sampled_outstanding'] <= 2, d['allocation_calls'] >= 50000)")" = "(True, True, True, True)" ]; then
		ok $n
	else
		notok $n "$(cat "$out" "$T_TMP/fh.err")"
	fi
}

# the folded stacks and the pprof profile carry the estimates, as the JSON does
test_outputs_weighted() {
	local n=leaks_sample_folded_weighted out=$T_TMP/fw.json f=$T_TMP/fw.folded res
	"$MEMLENS" leaks --json -T 0 --sample 16K --folded "$f" -- "$WORKLOADS/leaky" 3000 \
		>"$out" 2>"$T_TMP/fw.err"
	if [ "$(python3 - "$out" "$f" <<'PY'
import json, sys
d = json.loads([l for l in open(sys.argv[1]).read().splitlines() if l.startswith('{')][-1])
folded = sum(int(l.rsplit(' ', 1)[1]) for l in open(sys.argv[2]) if l.strip())
stacks = sum(s['bytes'] for s in d['by_stack'])
# each line rounded on its own: within one byte per stack
print(abs(folded - stacks) <= len(d['by_stack']) and abs(stacks - d['outstanding_bytes']) <= len(d['by_stack']) and all(s['estimated'] for s in d['by_stack']))
PY
)" = True ]; then
		ok $n
	else
		notok $n "$(cat "$f" "$T_TMP/fw.err")"
	fi
	# the profile: the JSON's estimates as its values, the rate as its
	# period (space/bytes, as Go's sampled heap profiles) and in its comment
	n=leaks_sample_pprof_weighted
	local proto
	proto=$(cd "$(dirname "$0")/../../proto" && pwd)
	if ! "$MEMLENS" leaks --sample 16K --json --pprof "$T_TMP/p.pb.gz" -- "$WORKLOADS/leaky" 3000 \
		>"$T_TMP/pp.json" 2>"$T_TMP/pp.err"; then
		if grep -q 'without protobuf-c' "$T_TMP/pp.err"; then
			skip $n "built without protobuf-c"
		else
			notok $n "$(cat "$T_TMP/pp.err")"
		fi
	elif ! command -v protoc >/dev/null || ! /usr/bin/python3 -c 'import google.protobuf' 2>/dev/null; then
		gzip -dc "$T_TMP/p.pb.gz" | grep -aq 'one allocation per 16384 bytes on average' &&
			ok $n || notok $n "no sampling rate in the profile's comment"
	elif ! mkdir -p "$T_TMP/pb" || ! protoc -I"$proto" --python_out="$T_TMP/pb" "$proto/pprof_profile.proto"; then
		notok $n "protoc failed on proto/pprof_profile.proto"
	else
		res=$(/usr/bin/python3 - "$T_TMP/p.pb.gz" "$T_TMP/pp.json" "$T_TMP/pb" <<'PY'
import gzip, json, sys
sys.path.insert(0, sys.argv[3])
import pprof_profile_pb2 as pb
d = json.loads([l for l in open(sys.argv[2]).read().splitlines() if l.startswith('{')][-1])
p = pb.Profile()
p.ParseFromString(gzip.open(sys.argv[1]).read())
S = p.string_table
objs, space = sum(s.value[0] for s in p.sample), sum(s.value[1] for s in p.sample)
bad = []
# each sample rounded on its own: within one per stack
n = len(p.sample)
if abs(objs - d['outstanding']) > n or abs(space - d['outstanding_bytes']) > n: bad.append('values %s, report %s' % ((objs, space), (d['outstanding'], d['outstanding_bytes'])))
if (S[p.period_type.type], S[p.period_type.unit], p.period) != ('space', 'bytes', 16384): bad.append('period %s' % p.period)
if not any('one allocation per 16384 bytes' in S[c] for c in p.comment): bad.append('comment')
print('good' if not bad else '; '.join(bad))
PY
)
		echo "# $n: $res"
		[ "$res" = good ] && ok $n || notok $n "$res"
	fi
}

test_text() {
	local n=leaks_sample_text_says_estimated out=$T_TMP/t.txt
	"$MEMLENS" leaks --sample 512K -- "$WORKLOADS/leaky" 2000 >"$out" 2>"$T_TMP/t.err"
	if grep -q 'about one allocation per 512K allocated' "$out" &&
	   grep -q '^outstanding (estimated): ~' "$out"; then
		ok $n
	else
		notok $n "$(cat "$out" "$T_TMP/t.err")"
	fi
}

# the allocators Debian ships, preloaded: the same counts sampled at 1 as exact
test_allocators() {
	local lib name
	for name in jemalloc:libjemalloc.so.2:libjemalloc2 tcmalloc:libtcmalloc_minimal.so.4:libtcmalloc-minimal4; do
		IFS=: read -r name lib pkg <<<"$name"
		lib=$(ls /usr/lib/*/"$lib" /usr/lib/"$lib" 2>/dev/null | head -n 1)
		if [ -z "$lib" ]; then
			skip leaks_sample_1_exact_$name "not installed (apt-get install $pkg)"
			continue
		fi
		if ! LD_PRELOAD=$lib "$MEMLENS" --version >/dev/null 2>&1; then
			skip leaks_sample_1_exact_$name "this memlens cannot run with LD_PRELOAD=$lib (an ASan build)"
			continue
		fi
		LD_PRELOAD=$lib same_as_exact leaks_sample_1_exact_$name large "$WORKLOADS/leaky" 300
		# the sampler preloaded before it: it forwards to that allocator
		LD_PRELOAD=$lib SAMPLER=preload same_as_exact leaks_preload_sample_1_exact_$name large \
			"$WORKLOADS/leaky" 300
		local n=leaks_${name}_allocator_found out=$T_TMP/$name.json
		LD_PRELOAD=$lib "$MEMLENS" leaks --json -- "$WORKLOADS/leaky" 300 >"$out" 2>/dev/null
		if [ "$(json "$out" "('/$(basename "$lib")' in d['allocator'], [(s['count'], s['bytes']) for s in d['by_size'] if s['size'] == 4096], d['untracked_frees'])")" = "(True, [(300, 1228800)], 0)" ]; then
			ok $n
		else
			notok $n "$(cat "$out")"
		fi
	done
}

# a statically linked program: glibc's malloc is in the executable, found
# by name in its symbol table; built here from workloads/leaky.c
test_static() {
	local n=leaks_static_executable_exact out=$T_TMP/st.json k=500 exe=$T_TMP/leaky-static
	if ! cc -static -O2 -g -fno-omit-frame-pointer -o "$exe" "$(dirname "$0")/../../workloads/leaky.c" \
		2>"$T_TMP/cc.err"; then
		skip $n "cannot link statically here: $(head -n 1 "$T_TMP/cc.err")"
		skip leaks_sample_1_exact_static "the same"
		return
	fi
	"$MEMLENS" leaks --json -- "$exe" $k >"$out" 2>"$T_TMP/st.err"
	echo "# $n: $(json "$out" "(d['allocator'], d['mallocs'], d['frees'], d['untracked_frees'], d['outstanding'])")"
	# static glibc makes a few start-up allocations of its own, none of 4096 bytes
	if [ "$(json "$out" "(d['allocator'].endswith('/leaky-static'), [(s['count'], s['bytes']) for s in d['by_size'] if s['size'] == 4096], d['frees'] - $((8 * k)), 0 <= d['mallocs'] - $((9 * k)) < 16, d['untracked_frees'])")" = "(True, [($k, $((4096 * k)))], 0, True, 0)" ]; then
		ok $n
	else
		notok $n "$(cat "$out" "$T_TMP/st.err")"
	fi
	same_as_exact leaks_sample_1_exact_static all "$exe" $k
}

# je_malloc/je_free in the executable beside libc's malloc (a prefixed
# jemalloc linked in): both probed, exact, and --sample 1 the same
test_prefixed() {
	local n=leaks_prefixed_allocator_beside_libc out=$T_TMP/pfx.json k=300
	"$MEMLENS" leaks --json -- "$WORKLOADS/leakpfx" $k >"$out" 2>"$T_TMP/pfx.err"
	echo "# $n: $(json "$out" "(d.get('allocator_prefixed'), d['mallocs'], d['frees'], d['outstanding'])")"
	if [ "$(json "$out" "(d.get('allocator_prefixed', '').endswith('/leakpfx'), sorted((s['size'], s['count']) for s in d['by_size'] if s['size'] in (3000, 4096, 5000)), d['frees'], d['untracked_frees'])")" = "(True, [(3000, $k), (4096, $k)], $k, 0)" ]; then
		ok $n
	else
		notok $n "$(cat "$out" "$T_TMP/pfx.err")"
	fi
	same_as_exact leaks_sample_1_exact_prefixed all "$WORKLOADS/leakpfx" $k
}

test_usage() {
	local n a rc
	for a in 0 2T 12X -5 ''; do
		n="leaks_sample_refuses_'$a'"
		"$MEMLENS" leaks --sample "$a" -- /bin/true >/dev/null 2>"$T_TMP/u.err"
		rc=$?
		[ $rc = 2 ] && grep -q 'sample' "$T_TMP/u.err" && ok "$n" || notok "$n" "rc=$rc $(cat "$T_TMP/u.err")"
	done
	n=leaks_sample_in_help
	"$MEMLENS" leaks --help | grep -q -- '--sample BYTES' && ok $n || notok $n
}

test_sample_1_is_exact
test_estimate_bound
test_free_heavy
test_outputs_weighted
test_text
test_allocators
test_static
test_prefixed
test_usage
t_done
