# Shared by the CRIU cases of the guest suite (sourced, not a case itself).
# Sets CRIUS (name=path pairs: "fork", the fork with the exclude options
# when its source is here; "page", CRIU 4.1.1 with memlens's patches, which
# leaves pages out per process; "upstream", the same CRIU unmodified),
# FORK_MISSING (why the fork is not there), and helpers.
. tests/lib.bash	# ok, notok, skip, the waits, t_at_exit
PY=/usr/bin/python3
tmp=$(mktemp -d /tmp/memlens-case.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
t_at_exit cleanup

CRIUS=()
if fork=$(scripts/ensure-criu-exclude.sh 2>"$tmp/fork.err"); then
	CRIUS+=("fork=$fork")
	FORK_MISSING=
else
	FORK_MISSING="the CRIU fork with the exclude options is not built here: $(tail -n 1 "$tmp/fork.err")"
fi
# scripts/ensure-criu.sh builds both: criu (patched) and criu-upstream beside it
patched=${MEMLENS_CRIU:-$(scripts/ensure-criu.sh 2>/dev/null)}
if [ -n "$patched" ] && "$patched" --help 2>/dev/null | grep -q -- '--exclude-range \[PID:\]'; then
	CRIUS+=("page=$patched")
	[ -x "$(dirname "$patched")/criu-upstream" ] && CRIUS+=("upstream=$(dirname "$patched")/criu-upstream")
elif [ -n "$patched" ]; then
	CRIUS+=("upstream=$patched")	# a CRIU without the patches (the system's)
fi

# for_criu TEST FUNCTION WHY: run FUNCTION NAME PATH for the CRIU named by
# $WHICH (fork, page or upstream); skip TEST_NAME with the reason when that CRIU
# is missing, or with WHY when the kernel lacks soft-dirty (WHY "": the
# function decides itself)
for_criu() {
	local test=$1 fn=$2 why=$3 c
	if [ "$WHICH" = fork ] && [ -n "$FORK_MISSING" ]; then
		skip "${test}_fork" "$FORK_MISSING"
		return
	fi
	for c in "${CRIUS[@]}"; do
		[ "${c%%=*}" = "$WHICH" ] || continue
		if [ -n "$why" ] && ! has_soft_dirty "${c#*=}"; then
			skip "${test}_$WHICH" "$why"
			return
		fi
		"$fn" "$WHICH" "${c#*=}"
		return
	done
	skip "${test}_$WHICH" "no $WHICH CRIU here"
}

# soft-dirty: what pre-dump needs
has_soft_dirty() { "$1" check --feature mem_dirty_track >/dev/null 2>&1; }

# dumps_inet_sockets CRIU: whether this CRIU can dump a process holding a
# listening TCP socket on this kernel (CRIU 4.1.1 reads socket options that
# kernels 6.16 and later refuse: "Can't get 1:34 opt"); when not, SOCK_WHY
# says CRIU's words
dumps_inet_sockets() {
	local d=$tmp/sockprobe rc p
	mkdir -p "$d"
	setsid "$PY" -c 'import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
print("ready", flush=True); time.sleep(120)' </dev/null >"$d/out" 2>&1 &
	p=$!
	pids+=("$p")
	wait_for_line "$d/out" ready 30 || { SOCK_WHY="the probe did not start"; return 1; }
	"$1" dump -t "$p" -D "$d" --leave-running -o dump.log >/dev/null 2>&1
	rc=$?
	kill -9 "$p" 2>/dev/null
	[ $rc = 0 ] && return 0
	SOCK_WHY="this CRIU cannot dump a TCP socket on this kernel: $(grep -h Error "$d/dump.log" | head -n 1 | sed 's/^([0-9. ]*) //')"
	return 1
}

# start a workload in its own session, stdio to a file; sets $P
start() {
	local out=$1
	shift
	setsid "$@" </dev/null >>"$out" 2>&1 &
	P=$!
	pids+=("$P")
	wait_for_line "$out" ready 10 && return 0
	return 1
}

# jget FILE EXPR: a Python expression on the JSON object j
jget() {
	"$PY" -c 'import json,sys; j=json.loads(open(sys.argv[1]).read()); print(eval(sys.argv[2]))' "$1" "$2"
}

# jcheck LABEL FILE EXPR...: every EXPR (Python, on the JSON object j of
# FILE) must hold; one Python run. Prints "# LABEL: ..." (pages, note) at
# once, for progress; the failed expressions go into $JBAD.
jcheck() {
	local label=$1 f=$2
	shift 2
	JBAD=$("$PY" - "$label" "$f" "$@" <<'PYEOF'
import json, sys
label, f = sys.argv[1:3]
try:
    j = json.load(open(f))
except (OSError, ValueError) as e:
    print("cannot read %s: %s;" % (f, e))
    sys.exit(0)
def val(k):
    return j.get(k, j.get("rounds", [{}])[-1].get(k) if j.get("rounds") else None)
x = j.get("exclusion")
note = x.get("note", "") if isinstance(x, dict) else "; ".join(r.get("note", "")[:80] for r in j.get("rounds", []))
print("# %s: pages %s, %s" % (label, j.get("pages_written", [r.get("pages") for r in j.get("rounds", [])]),
      note[:240]), file=sys.stderr, flush=True)
bad = []
for e in sys.argv[3:]:
    try:
        if not eval(e):
            bad.append(e)
    except Exception as x:
        bad.append("%s (%s)" % (e, x))
print(" ".join("%s: failed %s;" % (label, e) for e in bad) or "PASSED")
PYEOF
) || true
	# a check that could not run is a failure, never a pass
	[ "$JBAD" = PASSED ] && JBAD= || JBAD=${JBAD:-"$label: the check itself failed"}
}

# netns_up NS_A NS_B ADDR_A ADDR_B: two network namespaces joined by a veth
# pair (two hosts on one machine); the caller deletes them
netns_up() {
	local a=$1 b=$2
	ip netns add "$a" && ip netns add "$b" &&
		ip link add "v$a" type veth peer name "v$b" &&
		ip link set "v$a" netns "$a" && ip link set "v$b" netns "$b" &&
		ip -n "$a" addr add "$3/24" dev "v$a" && ip -n "$b" addr add "$4/24" dev "v$b" &&
		ip -n "$a" link set "v$a" up && ip -n "$b" link set "v$b" up &&
		ip -n "$a" link set lo up && ip -n "$b" link set lo up
}

# netns_moving A B C N: the set-up of a service that moves from namespace A
# to B while a client in C stays connected. A and B are joined by a veth
# pair (10.N.0.1 and 10.N.0.2, for memlens's own connection); C reaches A
# over 10.(N+1).0.0/24 and B over 10.(N+2).0.0/24. The service address SVC
# (10.(N+3).0.10) is on A's and B's loopback, the client's CLI
# (10.(N+4).0.1) on C's; C routes SVC to A. Moving the route
# (`ip -n C route replace $SVC/32 via $SVC_VIA_B`) makes B the service.
# Sets SVC, CLI, SVC_VIA_B; 0 or the failing command's status.
netns_moving() {
	local a=$1 b=$2 c=$3 n=$4
	local ac=$((n + 1)) bc=$((n + 2))
	SVC=10.$((n + 3)).0.10 CLI=10.$((n + 4)).0.1 SVC_VIA_B=10.$bc.0.2
	netns_up "$a" "$b" 10.$n.0.1 10.$n.0.2 && ip netns add "$c" &&
		ip link add vac$$ type veth peer name vca$$ && ip link add vbc$$ type veth peer name vcb$$ &&
		ip link set vac$$ netns "$a" && ip link set vca$$ netns "$c" &&
		ip link set vbc$$ netns "$b" && ip link set vcb$$ netns "$c" &&
		ip -n "$a" addr add 10.$ac.0.2/24 dev vac$$ && ip -n "$c" addr add 10.$ac.0.1/24 dev vca$$ &&
		ip -n "$b" addr add 10.$bc.0.2/24 dev vbc$$ && ip -n "$c" addr add 10.$bc.0.1/24 dev vcb$$ &&
		ip -n "$a" link set vac$$ up && ip -n "$b" link set vbc$$ up &&
		ip -n "$c" link set vca$$ up && ip -n "$c" link set vcb$$ up && ip -n "$c" link set lo up &&
		ip -n "$a" addr add "$SVC/32" dev lo && ip -n "$b" addr add "$SVC/32" dev lo &&
		ip -n "$c" addr add "$CLI/32" dev lo &&
		ip -n "$a" route add "$CLI/32" via 10.$ac.0.1 && ip -n "$b" route add "$CLI/32" via 10.$bc.0.1 &&
		ip -n "$c" route add "$SVC/32" via 10.$ac.0.2
}

# migrate_moving PID HOSTPORT ROUND_INTERVAL INTERVAL_MS: after netns_moving,
# migrate PID from A (in_a) to a receiver in B (in_b) listening on
# HOSTPORT, pre-copy with --tcp established, while the client (whose
# replies last() counts) keeps its connection; then C's route to SVC goes
# to B. Sets rc, n0 (the client's last reply when the migration ended)
# and new (the restored pid). When CRIU could not do it: says why, fails
# $T if the final dump had happened, else skips it and checks that the
# source still serves; returns 1 then (the caller stops).
migrate_moving() {
	local sp=$1 to=$2 ri=$3 iv=$4 rp why
	"${in_b[@]}" "$MEMLENS" migrate --receive --listen "$to" --criu "$criu" \
		-D "$tmp/dest" >"$tmp/recv.out" 2>&1 &
	rp=$!
	pids+=("$rp")
	wait_for_line "$tmp/recv.out" receiving 10
	"${in_a[@]}" "$MEMLENS" migrate -p "$sp" --to "$to" --tcp established --criu "$criu" \
		--max-rounds 2 --stop-threshold 0 --round-interval "$ri" -i "$iv" -D "$tmp/src" --json \
		>"$tmp/mig.json" 2>"$tmp/mig.err"
	rc=$?
	# a migration refused before its first round never reaches the
	# receiver, which would wait for it forever
	[ $rc -eq 0 ] || t_wait 10 t_gone "$rp" || kill "$rp" 2>/dev/null
	wait "$rp"
	n0=$(last)
	if [ $rc -ne 0 ]; then
		why=$(grep -h -E 'Error|error' "$tmp/src"/*/dump.log "$tmp/dest"/*/restore.log 2>/dev/null | tail -n 3 | tr '\n' ' ')
		echo "# memlens migrate exit $rc: $(tail -n 4 "$tmp/mig.err" | tr '\n' ' ')"
		echo "# receiver: $(tail -n 3 "$tmp/recv.out" | tr '\n' ' ')"
		if jget "$tmp/mig.json" 'j["rounds"][-1]["kind"] == "dump"' 2>/dev/null | grep -q True; then
			notok $T "the final dump happened, then: $(tail -n 2 "$tmp/mig.err") CRIU: $why"
		else
			skip $T "CRIU: ${why:-$(tail -n 2 "$tmp/mig.err" | tr '\n' ' ')}"
			wait_for_line "$tmp/client.out" "^reply $((n0 + 3)) ok" 30 ||
				notok ${T}_source_kept "the connection broke at the source: $(tail -n 2 "$tmp/client.out")"
		fi
		return 1
	fi
	new=$(jget "$tmp/mig.json" 'j["restored_pid"]')
	pids+=("$new")
	# the address is B's now: C's route goes there
	ip -n "$ns_c" route replace "$SVC/32" via "$SVC_VIA_B"
}
