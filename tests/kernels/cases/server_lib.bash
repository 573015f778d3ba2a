# Shared by the real-server cases (tests/kernels/cases/9N-server-NAME.sh;
# sourced, not a case itself). Debian's servers, started as a user starts
# them, in a network namespace (A, 10.NET.0.1) joined by a veth pair to
# another (B, 10.NET.0.2), with data loaded and a writer running until the
# freeze. One server instance goes through a chain:
#   checkpoint  memlens checkpoint in A, then memlens restore in A
#   none        memlens migrate --no-exclude from A to B
#   exclusion   memlens migrate (hot memory left out of pre-copy), B to A
# and after each the case's srv_check verifies the data and srv_clients
# that clients connect again (a server lost on the way is started anew).
# TCP connections at the freeze are closed (--tcp close): the clients
# reconnect. Each step's bytes, rounds and downtime go to
# build/bench/server-NAME.jsonl (bench/servers_table.py makes the README's
# table from them). A step that CRIU or the kernel refuses (memlens explains
# it: a hint) is a skip with the reason.
# Opt-in: they take minutes under TCG; run with CASES=server.
#
# The case defines srv_start NS (start the server in netns NS; set SP, its
# root pid; return 1 when it cannot), srv_load (data and the writer, once),
# srv_check IP (the data after a restore; VNOTE says what was checked),
# srv_clients IP (clients work again, CNOTE; return 2: it has none).
. tests/kernels/cases/criu_lib.bash

