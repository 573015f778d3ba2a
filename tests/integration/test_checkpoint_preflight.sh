#!/bin/bash
# What CRIU would refuse, found before anything is frozen: real processes
# with a unix socket connected to a process outside their tree, a file
# lock, a tracer, an io_uring or a userfaultfd, a deleted file larger than
# CRIU copies, an established TCP connection, a session led from outside,
# a child in a UTS namespace of its own. Each: `memlens checkpoint` and
# `memlens migrate` exit 6, the message names the process, the resource
# and what fixes it, CRIU never runs, and the target runs on as before.
# With the option that takes care of a finding, --check-only says it is
# absorbed (and by what) and exits 0, unless something else refuses.
set -u
. "$(dirname "$0")/../lib.bash"
cd "$(dirname "$0")/../.." || exit 1
MEMLENS=${MEMLENS:-$PWD/build/memlens}
PY=/usr/bin/python3
t_tmpdir checkpoint-preflight

CRIU=$(scripts/ensure-criu.sh 2>"$tmp/ensure.err")
if [ -z "$CRIU" ]; then
	skip preflight "no working CRIU: $(tail -n1 "$tmp/ensure.err")"
	t_done
	exit 0
fi
export MEMLENS_CRIU=$CRIU

# The launcher: starts the target (a child in a session of its own, but for
# "nosession", where it stays in the launcher's) with MODE's resource, prints "target PID" (or "none WHY"),
# and stays, holding whatever lies outside the target's tree.
cat >"$tmp/launch.py" <<'EOF'
import ctypes, fcntl, os, signal, socket, subprocess, sys, time
mode, tmp = sys.argv[1], sys.argv[2]
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
r, w = os.pipe()
keep = None
if mode == "unix":
    keep, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
pid = os.fork()
if pid == 0:
    os.close(r)
    if mode != "nosession":
        os.setsid()
    msg = b"ok"
    if mode == "unix":
        keep.close()
        mine = theirs
    elif mode == "lock":
        lf = open(tmp + "/lockfile", "w")
        fcntl.flock(lf, fcntl.LOCK_EX)
    elif mode == "uring":
        params = ctypes.create_string_buffer(120)
        fd = libc.syscall(425, 4, params)  # io_uring_setup
        if fd < 0:
            msg = b"io_uring_setup: " + os.strerror(ctypes.get_errno()).encode()
    elif mode == "uffd":
        fd = libc.syscall(323, os.O_CLOEXEC | os.O_NONBLOCK)  # userfaultfd
        if fd < 0:
            msg = b"userfaultfd: " + os.strerror(ctypes.get_errno()).encode()
    elif mode == "ghost":
        g = open(tmp + "/ghost", "wb")
        g.write(os.urandom(2 << 20))
        g.flush()
        os.unlink(tmp + "/ghost")
    elif mode == "nested":
        # a child in a UTS namespace of its own (unshare execs sleep there)
        try:
            k = subprocess.Popen(["unshare", "--uts", "sleep", "1000"])
            for _ in range(250):
                if os.readlink("/proc/%d/ns/uts" % k.pid) != os.readlink("/proc/self/ns/uts"):
                    break
                time.sleep(0.02)
            else:
                msg = b"unshare --uts did not make a UTS namespace"
        except OSError as e:
            msg = ("unshare --uts: %s" % e).encode()
    elif mode == "tcp":
        l = socket.socket()
        l.bind(("127.0.0.1", 0))
        l.listen(1)
        c = socket.create_connection(l.getsockname())
        s, _ = l.accept()
    os.write(w, msg)
    os.close(w)
    while True:
        time.sleep(1)
os.close(w)
msg = os.read(r, 200).decode()
if msg != "ok":
    os.kill(pid, signal.SIGKILL)
    print("none", msg, flush=True)
    sys.exit(0)
if mode == "traced":
    # PTRACE_SEIZE: traced, never stopped
    if libc.ptrace(0x4206, pid, None, None) != 0:
        os.kill(pid, signal.SIGKILL)
        print("none ptrace:", os.strerror(ctypes.get_errno()), flush=True)
        sys.exit(0)
print("target", pid, flush=True)
while True:
    time.sleep(1)
EOF

# launch MODE: $T the target, $L the launcher; false (and $WHY) when the
# resource cannot be had here
launch() {
	local out=$tmp/$1.launch
	# The launcher leads a session of its own, whatever session this
	# script runs in (a CI runner's may read 0): "nosession" puts the
	# target in the launcher's session, led from outside its tree.
	setsid "$PY" "$tmp/launch.py" "$1" "$tmp" </dev/null >"$out" 2>&1 &
	L=$!
	t_bg "$L"
	wait_for_line "$out" '^(target|none) ' 10
	WHY=$(sed -n 's/^none //p' "$out")
	T=$(awk '/^target/ {print $2}' "$out")
	[ -n "$T" ] && t_bg "$T"
	[ -n "$T" ]
}

