#!/bin/bash
# memlens migrate on this machine: to a directory, and between two network
# namespaces joined by a veth pair (two hosts' stand-in). Without soft-dirty
# (this kernel) it is one stop-and-copy dump; the pre-copy rounds run in the
# 6.12 guest (tests/kernels/cases/62-migrate.sh). The restored target checks
# its own memory every time.
set -u
. "$(dirname "$0")/../lib.bash"
cd "$(dirname "$0")/../.." || exit 1
MEMLENS=${MEMLENS:-$PWD/build/memlens}
WORKLOADS=${WORKLOADS:-$PWD/build/workloads}
PY=/usr/bin/python3
tmp=$(mktemp -d /tmp/memlens-migrate-test.XXXXXX)
pids=()
ns_a=mlmigA$$ ns_b=mlmigB$$
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	ip netns del "$ns_a" 2>/dev/null
	ip netns del "$ns_b" 2>/dev/null
	rm -rf "$tmp"
}
t_at_exit cleanup

jget() {
	"$PY" -c 'import json,sys; j=json.loads(open(sys.argv[1]).read()); print(eval(sys.argv[2]))' "$1" "$2"
}
# start OUT [nsenter args] -- CMD...: a workload in its own session; sets $P
start() {
	local out=$1
	shift
	setsid "$@" </dev/null >>"$out" 2>&1 &
	P=$!
	pids+=("$P")
	wait_for_line "$out" ready 10 && return 0
	return 1
}

CRIU=$(scripts/ensure-criu.sh 2>"$tmp/ensure.err")
[ -n "$CRIU" ] && export MEMLENS_CRIU=$CRIU

test_usage() {
	local rc bad=
	"$MEMLENS" migrate --to "$tmp/x" 2>"$tmp/u.err"; rc=$?
	[ $rc -eq 2 ] && grep -q -- "-p PID and --to" "$tmp/u.err" || bad="no -p: exit $rc $(cat "$tmp/u.err")"
	"$MEMLENS" migrate --receive -D "$tmp/x" 2>"$tmp/u.err"; rc=$?
	[ $rc -eq 2 ] && grep -q -- "--listen" "$tmp/u.err" || bad+=" receive without --listen: exit $rc"
	"$MEMLENS" migrate -p 1 --to "$tmp/x" --max-rounds 99 2>"$tmp/u.err"; rc=$?
	[ $rc -eq 2 ] || bad+=" --max-rounds 99: exit $rc"
	"$MEMLENS" migrate --help | grep -q "soft-dirty" || bad+=" help"
	"$MEMLENS" migrate --help | grep -qi "issue\|seed\|DESIGN" && bad+=" help cites internal documents"
	[ -z "$bad" ] && ok migrate_usage || notok migrate_usage "$bad"
}

test_no_target() {
	"$MEMLENS" migrate -p 4194303 --to "$tmp/nt" 2>"$tmp/nt.err"
	local rc=$?
	[ $rc -eq 3 ] && grep -q "no process" "$tmp/nt.err" && ok migrate_no_target ||
		notok migrate_no_target "exit $rc: $(cat "$tmp/nt.err")"
}

test_bad_destination() {
	[ -n "$CRIU" ] || { skip migrate_bad_destination "no CRIU: $(tail -n1 "$tmp/ensure.err")"; return; }
	start "$tmp/bd.out" "$WORKLOADS/migwork" -H 4 -I 4 -C 0 || { notok migrate_bad_destination "migwork"; return; }
	# nothing listens there
	"$MEMLENS" migrate -p "$P" --to 127.0.0.1:1 -D "$tmp/bd" 2>"$tmp/bd.err"
	local rc=$?
	if [ $rc -ne 1 ] || ! grep -q "cannot reach the destination 127.0.0.1:1" "$tmp/bd.err"; then
		notok migrate_bad_destination "exit $rc: $(cat "$tmp/bd.err")"
	elif t_gone "$P"; then
		notok migrate_bad_destination "the target died"
	else
		ok migrate_bad_destination
	fi
	kill "$P"
}

