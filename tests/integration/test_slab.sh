#!/bin/bash
# memlens slab: net dentry objects checked against /proc/slabinfo.
. "$(dirname "$0")/bpf_common.bash"

# on a disk file system: drop_caches cannot free the dentries of a tmpfs
DIR=${SLAB_DIR:-/var/tmp}/memlens-slab-test.$$
NFILES=${SLAB_NFILES:-20000}	# the kernel matrix runs fewer (a slow guest)
T_DIRS+=("$DIR")

active_dentries() { awk '$1 == "dentry" {print $2}' /proc/slabinfo; }

make_tree() {
	mkdir -p "$DIR"
	for d in $(seq 1 40); do
		mkdir -p "$DIR/d$d"
		(cd "$DIR/d$d" && touch $(seq -f 'f%g' 1 $((NFILES / 40))))
	done
	sync
}

# dentries are freed through RCU (d_free -> call_rcu), so the frees of a
# drop_caches go on for a while after it returns: wait until the count stops
# moving, or the tracer counts those late frees against the tree's dentries
settle_dentries() {
	local prev cur i
	prev=$(active_dentries)
	for i in $(seq 1 50); do
		sleep 0.2
		cur=$(active_dentries)
		[ $((cur - prev)) -le 64 ] && [ $((prev - cur)) -le 64 ] && return
		prev=$cur
	done
}

# stat every file of a tree whose dentries were dropped: one new dentry each
slab_run() {	# NAME MODE
	local name=$1 mode=$2
	echo 2 >/proc/sys/vm/drop_caches	# dentries and inodes: the tree is cold
	settle_dentries
	tracer_start "$name" slab --json --top 0 --mode "$mode" || return 1
	S_BEFORE=$(active_dentries)
	find "$DIR" -printf '%s\n' >/dev/null	# lstat()s each entry (plain find does not)
	S_AFTER=$(active_dentries)
	tracer_stop
}

test_dentry_vs_slabinfo() {	# NAME MODE
	local n=$1 mode=$2 net delta tol ncpu objs
	if ! slab_run "$n" "$mode"; then
		notok $n "tracer did not start: $(cat "$TR_ERR")"; return
	fi
	net=$(json "$TR_OUT" "sum(r['net'] for r in d['rows'] if r['cache'] == 'dentry')")
	delta=$((S_AFTER - S_BEFORE))
	ncpu=$(nproc)
	objs=$(awk '$1 == "dentry" {print $4}' /proc/slabinfo)
	# Tolerance: SLUB's active_objs counts every object of the per-CPU slabs
	# and per-CPU partial slabs as in use, so it moves in steps of whole slabs
	# (objs_per_slab); other processes create and free dentries meanwhile.
	# 5 % of the expected growth plus 8 slabs per CPU.
	tol=$((NFILES * 5 / 100 + 8 * ncpu * objs))
	echo "# $n: $NFILES files stat()ed; memlens net dentry $net; slabinfo active_objs $S_BEFORE -> $S_AFTER ($delta); tolerance $tol"
	if [ "$net" -ge $((NFILES * 95 / 100)) ] && [ $((net - delta)) -le $tol ] &&
	   [ $((delta - net)) -le $tol ]; then
		ok $n
	else
		notok $n "net $net vs slabinfo delta $delta"
	fi
}

