#!/bin/bash
# memlens migrate of a tree with a stopped process (SIGSTOP): CRIU's
# pre-dump skips a stopped task, so the round after it sends all of that
# process's memory again. Each pre-dump round's note must name the stopped
# process; the final dump (which dumps it) must not; the tree comes back.
set -u
cd "$(dirname "$0")/../../.." || exit 1
. tests/kernels/cases/criu_lib.bash
T=migrate_stopped_process_noted

stopped_case() {
	local criu=$2 out=$tmp/tree.out j=$tmp/m.json p s rc
	setsid bash -c 'sleep 600 & echo "stopped $!"; exec "$1" -m 8' _ "$WORKLOADS/memwrite" \
		</dev/null >"$out" 2>&1 &
	p=$!
	pids+=("$p")
	wait_for_line "$out" "memwrite pid" 10 || { notok $T "the tree did not start: $(cat "$out")"; return; }
	s=$(sed -n 's/^stopped //p' "$out")
	pids+=("$s")
	kill -STOP "$s" && wait_for_state "$s" '^T' 10 || { notok $T "sleep $s did not stop"; return; }
	"$MEMLENS" migrate -p "$p" --to "$tmp/dest" --criu "$criu" --max-rounds 2 \
		--stop-threshold 0.001 --round-interval 1 -i 300 -D "$tmp/src" --json >"$j" 2>"$tmp/err"
	rc=$?
	[ $rc -eq 0 ] || { notok $T "exit $rc: $(tail -n 3 "$tmp/err") $(cat "$j")"; return; }
	jcheck "migrate stopped" "$j" 'j["ok"] and j["rounds"][0]["kind"] == "pre-dump"' \
		'all("1 stopped process(es) (pid '"$s"')" in r["note"] for r in j["rounds"] if r["kind"] == "pre-dump")' \
		'all("stopped" not in r["note"] for r in j["rounds"] if r["kind"] == "dump")' \
		'j["restored_pid"] == '"$p"
	[ -z "$JBAD" ] && t_state_is "$s" '^T' || JBAD+=" the restored sleep $s is not there, stopped"
	kill -KILL "$s" "$p" 2>/dev/null
	[ -z "$JBAD" ] && ok $T || notok $T "$JBAD"
}

WHICH=upstream
for_criu $T stopped_case "this kernel has no soft-dirty tracking (pre-dump needs it)"
exit 0