state() { awk '{print $3}' "/proc/$1/stat" 2>/dev/null; }

jget() {
	"$PY" -c 'import json,sys; j=json.loads(open(sys.argv[1]).read()); print(eval(sys.argv[2]))' "$1" "$2"
}

# refused NAME CMD PATTERN...: CMD (memlens checkpoint or migrate) on $T
# exits 6, its stderr has each PATTERN (grep -E), CRIU did not run, and
# the target is as it was
refused() {
	local n=$1 cmd=$2 rc st0 bad= d=$tmp/$1.d
	shift 2
	st0=$(state "$T")
	if [ "$cmd" = checkpoint ]; then
		"$MEMLENS" checkpoint -p "$T" -D "$d" -d 0 -R >"$tmp/$n.out" 2>"$tmp/$n.err"
	else
		"$MEMLENS" migrate -p "$T" --to "$tmp/$n.dest" -D "$d" -m 0 >"$tmp/$n.out" 2>"$tmp/$n.err"
	fi
	rc=$?
	[ $rc = 6 ] || bad="exit $rc"
	grep -q "nothing was frozen" "$tmp/$n.err" || bad="$bad; not said that nothing was frozen"
	for p in "$@"; do
		grep -qE -- "$p" "$tmp/$n.err" || bad="$bad; no '$p'"
	done
	ls "$d"/*.img "$d"/*.log "$d"/1 >/dev/null 2>&1 && bad="$bad; CRIU ran"
	[ "$(state "$T")" = "$st0" ] || bad="$bad; state $st0 -> $(state "$T")"
	[ -d "/proc/$T" ] || bad="$bad; the target is gone"
	if [ -z "$bad" ]; then ok "$n"; else notok "$n" "$bad" "$(cat "$tmp/$n.err")"; fi
}

# --check-only with OPTIONS...: its exit status into $RC, JSON into $tmp/NAME.json
check_only() {
	local n=$1
	shift
	"$MEMLENS" checkpoint -p "$T" -D "$tmp/$n.d" --check-only --json "$@" >"$tmp/$n.json" 2>"$tmp/$n.err"
	RC=$?
}

# --- a unix stream socket whose peer is the launcher, outside the tree ----------
if launch unix; then
	refused unix_peer_outside checkpoint \
		"pid $T \(python3\): fd [0-9]+: a unix stream socket .* of pid $L \(python3\), outside the tree" \
		"fix: CRIU cannot dump one end of a unix connection: start the peer in the same process tree"
	refused unix_peer_outside_migrate migrate "a unix stream socket .* of pid $L"
	kill -9 "$T" "$L"; wait "$L" 2>/dev/null
else
	skip unix_peer_outside "$WHY"
fi

# --- a file lock --------------------------------------------------------------------
if launch lock; then
	refused file_lock checkpoint "pid $T \(python3\): fd [0-9]+: a FLOCK WRITE lock on $tmp/lockfile" \
		"fix: pass --criu-opt --file-locks"
	check_only file_lock_absorbed --criu-opt --file-locks
	if [ $RC = 0 ] && [ "$(jget "$tmp/file_lock_absorbed.json" '[(f["kind"], f["absorbed"]) for f in j["preflight"]["findings"]] == [("file_lock", True)] and j["check_only"] and j["criu_ran"] == False')" = True ] &&
		grep -q "absorbed by --criu-opt --file-locks" "$tmp/file_lock_absorbed.json"; then
		ok file_lock_absorbed
	else
		notok file_lock_absorbed "exit $RC: $(cat "$tmp/file_lock_absorbed.json" "$tmp/file_lock_absorbed.err")"
	fi
	kill -9 "$T" "$L"; wait "$L" 2>/dev/null
else
	skip file_lock "$WHY"
fi

# --- a process traced by another (seized: never stopped) ----------------------------
if launch traced; then
	refused traced checkpoint "pid $T \(python3\): it is traced by pid $L \(python3\)" \
		"fix: detach the tracer first"
	kill -9 "$T" "$L"; wait "$L" 2>/dev/null
else
	skip traced "$WHY"
fi

# --- file descriptors CRIU has no dumper for ------------------------------------------
if launch uring; then
	refused io_uring checkpoint "pid $T \(python3\): fd [0-9]+: an io_uring instance \(anon_inode:\[io_uring\]\)" \
		"fix: have the target close it"
	kill -9 "$T" "$L"; wait "$L" 2>/dev/null
else
	skip io_uring "$WHY"
fi
if launch uffd; then
	refused userfaultfd checkpoint "pid $T \(python3\): fd [0-9]+: a userfaultfd \(anon_inode:\[userfaultfd\]\)"
	kill -9 "$T" "$L"; wait "$L" 2>/dev/null
else
	skip userfaultfd "$WHY"
fi

# --- a deleted file larger than CRIU copies by default -------------------------------
if launch ghost; then
	refused deleted_file checkpoint "pid $T \(python3\): fd [0-9]+: the deleted file $tmp/ghost \(deleted\) of [0-9]+ bytes" \
		"fix: pass --criu-opt --ghost-limit=SIZE"
	check_only deleted_file_limit --criu-opt --ghost-limit=4M
	[ $RC = 0 ] && ok deleted_file_limit || notok deleted_file_limit "exit $RC: $(cat "$tmp/deleted_file_limit.err")"
	kill -9 "$T" "$L"; wait "$L" 2>/dev/null
else
	skip deleted_file "$WHY"
fi

# --- an established TCP connection, without and with a policy -----------------------
if launch tcp; then
	refused tcp_no_policy checkpoint \
		"pid $T \(python3\): fd [0-9]+: an established TCP connection 127.0.0.1:[0-9]+ <-> 127.0.0.1:[0-9]+" \
		"fix: choose --tcp established .* or --tcp close"
	check_only tcp_close --tcp close
	# the connections absorbed by the policy; a CRIU too old for this
	# kernel's sockets still refuses, and says so
	ans=$(jget "$tmp/tcp_close.json" '(all(f["absorbed"] and "absorbed by --tcp close" in f["fix"] for f in j["preflight"]["findings"] if f["kind"] == "tcp"), sum(f["kind"] == "tcp" for f in j["preflight"]["findings"]), [f["kind"] for f in j["preflight"]["findings"] if not f["absorbed"]])')
	if [ "$ans" = "(True, 2, [])" ] && [ $RC = 0 ]; then
		ok tcp_close_absorbed
	elif [ "$ans" = "(True, 2, ['criu_kernel'])" ] && [ $RC = 6 ] && grep -q "fix: use CRIU 4.2 or newer" "$tmp/tcp_close.err"; then
		ok tcp_close_absorbed
		echo "# CRIU $("$CRIU" --version | awk '/Version/ {print $2}') on $(uname -r): its TCP sockets refused before freezing"
	else
		notok tcp_close_absorbed "exit $RC, $ans: $(cat "$tmp/tcp_close.err")"
	fi
	[ "$(state "$T")" = S ] || notok tcp_target_kept "state $(state "$T")"
	kill -9 "$T" "$L"; wait "$L" 2>/dev/null
else
	skip tcp_no_policy "$WHY"
fi

# --- a child in a namespace of its own (CRIU: "Can't dump nested uts namespace") ---
if launch nested; then
	refused nested_namespace checkpoint \
		"pid [0-9]+ \(sleep\): it is in a uts namespace of its own \(uts:\[[0-9]+\]\), not the root's" \
		"fix: CRIU dumps such a namespace only for the tree's root"
	refused nested_namespace_migrate migrate "pid [0-9]+ \(sleep\): it is in a uts namespace of its own"
	check_only nested_namespace_json
	[ $RC = 6 ] && [ "$(jget "$tmp/nested_namespace_json.json" '[(f["kind"], f["comm"], f["absorbed"]) for f in j["preflight"]["findings"]]')" = "[('namespace', 'sleep', False)]" ] &&
		ok nested_namespace_json ||
		notok nested_namespace_json "exit $RC: $(cat "$tmp/nested_namespace_json.json" "$tmp/nested_namespace_json.err")"
	pkill -9 -P "$T"
	kill -9 "$T" "$L"; wait "$L" 2>/dev/null
else
	skip nested_namespace "$WHY"
fi

# --- a session led from outside the tree ------------------------------------------------
if launch nosession; then
	refused session_outside checkpoint "pid $T \(python3\): its session \(sid [0-9]+\) is led by a process outside the tree" \
		"fix: pass --shell-job"
	check_only session_shell_job --shell-job
	[ $RC = 0 ] && grep -q '"absorbed by --shell-job"' "$tmp/session_shell_job.json" && ok session_shell_job ||
		notok session_shell_job "exit $RC: $(cat "$tmp/session_shell_job.json" "$tmp/session_shell_job.err")"
	kill -9 "$T" "$L"; wait "$L" 2>/dev/null
else
	skip session_outside "$WHY"
fi

# --- nothing to refuse: --check-only says so, and exits 0 ------------------------------
if launch clean; then
	"$MEMLENS" checkpoint -p "$T" -D "$tmp/clean.d" --check-only >"$tmp/clean.out" 2>"$tmp/clean.err"
	rc=$?
	[ $rc = 0 ] && grep -q "nothing CRIU would refuse was found" "$tmp/clean.out" &&
		grep -q "processes: 1 inspected; 0 finding" "$tmp/clean.out" && [ "$(state "$T")" = S ] &&
		ok clean_check_only || notok clean_check_only "exit $rc: $(cat "$tmp/clean.out" "$tmp/clean.err")"
	kill -9 "$T" "$L"; wait "$L" 2>/dev/null
fi
t_done