test_json_shape() {
	local n=slab_json_shape_and_top
	"$MEMLENS" slab --json --top 3 -d 0.5 >"$T_TMP/shape.json" 2>"$T_TMP/shape.err"
	if [ "$(json "$T_TMP/shape.json" "d['type']")" = slab ] &&
	   [ "$(json "$T_TMP/shape.json" "len(d['rows']) <= 3 and all(sorted(r) == ['allocs','cache','frees','net','net_kb'] for r in d['rows'])")" = True ] &&
	   [ "$(json "$T_TMP/shape.json" "all(r['net'] == r['allocs'] - r['frees'] for r in d['rows'])")" = True ]; then
		ok $n
	else
		notok $n "$(cat "$T_TMP/shape.json" "$T_TMP/shape.err")"
	fi
	n=slab_merged_caches_noted
	"$MEMLENS" slab --json --top 0 -d 1 >"$T_TMP/m.json" 2>/dev/null
	if [ "$(json "$T_TMP/m.json" "all(m['users'] > 1 for m in d['merged'])")" = True ]; then
		ok $n
		echo "# merged: $(json "$T_TMP/m.json" "[(m['cache'], m['aliases']) for m in d['merged']][:4]")"
	else
		notok $n "$(cat "$T_TMP/m.json")"
	fi
	n=slab_sort_allocs
	"$MEMLENS" slab --json --top 0 --sort allocs -d 0.5 >"$T_TMP/sort.json" 2>/dev/null
	if [ "$(json "$T_TMP/sort.json" "[r['allocs'] for r in d['rows']] == sorted([r['allocs'] for r in d['rows']], reverse=True)")" = True ]; then
		ok $n
	else
		notok $n "$(cat "$T_TMP/sort.json")"
	fi
	n=slab_bad_usage_exit_2
	"$MEMLENS" slab --top -1 >/dev/null 2>&1
	[ $? = 2 ] && ok $n || notok $n
	n=slab_not_root_exit_4
	setpriv --reuid=65534 --regid=65534 --clear-groups "$MEMLENS" slab -d 0.1 >/dev/null 2>"$T_TMP/nr"
	[ $? = 4 ] && grep -q root "$T_TMP/nr" && ok $n || notok $n "$(cat "$T_TMP/nr")"
}

# -i over a system-wide window: the intervals add up, cache by cache, to
# the totals at the end; recursion misses are reported in every object
test_interval() {
	local n=slab_interval_blocks_add_up out=$T_TMP/iv.json
	"$MEMLENS" slab --json --top 0 -i 250 -d 1 >"$out" 2>"$T_TMP/iv.err"
	echo "# $n: $(intervals "$out" slab "(len(iv), [len(x['rows']) for x in iv], d['recursion_misses'])")"
	if [ "$(intervals "$out" slab "len(iv) >= 3 and iv[-1]['last'] and {c: (sum(r['allocs'] for x in iv for r in x['rows'] if r['cache'] == c), sum(r['frees'] for x in iv for r in x['rows'] if r['cache'] == c)) for c in set(r['cache'] for x in iv for r in x['rows'])} == {r['cache']: (r['allocs'], r['frees']) for r in d['rows'] if r['allocs'] or r['frees']} and sum(x['recursion_misses'] for x in iv) == d['recursion_misses']")" = True ]; then
		ok $n
	else
		notok $n "$(head -c 2000 "$out") $(cat "$T_TMP/iv.err")"
	fi
}

# memlens check loads slab's own tp_btf programs on the kmem tracepoints:
# what it says is what `slab --mode tp_btf` does (runs, or exits 5 with the
# verifier's reason, never 4 as root)
test_check_agrees() {
	local n=slab_tp_btf_agrees_with_check st rc
	"$MEMLENS" check --json >"$T_TMP/check.json" 2>/dev/null
	st=$(python3 -c 'import json,sys
j = json.load(open(sys.argv[1]))
print(next((f["state"] for f in j["features"] if f["name"] == "tp_btf_kmem"), "absent"))' "$T_TMP/check.json")
	"$MEMLENS" slab --mode tp_btf -d 0.2 >/dev/null 2>"$T_TMP/tpbtf.err"
	rc=$?
	echo "# $n: check says $st; slab --mode tp_btf exit $rc $(head -c 300 "$T_TMP/tpbtf.err")"
	if { [ "$st" = ok ] && [ $rc = 0 ]; } ||
	   { [ "$st" = missing ] && [ $rc = 5 ] && grep -q verifier "$T_TMP/tpbtf.err"; }; then
		ok $n
	else
		notok $n "check: $st, slab exit $rc"
	fi
}

make_tree
test_check_agrees
test_interval
test_dentry_vs_slabinfo slab_dentry_net_matches_slabinfo auto
test_dentry_vs_slabinfo slab_raw_tp_fallback_dentry_net_matches_slabinfo raw_tp
grep -q 'mode raw_tp' "$T_TMP/slab_raw_tp_fallback_dentry_net_matches_slabinfo.err" &&
	ok slab_raw_tp_mode_reported || notok slab_raw_tp_mode_reported
test_json_shape
rm -rf "$DIR"
t_done