# server_begin NAME NET: the opt-in, CRIU and the two namespaces
server_begin() {
	SRV=$1 NET=$2
	if [[ "${memlens_cases:-}" != *server* ]] && [[ "${memlens_optin:-}" != *server* ]]; then
		echo "skip - server_$SRV: runs only when asked for (CASES=server tests/kernels/run.sh 6.12, make test-kernels)"
		exit 0
	fi
	CR=
	for c in "${CRIUS[@]}"; do [ "${c%%=*}" = page ] && CR=${c#*=}; done
	if [ -z "$CR" ]; then
		skip "server_$SRV" "no CRIU with memlens's patches (scripts/ensure-criu.sh)"
		exit 0
	fi
	if ! has_soft_dirty "$CR"; then
		skip "server_$SRV" "this kernel has no soft-dirty tracking (pre-copy needs it)"
		exit 0
	fi
	if ! dumps_inet_sockets "$CR"; then
		skip "server_$SRV" "$SOCK_WHY"
		exit 0
	fi
	chmod 755 "$tmp"
	NS_A=mlsrvA$$ NS_B=mlsrvB$$ IP_A=10.$NET.0.1 IP_B=10.$NET.0.2
	t_at_exit 'ip netns del $NS_A 2>/dev/null; ip netns del $NS_B 2>/dev/null'
	if ! netns_up "$NS_A" "$NS_B" "$IP_A" "$IP_B" 2>"$tmp/ns.err"; then
		skip "server_$SRV" "cannot set up two network namespaces: $(cat "$tmp/ns.err")"
		exit 0
	fi
	OUTDIR=${OUTDIR:-$PWD/build/bench}
	mkdir -p "$OUTDIR"
	ROWS=$OUTDIR/server-$SRV.jsonl
	: >"$ROWS"
	CUR=A SP= STEP=0
}
ns_path() { local n=NS_$1; echo "/run/netns/${!n}"; }
in_ns() { local n=$1; shift; nsenter --net="$(ns_path "$n")" "$@"; }
ip_of() { local n=IP_$1; echo "${!n}"; }
other() { [ "$1" = A ] && echo B || echo A; }

# kill_tree PID: the server and what it forked
kill_tree() {
	local p=$1 k
	[ -n "$p" ] || return 0
	for k in $(pgrep -P "$p"); do kill_tree "$k"; done
	kill -9 "$p" 2>/dev/null
}

# ensure_server: one running in $CUR, loaded (started anew after a step lost it)
ensure_server() {
	[ -n "$SP" ] && kill -0 "$SP" 2>/dev/null && return 0
	CUR=A
	srv_start A || return 1
	pids+=("$SP")
	t_at_exit "kill_tree $SP"
	srv_load
}

# record STEP MODE OK VERIFIED CLIENTS JSON-OR-EMPTY NOTE [RESTORE-JSON]
record() {
	"$PY" - "$SRV" "$KVER" "$@" >>"$ROWS" <<'PYEOF'
import json, os, sys
srv, kver, step, mode, ok, ver, cl, mj, note = sys.argv[1:10]
rj = sys.argv[10] if len(sys.argv) > 10 else ""
def load(f):
    try:
        return json.load(open(f)) if f else {}
    except (OSError, ValueError):
        return {}
m, r = load(mj), load(rj)
row = {"server": srv, "kernel": kver, "step": step, "mode": mode, "ok": ok == "1",
       "data_verified": {"1": True, "0": False}.get(ver), "clients_reconnected": {"1": True, "0": False}.get(cl),
       "note": note}
if os.environ.get("SKIP_REASON"):
    row["skip"] = True
    row["note"] = os.environ["SKIP_REASON"]
if step == "checkpoint" and m:
    row.update(bytes=m.get("bytes_written"), rounds=1, dump_ms=m.get("duration_ms"),
               restore_ms=r.get("duration_ms"),
               processes=len((m.get("profiler") or {}).get("processes") or []) or None)
    if m.get("duration_ms") is not None and r.get("duration_ms") is not None:
        row["downtime_ms"] = m["duration_ms"] + r["duration_ms"]
elif m.get("rounds"):
    row.update(bytes=m.get("total_bytes"), rounds=len(m["rounds"]), downtime_ms=m.get("downtime_ms"),
               final_bytes=m["rounds"][-1].get("bytes"), final_dump_ms=m.get("final_dump_ms"),
               restore_ms=m.get("restore_ms"), round_bytes=[x.get("bytes") for x in m["rounds"]],
               excluded_ranges=[x.get("excluded_ranges") for x in m["rounds"]],
               granularity=m.get("granularity"))
print(json.dumps(row))
PYEOF
	tail -n 1 "$ROWS" | sed 's/^/# row: /'
}

# refused TEST ERRFILE JSON: a CRIU refusal memlens explained (a hint) is a
# skip with the reason; anything else fails
refused() {
	local t=$1 err=$2 j=$3 hint
	SKIP_REASON=
	hint=$("$PY" -c 'import json,sys
try:
    j=json.load(open(sys.argv[1])); print((j.get("hint") or (j.get("error") or {}).get("hint") or "").replace("\n"," ")[:300] if isinstance(j, dict) else "")
except Exception: print("")' "$j" 2>/dev/null)
	[ -z "$hint" ] && hint=$(grep -m1 -o 'What to do: .*' "$err" | cut -c13-400)
	if [ -n "$hint" ]; then
		skip "$t" "CRIU cannot: $hint"
		SKIP_REASON="CRIU cannot: $hint"
	else
		notok "$t" "$(tail -n 4 "$err" | tr '\n' ' ' | cut -c1-600)"
	fi
}

# after_restore TEST STEP MODE JSON [RESTORE-JSON]: the data and the clients
after_restore() {
	local t=$1 step=$2 mode=$3 j=$4 rj=${5:-} v=0 c=0 rc
	VNOTE= CNOTE=
	srv_check "$(ip_of "$CUR")" && v=1
	srv_clients "$(ip_of "$CUR")"
	rc=$?
	[ $rc = 0 ] && c=1
	[ $rc = 2 ] && c=	# no clients
	echo "# $t: data: $VNOTE; clients: $CNOTE"
	SKIP_REASON= record "$step" "$mode" 1 "$v" "$c" "$j" "$VNOTE; $CNOTE" "$rj"
	if [ $v = 1 ] && [ "$c" != 0 ]; then ok "$t"; else notok "$t" "data: $VNOTE; clients: $CNOTE"; fi
}

# step_checkpoint: memlens checkpoint, then memlens restore, in $CUR
step_checkpoint() {
	local t=server_${SRV}_checkpoint_restore d=$tmp/ck$STEP rc
	STEP=$((STEP + 1))
	ensure_server || { notok "$t" "the server did not start"; return; }
	timeout 400 nsenter --net="$(ns_path "$CUR")" "$MEMLENS" checkpoint -p "$SP" -D "$d" -d 4 --tcp close --criu "$CR" \
		--json >"$d.json" 2>"$d.err"
	rc=$?
	echo "# $t: checkpoint exit $rc: $(tail -n 1 "$d.err" | cut -c1-300)"
	if [ $rc -ne 0 ]; then
		refused "$t" "$d.err" "$d.json"
		SKIP_REASON=$SKIP_REASON record checkpoint dump 0 "" "" "$d.json" "checkpoint failed: $(tail -n 1 "$d.err" | cut -c1-200)"
		kill_tree "$SP"; SP=
		return
	fi
	timeout 400 nsenter --net="$(ns_path "$CUR")" "$MEMLENS" restore -D "$d" --criu "$CR" --json >"$d-r.json" 2>"$d-r.err"
	rc=$?
	SP=$(jget "$d-r.json" 'j.get("pid", "")' 2>/dev/null)
	echo "# $t: restore exit $rc, pid ${SP:-none}: $(tail -n 1 "$d-r.err" | cut -c1-300)"
	if [ $rc -ne 0 ] || [ -z "$SP" ] || [ "$SP" = 0 ]; then
		refused "$t" "$d-r.err" "$d-r.json"
		SKIP_REASON=$SKIP_REASON record checkpoint dump 0 "" "" "$d.json" "restore failed: $(tail -n 1 "$d-r.err" | cut -c1-200)" "$d-r.json"
		SP=
		return
	fi
	pids+=("$SP")
	t_at_exit "kill_tree $SP"
	after_restore "$t" checkpoint dump "$d.json" "$d-r.json"
}

# step_migrate MODE: none (--no-exclude) or exclusion, from $CUR to the other
step_migrate() {
	local mode=$1 t=server_${SRV}_migrate_$1 to d=$tmp/mig$STEP rp rc x=() new
	STEP=$((STEP + 1))
	ensure_server || { notok "$t" "the server did not start"; return; }
	to=$(other "$CUR")
	[ "$mode" = none ] && x=(--no-exclude)
	nsenter --net="$(ns_path "$to")" "$MEMLENS" migrate --receive --listen "$(ip_of "$to"):$((7000 + NET))" --criu "$CR" \
		-D "$d-dest" >"$d-recv.out" 2>&1 &
	rp=$!
	pids+=("$rp")
	wait_for_line "$d-recv.out" receiving 30
	timeout 500 nsenter --net="$(ns_path "$CUR")" "$MEMLENS" migrate -p "$SP" --to "$(ip_of "$to"):$((7000 + NET))" --criu "$CR" \
		--tcp close --max-rounds 3 --stop-threshold 8 --round-interval 2 -i 1000 "${x[@]}" \
		-D "$d-src" --json >"$d.json" 2>"$d.err"
	rc=$?
	timeout 60 tail --pid="$rp" -f /dev/null
	kill -9 "$rp" 2>/dev/null
	new=$(jget "$d.json" 'j.get("restored_pid", "")' 2>/dev/null)
	echo "# $t: migrate exit $rc, restored ${new:-none}: $(tail -n 1 "$d.err" | cut -c1-300)"
	if [ $rc -ne 0 ] || [ -z "$new" ] || [ "$new" = 0 ]; then
		refused "$t" "$d.err" "$d.json"
		SKIP_REASON=$SKIP_REASON record migrate "$mode" 0 "" "" "$d.json" "migrate failed: $(tail -n 1 "$d.err" | cut -c1-200) / $(tail -n 1 "$d-recv.out" | cut -c1-200)"
		kill_tree "$SP"; SP=
		[ -n "$new" ] && [ "$new" != 0 ] && kill_tree "$new"
		return
	fi
	"$PY" -c 'import json,sys; j=json.load(open(sys.argv[1])); [print("# %s %d: %d bytes, %d ranges left out, %d ms" % (r["kind"], r["round"], r["bytes"], r.get("excluded_ranges", 0), r["duration_ms"])) for r in j["rounds"]]; print("# total %d bytes, downtime %d ms" % (j["total_bytes"], j["downtime_ms"]))' "$d.json"
	SP=$new CUR=$to
	pids+=("$SP")
	t_at_exit "kill_tree $SP"
	[ "/run/netns/$(ip netns identify "$SP")" = "$(ns_path "$CUR")" ] ||
		echo "# $t: restored pid $SP is in netns '$(ip netns identify "$SP")'"
	after_restore "$t" migrate "$mode" "$d.json"
}

# server_chain: the three steps, then the server stopped
server_chain() {
	step_checkpoint
	step_migrate none
	step_migrate exclusion
	kill_tree "$SP"
}
