#!/bin/bash
# What real servers need from checkpoint, restore and migrate with a real
# CRIU: bytes that count shared memory and every image written, checked
# against the files; a TCP policy chosen before anything is frozen, and
# repeated by the restore; SysV shared memory of the host's IPC namespace
# refused first, and dumped in a namespace of its own; the dump options a
# restore needs repeated from the images' record (--criu-opt --file-locks);
# CRIU's refusals explained.
# On a kernel where this CRIU cannot dump an IPv4 socket at all (Linux
# 6.16 and later refuse it SO_PASSCRED, CRIU before 4.2 asks), the dump of
# a TCP server is checked to fail with that explained, and its restore is
# a skip with the reason.
set -u
. "$(dirname "$0")/../lib.bash"
cd "$(dirname "$0")/../.." || exit 1
MEMLENS=${MEMLENS:-$PWD/build/memlens}
WORKLOADS=${WORKLOADS:-$PWD/build/workloads}
PY=/usr/bin/python3
t_tmpdir criu-servers
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do
		[ "$p" -gt 1 ] 2>/dev/null && kill -9 "$p" 2>/dev/null
	done
}
t_at_exit cleanup

CRIU=$(scripts/ensure-criu.sh 2>"$tmp/ensure.err")
if [ -z "$CRIU" ]; then
	echo "# no working CRIU: $(tail -n1 "$tmp/ensure.err")"
	for t in shared_bytes_checkpoint shared_bytes_page_server shared_bytes_migrate \
		tcp_refused_before_freeze tcp_close_dump_restore tcp_established_dump_restore \
		sysv_host_ipc_refused sysv_own_ipc_namespace_dumped \
		criu_opt_reaches_restore criu_opt_reaches_migrate_restore; do
		skip $t "no working CRIU: $(tail -n1 "$tmp/ensure.err")"
	done
	exit 0
fi
export MEMLENS_CRIU=$CRIU

# jget FILE EXPR: a Python expression on the JSON object j
jget() {
	"$PY" -c 'import json,sys; j=json.loads(open(sys.argv[1]).read()); print(eval(sys.argv[2]))' "$1" "$2"
}

# start OUT CMD...: in its own session; $P once it printed its first line
start() {
	local out=$1
	shift
	setsid "$@" </dev/null >"$out" 2>&1 &
	P=$!
	pids+=("$P")
	wait_for_file "$out" 10
}

# the bytes of the image files under DIRS (not logs, pidfiles, or what a restore wrote)
image_bytes() {
	find "$@" -maxdepth 1 -type f ! -name '*.log' ! -name '*.pid' ! -name stats-restore \
		-printf '%s\n' | awk '{ s += $1 } END { print s + 0 }'
}

# --- bytes ---------------------------------------------------------------------

test_shared_bytes_checkpoint() {
	local n=shared_bytes_checkpoint rc files
	start "$tmp/sb.out" "$WORKLOADS/shmem" -m 64 -p 4
	"$MEMLENS" checkpoint -p "$P" -D "$tmp/sb" -R -d 0 --json >"$tmp/sb.json" 2>"$tmp/sb.err"
	rc=$?
	kill "$P"
	[ $rc = 0 ] || { notok $n "exit $rc: $(cat "$tmp/sb.err")"; return; }
	files=$(image_bytes "$tmp/sb")
	echo "# shmem 64 MiB shared + 4 MiB private: $(jget "$tmp/sb.json" '"bytes_written=%d pages_written=%d shpages_written=%d" % (j["bytes_written"], j["pages_written"], j["shpages_written"])'), image files $files"
	check $n "[ \"\$(jget \"$tmp/sb.json\" 'j[\"bytes_written\"] == $files and j[\"shpages_written\"] >= 16384 and j[\"bytes_written\"] >= 68 << 20')\" = True ]" \
		"$(cat "$tmp/sb.json")"
}

