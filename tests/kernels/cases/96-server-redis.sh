#!/bin/bash
# case-timeout: 1200
# redis-server (Debian's package), run as the redis user, 30,000 keys of
# 1000 B and a client rewriting 3,000 of them (spread through the heap)
# over TCP until the freeze: checkpoint -> restore, then migrated to another
# network namespace and back (tests/kernels/cases/server_lib.bash). After
# each: DEBUG DIGEST equal to a fresh redis loaded with what the
# acknowledged writes leave, every key read back, and the writer connects
# again and goes on. Opt-in: CASES=server.
set -u
cd "$(dirname "$0")/../../.." || exit 1
. tests/kernels/cases/server_lib.bash
KV=tests/kernels/cases/server_kv.py
KEYS=30000 HOT=3000 SIZE=1000
command -v redis-server >/dev/null && id redis >/dev/null 2>&1 ||
	{ skip server_redis "redis-server is not installed (scripts/packages/servers.txt)"; exit 0; }
server_begin redis 221
mkdir -p "$tmp/redis" && chown redis "$tmp/redis"

srv_start() {
	setsid nsenter --net="$(ns_path "$1")" setpriv --reuid=redis --regid=redis --init-groups \
		redis-server --port 6379 --bind 0.0.0.0 --protected-mode no --save '' --appendonly no \
		--enable-debug-command yes --dir "$tmp/redis" --daemonize no --loglevel notice \
		</dev/null >>"$tmp/redis.log" 2>&1 &
	SP=$!
	local i
	for i in $(seq 300); do
		[ "$(in_ns "$1" redis-cli -h "$(ip_of "$1")" PING 2>/dev/null)" = PONG ] && return 0
		sleep 0.2
	done
	echo "# redis did not answer: $(tail -n 2 "$tmp/redis.log")"
	return 1
}

# the reference: what the data must be, in a redis of its own
ref_start() {
	[ -n "${REF:-}" ] && return
	redis-server --port 0 --unixsocket "$tmp/ref.sock" --save '' --appendonly no \
		--enable-debug-command yes --dir "$tmp" --daemonize no --loglevel warning </dev/null >/dev/null 2>&1 &
	REF=$!
	pids+=("$REF")
	for _ in $(seq 100); do [ -S "$tmp/ref.sock" ] && break; sleep 0.1; done
}

srv_load() {
	local a=$(ip_of A):6379
	[ -n "${WP:-}" ] && kill "$WP" 2>/dev/null
	in_ns A "$PY" $KV redis load "$a" $KEYS $HOT $SIZE | sed 's/^/# /'
	in_ns A "$PY" $KV redis verify "$a" $KEYS $HOT $SIZE 0 | sed 's/^/# before the writer: /'
	LOSSES=0 WLOG=$tmp/writer$STEP.log
	nsenter --net="$(ns_path A)" "$PY" $KV redis writer "$(ip_of A):6379,$(ip_of B):6379" $KEYS $HOT $SIZE "$WLOG" "$tmp/go$STEP" &
	WP=$! WGO=$tmp/go$STEP
	pids+=("$WP")
	wait_for_line "$WLOG" "acknowledged 1000" 120 || echo "# the writer: $(tail -n 1 "$WLOG")"
}

srv_check() {
	local addr=$1:6379 acked out d1 d2 last
	LOSSES=$((LOSSES + 1))
	wait_for_line "$WLOG" "^lost $LOSSES after" 60 ||
		{ VNOTE="the writer did not see its connection lost: $(tail -n 1 "$WLOG")"; return 1; }
	acked=$(sed -n "s/^lost $LOSSES after \([0-9]*\) .*/\1/p" "$WLOG")
	d1=$(in_ns A redis-cli -h "$1" DEBUG DIGEST)
	out=$(in_ns A "$PY" $KV redis verify "$addr" $KEYS $HOT $SIZE "$acked")
	last=$(sed -n 's/.*last write \([0-9]*\)/\1/p' <<<"$out")
	[ -n "$last" ] || { VNOTE="$out"; return 1; }
	ref_start
	redis-cli -s "$tmp/ref.sock" FLUSHALL >/dev/null
	"$PY" - "$tmp/ref.sock" $KEYS $HOT $SIZE "$last" <<'PYEOF' >/dev/null
import sys, importlib.util
spec = importlib.util.spec_from_file_location("kv", "tests/kernels/cases/server_kv.py")
kv = importlib.util.module_from_spec(spec); spec.loader.exec_module(kv)
import socket
class U(kv.Conn):
    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX); self.s.connect(path); self.buf = b""
r = kv.Redis.__new__(kv.Redis); r.c = U(sys.argv[1])
keys, hot, size, last = map(int, sys.argv[2:6])
st = kv.state_at(keys, hot, last)
for a in range(0, keys, 500):
    r.set_many([(kv.key(i), kv.value(i, st.get(i, 0), size)) for i in range(a, min(a + 500, keys))])
PYEOF
	d2=$(redis-cli -s "$tmp/ref.sock" DEBUG DIGEST)
	VNOTE="$out after $acked acknowledged; DEBUG DIGEST $d1, expected $d2"
	[ -n "$d1" ] && [ "$d1" = "$d2" ]
}

srv_clients() {
	touch "$WGO.$LOSSES"
	if wait_for_line "$WLOG" "50 after reconnecting $LOSSES" 120; then
		CNOTE="the writer reconnected ($(grep "^reconnected $LOSSES " "$WLOG" | cut -d' ' -f3-)) and wrote 50 more"
		return 0
	fi
	CNOTE="the writer did not go on: $(tail -n 1 "$WLOG")"
	return 1
}

server_chain
exit 0
