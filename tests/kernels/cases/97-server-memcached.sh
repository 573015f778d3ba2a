#!/bin/bash
# case-timeout: 1200
# memcached (Debian's package), run as the memcache user with 4 threads,
# 30,000 keys of 1000 B and a client rewriting 3,000 of them over TCP until
# the freeze: checkpoint -> restore, then migrated to another network
# namespace and back (tests/kernels/cases/server_lib.bash). After each,
# every key is read back (get) and must be what the acknowledged writes
# left; the writer connects again and goes on. Opt-in: CASES=server.
set -u
cd "$(dirname "$0")/../../.." || exit 1
. tests/kernels/cases/server_lib.bash
KV=tests/kernels/cases/server_kv.py
KEYS=30000 HOT=3000 SIZE=1000
command -v memcached >/dev/null && id memcache >/dev/null 2>&1 ||
	{ skip server_memcached "memcached is not installed (scripts/packages/optional/servers.txt)"; exit 0; }
server_begin memcached 222

srv_start() {
	setsid nsenter --net="$(ns_path "$1")" memcached -u memcache -l 0.0.0.0 -p 11211 -U 0 -m 256 -t 4 \
		</dev/null >>"$tmp/memcached.log" 2>&1 &
	SP=$!
	local i
	for i in $(seq 300); do
		in_ns "$1" bash -c "exec 3<>/dev/tcp/$(ip_of "$1")/11211" 2>/dev/null && return 0
		sleep 0.2
	done
	echo "# memcached did not answer: $(tail -n 2 "$tmp/memcached.log")"
	return 1
}

srv_load() {
	local a=$(ip_of A):11211
	[ -n "${WP:-}" ] && kill "$WP" 2>/dev/null
	in_ns A "$PY" $KV memcached load "$a" $KEYS $HOT $SIZE | sed 's/^/# /'
	in_ns A "$PY" $KV memcached verify "$a" $KEYS $HOT $SIZE 0 | sed 's/^/# before the writer: get of every key: /'
	LOSSES=0 WLOG=$tmp/writer$STEP.log WGO=$tmp/go$STEP
	nsenter --net="$(ns_path A)" "$PY" $KV memcached writer "$(ip_of A):11211,$(ip_of B):11211" $KEYS $HOT $SIZE "$WLOG" "$WGO" &
	WP=$!
	pids+=("$WP")
	wait_for_line "$WLOG" "acknowledged 1000" 120 || echo "# the writer: $(tail -n 1 "$WLOG")"
}

srv_check() {
	local acked out
	LOSSES=$((LOSSES + 1))
	wait_for_line "$WLOG" "^lost $LOSSES after" 60 ||
		{ VNOTE="the writer did not see its connection lost: $(tail -n 1 "$WLOG")"; return 1; }
	acked=$(sed -n "s/^lost $LOSSES after \([0-9]*\) .*/\1/p" "$WLOG")
	out=$(in_ns A "$PY" $KV memcached verify "$1:11211" $KEYS $HOT $SIZE "$acked")
	VNOTE="get of every key: $out after $acked acknowledged"
	[[ "$out" == verified* ]]
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
