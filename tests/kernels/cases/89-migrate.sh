#!/bin/bash
# memlens migrate --postcopy between two network namespaces, side by side
# with a pre-copy migration of the same workload (upstream CRIU 4.1.1:
# post-copy needs none of the patches), then once more with the project's
# CRIU, which also leaves the pages of the pre-dump rounds' images for
# after the restore. The target runs in its own PID namespace: with post-copy the source keeps the tree, stopped, until every
# page has arrived, so its PIDs are still taken when the destination
# restores it.
set -u
cd "$(dirname "$0")/../../.." || exit 1
. tests/kernels/cases/criu_lib.bash

ns_a=mlpcA$$ ns_b=mlpcB$$
t_at_exit 'ip netns del $ns_a 2>/dev/null; ip netns del $ns_b 2>/dev/null'
in_a=(nsenter --net=/run/netns/"$ns_a")
in_b=(nsenter --net=/run/netns/"$ns_b")

# logs MODE: the end of every CRIU log of MODE's migration
logs() {
	local f
	for f in "$tmp/$1"-src/*/*.log "$tmp/$1"-dest/*/*.log "$tmp/$1.err" "$tmp/$1-recv.out"; do
		[ -f "$f" ] || continue
		echo "# --- $f"
		grep -E "Error|Warn|Starting lazy|finished|FAILED|UFFD transferred" "$f" | tail -n 8 | sed 's/^/#   /'
		tail -n 4 "$f" | sed 's/^/#   /'
	done
}

