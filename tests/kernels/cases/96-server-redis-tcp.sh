#!/bin/bash
# Debian's redis-server migrated with a client that stays connected:
# memlens migrate --tcp established to a network namespace that takes over
# the server's address (the set-up of 89-migrate-tcp.sh: A the source, B
# the destination, C the client; the service address on A's and B's
# loopback, C's route switched to B once the restore is done). redis holds
# 20,000 keys of 1000 B; the client, on one connection for the whole run,
# sends SET k(n mod 1000) v(n) and INCR ctr every 0.1 s and checks each
# answer: ctr must come back as n, so a write lost or applied twice across
# the migration shows at once. After the restore it must get 20 more right
# answers on the same socket; then it stops and every key is read back from
# B: the 20,000 loaded values, the 1000 rewritten ones as the last
# acknowledged n left them, and ctr equal to the last n. The one real
# server in make test's 6.12 guest (about 40 s there; the other 9N-server
# cases take minutes each and are opt-in); pre-dumps need soft-dirty (the
# 6.12 guest); where CRIU cannot dump or restore the connection, a skip
# with CRIU's reason.
set -u
cd "$(dirname "$0")/../../.." || exit 1
. tests/kernels/cases/criu_lib.bash
T=server_redis_tcp_established
command -v redis-server >/dev/null ||
	{ skip $T "redis-server is not installed (scripts/packages/servers.txt)"; exit 0; }
criu=
for c in "${CRIUS[@]}"; do [ "${c%%=*}" = page ] && criu=${c#*=}; done
[ -n "$criu" ] || { skip $T "no CRIU with memlens's patches (scripts/ensure-criu.sh)"; exit 0; }
has_soft_dirty "$criu" || { skip $T "this kernel has no soft-dirty tracking (pre-copy needs it)"; exit 0; }
# (89-migrate-tcp checks that migrate says so clearly there)
case $KVER in [0-5].* | 6.[0-6].* | 6.[0-6]-*)
	skip $T "migrate's profiler needs PAGEMAP_SCAN (Linux 6.7 or later)"
	exit 0
	;;
esac
dumps_inet_sockets "$criu" || { skip $T "$SOCK_WHY"; exit 0; }

ns_a=mlrtA$$ ns_b=mlrtB$$ ns_c=mlrtC$$
t_at_exit 'ip netns del $ns_a 2>/dev/null; ip netns del $ns_b 2>/dev/null; ip netns del $ns_c 2>/dev/null'
PORT=6379
net() { netns_moving "$ns_a" "$ns_b" "$ns_c" 227; }
if ! net 2>"$tmp/ns.err"; then
	skip $T "cannot set up the network namespaces: $(cat "$tmp/ns.err")"
	exit 0
fi
in_a=(nsenter --net=/run/netns/"$ns_a") in_b=(nsenter --net=/run/netns/"$ns_b") in_c=(nsenter --net=/run/netns/"$ns_c")

