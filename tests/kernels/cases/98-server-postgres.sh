#!/bin/bash
# case-timeout: 1200
# PostgreSQL (Debian's package), started as a container starts it: in an
# IPC namespace of its own (unshare --ipc: its SysV memory is not the
# host's) and a network namespace, TCP only. pgbench's tables (scale 1) and
# a table of 50,000 rows no one writes, pgbench writing with 2 clients until
# the freeze; the whole tree (postmaster, its background processes and
# backends) checkpoint -> restore, then migrated to another network
# namespace and back (tests/kernels/cases/server_lib.bash). After each: the
# still table's count, sum and md5 as before; pgbench's balances agree
# (accounts, tellers, branches and the history's deltas: every committed
# transaction whole); the history holds at least what it held before; a new
# pgbench connects and commits. Opt-in: CASES=server.
set -u
cd "$(dirname "$0")/../../.." || exit 1
. tests/kernels/cases/server_lib.bash
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)
if [ -z "$bin" ] || [ ! -x "$bin/postgres" ] || ! command -v pgbench >/dev/null || ! id postgres >/dev/null 2>&1; then
	skip server_postgres "PostgreSQL is not installed (scripts/packages/servers.txt)"
	exit 0
fi
server_begin postgres 223
PGD=${SCRATCH:-$tmp}/memlens-pg$$
mkdir -p "$PGD" && chown postgres "$PGD" && chmod 700 "$PGD"
t_at_exit 'rm -rf "$PGD"'
if ! setpriv --reuid=postgres --regid=postgres --init-groups "$bin/initdb" -D "$PGD/data" -A trust >"$tmp/initdb.log" 2>&1; then
	notok server_postgres "initdb failed: $(tail -n 3 "$tmp/initdb.log")"
	exit 0
fi
echo "host all all 0.0.0.0/0 trust" >>"$PGD/data/pg_hba.conf"
sql() { in_ns "$CUR" psql -h "$1" -U postgres -X -Atq -c "$2" postgres 2>&1; }

srv_start() {
	setsid nsenter --net="$(ns_path "$1")" unshare --ipc \
		setpriv --reuid=postgres --regid=postgres --init-groups "$bin/postgres" -D "$PGD/data" \
		-c listen_addresses='*' -c unix_socket_directories= -p 5432 -c shared_buffers=64MB \
		</dev/null >>"$tmp/pg.log" 2>&1 &
	SP=$!
	local i
	for i in $(seq 600); do
		in_ns "$1" pg_isready -q -h "$(ip_of "$1")" -p 5432 && return 0
		sleep 0.2
	done
	echo "# postgres did not answer: $(tail -n 2 "$tmp/pg.log")"
	return 1
}

BENCH=
bench_start() {	# IP: 2 pgbench clients writing until the freeze
	BLOG=$tmp/pgbench$STEP-$1.log
	nsenter --net="$(ns_path "$CUR")" pgbench -h "$1" -U postgres -n -c 2 -T 3600 -P 2 postgres >"$BLOG" 2>&1 &
	BENCH=$!
	pids+=("$BENCH")
	wait_for_line "$BLOG" "^progress: .* [1-9][0-9.]* tps" 180
}

STILL="select count(*), sum(id), md5(string_agg(v, ',' order by id)) from memlens_still"
srv_load() {
	local ip=$(ip_of A)
	[ -n "$BENCH" ] && kill "$BENCH" 2>/dev/null
	in_ns A pgbench -h "$ip" -U postgres -i -s 1 -q postgres >"$tmp/pgbench-init.log" 2>&1 ||
		echo "# pgbench -i: $(tail -n 2 "$tmp/pgbench-init.log")"
	sql "$ip" "drop table if exists memlens_still" >/dev/null
	sql "$ip" "create table memlens_still as select g as id, md5(g::text) as v from generate_series(1, 50000) g" >/dev/null
	STILL0=$(sql "$ip" "$STILL")
	echo "# the still table: $STILL0"
	echo "# the tree: $(pgrep -P "$SP" | wc -l) processes under the postmaster $SP; IPC namespace $(readlink /proc/$SP/ns/ipc), memlens's $(readlink /proc/self/ns/ipc)"
	bench_start "$ip" || echo "# pgbench: $(tail -n 2 "$BLOG")"
	H0=$(sql "$ip" "select count(*) from pgbench_history")
}

srv_check() {
	local still sums h
	# pgbench ends when the freeze closed its connections
	timeout 120 tail --pid="$BENCH" -f /dev/null
	still=$(sql "$1" "$STILL")
	sums=$(sql "$1" "select (select sum(abalance) from pgbench_accounts), (select sum(tbalance) from pgbench_tellers), (select sum(bbalance) from pgbench_branches), (select coalesce(sum(delta), 0) from pgbench_history)")
	h=$(sql "$1" "select count(*) from pgbench_history")
	VNOTE="still table $still (before: $STILL0); balances $sums; history $h rows (>= $H0); $(pgrep -P "$SP" | wc -l) processes under the postmaster"
	[ "$still" = "$STILL0" ] && [ -n "$STILL0" ] &&
		[ "$(tr '|' '\n' <<<"$sums" | sort -u | wc -l)" = 1 ] && [[ "$sums" =~ ^-?[0-9] ]] &&
		[[ "$h" =~ ^[0-9]+$ ]] && [ "$h" -ge "${H0:-0}" ]
}

srv_clients() {
	if bench_start "$1"; then
		H0=$(sql "$1" "select count(*) from pgbench_history")
		CNOTE="a new pgbench connected: $(grep -m1 '^progress' "$BLOG")"
		return 0
	fi
	CNOTE="pgbench did not commit: $(tail -n 2 "$BLOG" | tr '\n' ' ')"
	return 1
}

server_chain
[ -n "$BENCH" ] && kill "$BENCH" 2>/dev/null
exit 0