# one_migration MODE CRIU PORT [OPTIONS...]: migwork from A to B; $J the JSON
one_migration() {
	local mode=$1 criu=$2 port=$3 rp rc p new
	shift 3
	local out=$tmp/$mode.out
	J=$tmp/$mode.json BAD=
	"${in_b[@]}" timeout -k 5 420 "$MEMLENS" migrate --receive --listen 10.213.1.2:"$port" \
		--criu "$criu" --timeout 150 -D "$tmp/$mode-dest" >"$tmp/$mode-recv.out" 2>&1 &
	rp=$!
	pids+=("$rp")
	wait_for_line "$tmp/$mode-recv.out" receiving 10
	start "$out" "${in_a[@]}" unshare --pid --fork setsid "$WORKLOADS/migwork" \
		-H 12 -k 12 -I 32 -C 4 -t 2 || { BAD="migwork did not start"; return; }
	p=$(cat /proc/"$P"/task/*/children 2>/dev/null | awk '{print $1; exit}')
	[ -n "$p" ] || { BAD="no migwork under unshare $P"; return; }
	pids+=("$p")
	"${in_a[@]}" timeout -k 5 400 "$MEMLENS" migrate -p "$p" --to 10.213.1.2:"$port" --criu "$criu" \
		--max-rounds 3 --stop-threshold 1 --round-interval 2 -i 300 \
		-D "$tmp/$mode-src" --json "$@" >"$J" 2>"$tmp/$mode.err"
	rc=$?
	wait "$rp"
	if [ $rc -ne 0 ]; then
		BAD="exit $rc: $(tail -n 3 "$tmp/$mode.err") / $(tail -n 3 "$tmp/$mode-recv.out")"
		logs "$mode"
		return
	fi
	"$PY" -c 'import json,sys; j=json.load(open(sys.argv[1])); [print("# %s %s %d: %d pages, %s lazy, %d ms" % (sys.argv[2], r["kind"], r["round"], r["pages"], r.get("pages_lazy", "-"), r["duration_ms"])) for r in j["rounds"]]; print("# %s: total %d bytes, downtime %d ms, %s" % (sys.argv[2], j["total_bytes"], j["downtime_ms"], j.get("lazy", "")))' "$J" "$mode"
	new=$(sed -n 's/.*"restored_pid":\([0-9]*\).*/\1/p' "$J")
	pids+=("$new")
	[ "$(ip netns identify "$new")" = "$ns_b" ] || BAD+=" restored pid $new not in $ns_b"
	kill -TERM "$new"
	wait_for_line "$out" "migwork: (correct|WRONG)" 120 || BAD+=" the restored target did not answer"
	grep -q "migwork: correct" "$out" || BAD+=" restored memory: $(tail -n 1 "$out")"
}

# postcopy_case WHICH CRIU: a post-copy migration with that CRIU; with
# upstream also the pre-copy one it is compared with. Upstream CRIU loads
# every page of the parent rounds' images before the tree runs; the
# project's CRIU (patches 0004, 0005) leaves them to the lazy-pages daemon
# as well, and says how many of its pages it read from them (pages_parent)
postcopy_case() {
	local which=$1 criu=$2 pre_j pre_bad sfx= port=7422 parent='== 0'
	if [ "$which" != upstream ]; then
		sfx=_$which port=7424 parent='> 0'
	fi
	one_migration postcopy$sfx "$criu" $port --postcopy --timeout 150
	if [ -z "$BAD" ]; then
		# the bytes: every round's pages files as CRIU counted them, plus
		# every lazy page the destination's daemon fetched from the source,
		# which are all the final dump left; what the daemon read from the
		# parent rounds' images (pages_parent) was counted in their rounds
		jcheck "migrate postcopy$sfx" "$J" 'j["ok"] and j["postcopy"] and j["precopy"]' \
			'j["rounds"][-1]["kind"] == "dump" and len(j["rounds"]) >= 2' \
			'all(r["stored_bytes"] == r["bytes"] for r in j["rounds"])' \
			'j["lazy"]["pages_left"] > 0' \
			"j[\"lazy\"][\"pages_parent\"] $parent" \
			'j["lazy"]["pages_copied"] - j["lazy"]["pages_parent"] == j["lazy"]["pages_left"]' \
			'j["lazy"]["pages_total"] >= j["lazy"]["pages_copied"]' \
			'j["lazy"]["bytes"] == 4096 * (j["lazy"]["pages_copied"] - j["lazy"]["pages_parent"])' \
			'j["lazy"]["copy_bytes"] >= j["lazy"]["bytes"]' \
			'j["total_bytes"] == sum(r["stored_bytes"] for r in j["rounds"]) + j["lazy"]["bytes"]' \
			'0 < j["downtime_ms"] <= j["lazy"]["last_page_ms"] <= j["lazy"]["source_done_ms"] + 1000' \
			'0 < j["lazy"]["faults_served"] <= j["lazy"]["faults"]' \
			'j["lazy"]["fault_wait_max_us"] >= j["lazy"]["fault_wait_avg_us"]'
		BAD+=$JBAD
	fi
	[ -z "$BAD" ] && ok migrate_postcopy$sfx || notok migrate_postcopy$sfx "$BAD"
	if [ "$which" != upstream ]; then
		[ -n "$BAD" ] || [ -z "${UP_J:-}" ] || "$PY" - "$UP_J" "$J" <<'PYEOF'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
print("# post-copy, the project's CRIU vs upstream: downtime %d / %d ms = %.2f; restore %d / %d ms "
      "= %.2f; pages read from the parent images after the restore: %d; total bytes %d / %d = %.2f" % (
      b["downtime_ms"], a["downtime_ms"], b["downtime_ms"] / max(a["downtime_ms"], 1),
      b["restore_ms"], a["restore_ms"], b["restore_ms"] / max(a["restore_ms"], 1),
      b["lazy"]["pages_parent"], b["total_bytes"], a["total_bytes"],
      b["total_bytes"] / max(a["total_bytes"], 1)))
PYEOF
		return
	fi
	local post_j=$J post_bad=$BAD
	[ -n "$BAD" ] || UP_J=$J
	one_migration precopy "$criu" 7421
	[ -z "$BAD" ] && ok migrate_precopy_pidns || notok migrate_precopy_pidns "$BAD"
	pre_j=$J pre_bad=$BAD J=$post_j BAD=$post_bad
	[ -z "$BAD$pre_bad" ] && "$PY" - "$pre_j" "$J" <<'PYEOF'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
print("# final dump until its images were complete %d / %d ms, restore %d / %d ms" % (
      b["final_dump_ms"], a["final_dump_ms"], b["restore_ms"], a["restore_ms"]))
print("# post-copy vs pre-copy: downtime %d / %d ms = %.2f; total bytes %d / %d = %.2f; "
      "bytes before the restore %d / %d = %.2f; last page %d ms; %d fault(s) waited %.2f ms "
      "on average, %.2f ms at most" % (
      b["downtime_ms"], a["downtime_ms"], b["downtime_ms"] / max(a["downtime_ms"], 1),
      b["total_bytes"], a["total_bytes"], b["total_bytes"] / max(a["total_bytes"], 1),
      b["total_bytes"] - b["lazy"]["bytes"], a["total_bytes"],
      (b["total_bytes"] - b["lazy"]["bytes"]) / max(a["total_bytes"], 1),
      b["lazy"]["last_page_ms"], b["lazy"]["faults"],
      b["lazy"]["fault_wait_avg_us"] / 1000, b["lazy"]["fault_wait_max_us"] / 1000))
PYEOF
}

if ! netns_up "$ns_a" "$ns_b" 10.213.1.1 10.213.1.2 2>"$tmp/ns.err"; then
	skip migrate_postcopy "cannot set up two network namespaces: $(cat "$tmp/ns.err")"
	exit 0
fi
UP_J=
WHICH=upstream
for_criu migrate_postcopy postcopy_case "this kernel has no soft-dirty tracking (post-copy needs it)"
WHICH=page
for_criu migrate_postcopy postcopy_case "this kernel has no soft-dirty tracking (post-copy needs it)"
exit 0
