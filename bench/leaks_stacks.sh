#!/bin/bash
# make bench: how deep and how right `memlens leaks` call stacks are on
# Debian's binaries (built without frame pointers), frame pointers against
# DWARF unwinding (--stacks dwarf), with heaptrack (which unwinds with
# libunwind inside the process) as the reference; and what each costs.
#
# Each workload (Debian's sqlite3 and python3, where installed) runs, one
# after the other in the same run: untracked, under `leaks --stacks fp`,
# `leaks --stacks dwarf` (SMALL, default 8192 bytes of stack copied, as
# perf; memlens's default, 16384; and BIG, default 32768) and heaptrack (REPS times each, default 3, the
# median wall time shown, as a ratio to the untracked run's). From the last
# run of each, the top TOP (default 10) stacks by bytes still allocated at
# the end (memlens --folded, heaptrack_print --flamegraph-cost-type leaked):
# their mean and largest depth (frames, inlined ones included), and how many
# of memlens dwarf's top stacks are among heaptrack's top ones by function
# (the innermost 4 named functions equal; frames without a symbol, whose
# addresses change from run to run, are left out; glibc's internal aliases
# such as __GI_ and _impl names made equal). heaptrack's own allocations are
# left out of its list: its preload library brings libstdc++ into the
# target, whose constructor allocates a 72704-byte exception pool at load,
# leaked in every program that ends without running destructors; they are
# the stacks heaptrack reports for /bin/true, which allocates nothing.
set -u
M=${MEMLENS:?} W=${WORKLOADS:?}
: "$W"
T=${TMPDIR:-/tmp}/leaks_stacks.$$
mkdir -p "$T"
trap 'rm -rf "$T"' EXIT
reps=${REPS:-3} top=${TOP:-10} small=${SMALL:-8192} big=${BIG:-32768}

command -v heaptrack >/dev/null && command -v heaptrack_print >/dev/null || {
	echo "leaks_stacks: heaptrack and heaptrack_print are needed (apt-get install heaptrack)"
	exit 0
}

# wall NAME CMD...: the median wall time of CMD over $reps runs, in seconds
wall() {
	local name=$1 r t0 t1
	shift
	for r in $(seq 1 "$reps"); do
		t0=$(date +%s.%N)
		"$@" >"$T/$name.out" 2>"$T/$name.err"
		t1=$(date +%s.%N)
		echo "$t1 - $t0" | bc
	done | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

cat >"$T/sql" <<'SQL'
.output /dev/null
CREATE TABLE t(id INTEGER PRIMARY KEY, b BLOB, s TEXT);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 20000)
INSERT INTO t SELECT x, randomblob(600), printf('row %d', x) FROM c;
CREATE INDEX ts ON t(s);
DELETE FROM t WHERE id % 2 = 0;
SELECT count(*), sum(length(b)) FROM t WHERE s LIKE 'row 1%';
SQL
cat >"$T/py" <<'PY'
import json, os
kept = [json.dumps({"k": i, "v": [i] * 8}) for i in range(20000)]
d = {i: bytearray(600) for i in range(20000)}
for i in range(0, 20000, 2):
    del d[i]
os._exit(0)
PY
names=() cmds=()
if [ -x /usr/bin/sqlite3 ]; then
	names+=(sqlite3) cmds+=("/usr/bin/sqlite3 -init $T/sql :memory: .quit")
fi
if [ -x /usr/bin/python3 ]; then
	names+=(python3) cmds+=("/usr/bin/python3 -S $T/py")
