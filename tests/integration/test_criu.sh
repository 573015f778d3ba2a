#!/bin/bash
# memlens checkpoint / restore / migrate-model with a real CRIU (issue 3).
# Builds CRIU with scripts/ensure-criu.sh when there is none (once; cached).
set -u
. "$(dirname "$0")/../lib.bash"
cd "$(dirname "$0")/../.." || exit 1
MEMLENS=${MEMLENS:-$PWD/build/memlens}
WORKLOADS=${WORKLOADS:-$PWD/build/workloads}
PY=/usr/bin/python3
tmp=$(mktemp -d /tmp/memlens-criu-test.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
t_at_exit cleanup


# start a workload in its own session, stdio to files; sets $P
start() {
	local out=$1; shift
	setsid "$@" </dev/null >"$out" 2>&1 &
	P=$!
	pids+=("$P")
	wait_for_file "$out" 10
}

# alive and not stopped
running() {
	local st
	st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
	[[ "$st" != [TtZX] ]]
}

# jget FILE EXPR: evaluate a Python expression on the JSON object j
jget() {
	"$PY" -c 'import json,sys; j=json.loads(open(sys.argv[1]).read()); print(eval(sys.argv[2]))' "$1" "$2"
}

CRIU=$(scripts/ensure-criu.sh 2>"$tmp/ensure.err")
if [ -z "$CRIU" ]; then
	CRIU_MISSING="no working CRIU: $(tail -n1 "$tmp/ensure.err")"
else
	CRIU_MISSING=
	export MEMLENS_CRIU=$CRIU
fi
need_criu() {
	[ -z "$CRIU_MISSING" ] && return 0
	skip "$1" "$CRIU_MISSING"
	return 1
}

# --- error paths that need no CRIU ------------------------------------------

test_no_criu() {
	start "$tmp/nc.out" "$WORKLOADS/memwrite" -m 4
	MEMLENS_CRIU=/nonexistent/criu "$MEMLENS" checkpoint -p "$P" -D "$tmp/nc" -d 0 \
		>"$tmp/nc.stdout" 2>"$tmp/nc.err"
	local rc=$?
	if [ $rc -ne 5 ]; then notok no_criu "exit $rc, want 5"; return; fi
	if ! grep -q -- "--criu PATH or MEMLENS_CRIU" "$tmp/nc.err"; then notok no_criu "unclear message: $(cat "$tmp/nc.err")"; return; fi
	running "$P" || { notok no_criu "target not running"; return; }
	"$MEMLENS" checkpoint -p "$P" -D "$tmp/nc" -d 0 --criu /bin/false 2>"$tmp/nc2.err"
	rc=$?
	if [ $rc -ne 5 ] || ! grep -q "fails \`criu check\`" "$tmp/nc2.err"; then
		notok no_criu "--criu /bin/false: exit $rc: $(cat "$tmp/nc2.err")"; return
	fi
	running "$P" && ok no_criu || notok no_criu "target not running"
	kill "$P"
}

test_usage_errors() {
	local rc
	"$MEMLENS" checkpoint -D "$tmp/u" 2>/dev/null; rc=$?
	[ $rc -eq 2 ] || { notok usage_errors "no -p: exit $rc"; return; }
	"$MEMLENS" checkpoint -p 1 -D "$tmp/u" --page-server nohost 2>/dev/null; rc=$?
	[ $rc -eq 2 ] || { notok usage_errors "bad --page-server: exit $rc"; return; }
	"$MEMLENS" restore -D /nonexistent/images 2>/dev/null; rc=$?
	[ $rc -eq 2 ] || { notok usage_errors "restore of a missing dir: exit $rc"; return; }
	"$MEMLENS" migrate-model /nonexistent.jsonl --bandwidth 1 --round-interval 1 2>/dev/null; rc=$?
	[ $rc -eq 2 ] || { notok usage_errors "migrate-model missing file: exit $rc"; return; }
	"$MEMLENS" migrate-model "$tmp/x" --round-interval 0 2>"$tmp/u.err"; rc=$?
	[ $rc -eq 2 ] && grep -q "cannot read $tmp/x" "$tmp/u.err" ||
		{ notok usage_errors "migrate-model: a missing file after a bad option: exit $rc"; return; }
	"$MEMLENS" checkpoint --help | grep -q -- "--page-server HOST:PORT" || { notok usage_errors "help"; return; }
	ok usage_errors
}

# --parent that names no images is refused before profiling or CRIU
test_parent_refused() {
	local rc d
	start "$tmp/pr.out" "$WORKLOADS/memwrite" -m 4
	mkdir -p "$tmp/pr-empty" "$tmp/pr-d"
	: >"$tmp/pr-file"
	for d in "$tmp/pr-none:does not exist" "$tmp/pr-empty:holds no CRIU images (no inventory.img)" \
		"$tmp/pr-file:is not a directory"; do
		# -d 60: a check after the profiling would take a minute
		timeout 30 "$MEMLENS" checkpoint -p "$P" -D "$tmp/pr-d" --parent "${d%%:*}" -d 60 \
			>"$tmp/pr.stdout" 2>"$tmp/pr.err"
		rc=$?
		if [ $rc -ne 2 ] || ! grep -qF -- "--parent ${d%%:*} ${d#*:}" "$tmp/pr.err" ||
		   ! grep -qF "give " "$tmp/pr.err" || [ -s "$tmp/pr.stdout" ]; then
			notok parent_refused "--parent ${d%%:*}: exit $rc: $(cat "$tmp/pr.err")"; return
		fi
	done
	# not even the images directory is made
	[ -z "$(ls -A "$tmp/pr-d")" ] || { notok parent_refused "-D DIR written: $(ls "$tmp/pr-d")"; return; }
	# images of their own: the parent is not the new -D DIR
	mkdir -p "$tmp/pr-self"; : >"$tmp/pr-self/inventory.img"
	timeout 30 "$MEMLENS" checkpoint -p "$P" -D "$tmp/pr-self" --parent "$tmp/pr-self/" -d 60 \
		>/dev/null 2>"$tmp/pr.err"
	rc=$?
	[ $rc -eq 2 ] && grep -qF "is the -D directory itself" "$tmp/pr.err" ||
		{ notok parent_refused "--parent = -D: exit $rc: $(cat "$tmp/pr.err")"; return; }
	running "$P" && ok parent_refused || notok parent_refused "target not running"
	kill "$P"
}

# --- with CRIU ---------------------------------------------------------------

test_no_such_pid() {
	need_criu no_such_pid || return
	"$MEMLENS" checkpoint -p 4194303 -D "$tmp/np" -d 0 2>"$tmp/np.err"
	local rc=$?
	[ $rc -eq 3 ] && grep -q "no process" "$tmp/np.err" && ok no_such_pid ||
		notok no_such_pid "exit $rc: $(cat "$tmp/np.err")"
}

test_pre_dump_refused() {
	need_criu pre_dump_refused || return
	if "$CRIU" check --feature mem_dirty_track >/dev/null 2>&1; then
		skip pre_dump_refused "this kernel has soft-dirty: pre-dump is allowed here"
		return
	fi
	start "$tmp/pd.out" "$WORKLOADS/memwrite" -m 4
	"$MEMLENS" checkpoint -p "$P" -D "$tmp/pd" --pre-dump -d 0 2>"$tmp/pd.err"
	local rc=$?
	if [ $rc -ne 5 ] || ! grep -q "soft-dirty" "$tmp/pd.err" || ! grep -q "CRIU was not run" "$tmp/pd.err"; then
		notok pre_dump_refused "exit $rc: $(cat "$tmp/pd.err")"
	elif [ -e "$tmp/pd/pre-dump.log" ]; then
		notok pre_dump_refused "CRIU ran anyway"
	elif ! running "$P"; then
		notok pre_dump_refused "target not running"
	else
		ok pre_dump_refused
	fi
	kill "$P"
}

test_checkpoint_leave_running() {
	need_criu checkpoint_leave_running || return
	start "$tmp/lr.out" "$WORKLOADS/memwrite" -m 16
	"$MEMLENS" checkpoint -p "$P" -D "$tmp/lr" -R -d 4 --resume-seconds 2 --json \
		>"$tmp/lr.json" 2>"$tmp/lr.err"
	local rc=$? j="$tmp/lr.json" bad=
	if [ $rc -ne 0 ]; then
		notok checkpoint_leave_running "exit $rc: $(cat "$tmp/lr.err") $(cat "$j")"; kill "$P"; return
	fi
	[ "$(jget "$j" 'j["ok"]')" = True ] || bad="not ok in JSON"
	[ -s "$tmp/lr/inventory.img" ] && ls "$tmp/lr"/pages-*.img >/dev/null 2>&1 || bad="images missing"
	# 16 MiB = 4096 pages of the buffer, plus a few of stack, libc...
	[ "$(jget "$j" '4096 <= j["pages_written"] <= 4096 + 512')" = True ] ||
		bad="pages_written $(jget "$j" 'j["pages_written"]')"
	[ "$(jget "$j" 'j["image_bytes"] >= 16 << 20')" = True ] || bad="image_bytes too small"
	[ "$(jget "$j" 'j["profiler"]["reinit"]')" = True ] || bad="profiler not re-initialised"
	[ "$(jget "$j" 'j["profiler"]["resumed_intervals"] >= 1')" = True ] || bad="profiling did not resume"
	# after the re-init the whole buffer is rewritten every interval: 4096 pages
	[ "$(jget "$j" '4096 <= j["profiler"]["resumed_dirty_pages"] <= 4096 + 64')" = True ] ||
		bad="resumed_dirty_pages $(jget "$j" 'j["profiler"].get("resumed_dirty_pages")')"
	[ "$(jget "$j" 'sum(int(e,16)-int(s,16) for s,e in j["hot_ranges"]) >= 16 << 20')" = True ] ||
		bad="hot ranges do not cover the buffer: $(jget "$j" 'j["hot_ranges"]')"
	running "$P" || bad="target not running after the dump"
	[ -z "$bad" ] && ok checkpoint_leave_running || notok checkpoint_leave_running "$bad"
	# a dump writes every VMA (CRIU's exclude options apply to pre-dumps):
	# the hot ranges are reported, not passed, and the report says so
	if jget "$j" 'j["exclusion"]["note"]' | grep -q "a dump writes every VMA" &&
	   [ "$(jget "$j" 'j["exclusion"]["applied"]')" = False ] &&
	   ! jget "$j" 'j["command"]' | grep -q -- "--exclude\|--no-parent"; then
		ok dump_sends_hot_ranges
	else
		notok dump_sends_hot_ranges "$(jget "$j" 'j["exclusion"]') / $(jget "$j" 'j["command"]')"
	fi
	kill "$P"
}

# A target whose session leader is outside the PID namespace memlens runs
# in (a CI runner's, a container's): refused before CRIU runs, with advice.
test_session_outside_pidns() {
	need_criu session_outside_pidns || return
	if ! unshare --pid --fork --mount-proc true 2>/dev/null; then
		skip session_outside_pidns "unshare --pid is not allowed here"
		return
	fi
	unshare --pid --fork --mount-proc /bin/bash -c '
		"$1" -m 4 </dev/null >/dev/null 2>&1 &
		p=$!
		# until the child has exec()ed the workload
		for _ in $(seq 200); do [ "$(readlink /proc/$p/exe)" = "$1" ] && break; sleep 0.02; done
		"$2" checkpoint -p $p -D "$3" -R -d 0 2>"$4"
		echo "rc=$?" >>"$4"
		st=$(awk "{print \$3}" /proc/$p/stat)
		echo "state=$st sid=$(awk "{print \$6}" /proc/$p/stat)" >>"$4"
		kill $p' _ "$WORKLOADS/memwrite" "$MEMLENS" "$tmp/so" "$tmp/so.err"
	if ! grep -q "^rc=6$" "$tmp/so.err" || ! grep -q "has no session leader that CRIU can see" "$tmp/so.err" ||
		! grep -q "setsid" "$tmp/so.err"; then
		notok session_outside_pidns "$(cat "$tmp/so.err")"
	elif ! grep -q "^state=[SR] sid=0$" "$tmp/so.err"; then
		notok session_outside_pidns "target not running as before: $(tail -n1 "$tmp/so.err")"
	elif ls "$tmp/so"/*.img >/dev/null 2>&1; then
		notok session_outside_pidns "CRIU ran anyway"
	else
		ok session_outside_pidns
	fi
}

test_criu_fails_target_kept() {
	need_criu criu_fails_target_kept || return
	start "$tmp/cf.out" "$WORKLOADS/memwrite" -m 4
	# nothing listens on port 1: CRIU's dump fails
	"$MEMLENS" checkpoint -p "$P" -D "$tmp/cf" -R -d 2 --page-server 127.0.0.1:1 --json \
		>"$tmp/cf.json" 2>"$tmp/cf.err"
	local rc=$?
	sleep 0.2	# time a target CRIU had harmed would need to die: it must not
	if [ $rc -ne 1 ]; then
		notok criu_fails_target_kept "exit $rc, want 1: $(cat "$tmp/cf.err")"
	elif ! grep -q "criu dump failed (exit status" "$tmp/cf.err" || ! grep -q "$tmp/cf/dump.log" "$tmp/cf.err"; then
		notok criu_fails_target_kept "unclear message: $(cat "$tmp/cf.err")"
	elif [ "$(jget "$tmp/cf.json" 'j["ok"] == False and j["log"].endswith("dump.log")')" != True ]; then
		notok criu_fails_target_kept "JSON: $(cat "$tmp/cf.json")"
	elif ! running "$P"; then
		notok criu_fails_target_kept "target not running after CRIU failed"
	elif [ "$(jget "$tmp/cf.json" 'j["profiler"]["reinit"]')" != True ]; then
		notok criu_fails_target_kept "profiler not re-initialised after the failure"
	else
		ok criu_fails_target_kept
	fi
	kill "$P"
}

# CRIU stuck (a page server that accepts and never answers): killed at the
# time limit; the target, frozen mid-dump, carries on and ends correct.
test_criu_timeout_target_kept() {
	need_criu criu_timeout_target_kept || return
	local port=$((20000 + ($$ + 7) % 20000)) rc srv
	"$PY" -c 'import socket,sys,time
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(1); print("up", flush=True)
c, _ = s.accept(); time.sleep(120)' "$port" >"$tmp/srv.out" 2>&1 &
	srv=$!
	pids+=("$srv")
	wait_for_file "$tmp/srv.out" 10
	# it runs until told to finish (SIGUSR1), however long the checkpoint takes
	start "$tmp/to.out" "$WORKLOADS/cksum_worker" -m 16 -n 100000000 -t 20
	"$MEMLENS" checkpoint -p "$P" -D "$tmp/to" -R -d 1 --page-server "127.0.0.1:$port" \
		--timeout 3 --json >"$tmp/to.json" 2>"$tmp/to.err"
	rc=$?
	kill "$srv" 2>/dev/null
	if [ $rc -ne 1 ] || ! grep -q "did not finish within 3 s and was killed" "$tmp/to.err"; then
		notok criu_timeout_target_kept "exit $rc: $(cat "$tmp/to.err")"; kill "$P"; return
	fi
	if [ "$(jget "$tmp/to.json" 'j["timed_out"] and j["profiler"]["reinit"]')" != True ]; then
		notok criu_timeout_target_kept "JSON: $(cat "$tmp/to.json")"; kill "$P"; return
	fi
	running "$P" || { notok criu_timeout_target_kept "target not running"; return; }
	kill -USR1 "$P"
	wait "$P"
	rc=$?
	[ $rc -eq 0 ] && grep -q "cksum_worker: correct steps=[1-9]" "$tmp/to.out" &&
		ok criu_timeout_target_kept || notok criu_timeout_target_kept "worker exit $rc: $(cat "$tmp/to.out")"
}

test_target_exits_mid_profile() {
	need_criu target_exits_mid_profile || return
	# the target exits once the profiler has registered its memory (a "uw"
	# VMA), however long the CRIU probe and the attach took, and well
	# before profiling ends
	start "$tmp/tx.out" "$WORKLOADS/memwrite" -m 4
	local tgt=$P
	"$MEMLENS" checkpoint -p "$P" -D "$tmp/tx" -d 600 2>"$tmp/tx.err" >/dev/null &
	local ml=$!
	t_wait 300 sh -c "grep -q ' uw' /proc/$tgt/smaps || ! kill -0 $ml" 2>/dev/null
	if grep -q " uw" "/proc/$tgt/smaps"; then
		kill "$tgt"
	else
		echo "# never profiled: $(cat "$tmp/tx.err")"
	fi
	wait $ml
	local rc=$?
	[ $rc -eq 3 ] && grep -q "exited while being profiled" "$tmp/tx.err" &&
		ok target_exits_mid_profile || notok target_exits_mid_profile "exit $rc: $(cat "$tmp/tx.err")"
}

# wait up to $2 s for pid $1 to go away
wait_gone() {
	for _ in $(seq $(($2 * 10))); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done
	return 1
}

test_cksum_detects_corruption() {
	"$WORKLOADS/cksum_worker" -m 2 -n 20 -t 0 -x >"$tmp/x.out" 2>&1
	local rc=$?
	[ $rc -eq 1 ] && grep -q WRONG "$tmp/x.out" && ok cksum_detects_corruption ||
		notok cksum_detects_corruption "exit $rc: $(cat "$tmp/x.out")"
}

test_dump_kill_restore() {
	need_criu dump_kill_restore || return
	start "$tmp/dk.out" "$WORKLOADS/cksum_worker" -m 16 -n 250 -t 20
	sleep 1	# the thing tested: a target that has been writing for a while
	local old=$P rc
	"$MEMLENS" checkpoint -p "$old" -D "$tmp/dk" -d 1 >"$tmp/dk.stdout" 2>"$tmp/dk.err"
	rc=$?
	[ $rc -eq 0 ] || { notok dump_kill_restore "checkpoint exit $rc: $(cat "$tmp/dk.err")"; return; }
	wait "$old" 2>/dev/null	# CRIU killed it after the dump
	kill -0 "$old" 2>/dev/null && { notok dump_kill_restore "target still alive after a dump without -R"; return; }
	grep -q correct "$tmp/dk.out" && { notok dump_kill_restore "finished before the dump"; return; }
	"$MEMLENS" restore -D "$tmp/dk" --json >"$tmp/dk.json" 2>"$tmp/dk.rerr"
	rc=$?
	[ $rc -eq 0 ] || { notok dump_kill_restore "restore exit $rc: $(cat "$tmp/dk.rerr")"; return; }
	local new
	new=$(jget "$tmp/dk.json" 'j["pid"]')
	pids+=("$new")
	[ "$new" -gt 0 ] 2>/dev/null || { notok dump_kill_restore "no pid: $(cat "$tmp/dk.json")"; return; }
	wait_gone "$new" 60 || { notok dump_kill_restore "restored process $new did not finish"; return; }
	if grep -q "cksum_worker: correct steps=250" "$tmp/dk.out"; then
		ok dump_kill_restore
	else
		notok dump_kill_restore "restored worker output: $(cat "$tmp/dk.out")"
	fi
}

# Profiled with a sample of the pages (--sample): the hot memory is an
# estimate, which may only move bytes between a pre-dump and the dump;
# the dump restores a worker that finishes with its checksums right
test_sampled_dump_kill_restore() {
	local n=sampled_dump_kill_restore
	need_criu $n || return
	start "$tmp/sk.out" "$WORKLOADS/cksum_worker" -m 16 -n 250 -t 20
	local old=$P rc new
	"$MEMLENS" checkpoint -p "$old" -D "$tmp/sk" -d 2 -i 200 --sample 1/4 --max-overhead 5 \
		>"$tmp/sk.stdout" 2>"$tmp/sk.err"
	rc=$?
	[ $rc -eq 0 ] || { notok $n "checkpoint exit $rc: $(cat "$tmp/sk.err")"; return; }
	wait "$old" 2>/dev/null
	grep -q correct "$tmp/sk.out" && { notok $n "finished before the dump"; return; }
	"$MEMLENS" restore -D "$tmp/sk" --json >"$tmp/sk.json" 2>"$tmp/sk.rerr"
	rc=$?
	[ $rc -eq 0 ] || { notok $n "restore exit $rc: $(cat "$tmp/sk.rerr")"; return; }
	new=$(jget "$tmp/sk.json" 'j["pid"]')
	pids+=("$new")
	wait_gone "$new" 60 || { notok $n "restored process $new did not finish"; return; }
	grep -q "cksum_worker: correct steps=250" "$tmp/sk.out" && ok $n ||
		notok $n "restored worker output: $(cat "$tmp/sk.out")"
}

test_page_server() {
	need_criu page_server || return
	local port=$((20000 + $$ % 20000)) rc
	mkdir -p "$tmp/ps" "$tmp/psl"
	start "$tmp/ps.out" "$WORKLOADS/cksum_worker" -m 8 -n 200 -t 20
	timeout 30 "$CRIU" page-server -D "$tmp/ps" --address 127.0.0.1 --port "$port" -d \
		-o page-server.log >/dev/null 2>&1 || { notok page_server "criu page-server did not start"; return; }
	"$MEMLENS" checkpoint -p "$P" -D "$tmp/psl" -d 0 --page-server "127.0.0.1:$port" \
		>"$tmp/ps.stdout" 2>"$tmp/ps.err"
	rc=$?
	[ $rc -eq 0 ] || { notok page_server "checkpoint exit $rc: $(cat "$tmp/ps.err")"; return; }
	wait "$P" 2>/dev/null
	ls "$tmp/ps"/pages-*.img >/dev/null 2>&1 || { notok page_server "no pages at the page server"; return; }
	ls "$tmp/psl"/pages-*.img >/dev/null 2>&1 && { notok page_server "pages written locally"; return; }
	cp -n "$tmp/psl"/*.img "$tmp/ps"/
	"$MEMLENS" restore -D "$tmp/ps" --json >"$tmp/ps.json" 2>"$tmp/ps.rerr" ||
		{ notok page_server "restore: $(cat "$tmp/ps.rerr")"; return; }
	local new
	new=$(jget "$tmp/ps.json" 'j["pid"]')
	pids+=("$new")
	wait_gone "$new" 60 || { notok page_server "restored process did not finish"; return; }
	grep -q "cksum_worker: correct steps=200" "$tmp/ps.out" && ok page_server ||
		notok page_server "output: $(cat "$tmp/ps.out")"
}

test_restore_fails_clearly() {
	need_criu restore_fails_clearly || return
	mkdir -p "$tmp/empty"
	"$MEMLENS" restore -D "$tmp/empty" 2>"$tmp/re.err"
	local rc=$?
	[ $rc -eq 1 ] && grep -q "criu restore failed" "$tmp/re.err" && grep -q "restore.log" "$tmp/re.err" &&
		ok restore_fails_clearly || notok restore_fails_clearly "exit $rc: $(cat "$tmp/re.err")"
}

test_migrate_model_real_trace() {
	local rc
	start "$tmp/mw.out" "$WORKLOADS/memwrite" -m 32
	"$MEMLENS" writes -p "$P" -d 7 -q --record "$tmp/t.jsonl" >/dev/null 2>"$tmp/w.err" ||
		{ notok migrate_model_real_trace "writes --record: $(cat "$tmp/w.err")"; kill "$P"; return; }
	kill "$P"
	"$MEMLENS" migrate-model "$tmp/t.jsonl" --bandwidth 100 --round-interval 2 --json \
		>"$tmp/mm.json" 2>"$tmp/mm.err"
	rc=$?
	[ $rc -eq 0 ] || { notok migrate_model_real_trace "exit $rc: $(cat "$tmp/mm.err")"; return; }
	[ "$(wc -l <"$tmp/mm.json")" -eq 1 ] || { notok migrate_model_real_trace "not one line"; return; }
	local check='j["type"]=="migrate_model" and j["bandwidth_mbps"]==100 and j["round_interval_s"]==2 and [p["name"] for p in j["policies"]]==["none","hot-vma","hot-range"] and j["freeze_overhead_s"]==0 and j["dump_fixed_s"]==0.1 and j["restore_fixed_s"]==0.2 and j["restore_bandwidth_mbps"]==1000 and j["lazy_bandwidth_mbps"]==100 and j["lazy_faults"]==0 and j["lazy_fault_ms"]==0 and all(set(p)=={"name","rounds","total_bytes","final_round_bytes","downtime_ms","postcopy_downtime_ms","postcopy_last_page_ms","dump_ms","restore_ms","restored_bytes","lazy_bytes"} and abs(p["postcopy_downtime_ms"]-300)<1e-6 and p["lazy_bytes"]==p["restored_bytes"] and abs(p["postcopy_last_page_ms"]-300-p["lazy_bytes"]/(100*1048576)*1000)<1e-6 and p["rounds"][-1]["bytes"]==p["final_round_bytes"] and sum(r["bytes"] for r in p["rounds"])==p["total_bytes"] and abs(p["dump_ms"]-100-p["final_round_bytes"]/(100*1048576)*1000)<1e-6 and abs(p["restore_ms"]-200-p["restored_bytes"]/(1000*1048576)*1000)<1e-6 and abs(p["downtime_ms"]-p["dump_ms"]-p["restore_ms"])<1e-6 for p in j["policies"])'
	[ "$(jget "$tmp/mm.json" "$check")" = True ] || { notok migrate_model_real_trace "shape: $(cat "$tmp/mm.json")"; return; }
	# the last pre-dump leaves nothing out: every policy's final round is
	# none's, what was written after it
	[ "$(jget "$tmp/mm.json" '"keep_hot_out" not in j and len(set(p["final_round_bytes"] for p in j["policies"])) == 1')" = True ] ||
		{ notok migrate_model_real_trace "final rounds differ: $(cat "$tmp/mm.json")"; return; }
	# memwrite rewrites its 32 MiB buffer all the time: every pre-dump resends it
	# without exclusion, and, kept out of the last pre-dump too, leaves it
	# for the final round with it
	"$MEMLENS" migrate-model "$tmp/t.jsonl" --bandwidth 100 --round-interval 2 --keep-hot-out --json \
		>"$tmp/mmk.json" 2>"$tmp/mm.err" ||
		{ notok migrate_model_real_trace "--keep-hot-out: $(cat "$tmp/mm.err")"; return; }
	[ "$(jget "$tmp/mmk.json" 'j["keep_hot_out"] is True and j["policies"][1]["total_bytes"] < j["policies"][0]["total_bytes"] and j["policies"][0]["final_round_bytes"] >= 32 << 20')" = True ] ||
		{ notok migrate_model_real_trace "hot-vma sent no less than none: $(cat "$tmp/mmk.json")"; return; }
	"$MEMLENS" migrate-model "$tmp/t.jsonl" --bandwidth 100 --round-interval 2 | grep -q "^hot-range" ||
		{ notok migrate_model_real_trace "human output"; return; }
	echo "# migrate-model memwrite 32 MiB: $(jget "$tmp/mm.json" '" ".join("%s total=%d final=%d" % (p["name"], p["total_bytes"], p["final_round_bytes"]) for p in j["policies"])')"
	ok migrate_model_real_trace
}

# A target connected to an outside unix socket: refused before anything is
# frozen (exit 6), naming the option it needs; --criu-opt passes that through.
test_criu_opt_passthrough() {
	local rc
	"$MEMLENS" checkpoint -p 1 -D "$tmp/x" --criu-opt --tree=5 >/dev/null 2>"$tmp/co.err"
	rc=$?
	[ $rc -eq 2 ] && grep -q "memlens sets --tree itself" "$tmp/co.err" &&
		ok criu_opt_owned_refused || notok criu_opt_owned_refused "exit $rc: $(cat "$tmp/co.err")"
	"$MEMLENS" restore -D "$tmp/x" --criu-opt "tcp-established" >/dev/null 2>"$tmp/co.err"
	rc=$?
	[ $rc -eq 2 ] && grep -q "takes one long CRIU option" "$tmp/co.err" &&
		ok criu_opt_malformed_refused || notok criu_opt_malformed_refused "exit $rc: $(cat "$tmp/co.err")"
	need_criu criu_opt_ext_unix_sk || return
	"$PY" - "$MEMLENS" "$WORKLOADS/memwrite" "$tmp" >"$tmp/usk.out" 2>&1 <<'PYEOF'
import socket, subprocess, sys, time
memlens, memwrite, tmp = sys.argv[1:]
peer = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
peer.bind(tmp + "/peer.sock")
mine = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
mine.connect(tmp + "/peer.sock")
p = subprocess.Popen([memwrite, "-m", "4"], pass_fds=(mine.fileno(),),
                     stdout=subprocess.DEVNULL, start_new_session=True)
time.sleep(0.3)
for name, extra in (("plain", []), ("ext", ["--criu-opt", "--ext-unix-sk"])):
    r = subprocess.run([memlens, "checkpoint", "-p", str(p.pid), "-D", tmp + "/usk-" + name,
                        "-R", "-d", "0"] + extra, capture_output=True, text=True)
    print(name, r.returncode, r.stderr.replace("\n", " ")[-400:])
print("alive", p.poll() is None)
mine.send(b"still connected")
print("peer got", peer.recv(64).decode())
p.kill()
PYEOF
	if grep -q "^plain 6 .*nothing was frozen.*--ext-unix-sk" "$tmp/usk.out" && grep -q "^ext 0 " "$tmp/usk.out" &&
	   grep -q "^alive True" "$tmp/usk.out" && grep -q "^peer got still connected" "$tmp/usk.out"; then
		ok criu_opt_ext_unix_sk
	else
		notok criu_opt_ext_unix_sk "$(tr '\n' ' ' <"$tmp/usk.out")"
	fi
}

# CRIU's probes: bounded by --timeout, slow is not broken, and a probe that
# passed is kept per CRIU binary and kernel (MEMLENS_CACHE_DIR). A wrapper
# logs each run of the real CRIU and, with CRIU_SLOW_CHECK=S, takes S s to
# answer `criu check`.
test_probe_timeout_and_cache() {
	need_criu probe_cache_reused || return
	local w=$tmp/probe/criu log=$tmp/probe/runs cache=$tmp/probe/cache rc n
	mkdir -p "$tmp/probe"
	printf '#!/bin/sh\necho "$*" >>"%s"\n[ "$1" = check ] && [ -n "${CRIU_SLOW_CHECK:-}" ] && sleep "$CRIU_SLOW_CHECK"\nexec "%s" "$@"\n' \
		"$log" "$CRIU" >"$w"
	chmod 755 "$w"
	start "$tmp/pc.out" "$WORKLOADS/memwrite" -P -m 4
	probe() {	# NAME [ENV=VALUE...] [-- more memlens checkpoint options]
		local name=$1 envs=()
		shift
		while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
		[ "${1:-}" = -- ] && shift
		env MEMLENS_CACHE_DIR="$cache" "${envs[@]}" "$MEMLENS" checkpoint -p "$P" \
			-D "$tmp/probe/$name" -R -d 0 --criu "$w" "$@" >"$tmp/probe/$name.out" 2>&1
	}
	# a `criu check` slower than --timeout: a warning, and the dump goes on
	probe slow CRIU_SLOW_CHECK=4 -- --timeout 2
	rc=$?
	if [ $rc = 0 ] && grep -q "warning: .criu check. did not answer within 2 s" "$tmp/probe/slow.out" &&
		grep -q "^dump of pid $P into .*: ok" "$tmp/probe/slow.out" && running "$P"; then
		ok probe_slow_check_not_a_failure
	else
		notok probe_slow_check_not_a_failure "exit $rc: $(cat "$tmp/probe/slow.out")"
	fi
	[ -z "$(ls "$cache" 2>/dev/null)" ] && ok probe_slow_answer_not_cached ||
		notok probe_slow_answer_not_cached "$(ls -l "$cache")"
	# twice: `criu check` runs the first time only
	: >"$log"
	probe first && probe second
	rc=$?
	n=$(grep -c '^check$' "$log")
	if [ $rc = 0 ] && [ "$n" = 1 ] && [ "$(stat -c %a "$cache")" = 700 ]; then
		ok probe_cache_reused
	else
		notok probe_cache_reused "exit $rc, criu check ran $n times: $(cat "$log")" "$(cat "$tmp/probe/second.out")"
	fi
	# a cache file others may write is not believed
	chmod 666 "$cache"/criu-probe-*
	: >"$log"
	probe hostile
	n=$(grep -c '^check$' "$log")
	[ "$n" = 1 ] && ok probe_cache_writable_by_others_ignored ||
		notok probe_cache_writable_by_others_ignored "criu check ran $n times"
	# nor the answer of another binary (its modification time changed)
	rm -f "$cache"/criu-probe-*
	probe again
	touch -d "1 hour ago" "$w"
	: >"$log"
	probe other
	n=$(grep -c '^check$' "$log")
	[ "$n" = 1 ] && ok probe_cache_per_binary || notok probe_cache_per_binary "criu check ran $n times"
	kill "$P"
}

# Which granularity each CRIU gives, from what it accepts and says: the one
# ensure-criu.sh built with memlens's patches (page), the same CRIU unmodified
# (none: nothing left out), and the fork (vma), where its source is there.
test_granularity_by_criu() {
	local n=granularity_by_criu fork c want got bad=
	need_criu $n || return
	if ! "$CRIU" --help 2>/dev/null | grep -q -- '--exclude-range \[PID:\]'; then
		skip $n "$CRIU is not built with memlens's patches (scripts/ensure-criu.sh builds one)"
		return
	fi
	fork=$(scripts/ensure-criu-exclude.sh 2>/dev/null) || fork=
	local up=$(dirname "$CRIU")/criu-upstream
	[ -x "$up" ] || { echo "# no unmodified CRIU beside $CRIU: the none case is not run"; up=; }
	for c in "$CRIU:page" ${up:+"$up:none"} ${fork:+"$fork:vma"}; do
		want=${c##*:} c=${c%:*}
		[ -x "$c" ] || { bad+=" $c missing;"; continue; }
		"$MEMLENS" check --criu "$c" --json >"$tmp/g.json" 2>/dev/null
		got=$(jget "$tmp/g.json" "next(f['detail'] for f in j['features'] if f['name'] == 'criu_exclude')" 2>/dev/null)
		case $want in
		page) [[ $got == "page granularity"* ]] || bad+=" $c: '$got';" ;;
		vma) [[ $got == "VMA granularity"* ]] || bad+=" $c: '$got';" ;;
		none) [[ $got == "this CRIU accepts neither"* ]] || bad+=" $c: '$got';" ;;
		esac
		echo "# $want: $c: $got"
	done
	[ -z "$fork" ] && echo "# no vma case: the CRIU fork's source is not beside the project"
	[ -z "$bad" ] && ok $n || notok $n "$bad"
}

# Hot pages spread through one VMA (400 runs of 1-4 pages): checkpoint keeps
# them apart as ranges (up to 16384 by default: a merged gap is cold memory
# the freeze would carry), and merges the smallest gaps only beyond
# --hot-ranges. Paced (-P): each interval sees every run written.
test_checkpoint_hot_ranges_apart() {
	local n=checkpoint_hot_ranges_apart j bad= runs lim
	need_criu $n || return
	start "$tmp/hr.out" "$WORKLOADS/memwrite" -x -n 400 -P -m 64
	wait_for_line "$tmp/hr.out" "first pass written" 20
	runs=$(grep -c '^memwrite: run ' "$tmp/hr.out")
	local buf lo hi
	buf=$(awk '/ writes / {print $5}' "$tmp/hr.out")
	lo=${buf%-*} hi=${buf#*-}
	for lim in default 256; do
		j=$tmp/hr-$lim.json
		"$MEMLENS" checkpoint -p "$P" -D "$tmp/hr-$lim" -R -d 3 -i 200 \
			$([ $lim = default ] || echo --hot-ranges $lim) --json >"$j" 2>"$tmp/hr.err" ||
			{ bad="$bad $lim: exit $?: $(cat "$tmp/hr.err")"; continue; }
		# default: every run its own range (a few more outside the buffer:
		# stack, the pacing page); 256: that many in all
		local got want=$runs
		if [ $lim = default ]; then
			got=$(jget "$j" "sum(1 for s, e in j['hot_ranges'] if $lo <= int(s, 16) < $hi)")
		else
			got=$(jget "$j" 'len(j["hot_ranges"])') want=$lim
		fi
		[ "$got" = "$want" ] || bad="$bad $lim: $got ranges, want $want of $runs runs"
	done
	running "$P" || bad="$bad target not running"
	kill "$P"
	[ "$runs" = 400 ] && [ -z "$bad" ] && ok $n || notok $n "runs $runs:$bad"
}

# A process tree checkpointed: a row per process and the tree's total, in
# which the shared pages every process of forktree writes count once (the
# rows each count them): the total is below the rows' sum, at least the
# largest row, in JSON and in the text output.
test_checkpoint_tree_rows() {
	local n=checkpoint_tree_rows bad= tp k
	need_criu $n || return
	start "$tmp/tr.out" "$WORKLOADS/forktree" -c 2 -p 256 -s 128 -P
	if ! wait_for_line "$tmp/tr.out" "first pass written" 20 ||
		! t_wait 20 eval '[ "$(grep -c "^forktree: pid " "$tmp/tr.out")" -ge 3 ]'; then
		notok $n "forktree did not start: $(cat "$tmp/tr.out")"
		kill "$P"
		return
	fi
	tp=$(awk '/^forktree: pid / {print $3}' "$tmp/tr.out" | sort -n | tr '\n' ' ')
	"$MEMLENS" checkpoint -p "$P" -D "$tmp/tr-j" -R -d 2 -i 200 --json >"$tmp/tr.json" \
		2>"$tmp/tr.err" || bad+=" --json: exit $?: $(cat "$tmp/tr.err")"
	if [ -z "$bad" ]; then
		k=$(jget "$tmp/tr.json" '(lambda p, t: " ".join(map(str, sorted(x["pid"] for x in p))) + " " if all(x["state"] == "profiled" for x in p) and t["count"] == len(p) and max(x["cumulative_dirty_bytes"] for x in p) <= t["cumulative_dirty_bytes"] < sum(x["cumulative_dirty_bytes"] for x in p) else "bad")(j["profiler"]["processes"], j["profiler"]["processes_total"])')
		[ "$k" = "$tp" ] || bad+=" JSON: $(jget "$tmp/tr.json" '(j["profiler"]["processes"], j["profiler"].get("processes_total"))') (forktree: $tp)"
	fi
	"$MEMLENS" checkpoint -p "$P" -D "$tmp/tr-t" -R -d 2 -i 200 >"$tmp/tr.txt" 2>"$tmp/tr.err" ||
		bad+=" text: exit $?: $(cat "$tmp/tr.err")"
	grep -q "^  processes: 3 in the tree (hot memory and bytes written while profiled)$" "$tmp/tr.txt" ||
		bad+=" no processes line"
	for k in $tp; do
		grep -qE "^ +$k forktree +hot +[^ ]+  written +[^ ]+$" "$tmp/tr.txt" || bad+=" no row for $k"
	done
	grep -qE "^ +tree total +hot .* written .*\(shared once\)$" "$tmp/tr.txt" || bad+=" no tree total"
	running "$P" || bad+=" target not running"
	kill "$P"
	[ -z "$bad" ] && ok $n || notok $n "$bad" "$(cat "$tmp/tr.txt")"
}

test_no_criu
test_granularity_by_criu
test_probe_timeout_and_cache
test_usage_errors
test_parent_refused
test_criu_opt_passthrough
test_no_such_pid
test_pre_dump_refused
test_session_outside_pidns
test_checkpoint_leave_running
test_checkpoint_hot_ranges_apart
test_checkpoint_tree_rows
test_criu_fails_target_kept
test_criu_timeout_target_kept
test_target_exits_mid_profile
test_cksum_detects_corruption
test_dump_kill_restore
test_sampled_dump_kill_restore
test_page_server
test_restore_fails_clearly
test_migrate_model_real_trace
