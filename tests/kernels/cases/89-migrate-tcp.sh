#!/bin/bash
# memlens migrate --tcp established of a TCP server with a connected client,
# to a network namespace that takes over the server's address: three
# network namespaces, A (the source) and B (the destination) joined by a
# veth pair for the migration itself, and C (the client) joined to each by
# a veth pair of its own. The service address (10.220.0.10, on A's and B's
# loopback) is routed from C to A; once the restore in B is done, C's
# route goes to B instead. The server counts the lines of its one
# connection and answers each with its number; the client sends a line
# every 0.2 s through the whole migration and checks every answer, on the
# same socket (it never reconnects: any error ends it). After the restore
# it must get at least 10 more right answers in a row. Pre-dumps need
# soft-dirty (the 6.12 guest); when CRIU cannot dump or restore the
# connection here, the case is a skip with CRIU's reason.
set -u
cd "$(dirname "$0")/../../.." || exit 1
. tests/kernels/cases/needs_write_tracking.bash migrate
. tests/kernels/cases/criu_lib.bash
T=migrate_tcp_established_netns

criu=
for c in "${CRIUS[@]}"; do [ "${c%%=*}" = page ] && criu=${c#*=}; done
[ -n "$criu" ] || criu=${MEMLENS_CRIU:-}
[ -n "$criu" ] || { skip $T "no CRIU here (scripts/ensure-criu.sh)"; exit 0; }
has_soft_dirty "$criu" || { skip $T "this kernel has no soft-dirty tracking (pre-copy needs it)"; exit 0; }

ns_a=mltcpA$$ ns_b=mltcpB$$ ns_c=mltcpC$$
t_at_exit 'ip netns del $ns_a 2>/dev/null; ip netns del $ns_b 2>/dev/null; ip netns del $ns_c 2>/dev/null'
PORT=7420
net() { netns_moving "$ns_a" "$ns_b" "$ns_c" 217; }
if ! net 2>"$tmp/ns.err"; then
	skip $T "cannot set up the network namespaces: $(cat "$tmp/ns.err")"
	exit 0
fi
in_a=(nsenter --net=/run/netns/"$ns_a") in_b=(nsenter --net=/run/netns/"$ns_b") in_c=(nsenter --net=/run/netns/"$ns_c")

cat >"$tmp/server.py" <<'EOF'
import socket, sys
l = socket.socket()
l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind((sys.argv[1], int(sys.argv[2])))
l.listen(1)
print("ready", flush=True)
c, peer = l.accept()
print("client", peer, flush=True)
f = c.makefile("rb")
n = 0
for line in f:
    n += 1
    c.sendall(b"%d %s" % (n, line))
EOF
cat >"$tmp/client.py" <<'EOF'
import socket, sys, time
s = socket.socket()
s.bind((sys.argv[1], 0))
s.settimeout(300)
s.connect((sys.argv[2], int(sys.argv[3])))
print("connected", s.getsockname()[1], flush=True)
f = s.makefile("rb")
n = 0
while True:
    n += 1
    try:
        s.sendall(b"line %d\n" % n)
        r = f.readline()
    except OSError as e:
        print("failed %d: %s" % (n, e), flush=True)
        sys.exit(1)
    if r != b"%d line %d\n" % (n, n):
        print("wrong %d: %r" % (n, r), flush=True)
        sys.exit(1)
    print("reply %d ok %.3f" % (n, time.monotonic()), flush=True)
    time.sleep(0.2)
EOF
# the server in A, in its own session; the client in C
start "$tmp/server.out" "${in_a[@]}" "$PY" "$tmp/server.py" $SVC $PORT ||
	{ notok $T "the server did not start: $(cat "$tmp/server.out")"; exit 0; }
sp=$P
"${in_c[@]}" "$PY" "$tmp/client.py" $CLI $SVC $PORT >"$tmp/client.out" 2>&1 &
cp=$!
pids+=("$cp")
wait_for_line "$tmp/client.out" '^reply 5 ok' 30 || { notok $T "the client is not served: $(tail -n 3 "$tmp/client.out")"; exit 0; }
echo "# server pid $sp in $ns_a at $SVC:$PORT, client in $ns_c: $(head -n 1 "$tmp/client.out")"
last() { sed -n 's/^reply \([0-9]*\) ok.*/\1/p' "$tmp/client.out" | tail -n 1; }

migrate_moving "$sp" 10.217.0.2:7417 1 300 || exit 0
bad=
jcheck migrate "$tmp/mig.json" 'j["tcp"] == "established" and j["rounds"][-1]["kind"] == "dump"' \
	'j["precopy"] and len(j["rounds"]) == 3'
bad+=$JBAD
# (the same pid as at the source: CRIU restores it; it runs in B alone)
[ "$(ip netns identify "$new")" = "$ns_b" ] || bad+=" the restored server $new is not in $ns_b"
wait_for_line "$tmp/client.out" "^reply $((n0 + 10)) ok" 120 ||
	bad+=" the connection does not work after the restore: $(tail -n 2 "$tmp/client.out" | tr '\n' ' ')"
grep -qE '^(wrong|failed)' "$tmp/client.out" && bad+=" $(grep -E '^(wrong|failed)' "$tmp/client.out")"
kill -0 $cp 2>/dev/null || bad+=" the client ended"
"$PY" -c 'import json,sys; j=json.load(open(sys.argv[1])); print("# migrate --tcp established: %s; total %d bytes, downtime %d ms (final dump %d ms, restore %d ms)" % (", ".join("%s %d pages" % (r["kind"], r["pages"]) for r in j["rounds"]), j["total_bytes"], j["downtime_ms"], j["final_dump_ms"], j["restore_ms"]))' "$tmp/mig.json"
echo "# the client: reply $n0 before the switch, $(last) now, one connection ($(head -n 1 "$tmp/client.out")); longest wait for a reply $(awk '$1 == "reply" {if (t) {d = $4 - t; if (d > m) m = d}; t = $4} END {printf "%.1f", m}' "$tmp/client.out") s (sent every 0.2 s)"
kill -KILL "$new" "$cp" 2>/dev/null
[ -z "$bad" ] && ok $T || notok $T "$bad"
exit 0