# the client: load, run (one connection, SET + INCR, every answer checked)
# until the stop file appears, verify
cat >"$tmp/client.py" <<'PYEOF'
import os, socket, sys, time
KEYS, SIZE, HOT = 20000, 1000, 1000
def val(i): return (b"%07d" % i) * (SIZE // 7) + b"x" * (SIZE % 7)
def cmd(*a):
    out = b"*%d\r\n" % len(a)
    for x in a:
        x = x if isinstance(x, bytes) else str(x).encode()
        out += b"$%d\r\n%s\r\n" % (len(x), x)
    return out
class Conn:
    def __init__(self, src, host, port):
        self.s = socket.socket()
        if src: self.s.bind((src, 0))
        self.s.settimeout(300)
        self.s.connect((host, port))
        self.f = self.s.makefile("rb")
    def reply(self):
        l = self.f.readline()
        if not l: raise OSError("connection closed")
        if l[:1] == b"$":
            n = int(l[1:])
            if n < 0: return None
            d = self.f.read(n + 2)
            return d[:-2]
        if l[:1] == b"*":
            return [self.reply() for _ in range(int(l[1:]))]
        return l.rstrip(b"\r\n")
mode, src, host, port = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
c = Conn(src if src != "-" else None, host, port)
if mode == "load":
    for a in range(0, KEYS, 500):
        c.s.sendall(b"".join(cmd("SET", "key:%d" % i, val(i)) for i in range(a, min(a + 500, KEYS))))
        for i in range(a, min(a + 500, KEYS)):
            if c.reply() != b"+OK": sys.exit("load failed at %d" % i)
    print("loaded", KEYS, flush=True)
elif mode == "run":
    stop = sys.argv[5]
    print("connected", c.s.getsockname()[1], flush=True)
    n = 0
    while not os.path.exists(stop):
        n += 1
        try:
            c.s.sendall(cmd("SET", "hot:%d" % (n % HOT), "v%d" % n) + cmd("INCR", "ctr"))
            r1, r2 = c.reply(), c.reply()
        except OSError as e:
            print("failed %d: %s" % (n, e), flush=True)
            sys.exit(1)
        if r1 != b"+OK" or r2 != b":%d" % n:
            print("wrong %d: %r %r" % (n, r1, r2), flush=True)
            sys.exit(1)
        print("reply %d ok %.3f" % (n, time.monotonic()), flush=True)
        time.sleep(0.1)
    print("done %d" % n, flush=True)
elif mode == "verify":
    last = int(sys.argv[5])
    bad = 0
    for a in range(0, KEYS, 500):
        got = c.s.sendall(cmd("MGET", *["key:%d" % i for i in range(a, min(a + 500, KEYS))])) or c.reply()
        bad += sum(1 for i, v in zip(range(a, KEYS), got) if v != val(i))
    want = {}
    for n in range(1, last + 1): want[n % HOT] = b"v%d" % n
    c.s.sendall(cmd("MGET", *["hot:%d" % k for k in range(HOT)]))
    got = c.reply()
    bad_hot = sum(1 for k in range(HOT) if got[k] != want.get(k))
    c.s.sendall(cmd("GET", "ctr") + cmd("DBSIZE"))
    ctr, size = c.reply(), c.reply()
    print("verify: %d of %d loaded keys wrong, %d of %d rewritten keys wrong, ctr %s (last %d), dbsize %s" %
          (bad, KEYS, bad_hot, HOT, ctr.decode(), last, size.decode()), flush=True)
    ok = bad == 0 and bad_hot == 0 and ctr == b"%d" % last and size == b":%d" % (KEYS + min(last, HOT) + 1)
    sys.exit(0 if ok else 1)
PYEOF

mkdir -p "$tmp/redis"
"${in_a[@]}" setsid redis-server --port $PORT --bind $SVC --protected-mode no --save '' --appendonly no \
	--dir "$tmp/redis" --daemonize no --loglevel notice </dev/null >"$tmp/redis.log" 2>&1 &
sp=$!
pids+=("$sp")
for _ in $(seq 300); do
	[ "$("${in_a[@]}" redis-cli -h $SVC -p $PORT PING 2>/dev/null)" = PONG ] && break
	sleep 0.2
done
"${in_a[@]}" "$PY" "$tmp/client.py" load - $SVC $PORT >"$tmp/load.out" 2>&1 ||
	{ notok $T "loading redis failed: $(tail -n 2 "$tmp/load.out") $(tail -n 2 "$tmp/redis.log")"; exit 0; }
"${in_c[@]}" "$PY" "$tmp/client.py" run $CLI $SVC $PORT "$tmp/stop" >"$tmp/client.out" 2>&1 &
cp=$!
pids+=("$cp")
wait_for_line "$tmp/client.out" '^reply 10 ok' 60 || { notok $T "the client is not served: $(tail -n 3 "$tmp/client.out")"; exit 0; }
echo "# redis-server pid $sp in $ns_a at $SVC:$PORT, $(cat "$tmp/load.out") keys, client in $ns_c: $(head -n 1 "$tmp/client.out")"
last() { sed -n 's/^reply \([0-9]*\) ok.*/\1/p' "$tmp/client.out" | tail -n 1; }

migrate_moving "$sp" 10.227.0.2:7427 2 500 || exit 0
bad=
jcheck migrate "$tmp/mig.json" 'j["tcp"] == "established" and j["rounds"][-1]["kind"] == "dump"' \
	'j["precopy"] and len(j["rounds"]) == 3'
bad+=$JBAD
[ "$(ip netns identify "$new")" = "$ns_b" ] || bad+=" the restored redis $new is not in $ns_b"
wait_for_line "$tmp/client.out" "^reply $((n0 + 20)) ok" 180 ||
	bad+=" the connection does not work after the restore: $(tail -n 2 "$tmp/client.out" | tr '\n' ' ')"
touch "$tmp/stop"
wait_for_line "$tmp/client.out" '^done ' 30 || bad+=" the client did not stop: $(tail -n 2 "$tmp/client.out" | tr '\n' ' ')"
grep -qE '^(wrong|failed)' "$tmp/client.out" && bad+=" $(grep -E '^(wrong|failed)' "$tmp/client.out")"
nend=$(sed -n 's/^done \([0-9]*\)/\1/p' "$tmp/client.out")
conn_ok=0
grep -q "^reply $((n0 + 20)) ok" "$tmp/client.out" && ! grep -qE '^(wrong|failed)' "$tmp/client.out" &&
	[ -n "$nend" ] && conn_ok=1
data_ok=0
if [ -n "$nend" ]; then
	if "${in_c[@]}" "$PY" "$tmp/client.py" verify $CLI $SVC $PORT "$nend" >"$tmp/verify.out" 2>&1; then
		data_ok=1
	else
		bad+=" the data after the restore: $(tail -n 2 "$tmp/verify.out" | tr '\n' ' ')"
	fi
	echo "# $(tail -n 1 "$tmp/verify.out")"
fi
# the row of the README's table (bench/servers_table.py), as server_lib.bash records the others
OUTDIR=${OUTDIR:-$PWD/build/bench}
mkdir -p "$OUTDIR"
"$PY" - "$tmp/mig.json" "$tmp/client.out" "$KVER" "$n0" "${nend:-0}" $conn_ok $data_ok "$bad" \
	>"$OUTDIR/server-redis-tcp.jsonl" <<'PYEOF'
import json, sys
mj, cl, kver, n0, nend, conn, data, note = sys.argv[1:9]
j = json.load(open(mj))
t = [float(l.split()[3]) for l in open(cl) if l.startswith("reply ")]
wait = max((b - a for a, b in zip(t, t[1:])), default=None)
print(json.dumps({"server": "redis", "kernel": kver, "step": "migrate", "mode": "tcp-established",
                  "ok": True, "data_verified": data == "1", "connection_kept": conn == "1",
                  "note": note.strip(), "bytes": j["total_bytes"], "rounds": len(j["rounds"]),
                  "final_bytes": j["rounds"][-1]["bytes"], "downtime_ms": j["downtime_ms"],
                  "replies_before": int(n0), "replies_end": int(nend),
                  "longest_wait_ms": round(wait * 1000) if wait is not None else None}))
PYEOF
sed 's/^/# row: /' "$OUTDIR/server-redis-tcp.jsonl"
"$PY" -c 'import json,sys; j=json.load(open(sys.argv[1])); print("# migrate --tcp established: %s; total %d bytes, downtime %d ms (final dump %d ms, restore %d ms)" % (", ".join("%s %d pages" % (r["kind"], r["pages"]) for r in j["rounds"]), j["total_bytes"], j["downtime_ms"], j["final_dump_ms"], j["restore_ms"]))' "$tmp/mig.json"
echo "# the client: reply $n0 before the switch, ${nend:-?} at the end, one connection; longest wait for a reply $(awk '$1 == "reply" {if (t) {d = $4 - t; if (d > m) m = d}; t = $4} END {printf "%.1f", m}' "$tmp/client.out") s (sent every 0.1 s)"
kill -KILL "$new" "$cp" 2>/dev/null
[ -z "$bad" ] && ok $T || notok $T "$bad"
exit 0
