#!/bin/bash
# memlens migrate of a process tree with CRIU 4.1.1 and memlens's patches:
# forktree's root and two children write private pages and one shared
# mapping (paced, -P). Every process is profiled, the pre-dumps leave out
# each process's own hot pages (PID:START:END), never the shared memory,
# the tree's total counts the shared pages all three write once (below the
# rows' sum), and the restored tree (root and children) finds its data
# intact.
set -u
cd "$(dirname "$0")/../../.." || exit 1
. tests/kernels/cases/needs_write_tracking.bash migrate
. tests/kernels/cases/criu_lib.bash
WHICH=page

ns_a=mltreeA$$ ns_b=mltreeB$$
t_at_exit 'ip netns del $ns_a 2>/dev/null; ip netns del $ns_b 2>/dev/null'

migrate_tree() {
	local name=$1 criu=$2 out=$tmp/$1.out j=$tmp/$1.json bad= rp rc p new kids
	local in_a=(nsenter --net=/run/netns/"$ns_a") in_b=(nsenter --net=/run/netns/"$ns_b")
	"${in_b[@]}" "$MEMLENS" migrate --receive --listen 10.214.0.2:7412 --criu "$criu" \
		-D "$tmp/$name-dest" >"$tmp/$name-recv.out" 2>&1 &
	rp=$!
	pids+=("$rp")
	wait_for_line "$tmp/$name-recv.out" receiving 10
	start "$out" "${in_a[@]}" "$WORKLOADS/forktree" -c 2 -p 2048 -s 256 -P ||
		{ notok "migrate_tree_$name" "forktree did not start"; return; }
	p=$P
	"${in_a[@]}" "$MEMLENS" migrate -p "$p" --to 10.214.0.2:7412 --criu "$criu" \
		--max-rounds 3 --stop-threshold 1 --round-interval 2 -i 300 -D "$tmp/$name-src" --json \
		>"$j" 2>"$tmp/$name.err"
	rc=$?
	wait "$rp"
	[ $rc -eq 0 ] || { notok "migrate_tree_$name" "exit $rc: $(tail -n 3 "$tmp/$name.err") / $(tail -n 3 "$tmp/$name-recv.out")"; return; }
	# round 1 leaves out the three private buffers (and each process's
	# stack page or so), per process: at least one range each
	jcheck "migrate tree $name" "$j" 'j["precopy"] and j["rounds"][-1]["kind"] == "dump"' \
		'j["exclusion"] and j["rounds"][0]["excluded_ranges"] >= 3' \
		'j["preflight"]["refused"] == 0 and j["processes_total"]["count"] == 3' \
		'sorted(p["state"] for p in j["processes"]) == ["profiled"] * 3' \
		'0 < j["processes_total"]["cumulative_dirty_bytes"] < sum(p["cumulative_dirty_bytes"] for p in j["processes"])'
	bad+=$JBAD
	# the rows of the tree, as the text output gives them too
	"$PY" -c 'import json,sys; j=json.load(open(sys.argv[1])); print("# processes:", ", ".join("%d %s hot %d written %d" % (p["pid"], p["comm"], p["hot_bytes"], p["cumulative_dirty_bytes"]) for p in j["processes"]))' "$j"
	grep -h -- "--exclude-range" "$tmp/$name-src"/*/*.log 2>/dev/null | head -n 2 | sed 's/^/# /'
	new=$(sed -n 's/.*"restored_pid":\([0-9]*\).*/\1/p' "$j")
	pids+=("$new")
	kids=$(pgrep -P "$new" | wc -l)
	[ "$kids" -ge 2 ] || bad+=" the restored root $new has $kids children, not 2"
	kill -INT "$new"
	wait_for_line "$out" "forktree: data " 60 || bad+=" the restored root did not check its data"
	grep -q "forktree: data intact" "$out" || bad+=" restored memory: $(tail -n 1 "$out")"
	pkill -TERM -P "$new" 2>/dev/null
	[ -z "$bad" ] && ok "migrate_tree_$name" || notok "migrate_tree_$name" "$bad"
}

if ! netns_up "$ns_a" "$ns_b" 10.214.0.1 10.214.0.2 2>"$tmp/ns.err"; then
	skip migrate_tree "cannot set up two network namespaces: $(cat "$tmp/ns.err")"
	exit 0
fi
for_criu migrate_tree migrate_tree "this kernel has no soft-dirty tracking (pre-copy needs it)"
exit 0