# check_migration NAME JSON OUT OLD-PID: one stop-and-copy migration, verified
check_migration() {
	local name=$1 j=$2 out=$3 old=$4 bad= new
	[ "$(jget "$j" 'j["ok"]')" = True ] || { notok "$name" "$(cat "$j")"; return 1; }
	[ "$(jget "$j" 'j["precopy"]')" = False ] || bad="pre-copy on a kernel without soft-dirty"
	[ "$(jget "$j" 'len(j["rounds"]) == 1 and j["rounds"][0]["kind"] == "dump"')" = True ] ||
		bad+=" rounds: $(jget "$j" 'j["rounds"]')"
	# 4 + 4 + 4 MiB = 3072 pages and a few more; all of them reached the
	# destination, and the round's bytes are what it stored plus the other images
	[ "$(jget "$j" 'all(3072 <= r["pages"] <= 3072 + 1024 and r["stored_bytes"] >= r["pages"] * 4096 and r["stored_bytes"] + r["images_bytes"] == r["bytes"] == j["total_bytes"] for r in j["rounds"][:1])')" = True ] ||
		bad+=" bytes: $(jget "$j" 'j["rounds"][0]')"
	[ "$(jget "$j" '0 <= j["frozen_in_dump_ms"] and j["downtime_ms"] >= j["restore_ms"] + j["frozen_in_dump_ms"]')" = True ] ||
		bad+=" downtime $(jget "$j" 'j["downtime_ms"]')"
	new=$(jget "$j" 'j["restored_pid"]')
	[ "$new" = "$old" ] || bad+=" restored as $new, not $old"
	# a row per process of the tree (migwork: one), and nothing CRIU refused
	[ "$(jget "$j" '[p["pid"] for p in j["processes"]] == [j["pid"]] and j["processes"][0]["comm"] == "migwork" and j["processes_total"]["count"] == 1 and j["preflight"]["refused"] == 0')" = True ] ||
		bad+=" processes: $(jget "$j" '(j.get("processes"), j.get("processes_total"), j.get("preflight"))')"
	pids+=("$new")
	kill -TERM "$new"
	wait_gone "$new" 30 || bad+=" the restored target did not finish"
	grep -q "migwork: correct" "$out" || bad+=" restored memory: $(tail -n 1 "$out")"
	[ -z "$bad" ] && ok "$name" || notok "$name" "$bad"
}

test_to_directory() {
	[ -n "$CRIU" ] || { skip migrate_to_directory "no CRIU: $(tail -n1 "$tmp/ensure.err")"; return; }
	start "$tmp/d.out" "$WORKLOADS/migwork" -H 4 -I 4 -C 4 -t 2 || { notok migrate_to_directory "migwork"; return; }
	local p=$P
	"$MEMLENS" migrate -p "$p" --to "$tmp/dest" -D "$tmp/src" --json >"$tmp/d.json" 2>"$tmp/d.err" ||
		{ notok migrate_to_directory "exit $?: $(cat "$tmp/d.err") $(cat "$tmp/d.json")"; return; }
	[ -s "$tmp/dest/1/pages-1.img" ] || ls "$tmp/dest/1"/pages-*.img >/dev/null 2>&1 ||
		{ notok migrate_to_directory "no pages at the destination"; return; }
	ls "$tmp/src/1"/pages-*.img >/dev/null 2>&1 && { notok migrate_to_directory "pages written at the source"; return; }
	check_migration migrate_to_directory "$tmp/d.json" "$tmp/d.out" "$p"
}

# the same with the target profiled from a sample of its pages (migwork's
# memory must arrive intact: sampled heat only moves bytes between rounds)
test_to_directory_sampled() {
	local n=migrate_to_directory_sampled
	[ -n "$CRIU" ] || { skip $n "no CRIU: $(tail -n1 "$tmp/ensure.err")"; return; }
	start "$tmp/ds.out" "$WORKLOADS/migwork" -H 4 -I 4 -C 4 -t 2 || { notok $n "migwork"; return; }
	local p=$P
	"$MEMLENS" migrate -p "$p" --to "$tmp/dests" -D "$tmp/srcs" --sample 1/8 --max-overhead 2 \
		--json >"$tmp/ds.json" 2>"$tmp/ds.err" ||
		{ notok $n "exit $?: $(cat "$tmp/ds.err") $(cat "$tmp/ds.json")"; return; }
	check_migration $n "$tmp/ds.json" "$tmp/ds.out" "$p"
}