fi
[ ${#names[@]} = 0 ] && { echo "leaks_stacks: neither /usr/bin/sqlite3 nor /usr/bin/python3"; exit 0; }

# heaptrack's own: what it reports allocated in /bin/true
heaptrack -o "$T/own" /bin/true >/dev/null 2>&1
heaptrack_print -f "$T/own.zst" --flamegraph-cost-type allocations -F "$T/own.folded" \
	>/dev/null 2>&1 || : >"$T/own.folded"

# analyse MODE HEAPTRACK JSON: depths of the top stacks of both, the mode's matches in heaptrack's
analyse() {
	python3 - "$@" "$top" "$T/own.folded" <<'PY'
import json, re, sys
dw, ht, js, top, own = sys.argv[1:6]
top = int(top)
def norm(f):
    f = re.sub(r' \(.*\)$', '', f.strip())
    if re.match(r'^0x[0-9a-f]+$', f) or f in ('', '??'):
        return None
    f = re.sub(r'^__GI_+', '_', f)
    f = re.sub(r'^_+', '', f)
    f = re.sub(r'(_impl|_internal)$', '', f)
    return f.replace('IO_new_', 'IO_').replace('libc_', '')
def key(frames):
    named = [n for n in (norm(f) for f in reversed(frames)) if n]
    # heaptrack's stacks begin at malloc's caller, memlens's too
    return tuple(named[:4])
def stacks(path, skip=()):
    out = []
    for line in open(path):
        line = line.rstrip('\n')
        if ' ' not in line:
            continue
        st, v = line.rsplit(' ', 1)
        frames = [f for f in st.split(';') if f.strip()]
        if key(frames) not in skip:
            out.append((int(v), frames))
    out = [s for s in out if s[0] > 0]
    out.sort(key=lambda s: -s[0])
    return out[:top]
def depth(s):
    d = [len(f) for _, f in s]
    return (sum(d) / len(d) if d else 0, max(d) if d else 0)
D, H = stacks(dw), stacks(ht, {key(f) for _, f in stacks(own)})
hk = [key(f) for _, f in H]
match = sum(1 for _, f in D if key(f) in hk)
inner = sum(1 for _, f in D if key(f)[:1] in [k[:1] for k in hk])
u, dropped = {}, '?'
try:
    j = json.loads([l for l in open(js).read().splitlines() if l.startswith('{')][-1])
    u, dropped = j.get('unwind', {}), j['stacks_lost_by_reason']['dropped']
except Exception:
    pass
print("%.1f %d %.1f %d %d %d %d %.1f %s %s %s" % (*depth(D), *depth(H), match,
      inner, len(D), u.get('us_per_stack', 0), u.get('not_unwound_fully', '?'),
      u.get('stacks', '?'), dropped))
PY
}

base=$(wall true "$M" leaks --json -- /bin/true)
echo "memlens leaks --stacks fp|dwarf against heaptrack: top $top stacks by bytes still allocated at exit; median of $reps runs"
echo "memlens leaks -- /bin/true (its own start and end): ${base} s"
printf '%-8s %-16s %8s %7s %5s %-9s %s\n' workload mode "x untr." depth max "top match" \
	"unwinding: us/stack, partial/unwound, dropped"
for i in "${!names[@]}"; do
	name=${names[$i]} cmd=${cmds[$i]}
	# shellcheck disable=SC2086
	u=$(wall "$name-u" $cmd)
	# shellcheck disable=SC2086
	f=$(wall "$name-fp" "$M" leaks --json -T 0 --stacks fp --folded "$T/$name-fp.folded" -- $cmd)
	# shellcheck disable=SC2086
	d=$(wall "$name-dw" "$M" leaks --json -T 0 --stacks dwarf --folded "$T/$name-dw.folded" -- $cmd)
	# shellcheck disable=SC2086
	sm=$(wall "$name-small" "$M" leaks --json -T 0 --stacks dwarf --stack-size "$small" \
		--folded "$T/$name-small.folded" -- $cmd)
	# shellcheck disable=SC2086
	b=$(wall "$name-big" "$M" leaks --json -T 0 --stacks dwarf --stack-size "$big" \
		--folded "$T/$name-big.folded" -- $cmd)
	# shellcheck disable=SC2086
	h=$(wall "$name-ht" heaptrack -o "$T/$name-ht" $cmd)
	heaptrack_print -f "$T/$name-ht.zst" --flamegraph-cost-type leaked \
		-F "$T/$name-ht.folded" >/dev/null 2>&1 || : >"$T/$name-ht.folded"
	printf '%-8s %-16s %8s %7s %5s\n' "$name" untracked 1.00 - -
	for m in fp small dw big; do
		t=$f label="fp"
		[ $m = small ] && t=$sm label="dwarf $small"
		[ $m = dw ] && t=$d label="dwarf"
		[ $m = big ] && t=$b label="dwarf $big"
		read -r mm mx hm hx match inner nd us part nun drop <<<"$(analyse "$T/$name-$m.folded" \
			"$T/$name-ht.folded" "$T/$name-$m.out")"
		printf '%-8s %-16s %8.2f %7s %5s %2s/%-2s (%2s) %s\n' "$name" "$label" \
			"$(echo "$t / $u" | bc -l)" "$mm" "$mx" "$match" "$nd" "$inner" \
			"$([ $m = fp ] && echo - || echo "$us, $part/$nun, $drop")"
	done
	printf '%-8s %-16s %8.2f %7s %5s\n' "$name" heaptrack "$(echo "$h / $u" | bc -l)" "$hm" "$hx"
done
echo "x untr.: wall time over the untracked run's (same run; memlens's own start and end included);"
echo "depth, max: mean and largest frames of the top $top stacks; top match: the mode's top stacks"
echo "found among heaptrack's (innermost 4 named functions), in brackets those whose innermost named"
echo "function is; partial: stacks not unwound to their outermost frame; dropped: allocations whose"
echo "stack copy found the ring buffer full (unwinding fell behind)"