test_shared_bytes_page_server() {
	local n=shared_bytes_page_server port=$((20000 + $$ % 20000)) rc local_b server_b
	mkdir -p "$tmp/psv" "$tmp/psl"
	start "$tmp/ps.out" "$WORKLOADS/shmem" -m 16 -p 2
	timeout 30 "$CRIU" page-server -D "$tmp/psv" --address 127.0.0.1 --port "$port" -d \
		-o page-server.log >/dev/null 2>&1 || { notok $n "criu page-server did not start"; return; }
	"$MEMLENS" checkpoint -p "$P" -D "$tmp/psl" -R -d 0 --page-server "127.0.0.1:$port" --json \
		>"$tmp/ps.json" 2>"$tmp/ps.err"
	rc=$?
	kill "$P"
	[ $rc = 0 ] || { notok $n "exit $rc: $(cat "$tmp/ps.err")"; return; }
	local_b=$(image_bytes "$tmp/psl")
	t_wait 10 test -s "$tmp/psv/pages-1.img"
	server_b=$(find "$tmp/psv" -name 'pages-*.img' -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
	check $n "[ \"\$(jget \"$tmp/ps.json\" 'j[\"bytes_written\"] == $local_b + $server_b and $server_b >= 18 << 20')\" = True ]" \
		"local images $local_b, pages at the server $server_b" "$(cat "$tmp/ps.json")"
}

test_shared_bytes_migrate() {
	local n=shared_bytes_migrate rc files new
	start "$tmp/mb.out" "$WORKLOADS/shmem" -m 64 -p 4 -w
	timeout 300 "$MEMLENS" migrate -p "$P" --to "$tmp/mb-dest" -D "$tmp/mb-src" -m 2 -r 1 --json \
		>"$tmp/mb.json" 2>"$tmp/mb.err"
	rc=$?
	wait "$P" 2>/dev/null
	new=$(jget "$tmp/mb.json" 'j.get("restored_pid", 0)' 2>/dev/null)
	pids+=("$new")
	[ $rc = 0 ] || { notok $n "exit $rc: $(cat "$tmp/mb.err")"; return; }
	files=$(image_bytes "$tmp"/mb-dest/*)
	echo "# migrate shmem 64 MiB: $(jget "$tmp/mb.json" '" ".join("%s:%d+%d pages, %d B" % (r["kind"], r["pages"], r["shpages"], r["bytes"]) for r in j["rounds"])'), total $(jget "$tmp/mb.json" 'j["total_bytes"]'), destination files $files"
	check $n "[ \"\$(jget \"$tmp/mb.json\" 'j[\"total_bytes\"] == $files == sum(r[\"bytes\"] for r in j[\"rounds\"]) and sum(max(r[\"shpages\"], 0) for r in j[\"rounds\"]) >= 16384')\" = True ]" \
		"$(cat "$tmp/mb.json")"
}

# --- TCP -------------------------------------------------------------------------

# an echo server that serves one client after another, and a client that
# says "echo N ok" each time the file GO.N appears
cat >"$tmp/server.py" <<'EOF'
import socket
l = socket.socket()
l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind(("127.0.0.1", 0))
l.listen(8)
print("port", l.getsockname()[1], flush=True)
while True:
    c, _ = l.accept()
    while True:
        try:
            d = c.recv(100)
        except OSError:
            break
        if not d:
            break
        c.sendall(d)
    c.close()
EOF
cat >"$tmp/client.py" <<'EOF'
import os, socket, sys, time
port, go = int(sys.argv[1]), sys.argv[2]
s = socket.create_connection(("127.0.0.1", port))
s.settimeout(20)
print("connected", s.getsockname()[1], flush=True)
for n in range(1, 10):
    while not os.path.exists("%s.%d" % (go, n)):
        time.sleep(0.05)
    try:
        s.sendall(b"ping %d" % n)
        print("echo %d %s" % (n, "ok" if s.recv(100) == b"ping %d" % n else "wrong"), flush=True)
    except OSError as e:
        print("echo %d failed: %s" % (n, e), flush=True)
EOF

# server_and_client NAME: $SP the server, $CP the client, $PORT, $CPORT
server_and_client() {
	start "$tmp/$1.srv" "$PY" "$tmp/server.py"
	SP=$P
	PORT=$(awk '{print $2}' "$tmp/$1.srv")
	"$PY" "$tmp/client.py" "$PORT" "$tmp/$1.go" >"$tmp/$1.cli" 2>&1 &
	CP=$!
	pids+=("$CP")
	wait_for_line "$tmp/$1.cli" '^connected' 10
	CPORT=$(awk '/^connected/ {print $2}' "$tmp/$1.cli")
}

# ping NAME N: the client's round trip N; true when it came back
ping() {
	touch "$tmp/$1.go.$2"
	wait_for_line "$tmp/$1.cli" "^echo $2 " 25
	grep -q "^echo $2 ok" "$tmp/$1.cli"
}

running() {
	local st
	st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
	[[ "$st" != [TtZX] ]]
}

test_tcp_refused_before_freeze() {
	local n=tcp_refused_before_freeze rc bad=
	server_and_client tr
	"$MEMLENS" checkpoint -p "$SP" -D "$tmp/tr" -R -d 0 >"$tmp/tr.out" 2>"$tmp/tr.err"
	rc=$?
	[ $rc = 6 ] || bad="checkpoint exit $rc"
	grep -qF "pid $SP (python3): fd 4: an established TCP connection 127.0.0.1:$PORT <-> 127.0.0.1:$CPORT" "$tmp/tr.err" ||
		bad="$bad; the connection not named"
	grep -q -- "--tcp established (kept open" "$tmp/tr.err" && grep -q -- "--tcp close (restored closed" "$tmp/tr.err" &&
		grep -q "nothing was frozen" "$tmp/tr.err" || bad="$bad; no choice offered"
	[ -e "$tmp/tr/dump.log" ] && bad="$bad; CRIU ran"
	"$MEMLENS" migrate -p "$SP" --to "$tmp/tr-dest" -m 0 >"$tmp/trm.out" 2>"$tmp/trm.err"
	rc=$?
	[ $rc = 6 ] && grep -qF "127.0.0.1:$PORT <-> 127.0.0.1:$CPORT" "$tmp/trm.err" ||
		bad="$bad; migrate exit $rc: $(cat "$tmp/trm.err")"
	running "$SP" || bad="$bad; the server is not running"
	ping tr 1 || bad="$bad; the connection broke: $(cat "$tmp/tr.cli")"
	if [ -z "$bad" ]; then ok $n; else notok $n "$bad" "$(cat "$tmp/tr.err")"; fi
	kill "$SP" "$CP" 2>/dev/null
}

# dump_or_explain NAME JSON ERR: 0 when the dump went through; else 1, with
# the test's verdict printed: a known refusal explained is a skip (its
# reason), anything else fails
dump_or_explain() {
	local n=$1 j=$2 e=$3
	[ "$(jget "$j" 'j["ok"]')" = True ] && return 0
	if [ "$(jget "$j" 'any(f["kind"] == "criu_kernel" and not f["absorbed"] for f in j.get("preflight", {}).get("findings", []))')" = True ] &&
		grep -q "fix: use CRIU 4.2 or newer" "$e" && grep -q "nothing was frozen" "$e"; then
		ok "${n}_refusal_explained"
		skip "$n" "this CRIU cannot dump an IPv4 socket on this kernel (found before freezing)"
	elif grep -q "What to do: this kernel does not report socket option SO_PASS" "$e" &&
		grep -q "Can't get 1:" "$e" && grep -q "see its log .*/dump.log" "$e"; then
		ok "${n}_refusal_explained"
		skip "$n" "this CRIU cannot dump an IPv4 socket on this kernel: $(jget "$j" 'j["hint"]')"
	elif grep -q "What to do: CRIU could not lock the network" "$e"; then
		ok "${n}_refusal_explained"
		skip "$n" "$(jget "$j" 'j["hint"]')"
	else
		notok "$n" "the dump failed unexplained: $(cat "$e")"
	fi
	return 1
}

# --tcp close: the dump (the server dies with it), a restore that repeats
# the policy from the images, a server that closed the old connection and
# serves a new client
test_tcp_close_dump_restore() {
	local n=tcp_close_dump_restore rc new bad=
	server_and_client tc
	"$MEMLENS" checkpoint -p "$SP" -D "$tmp/tc" -d 0 --tcp close --json >"$tmp/tc.json" 2>"$tmp/tc.err"
	if ! dump_or_explain $n "$tmp/tc.json" "$tmp/tc.err"; then
		running "$SP" || notok ${n}_target_kept "the server is not running after a failed dump"
		kill "$SP" "$CP" 2>/dev/null
		return
	fi
	wait_gone "$SP" 10
	"$MEMLENS" restore -D "$tmp/tc" --json >"$tmp/tcr.json" 2>"$tmp/tcr.err"
	rc=$?
	new=$(jget "$tmp/tcr.json" 'j["pid"]')
	pids+=("$new")
	[ $rc = 0 ] || bad="restore exit $rc: $(cat "$tmp/tcr.err")"
	[ "$(jget "$tmp/tcr.json" 'j["repeated"]')" = --tcp-close ] || bad="$bad; not repeated: $(cat "$tmp/tcr.json")"
	"$PY" "$tmp/client.py" "$PORT" "$tmp/tc2.go" >"$tmp/tc2.cli" 2>&1 &
	pids+=("$!")
	wait_for_line "$tmp/tc2.cli" '^connected' 10 && ping tc2 1 || bad="$bad; a new client is not served: $(cat "$tmp/tc2.cli")"
	if [ -z "$bad" ]; then ok $n; else notok $n "$bad"; fi
	kill "$CP" 2>/dev/null
}

# --tcp established: the client's own connection goes on after the restore
test_tcp_established_dump_restore() {
	local n=tcp_established_dump_restore rc new bad=
	server_and_client te
	ping te 1
	"$MEMLENS" checkpoint -p "$SP" -D "$tmp/te" -d 0 --tcp established --json >"$tmp/te.json" 2>"$tmp/te.err"
	if ! dump_or_explain $n "$tmp/te.json" "$tmp/te.err"; then
		running "$SP" || notok ${n}_target_kept "the server is not running after a failed dump"
		ping te 2 || notok ${n}_target_kept "the connection broke after a failed dump"
		kill "$SP" "$CP" 2>/dev/null
		return
	fi
	wait_gone "$SP" 10
	"$MEMLENS" restore -D "$tmp/te" --json >"$tmp/ter.json" 2>"$tmp/ter.err"
	rc=$?
	new=$(jget "$tmp/ter.json" 'j["pid"]')
	pids+=("$new")
	[ $rc = 0 ] || bad="restore exit $rc: $(cat "$tmp/ter.err")"
	[ "$(jget "$tmp/ter.json" 'j["repeated"]')" = --tcp-established ] || bad="$bad; not repeated"
	ping te 2 || bad="$bad; the connection did not survive: $(cat "$tmp/te.cli")"
	if [ -z "$bad" ]; then ok $n; else notok $n "$bad"; fi
	kill "$CP" 2>/dev/null
}

# --- SysV shared memory --------------------------------------------------------------

# A segment of the host's IPC namespace: refused before anything is frozen,
# with the way out; in an IPC namespace of its own the same target is dumped
test_sysv_host_ipc_refused() {
	local n=sysv_host_ipc_refused rc bad=
	start "$tmp/sv.out" "$WORKLOADS/shmem" -m 1 -V
	"$MEMLENS" checkpoint -p "$P" -D "$tmp/sv" -R -d 0 >/dev/null 2>"$tmp/sv.err"
	rc=$?
	[ $rc = 6 ] || bad="exit $rc"
	grep -q "pid $P (shmem): it maps SysV shared memory (key 0x0, at 0x[0-9a-f]*) of the host's IPC namespace" "$tmp/sv.err" &&
		grep -q "nothing was frozen" "$tmp/sv.err" && grep -q "unshare --ipc CMD" "$tmp/sv.err" ||
		bad="$bad; message"
	[ -e "$tmp/sv/dump.log" ] && bad="$bad; CRIU ran"
	running "$P" || bad="$bad; the target is not running"
	if [ -z "$bad" ]; then ok $n; else notok $n "$bad" "$(cat "$tmp/sv.err")"; fi
	kill "$P"
	n=sysv_own_ipc_namespace_dumped
	if ! unshare --ipc true 2>/dev/null; then
		skip $n "unshare --ipc is not allowed here"
		return
	fi
	start "$tmp/svn.out" unshare --ipc "$WORKLOADS/shmem" -m 1 -V
	"$MEMLENS" checkpoint -p "$P" -D "$tmp/svn" -R -d 0 --json >"$tmp/svn.json" 2>"$tmp/svn.err"
	rc=$?
	if [ $rc = 0 ] && ls "$tmp"/svn/ipcns-shm-*.img >/dev/null 2>&1 && running "$P"; then
		ok $n
	else
		notok $n "exit $rc: $(cat "$tmp/svn.err")" "$(ls "$tmp/svn")"
	fi
	kill "$P"
}

# --- --criu-opt reaches the restore ------------------------------------------------

cat >"$tmp/locker.py" <<'EOF'
import fcntl, os, sys, time
f = open(sys.argv[1], "w")
fcntl.flock(f, fcntl.LOCK_EX)
print("ready", os.getpid(), flush=True)
while True:
    time.sleep(1)
EOF

# holds PID FILE: PID holds an flock on FILE (by /proc/locks)
holds() {
	local ino
	ino=$(stat -c %i "$2")
	awk -v p="$1" -v i="$ino" '$2 == "FLOCK" && $5 == p && $6 ~ ":" i "$" { f = 1 } END { exit !f }' /proc/locks
}

# CRIU restores file locks only when told (--file-locks), silently otherwise:
# the restore repeats the option the checkpoint was given
test_criu_opt_reaches_restore() {
	local n=criu_opt_reaches_restore rc new bad=
	start "$tmp/lk.out" "$PY" "$tmp/locker.py" "$tmp/lockfile"
	holds "$P" "$tmp/lockfile" || { notok $n "the locker holds no lock"; kill "$P"; return; }
	"$MEMLENS" checkpoint -p "$P" -D "$tmp/lk" -d 0 --criu-opt --file-locks >"$tmp/lk.out2" 2>"$tmp/lk.err"
	rc=$?
	[ $rc = 0 ] || { notok $n "checkpoint exit $rc: $(cat "$tmp/lk.err")"; kill "$P"; return; }
	wait "$P" 2>/dev/null
	# the same images without the record: restored without the lock
	cp -a "$tmp/lk" "$tmp/lk-norecord"
	rm "$tmp/lk-norecord/memlens-restore-opts.txt"
	"$MEMLENS" restore -D "$tmp/lk-norecord" --json >"$tmp/lkn.json" 2>"$tmp/lkn.err"
	new=$(jget "$tmp/lkn.json" 'j["pid"]')
	pids+=("$new")
	holds "$new" "$tmp/lockfile" && bad="restored with the lock without --file-locks: the test shows nothing"
	kill -9 "$new" 2>/dev/null
	# its pid free again (reaped, not a zombie): the next restore takes it
	t_wait 20 test ! -e "/proc/$new"
	"$MEMLENS" restore -D "$tmp/lk" --json >"$tmp/lkr.json" 2>"$tmp/lkr.err"
	rc=$?
	new=$(jget "$tmp/lkr.json" 'j["pid"]')
	pids+=("$new")
	[ $rc = 0 ] || bad="restore exit $rc: $(cat "$tmp/lkr.err")"
	[ "$(jget "$tmp/lkr.json" 'j["repeated"]')" = --file-locks ] || bad="$bad; not repeated: $(cat "$tmp/lkr.json")"
	holds "$new" "$tmp/lockfile" || bad="$bad; the restored $new holds no lock: $(cat /proc/locks)"
	if [ -z "$bad" ]; then ok $n; else notok $n "$bad"; fi
	kill -9 "$new" 2>/dev/null
}

test_criu_opt_reaches_migrate_restore() {
	local n=criu_opt_reaches_migrate_restore rc new bad=
	rm -f "$tmp/lockfile2"
	start "$tmp/lm.out" "$PY" "$tmp/locker.py" "$tmp/lockfile2"
	timeout 300 "$MEMLENS" migrate -p "$P" --to "$tmp/lm-dest" -m 0 --criu-opt --file-locks --json \
		>"$tmp/lm.json" 2>"$tmp/lm.err"
	rc=$?
	wait "$P" 2>/dev/null
	new=$(jget "$tmp/lm.json" 'j.get("restored_pid", 0)' 2>/dev/null)
	pids+=("$new")
	[ $rc = 0 ] || bad="migrate exit $rc: $(cat "$tmp/lm.err")"
	grep -qx -- --file-locks "$tmp"/lm-dest/*/memlens-restore-opts.txt || bad="$bad; no record at the destination"
	[ $rc = 0 ] && { holds "$new" "$tmp/lockfile2" || bad="$bad; the restored $new holds no lock"; }
	if [ -z "$bad" ]; then ok $n; else notok $n "$bad"; fi
	kill -9 "$new" 2>/dev/null
}

test_shared_bytes_checkpoint
test_shared_bytes_page_server
test_shared_bytes_migrate
test_tcp_refused_before_freeze
test_tcp_close_dump_restore
test_tcp_established_dump_restore
test_sysv_host_ipc_refused
test_criu_opt_reaches_restore
test_criu_opt_reaches_migrate_restore
t_done