# and with the sample's size chosen from the estimates' error (--max-error)
test_to_directory_error_bound() {
	local n=migrate_to_directory_error_bound
	[ -n "$CRIU" ] || { skip $n "no CRIU: $(tail -n1 "$tmp/ensure.err")"; return; }
	start "$tmp/de.out" "$WORKLOADS/migwork" -H 4 -I 4 -C 4 -t 2 || { notok $n "migwork"; return; }
	local p=$P
	"$MEMLENS" migrate -p "$p" --to "$tmp/deste" -D "$tmp/srcse" --max-error 5 --sample 1/8 \
		--json >"$tmp/de.json" 2>"$tmp/de.err" ||
		{ notok $n "exit $?: $(cat "$tmp/de.err") $(cat "$tmp/de.json")"; return; }
	check_migration $n "$tmp/de.json" "$tmp/de.out" "$p"
}

test_between_netns() {
	[ -n "$CRIU" ] || { skip migrate_between_netns "no CRIU: $(tail -n1 "$tmp/ensure.err")"; return; }
	if ! ip netns add "$ns_a" 2>"$tmp/ns.err" || ! ip netns add "$ns_b" 2>>"$tmp/ns.err"; then
		skip migrate_between_netns "cannot create network namespaces: $(cat "$tmp/ns.err")"
		return
	fi
	ip link add "mv$$a" type veth peer name "mv$$b" &&
		ip link set "mv$$a" netns "$ns_a" && ip link set "mv$$b" netns "$ns_b" &&
		ip -n "$ns_a" addr add 10.213.0.1/24 dev "mv$$a" && ip -n "$ns_b" addr add 10.213.0.2/24 dev "mv$$b" &&
		ip -n "$ns_a" link set "mv$$a" up && ip -n "$ns_b" link set "mv$$b" up &&
		ip -n "$ns_a" link set lo up && ip -n "$ns_b" link set lo up ||
		{ skip migrate_between_netns "cannot set up the veth pair"; return; }
	local in_a=(nsenter --net=/run/netns/"$ns_a") in_b=(nsenter --net=/run/netns/"$ns_b") rp rc
	"${in_b[@]}" "$MEMLENS" migrate --receive --listen 10.213.0.2:7411 -D "$tmp/nsdest" \
		>"$tmp/recv.out" 2>&1 &
	rp=$!
	pids+=("$rp")
	wait_for_line "$tmp/recv.out" receiving 10
	start "$tmp/n.out" "${in_a[@]}" "$WORKLOADS/migwork" -H 4 -I 4 -C 4 -t 2 ||
		{ notok migrate_between_netns "migwork"; return; }
	local p=$P
	"${in_a[@]}" "$MEMLENS" migrate -p "$p" --to 10.213.0.2:7411 -D "$tmp/nssrc" --json \
		>"$tmp/n.json" 2>"$tmp/n.err"
	rc=$?
	wait "$rp"
	[ $rc -eq 0 ] || { notok migrate_between_netns "exit $rc: $(cat "$tmp/n.err") $(cat "$tmp/recv.out")"; return; }
	local new
	new=$(jget "$tmp/n.json" 'j["restored_pid"]')
	[ "$(ip netns identify "$new")" = "$ns_b" ] ||
		{ notok migrate_between_netns "restored pid $new is not in $ns_b"; return; }
	check_migration migrate_between_netns "$tmp/n.json" "$tmp/n.out" "$p"
}

