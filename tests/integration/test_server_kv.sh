#!/bin/bash
# The guest's real-server cases check data with tests/kernels/cases/server_kv.py
# and make the README's table with bench/servers_table.py: both checked here
# without CRIU, on this machine's redis-server (Debian's package). The
# writer's acknowledged writes must be exactly what verify expects, a
# changed key must be found, the writer must reconnect once told to, and
# the table must carry a run's rows. The README's table must be the one the
# committed run's rows (bench/results/servers-6.12.jsonl) make.
set -u
. "$(dirname "$0")/../lib.bash"
PY=${PYTHON:-/usr/bin/python3}
KV=tests/kernels/cases/server_kv.py
t_tmpdir server_kv
cp README.md "$tmp/README.cur"
$PY bench/servers_table.py --readme "$tmp/README.cur" bench/results/servers-6.12.jsonl >"$tmp/table.out" 2>&1
check servers_table_current "cmp -s README.md '$tmp/README.cur'" \
	"README.md differs from what bench/servers_table.py makes of bench/results/servers-6.12.jsonl: $(diff README.md "$tmp/README.cur" | head -n 6) $(cat "$tmp/table.out")"
command -v redis-server >/dev/null || { skip server_kv "redis-server is not installed"; exit 0; }
port=$((30000 + $$ % 20000))
redis-server --port $port --bind 127.0.0.1 --save '' --appendonly no --daemonize no \
	--dir "$tmp" --loglevel warning </dev/null >"$tmp/redis.log" 2>&1 &
t_bg $!
t_wait 30 eval '[ "$(redis-cli -p '$port' PING 2>/dev/null)" = PONG ]' ||
	{ notok server_kv_redis_started "$(tail -n 2 "$tmp/redis.log")"; exit 1; }
a=127.0.0.1:$port
check server_kv_load_verified "$PY $KV redis load $a 2000 200 100 >/dev/null && $PY $KV redis verify $a 2000 200 100 0 | grep -q 'verified 2000 keys'"
$PY $KV redis writer $a 2000 200 100 "$tmp/w.log" "$tmp/go" &
t_bg $!
wait_for_line "$tmp/w.log" "acknowledged 1000" 60
redis-cli -p $port CLIENT KILL TYPE normal >/dev/null
wait_for_line "$tmp/w.log" "^lost 1 after" 30
n=$(sed -n 's/^lost 1 after \([0-9]*\) .*/\1/p' "$tmp/w.log")
# the write in flight when the connection was killed may have been applied
# before the kill: exactly n or n + 1 writes, never anything else
check server_kv_writes_exact "$PY $KV redis verify $a 2000 200 100 $n | grep -Eq 'verified 2000 keys, last write ($n|$((n + 1)))\$'" \
	"$($PY $KV redis verify $a 2000 200 100 "$n")"
redis-cli -p $port SET key:7 changed >/dev/null
check server_kv_change_found "! $PY $KV redis verify $a 2000 200 100 $n >/dev/null"
touch "$tmp/go.1"
check server_kv_reconnects "wait_for_line '$tmp/w.log' '50 after reconnecting 1' 60" "$(tail -n 2 "$tmp/w.log")"

cat >"$tmp/rows.jsonl" <<'ROWS'
{"server": "redis", "kernel": "6.12.95", "step": "checkpoint", "mode": "dump", "ok": true, "data_verified": true, "clients_reconnected": true, "note": "", "bytes": 40293604, "rounds": 1, "downtime_ms": 4789}
{"server": "redis", "kernel": "6.12.95", "step": "migrate", "mode": "none", "ok": true, "data_verified": true, "clients_reconnected": true, "note": "", "bytes": 47063203, "final_bytes": 2731514, "rounds": 3, "downtime_ms": 2783}
{"server": "redis", "kernel": "6.12.95", "step": "migrate", "mode": "exclusion", "ok": false, "skip": true, "note": "CRIU cannot: why"}
ROWS
cat >"$tmp/tcp.jsonl" <<'ROWS'
{"server": "redis", "kernel": "6.12.95", "step": "migrate", "mode": "tcp-established", "ok": true, "data_verified": true, "connection_kept": true, "note": "", "bytes": 31721600, "rounds": 3, "final_bytes": 412345, "downtime_ms": 3042, "replies_before": 81, "replies_end": 102, "longest_wait_ms": 3210}
ROWS
printf '# R\n\n<!-- servers-table:begin -->\n<!-- servers-table:end -->\n\n<!-- servers-tcp-table:begin -->\n<!-- servers-tcp-table:end -->\n' >"$tmp/README.md"
$PY bench/servers_table.py --readme "$tmp/README.md" "$tmp/rows.jsonl" "$tmp/tcp.jsonl" >/dev/null
check servers_table_written "grep -q '^| redis-server 7 | ✔ (40.3 MB written) | ✔ | skipped (CRIU cannot: why) | 2 of 2 steps | 47.1 MB / – | 2.7 MB / – | 3 / – | 4.8 s / 2.8 s / – |$' '$tmp/README.md'" \
	"$(grep '^| redis' "$tmp/README.md")"
# the connection kept: a table of its own, one row, the main table's row alone
check servers_tcp_table_written "grep -q '^| redis-server 7 | ✔ | ✔ | kept: INCR answered 81 before the freeze, 102 at the end, none lost or repeated; longest wait 3.2 s | 31.7 MB | 0.4 MB | 3 | 3.0 s |$' '$tmp/README.md' &&
	[ \"\$(grep -c '^| redis-server 7 ' '$tmp/README.md')\" = 2 ]" "$(cat "$tmp/README.md")"
t_done