# --postcopy refuses before anything is frozen: without soft-dirty (this
# kernel), or, to a directory here, for a tree in this PID namespace (its
# PIDs stay taken at the source until every page has arrived)
test_postcopy_refused() {
	local rc bad= j=$tmp/pc.json
	[ -n "$CRIU" ] || { skip migrate_postcopy_refused "no CRIU: $(tail -n1 "$tmp/ensure.err")"; return; }
	start "$tmp/pc.out" "$WORKLOADS/migwork" -H 4 -I 4 -C 0 || { notok migrate_postcopy_refused "migwork"; return; }
	"$MEMLENS" migrate -p "$P" --to "$tmp/pc-dest" -D "$tmp/pc-src" --postcopy --json >"$j" 2>"$tmp/pc.err"
	rc=$?
	if "$CRIU" check --feature mem_dirty_track >/dev/null 2>&1; then
		[ $rc -eq 2 ] && grep -q "own PID namespace" "$tmp/pc.err" || bad="exit $rc: $(cat "$tmp/pc.err")"
	else
		[ $rc -eq 1 ] && grep -q "soft-dirty.*Nothing was frozen" "$tmp/pc.err" || bad="exit $rc: $(cat "$tmp/pc.err")"
	fi
	[ "$(jget "$j" 'j["ok"] or j["rounds"] != [] or "error" not in j')" = False ] || bad+=" json: $(cat "$j")"
	[ -e "$tmp/pc-src/1" ] && bad+=" CRIU ran"
	grep -q "^migrating" "$tmp/pc.err" && bad+=" it started"
	# -m 0: no pre-dump, so no soft-dirty needed; refused here for the PID
	# namespace (or the lazy server's pipes), still before anything is frozen
	"$MEMLENS" migrate -p "$P" --to "$tmp/pc-dest" -D "$tmp/pc-src" --postcopy -m 0 --json \
		>"$j" 2>"$tmp/pc0.err"
	rc=$?
	[ $rc -ne 0 ] && ! grep -q "soft-dirty" "$tmp/pc0.err" &&
		grep -qE "own PID namespace|pipe-max-size" "$tmp/pc0.err" || bad+=" -m 0: exit $rc: $(cat "$tmp/pc0.err")"
	[ -e "$tmp/pc-src/1" ] && bad+=" -m 0: CRIU ran"
	t_gone "$P" && bad+=" the target died"
	grep -q "State:.*T" /proc/"$P"/status && bad+=" the target is stopped"
	kill "$P"
	[ -z "$bad" ] && ok migrate_postcopy_refused || notok migrate_postcopy_refused "$bad"
}

# refused before its first round (a file lock the target holds, which CRIU
# refuses without --file-locks): the receiver is told, says why and exits
# instead of waiting for a migration that will not come
test_refused_tells_receiver() {
	local rc rrc rp p port bad=
	[ -n "$CRIU" ] || { skip migrate_refused_tells_receiver "no CRIU: $(tail -n1 "$tmp/ensure.err")"; return; }
	port=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	"$MEMLENS" migrate --receive --listen 127.0.0.1:"$port" -D "$tmp/ab-dest" >"$tmp/ab.recv" 2>&1 &
	rp=$!
	pids+=("$rp")
	wait_for_line "$tmp/ab.recv" receiving 10
	setsid flock "$tmp/ab.lock" sleep 300 </dev/null >/dev/null 2>&1 &
	p=$!
	pids+=("$p")
	t_wait 10 pgrep -P "$p" sleep >/dev/null
	"$MEMLENS" migrate -p "$p" --to 127.0.0.1:"$port" -D "$tmp/ab-src" >"$tmp/ab.out" 2>"$tmp/ab.err"
	rc=$?
	[ $rc -eq 6 ] || bad+=" migrate: exit $rc, not 6: $(cat "$tmp/ab.err")"
	if t_wait 10 t_gone "$rp"; then
		wait "$rp"
		rrc=$?
		[ $rrc -eq 1 ] || bad+=" the receiver's exit $rrc, not 1"
		grep -q "the source refused the migration before its first round, nothing was sent: CRIU would refuse the process tree of pid $p" "$tmp/ab.recv" ||
			bad+=" the receiver said: $(tail -n 2 "$tmp/ab.recv")"
	else
		bad+=" the receiver still waits: $(cat "$tmp/ab.recv")"
		kill "$rp" 2>/dev/null
	fi
	[ -e "$tmp/ab-src/1" ] && bad+=" CRIU ran"
	t_gone "$p" && bad+=" the target died"
	kill "$p" 2>/dev/null
	[ -z "$bad" ] && ok migrate_refused_tells_receiver || notok migrate_refused_tells_receiver "$bad"
}

test_usage
test_no_target
test_postcopy_refused
test_refused_tells_receiver
test_bad_destination
test_to_directory
test_to_directory_sampled
test_to_directory_error_bound
test_between_netns
