#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""
Integration tests of `memlens agent` with a real gRPC client (Debian's
python3-grpcio). Stubs are generated from proto/agent.proto at test time.
Every test prints "ok - NAME", "not ok - NAME" or "skip - NAME: reason".

Environment: MEMLENS (the binary), WORKLOADS (the workloads directory),
optionally MEMLENS_CRIU (a CRIU binary for the checkpoint tests).
"""
import itertools
import math
import os
import random
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MEMLENS = os.environ.get("MEMLENS", os.path.join(ROOT, "build", "memlens"))
WORKLOADS = os.environ.get("WORKLOADS", os.path.join(ROOT, "build", "workloads"))
TMP = tempfile.mkdtemp(prefix="memlens-agent-test.")

subprocess.run([sys.executable, "-m", "grpc_tools.protoc", "-I", os.path.join(ROOT, "proto"),
                "--python_out=" + TMP, "--grpc_python_out=" + TMP,
                os.path.join(ROOT, "proto", "agent.proto")], check=True)
sys.path.insert(0, TMP)
import grpc  # noqa: E402
import agent_pb2 as pb  # noqa: E402
import agent_pb2_grpc as pbg  # noqa: E402

METHODS = ["StartProfiling", "StopProfiling", "GetHotRegions", "GetDirtyVolume", "GetStatus",
           "PreCheckpoint", "FinalDump", "Restore", "StartPageServer", "Migrate"]
results = {"ok": 0, "fail": 0, "skip": 0}
procs = []
SEQ = itertools.count()


class Skip(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


def run_test(fn):
    name = fn.__name__
    try:
        fn()
        print("ok - " + name, flush=True)
        results["ok"] += 1
    except Skip as e:
        print("skip - %s: %s" % (name, e), flush=True)
        results["skip"] += 1
    except Exception as e:  # a failed check or an unexpected error
        for line in traceback.format_exc().splitlines()[-6:]:
            print("#   " + line)
        print("not ok - %s: %s" % (name, e), flush=True)
        results["fail"] += 1
    finally:
        cleanup()


def cleanup():
    while procs:
        p = procs.pop()
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()


def spawn(argv, **kw):
    # nothing of the runner's: CRIU refuses to dump an inherited stdin it
    # cannot resolve (a socket, a file of another mount namespace)
    kw.setdefault("stdin", subprocess.DEVNULL)
    p = subprocess.Popen(argv, start_new_session=True, **kw)
    procs.append(p)
    return p


def memwrite(mib=4, secs=None, pass_fds=()):
    # paced (-P): the whole buffer written once per profiler interval, so that
    # it turns hot however little CPU it gets on a loaded machine (a small
    # buffer, so that one pass fits in an interval even then)
    argv = [os.path.join(WORKLOADS, "memwrite"), "-P", "-m", str(mib)]
    if secs:
        argv += ["-s", str(secs)]
    out = open(os.path.join(TMP, "memwrite-%d.out" % next(SEQ)), "w+")
    p = spawn(argv, stdout=out, stderr=subprocess.STDOUT, pass_fds=pass_fds)
    for _ in range(3000):  # up to 60 s: a loaded machine may start it late
        out.seek(0)
        m = re.search(r"pid (\d+) writes 0x([0-9a-f]+)-0x([0-9a-f]+)", out.read())
        if m:
            return p, int(m.group(2), 16), int(m.group(3), 16)
        time.sleep(0.02)
    out.seek(0)
    raise AssertionError("memwrite did not start in 60 s (exit status %s): %r" %
                         (p.poll(), out.read()[-500:]))


def sock_path(tag):
    return os.path.join(TMP, tag + ".sock")


def start_agent(args, sock=None, wait_for=None, env=None, prefix=()):
    """Start the agent; wait until its socket (or @wait_for TCP port) accepts.
    @prefix: a command that runs it (nsenter into a network namespace)."""
    given = any(a == "--socket" or a.startswith("--socket=") for a in args)
    argv = list(prefix) + [MEMLENS, "agent"] + (["--socket", sock] if sock and not given else []) + args
    err = open(os.path.join(TMP, "agent-%d.err" % next(SEQ)), "w+")
    p = spawn(argv, stdout=subprocess.DEVNULL, stderr=err, env=env)
    p.errfile = err
    deadline = time.time() + 60
    while time.time() < deadline:
        if p.poll() is not None:
            err.seek(0)
            raise AssertionError("agent exited %d: %s" % (p.returncode, err.read()))
        if sock and os.path.exists(sock):
            try:
                s = socket.socket(socket.AF_UNIX)
                s.connect(sock)
                s.close()
                return p
            except OSError:
                pass
        if wait_for:
            try:
                socket.create_connection(("127.0.0.1", wait_for), 0.2).close()
                return p
            except OSError:
                pass
        time.sleep(0.02)
    raise AssertionError("the agent did not start listening")


def agent_err(p):
    p.errfile.seek(0)
    return p.errfile.read()


def stub(target, creds=None):
    ch = grpc.secure_channel(target, creds) if creds else grpc.insecure_channel(target)
    return ch, pbg.CRIUAgentStub(ch)


def unix(sock):
    return stub("unix:" + sock)


def expect_code(fn, code, *args, **kw):
    try:
        fn(*args, timeout=kw.pop("timeout", 10), **kw)
    except grpc.RpcError as e:
        check(e.code() == code, "expected %s, got %s: %s" % (code, e.code(), e.details()))
        check(e.details() and len(e.details()) > 10, "error without a message: %r" % e.details())
        return e.details()
    raise AssertionError("expected %s, the call succeeded" % code)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def vm_flags_uw(pid):
    """True when a VMA of @pid is still registered with userfaultfd-wp."""
    with open("/proc/%d/smaps" % pid) as f:
        return any(line.startswith("VmFlags:") and " uw" in line for line in f)


def has_uffd_fd(pid):
    d = "/proc/%d/fd" % pid
    for fd in os.listdir(d):
        try:
            if "userfaultfd" in os.readlink(os.path.join(d, fd)):
                return True
        except OSError:
            pass
    return False


def wait_hot(st, lo, hi, secs=120):
    deadline = time.time() + secs
    while time.time() < deadline:
        r = st.GetHotRegions(pb.GetHotRegionsRequest(), timeout=5)
        for reg in r.regions:
            if reg.start_addr <= lo and reg.end_addr >= hi:
                return r, reg
        time.sleep(0.1)
    raise AssertionError("memwrite's buffer %x-%x never became hot" % (lo, hi))


def target_untouched(pid):
    check(os.path.exists("/proc/%d" % pid), "the target %d died" % pid)
    check(not vm_flags_uw(pid), "the target still has uffd-wp registered VMAs")
    check(not has_uffd_fd(pid), "the target holds a userfaultfd")


# ---------------------------------------------------------------------------

def test_cli_usage():
    r = subprocess.run([MEMLENS, "agent", "--help"], capture_output=True, text=True)
    check(r.returncode == 0 and "--pid" in r.stdout and "--metrics" in r.stdout,
          "--help: %d" % r.returncode)
    for bad, code in ((["--bogus"], 2), (["--tls-cert", "/x"], 2), (["--grace", "x"], 2),
                      (["--pid", "1", "--comm", "x"], 2),
                      (["--metrics", "nonsense"], None), (["--pid", "999999999"], 2)):
        r = subprocess.run([MEMLENS, "agent", "--socket", sock_path("usage")] + bad,
                           capture_output=True, text=True, timeout=20)
        check(r.returncode != 0 and (code is None or r.returncode == code),
              "%s: exit %d" % (bad, r.returncode))
        check("memlens agent:" in r.stderr, "%s: no clear error: %r" % (bad, r.stderr))
    # a pid that does not exist: exit 3 (no such target)
    p = subprocess.Popen(["true"])
    p.wait()
    r = subprocess.run([MEMLENS, "agent", "--socket", sock_path("usage"), "--pid",
                        str(p.pid)], capture_output=True, text=True, timeout=20)
    check(r.returncode == 3 and "no process with pid" in r.stderr, "dead pid: %d %s" % (r.returncode, r.stderr))


def test_socket_mode_and_lock():
    pub = os.path.join(TMP, "pub")	# a directory anyone may enter
    os.chmod(TMP, 0o711)
    os.makedirs(pub, 0o755, exist_ok=True)
    os.chmod(pub, 0o755)
    sock = os.path.join(pub, "mode.sock")
    a = start_agent(["--pid", str(os.getpid())], sock)
    st = os.stat(sock)
    check(stat.S_ISSOCK(st.st_mode), "not a socket")
    check(stat.S_IMODE(st.st_mode) == 0o600, "socket mode %o" % stat.S_IMODE(st.st_mode))
    if shutil.which("setpriv"):
        # another user cannot connect
        probe = ("import socket, sys\ns = socket.socket(socket.AF_UNIX)\n"
                 "try:\n    s.connect(sys.argv[1])\nexcept PermissionError:\n    sys.exit(13)\n")
        r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                            sys.executable, "-c", probe, sock], timeout=20)
        check(r.returncode == 13, "user nobody: connect exit %d (expected EACCES)" % r.returncode)
        os.chmod(sock, 0o666)	# the same probe passes once the mode allows it
        r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                            sys.executable, "-c", probe, sock], timeout=20)
        check(r.returncode == 0, "the probe cannot tell: exit %d with mode 0666" % r.returncode)
        os.chmod(sock, 0o600)
    with open(sock + ".lock") as f:
        check(f.read().strip() == str(a.pid), "lock file does not name the agent")
    a.send_signal(signal.SIGTERM)
    check(a.wait(20) == 0, "exit %s" % a.returncode)
    check(not os.path.exists(sock) and not os.path.exists(sock + ".lock"),
          "socket or lock left behind")


TEST_USER = "memlens-test"


def test_user():
    """A non-root user for the socket tests: created (useradd) when missing."""
    if subprocess.run(["id", TEST_USER], capture_output=True).returncode != 0:
        if not shutil.which("useradd"):
            raise Skip("no user %s and no useradd to create it" % TEST_USER)
        r = subprocess.run(["useradd", "--system", "--no-create-home", "--shell",
                            "/usr/sbin/nologin", TEST_USER], capture_output=True, text=True)
        if r.returncode not in (0, 9):  # 9: it exists (another run made it meanwhile)
            raise Skip("useradd %s failed: %s" % (TEST_USER, r.stderr.strip()))
    if not shutil.which("runuser"):
        raise Skip("runuser (util-linux) is not installed")
    import pwd
    return pwd.getpwnam(TEST_USER)


def as_user(argv, **kw):
    return subprocess.run(["runuser", "-u", TEST_USER, "--"] + argv, capture_output=True,
                          text=True, timeout=30, **kw)


def agent_fails(args, code, what, sock=None):
    """Start an agent that must fail: exit @code, a message, no abort, nothing left behind."""
    sock = sock or sock_path("fail")
    d = os.path.dirname(sock)
    before = set(os.listdir(d)) if os.path.isdir(d) else set()
    r = subprocess.run([MEMLENS, "agent", "--socket", sock] + args, capture_output=True,
                       text=True, timeout=30)
    check(r.returncode >= 0, "%s: killed by signal %d (abort?): %s" % (what, -r.returncode, r.stderr))
    check(r.returncode == code, "%s: exit %d, want %d: %s" % (what, r.returncode, code, r.stderr))
    check("memlens agent: " in r.stderr and "ssertion" not in r.stderr,
          "%s: no clear message: %r" % (what, r.stderr))
    after = set(os.listdir(d)) if os.path.isdir(d) else set()
    check(after == before, "%s: left behind %s" % (what, sorted(after - before)))
    return r.stderr


def test_startup_errors_clean():
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    bport = busy.getsockname()[1]
    notpem = os.path.join(TMP, "not.pem")
    open(notpem, "w").write("not a certificate\n")
    me = ["--pid", str(os.getpid())]
    try:
        for args, code, what in (
                (["--listen", "127.0.0.1:99999"], 2, "port above 65535"),
                (["--listen", "127.0.0.1:0"], 2, "port 0"),
                (["--listen", "127.0.0.1:-1"], 2, "negative port"),
                (["--listen", ":50051"], 2, "no host"),
                (["--metrics", "127.0.0.1:65536"], 2, "metrics port above 65535"),
                (["--metrics", "abc"], 2, "metrics not HOST:PORT"),
                (["--comm", "x" * 100], 2, "100-character comm"),
                (["--comm", "sixteen-chars-xx"], 2, "16-character comm"),
                (["--listen", "0.0.0.0:%d" % free_port()], 2, "plain TCP beyond loopback"),
                (["--tls-cert", notpem, "--tls-key", notpem], 2, "TLS file not PEM"),
                # after the unix socket was bound: the server is shut down, not aborted
                (me + ["--metrics", "127.0.0.1:%d" % bport], 1, "metrics address in use"),
                (me + ["--listen", "127.0.0.1:%d" % bport], 1, "TCP address in use"),
                (me + ["--tls-cert", notpem, "--tls-key", notpem, "--listen",
                       "127.0.0.1:%d" % free_port()], 2, "TLS not PEM, two ports")):
            agent_fails(args, code, what)
    finally:
        busy.close()
    # the same options with a valid value start (and stop cleanly)
    port = free_port()
    a = start_agent(["--listen", "0.0.0.0:%d" % port, "--insecure-tcp",
                     "--comm", "fifteen-chars-x"], sock_path("ok"), wait_for=port)
    a.send_signal(signal.SIGTERM)
    check(a.wait(20) == 0, "exit %s" % a.returncode)
    check(not os.path.exists(sock_path("ok")) and not os.path.exists(sock_path("ok") + ".lock"),
          "socket or lock left behind")


def test_socket_dir_security():
    pw = test_user()
    base = tempfile.mkdtemp(prefix="sockdirs.", dir=TMP)
    os.chmod(TMP, 0o711)
    os.chmod(base, 0o711)
    me = ["--pid", str(os.getpid())]
    # a world-writable (sticky) directory, as /tmp: refused
    pub = os.path.join(base, "pub")
    os.mkdir(pub)
    os.chmod(pub, 0o1777)
    err = agent_fails(me, 4, "sticky world-writable dir", os.path.join(pub, "a.sock"))
    check("writable by group or others" in err, err)
    # the lock file another user planted there, with a pid of its choosing: never printed
    r = as_user(["sh", "-c", "echo 4242 > %s/b.sock.lock" % pub])
    check(r.returncode == 0, "the test user could not write in %s: %s" % (pub, r.stderr))
    r = subprocess.run([MEMLENS, "agent", "--socket", os.path.join(pub, "b.sock")] + me,
                       capture_output=True, text=True, timeout=30)
    check(r.returncode == 4 and "4242" not in r.stderr, "planted lock: %d %s" % (r.returncode, r.stderr))
    # group-writable, and owned by another user: refused
    grp = os.path.join(base, "grp")
    os.mkdir(grp)
    os.chmod(grp, 0o770)
    agent_fails(me, 4, "group-writable dir", os.path.join(grp, "a.sock"))
    theirs = os.path.join(base, "theirs")
    os.mkdir(theirs, 0o700)
    os.chown(theirs, pw.pw_uid, pw.pw_gid)
    err = agent_fails(me, 4, "dir of another user", os.path.join(theirs, "a.sock"))
    check("owned by another user" in err, err)
    # a directory above that others may write (not sticky): they could rename the whole dir
    openp = os.path.join(base, "open")
    os.makedirs(os.path.join(openp, "safe"))
    os.chmod(openp, 0o777)
    os.chmod(os.path.join(openp, "safe"), 0o700)
    err = agent_fails(me, 4, "writable parent", os.path.join(openp, "safe", "a.sock"))
    check("directory above" in err, err)
    # a safe directory: the other user can neither reach, rename nor replace the socket
    safe = os.path.join(base, "safe")
    os.mkdir(safe, 0o755)
    sock = os.path.join(safe, "a.sock")
    a = start_agent(me, sock)
    r = as_user(["mv", sock, os.path.join(safe, "moved")])
    check(r.returncode != 0 and os.path.exists(sock), "another user renamed the socket")
    impostor = ("import socket, sys\ns = socket.socket(socket.AF_UNIX)\n"
                "try:\n    s.bind(sys.argv[1])\nexcept OSError:\n    sys.exit(13)\n")
    r = as_user([sys.executable, "-c", impostor, os.path.join(safe, "x.sock")])
    check(r.returncode == 13, "another user could create a socket in the agent's directory")
    probe = ("import socket, sys\ns = socket.socket(socket.AF_UNIX)\n"
             "try:\n    s.connect(sys.argv[1])\nexcept PermissionError:\n    sys.exit(13)\n")
    r = as_user([sys.executable, "-c", probe, sock])
    check(r.returncode == 13, "another user connected to the 0600 socket: %d" % r.returncode)
    # the lock file deleted under a running agent: a second one still cannot take the path
    os.unlink(sock + ".lock")
    r = subprocess.run([MEMLENS, "agent", "--socket", sock] + me, capture_output=True,
                       text=True, timeout=30)
    check(r.returncode == 1 and "already serving" in r.stderr, "second agent: %d %s"
          % (r.returncode, r.stderr))
    check(not os.path.exists(sock + ".lock"), "the refused agent left its lock file")
    ch, st = unix(sock)
    check(st.GetStatus(pb.GetStatusRequest(), timeout=5).version, "the first agent stopped serving")
    ch.close()
    a.send_signal(signal.SIGTERM)
    check(a.wait(20) == 0, "exit %s" % a.returncode)
    check(not os.path.exists(sock), "socket left behind")
    # an agent run by the other user in its own directory (0700): allowed
    own = os.path.join(base, "own")
    os.mkdir(own, 0o700)
    os.chown(own, pw.pw_uid, pw.pw_gid)
    usock = os.path.join(own, "u.sock")
    err = open(os.path.join(TMP, "user-agent.err"), "w+")
    u = spawn(["runuser", "-u", TEST_USER, "--", MEMLENS, "agent", "--socket", usock],
              stdout=subprocess.DEVNULL, stderr=err)
    deadline = time.time() + 60
    while time.time() < deadline and not os.path.exists(usock) and u.poll() is None:
        time.sleep(0.05)
    err.seek(0)
    check(os.path.exists(usock), "the user's agent did not serve: %s" % err.read())
    check(os.stat(usock).st_uid == pw.pw_uid, "socket not owned by the agent's user")
    ch, st = unix(usock)
    check(st.GetStatus(pb.GetStatusRequest(), timeout=5).version, "user agent GetStatus")
    ch.close()
    # SIGTERM to the agent itself (runuser waits for it and passes its status on)
    kids = subprocess.run(["pgrep", "-P", str(u.pid)], capture_output=True, text=True).stdout.split()
    check(len(kids) == 1, "runuser's children: %s" % kids)
    os.kill(int(kids[0]), signal.SIGTERM)
    check(u.wait(20) == 0, "user agent exit %s" % u.returncode)
    check(not os.path.exists(usock) and not os.path.exists(usock + ".lock"),
          "the user agent left its socket or lock")


def test_profile_flow():
    mw, lo, hi = memwrite(4)
    sock = sock_path("flow")
    start_agent(["--pid", str(mw.pid)], sock)
    ch, st = unix(sock)
    r = st.StartProfiling(pb.StartProfilingRequest(interval_ms=100, hot_threshold=0.5,
                                                   hot_consecutive=2), timeout=10)
    check(r.success and r.pid == mw.pid and r.vma_count > 0, "StartProfiling: %s" % r)
    hot, reg = wait_hot(st, lo, hi)
    check(reg.written_ratio > 0.5, "written ratio %f" % reg.written_ratio)  # above hot_threshold
    check(reg.consecutive_hot >= 2, "consecutive_hot %d" % reg.consecutive_hot)
    check(hot.hot_vmas == len(hot.regions) and hot.total_vmas >= hot.hot_vmas,
          "counts: %s" % hot)
    check(abs(hot.timestamp_ms / 1000 - time.time()) < 60, "timestamp %d" % hot.timestamp_ms)
    d = st.GetDirtyVolume(pb.GetDirtyVolumeRequest(), timeout=5)
    check(d.dirty_pages > 0 and d.dirty_bytes == d.dirty_pages * 4096, "dirty: %s" % d)
    check(d.cumulative_dirty_bytes >= d.dirty_bytes and d.avg_dirty_rate > 0, "cumulative: %s" % d)
    check(d.dirty_rate_pages_per_sec > 0, "rate: %s" % d)
    s = st.GetStatus(pb.GetStatusRequest(), timeout=5)
    check(s.profiling and s.pid == mw.pid and s.interval_ms == 100 and s.hot_consecutive == 2
          and s.intervals > 0, "status: %s" % s)
    msg = expect_code(st.StartProfiling, grpc.StatusCode.FAILED_PRECONDITION,
                      pb.StartProfilingRequest())
    check("already active" in msg, msg)
    check(st.StopProfiling(pb.StopProfilingRequest(), timeout=10).success, "stop")
    check(st.StopProfiling(pb.StopProfilingRequest(), timeout=10).success, "stop is idempotent")
    expect_code(st.GetHotRegions, grpc.StatusCode.FAILED_PRECONDITION, pb.GetHotRegionsRequest())
    target_untouched(mw.pid)
    ch.close()


def bigmap(mib, regions):
    out = open(os.path.join(TMP, "bigmap-%d.out" % next(SEQ)), "w+")
    p = spawn([os.path.join(WORKLOADS, "bigmap"), str(mib), str(regions)], stdout=out,
              stderr=subprocess.STDOUT)
    for _ in range(3000):  # up to 60 s
        out.seek(0)
        if re.search(r"^ready \d+", out.read(), re.M):
            return p
        time.sleep(0.02)
    raise AssertionError("bigmap did not start in 60 s (exit status %s)" % p.poll())


def tick_status(st, intervals):
    deadline = time.time() + 120
    while time.time() < deadline:
        s = st.GetStatus(pb.GetStatusRequest(), timeout=10)
        if s.intervals >= intervals:
            return s
        time.sleep(0.1)
    raise AssertionError("fewer than %d intervals in 120 s: %s" % (intervals, s))


def tick_consistent(s, what):
    # against the agent's own measurements: a tick is over the interval when
    # its whole microseconds are, so the longest says whether any was
    over = math.floor(s.tick_ms_max * 1000 + 1e-6) > s.interval_ms * 1000
    check(s.interval_kept == (s.ticks_over_interval == 0) and
          (s.ticks_over_interval > 0) == over and s.ticks_over_interval <= s.intervals and
          0 < s.tick_ms_last <= s.tick_ms_max,
          "%s: interval %d ms, %d intervals, %d ticks over, longest %.3f ms, last %.3f ms, "
          "kept %s" % (what, s.interval_ms, s.intervals, s.ticks_over_interval, s.tick_ms_max,
                       s.tick_ms_last, s.interval_kept))
    return over


def test_interval_kept():
    """GetStatus says when a tick took longer than the interval: bigmap's
    8000 VMAs at interval_ms=10, the shortest the agent takes, make each tick
    read 8000 maps lines and scan 8000 VMAs; a 1 s interval on 4 VMAs is
    kept. Judged by the agent's own tick times, never timed here."""
    bm = bigmap(256, 8000)
    sock = sock_path("ticks")
    start_agent(["--pid", str(bm.pid)], sock)
    ch, st = unix(sock)
    s = st.GetStatus(pb.GetStatusRequest(), timeout=10)
    check(s.interval_kept and s.ticks_over_interval == 0, "before profiling: %s" % s)
    r = st.StartProfiling(pb.StartProfilingRequest(interval_ms=10), timeout=60)
    check(r.success, "StartProfiling: %s" % r)
    forced = tick_consistent(tick_status(st, 5), "8000 VMAs at 10 ms")
    st.StopProfiling(pb.StopProfilingRequest(), timeout=30)
    ch.close()
    cleanup()
    small = bigmap(16, 4)
    sock = sock_path("ticks-kept")
    start_agent(["--pid", str(small.pid)], sock)
    ch, st = unix(sock)
    r = st.StartProfiling(pb.StartProfilingRequest(interval_ms=1000), timeout=60)
    check(r.success, "StartProfiling: %s" % r)
    tick_consistent(tick_status(st, 2), "4 VMAs at 1000 ms")
    st.StopProfiling(pb.StopProfilingRequest(), timeout=30)
    ch.close()
    if not forced:
        raise Skip("the agent measured no tick over 10 ms on 8000 VMAs: nothing was forced")


def test_tree():
    # forktree -P: a root and two children, each writing 64 private pages and
    # the same 32 pages of one shared mapping every interval. The agent
    # profiles the whole tree: every process in "processes", every hot range
    # with its pid, the shared region marked shared, its pages counted once
    out = open(os.path.join(TMP, "forktree.out"), "w+")
    ft = spawn([os.path.join(WORKLOADS, "forktree"), "-c", "2", "-p", "64", "-s", "32", "-P"],
               stdout=out, stderr=subprocess.STDOUT)
    tree = {}
    for _ in range(3000):
        out.seek(0)
        tree = {int(p): (int(a, 16), int(s, 16)) for p, a, s in re.findall(
            r"forktree: pid (\d+) private 0x([0-9a-f]+)-\S+ shared 0x([0-9a-f]+)-", out.read())}
        if len(tree) == 3:
            break
        time.sleep(0.02)
    check(len(tree) == 3, "forktree's processes: %s" % tree)
    sock = sock_path("tree")
    start_agent(["--pid", str(ft.pid)], sock)
    ch, st = unix(sock)
    r = st.StartProfiling(pb.StartProfilingRequest(interval_ms=100, hot_consecutive=2), timeout=10)
    check(r.success, "StartProfiling: %s" % r)

    def good(h):
        rows = {p.pid: p for p in h.processes}
        if set(rows) != set(tree) or any(p.exited or p.note for p in rows.values()):
            return False
        for pid, (priv, shared) in tree.items():
            if not any(x.pid == pid and x.start_addr <= priv < x.end_addr for x in h.hot_ranges):
                return False
            if not any(g.pid == pid and g.shared and g.start_addr == shared for g in h.regions):
                return False
        # the 32 shared pages once, and each process's own pacing page
        return h.shared_dirty_pages == 32 + 3
    hot = None
    deadline = time.time() + 120
    while time.time() < deadline:
        hot = st.GetHotRegions(pb.GetHotRegionsRequest(), timeout=5)
        if good(hot):
            break
        time.sleep(0.1)
    check(hot is not None and good(hot), "GetHotRegions of the tree: %s" % hot)
    st.StopProfiling(pb.StopProfilingRequest(), timeout=10)
    for pid in tree:
        target_untouched(pid)
    ch.close()
    os.killpg(ft.pid, signal.SIGINT)  # the root and its children


def test_hot_ranges():
    # memwrite -x: eight runs of pages scattered through a 64 MiB VMA, written
    # once per interval (paced, -P); GetHotRegions reports exactly those runs
    # as hot ranges while the VMA itself is not hot
    out = open(os.path.join(TMP, "memwrite-x.out"), "w+")
    mw = spawn([os.path.join(WORKLOADS, "memwrite"), "-x", "-P", "-m", "64"], stdout=out,
               stderr=subprocess.STDOUT)
    text = ""
    for _ in range(3000):
        out.seek(0)
        text = out.read()
        if "first pass written" in text:
            break
        time.sleep(0.02)
    m = re.search(r"writes 0x([0-9a-f]+)-0x([0-9a-f]+)", text)
    lo, hi = int(m.group(1), 16), int(m.group(2), 16)
    want = [(int(a, 16), int(b, 16)) for a, b in re.findall(r"run 0x([0-9a-f]+)-0x([0-9a-f]+)", text)]
    check(len(want) == 8, "memwrite -x runs: %s" % text)
    sock = sock_path("hotranges")
    start_agent(["--pid", str(mw.pid)], sock)
    ch, st = unix(sock)
    r = st.StartProfiling(pb.StartProfilingRequest(interval_ms=100, hot_consecutive=2,
                                                   hot_cool=10, max_hot_ranges=64), timeout=10)
    check(r.success, "StartProfiling: %s" % r)
    got, hot = None, None
    deadline = time.time() + 120
    while time.time() < deadline:
        hot = st.GetHotRegions(pb.GetHotRegionsRequest(), timeout=5)
        got = [(x.start_addr, x.end_addr) for x in hot.hot_ranges if lo <= x.start_addr < hi]
        if got == want:
            break
        time.sleep(0.1)
    check(got == want, "hot ranges in the buffer: %s, want %s" % (got, want))
    check(all(x.pages == (x.end_addr - x.start_addr) // 4096 and x.hot_pages == x.pages
              for x in hot.hot_ranges), "pages: %s" % list(hot.hot_ranges))
    check(hot.hot_ranges_unmerged == len(hot.hot_ranges) and hot.hot_range_merge_cost_bytes == 0
          and hot.hot_range_bytes == sum(x.hot_pages for x in hot.hot_ranges) * 4096,
          "counts: %s" % hot)
    check(not any(reg.start_addr <= lo < reg.end_addr for reg in hot.regions),
          "the buffer's VMA is hot as a whole: %s" % list(hot.regions))
    s = st.GetStatus(pb.GetStatusRequest(), timeout=5)
    check(s.hot_cool == 10 and s.max_hot_ranges == 64, "status: %s" % s)
    st.StopProfiling(pb.StopProfilingRequest(), timeout=10)
    target_untouched(mw.pid)
    ch.close()


def test_sampled():
    # memwrite -P: a 4 MiB buffer rewritten in full every interval, profiled
    # with 1/4 of its pages write-protected each interval: the agent says it
    # estimates, the fraction in use and its cost, and the buffer turns hot
    mw, lo, hi = memwrite(4)
    sock = sock_path("sampled")
    port = free_port()
    start_agent(["--pid", str(mw.pid), "--metrics", "127.0.0.1:%d" % port], sock)
    ch, st = unix(sock)
    r = st.StartProfiling(pb.StartProfilingRequest(interval_ms=100, hot_consecutive=2,
                                                   sample_k=4, max_overhead_pct=50), timeout=10)
    check(r.success, "StartProfiling: %s" % r)
    hot, reg = wait_hot(st, lo, hi)
    check(hot.estimated and hot.sample_fraction == 0.25 and hot.overhead_pct > 0,
          "sampling: %s" % hot)
    check(reg.written_ratio > 0.5, "written ratio %f" % reg.written_ratio)
    d = st.GetDirtyVolume(pb.GetDirtyVolumeRequest(), timeout=5)
    check(d.estimated and d.sample_fraction == 0.25 and d.overhead_pct > 0, "dirty: %s" % d)
    s = st.GetStatus(pb.GetStatusRequest(), timeout=5)
    check(s.sample_k == 4 and abs(s.max_overhead_pct - 50) < 1e-9, "status: %s" % s)
    # the cost of one tracked fault, measured once when profiling started:
    # the same in every answer, and the one the overhead is counted with
    ns = d.fault_ns
    check(0 < ns < 1000000, "fault_ns: %s" % d)
    check(hot.fault_ns == s.fault_ns == ns, "fault_ns %d %d %d" % (hot.fault_ns, s.fault_ns, ns))
    check(hot.fault_ns_measured == s.fault_ns_measured == d.fault_ns_measured,
          "fault_ns_measured: %s %s %s" % (hot.fault_ns_measured, s.fault_ns_measured,
                                           d.fault_ns_measured))
    if not d.fault_ns_measured:
        check(ns == 20000, "assumed fault cost %d" % ns)
    check(d.tracked_faults > 0 and d.dirty_pages > 0 and hot.tracked_faults > 0, "faults: %s" % d)
    interval_s = d.dirty_pages / d.dirty_rate_pages_per_sec
    want = d.tracked_faults * ns * 1e-9 / interval_s * 100
    check(abs(d.overhead_pct - want) < 1e-6 * max(1, want),
          "overhead %f, %d faults * %d ns / %f s = %f" % (d.overhead_pct, d.tracked_faults, ns,
                                                          interval_s, want))
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10) as m:
        samples, types = parse_metrics(m.read().decode())
    g = lambda n: samples.get(("memlens_agent_" + n, ""))  # noqa: E731
    check(abs(g("write_fault_cost_seconds") - ns * 1e-9) < 1e-15 and
          g("write_fault_cost_measured") == int(d.fault_ns_measured) and
          g("tracking_overhead_ratio") > 0, "metrics: %s" % {k: v for k, v in samples.items()
                                                            if "fault" in k[0] or "overhead" in k[0]})
    check(types.get("memlens_agent_write_fault_cost_seconds") == "gauge", "TYPE gauge")
    print("# fault_ns %d (%s)" % (ns, "measured" if d.fault_ns_measured else "assumed"))
    st.StopProfiling(pb.StopProfilingRequest(), timeout=10)
    for kw in (dict(sample_k=-1), dict(sample_k=1025), dict(max_overhead_pct=-1),
               dict(max_overhead_pct=101), dict(max_overhead_pct=float("nan"))):
        msg = expect_code(st.StartProfiling, grpc.StatusCode.INVALID_ARGUMENT,
                          pb.StartProfilingRequest(**kw))
        check(list(kw)[0] in msg, "%s: %s" % (kw, msg))
    target_untouched(mw.pid)
    ch.close()


def test_sampled_error():
    # StartProfiling max_error_pct: the fraction follows the estimates'
    # error within the cost bound; every answer carries the bound, and the
    # error it states fits the fraction it states (0 when exact)
    mw, lo, hi = memwrite(4)
    sock = sock_path("samperr")
    start_agent(["--pid", str(mw.pid)], sock)
    ch, st = unix(sock)
    for kw in (dict(max_error_pct=-1), dict(max_error_pct=0.05), dict(max_error_pct=101),
               dict(max_error_pct=float("nan")), dict(max_error_pct=float("inf"))):
        msg = expect_code(st.StartProfiling, grpc.StatusCode.INVALID_ARGUMENT,
                          pb.StartProfilingRequest(**kw))
        check("max_error_pct" in msg, "%s: %s" % (kw, msg))
    r = st.StartProfiling(pb.StartProfilingRequest(interval_ms=100, hot_consecutive=2,
                                                   sample_k=4, max_overhead_pct=50,
                                                   max_error_pct=5), timeout=10)
    check(r.success, "StartProfiling: %s" % r)
    hot, reg = wait_hot(st, lo, hi)
    d = st.GetDirtyVolume(pb.GetDirtyVolumeRequest(), timeout=5)
    s = st.GetStatus(pb.GetStatusRequest(), timeout=5)
    check(s.sample_k == 4 and s.max_error_pct == 5 and abs(s.max_overhead_pct - 50) < 1e-9,
          "status: %s" % s)
    for name, a in (("hot regions", hot), ("dirty volume", d)):
        check(a.max_error_pct == 5, "%s: %s" % (name, a))
        k = round(1 / a.sample_fraction)
        check(1 <= k <= 4 and abs(a.sample_fraction - 1 / k) < 1e-12 and
              a.estimated == (k > 1), "%s fraction: %s" % (name, a))
        check(a.error_pct == -1 or 0 <= a.error_pct <= 100, "%s error: %s" % (name, a))
        if k == 1:
            check(a.error_pct == 0, "%s: exact, yet error %f" % (name, a.error_pct))
    check(s.error_pct == -1 or 0 <= s.error_pct <= 100, "status error: %s" % s)
    check(reg.written_ratio > 0.5, "written ratio %f" % reg.written_ratio)
    print("# max_error_pct 5: fraction %g, error %g%%" % (d.sample_fraction, d.error_pct))
    st.StopProfiling(pb.StopProfilingRequest(), timeout=10)
    target_untouched(mw.pid)
    ch.close()


def test_validation():
    mw, lo, hi = memwrite(4)
    sock = sock_path("valid")
    start_agent(["--pid", str(mw.pid)], sock)
    ch, st = unix(sock)
    bad = [dict(interval_ms=5), dict(interval_ms=9), dict(interval_ms=600001),
           dict(interval_ms=-1), dict(interval_ms=-2147483648),
           dict(hot_threshold=float("nan")), dict(hot_threshold=1.5), dict(hot_threshold=-0.1),
           dict(hot_threshold=float("inf")), dict(hot_threshold=-1e-300),
           dict(hot_consecutive=-1), dict(hot_consecutive=11), dict(hot_consecutive=2 ** 31 - 1),
           dict(hot_cool=-1), dict(hot_cool=1001), dict(max_hot_ranges=-1),
           dict(max_hot_ranges=1000001)]
    for kw in bad:
        msg = expect_code(st.StartProfiling, grpc.StatusCode.INVALID_ARGUMENT,
                          pb.StartProfilingRequest(**kw))
        field = list(kw)[0]
        check(field in msg, "%s: message does not name the field: %s" % (kw, msg))
    # boundaries and zero = default are accepted
    for kw in (dict(interval_ms=10, hot_threshold=1.0, hot_consecutive=10),
               dict(interval_ms=600000, hot_threshold=1e-9, hot_consecutive=1), dict()):
        r = st.StartProfiling(pb.StartProfilingRequest(**kw), timeout=10)
        check(r.success, "%s refused" % kw)
        s = st.GetStatus(pb.GetStatusRequest(), timeout=5)
        if not kw:
            check(s.interval_ms == 1000 and abs(s.hot_threshold - 0.3) < 1e-9
                  and s.hot_consecutive == 3 and s.hot_cool == 3 and s.max_hot_ranges == 256,
                  "defaults: %s" % s)
        st.StopProfiling(pb.StopProfilingRequest(), timeout=10)
    # malformed payloads, for every method
    for m in METHODS:
        f = ch.unary_unary("/agent.CRIUAgent/" + m)
        for payload in (b"\x08\xff", b"\x0a\x05ab", b"\xff\xff\xff\xff"):
            msg = expect_code(f, grpc.StatusCode.INVALID_ARGUMENT, payload)
            check("malformed" in msg, msg)
    # a client-streaming misuse: no request message at all, and two of them
    msg = expect_code(ch.stream_unary("/agent.CRIUAgent/GetStatus"),
                      grpc.StatusCode.INVALID_ARGUMENT, iter([]))
    check("missing" in msg, msg)
    two = ch.stream_unary("/agent.CRIUAgent/GetStatus")(iter([b"", b""]), timeout=10)
    check(pb.GetStatusResponse.FromString(two).version, "two request messages")
    # more than the agent's 1 MiB request limit
    expect_code(ch.unary_unary("/agent.CRIUAgent/GetStatus"), grpc.StatusCode.RESOURCE_EXHAUSTED,
                b"\x00" * (2 << 20))
    for path in ("/agent.CRIUAgent/Nope", "/other.Service/GetStatus", "/agent.CRIUAgent/"):
        expect_code(ch.unary_unary(path), grpc.StatusCode.UNIMPLEMENTED, b"")
    check(st.GetStatus(pb.GetStatusRequest(), timeout=5).version, "the agent died")
    ch.close()


def test_deadline_and_fuzz():
    mw, lo, hi = memwrite(4)
    sock = sock_path("fuzz")
    start_agent(["--pid", str(mw.pid)], sock)
    ch, st = unix(sock)
    for _ in range(20):
        try:
            st.GetStatus(pb.GetStatusRequest(), timeout=1e-6)
        except grpc.RpcError as e:
            check(e.code() == grpc.StatusCode.DEADLINE_EXCEEDED, "code %s" % e.code())
    rnd = random.Random(4)
    seen = set()
    # random bytes to the profiling methods (the checkpoint ones could decode into a real dump)
    for i in range(400):
        m = rnd.choice(METHODS[:5])
        payload = bytes(rnd.getrandbits(8) for _ in range(rnd.randint(0, 64)))
        try:
            ch.unary_unary("/agent.CRIUAgent/" + m)(payload, timeout=10)
            seen.add("OK")
        except grpc.RpcError as e:
            check(e.code() != grpc.StatusCode.UNAVAILABLE, "agent gone after %d calls" % i)
            check(e.details(), "no message for %s" % e.code())
            seen.add(e.code().name)
    st.StopProfiling(pb.StopProfilingRequest(), timeout=10)
    check(st.GetStatus(pb.GetStatusRequest(), timeout=5).version, "the agent died")
    check("INVALID_ARGUMENT" in seen, "fuzzing never hit a decode error: %s" % seen)
    target_untouched(mw.pid)
    ch.close()


def hammer(sock, nclients, ncalls, stop=None):
    """@nclients threads x @ncalls calls; returns {code name: count}."""
    counts = {}
    lock = threading.Lock()

    def client(k):
        ch, st = unix(sock)
        calls = [(st.GetHotRegions, pb.GetHotRegionsRequest()),
                 (st.GetDirtyVolume, pb.GetDirtyVolumeRequest()),
                 (st.GetStatus, pb.GetStatusRequest())]
        for i in range(ncalls):
            if stop and stop.is_set():
                break
            fn, req = calls[(i + k) % 3]
            try:
                fn(req, timeout=30)
                code = "OK"
            except grpc.RpcError as e:
                code = e.code().name
                if code == "CANCELLED" and os.environ.get("AGENT_TEST_DEBUG"):
                    print("# CANCELLED: %s" % e.details())
            with lock:
                counts[code] = counts.get(code, 0) + 1
        ch.close()

    threads = [threading.Thread(target=client, args=(k,)) for k in range(nclients)]
    for t in threads:
        t.start()
    return threads, counts


def test_concurrent_clients():
    mw, lo, hi = memwrite(4)
    sock = sock_path("conc")
    start_agent(["--pid", str(mw.pid)], sock)
    ch, st = unix(sock)
    st.StartProfiling(pb.StartProfilingRequest(interval_ms=50), timeout=10)
    wait_hot(st, lo, hi)
    threads, counts = hammer(sock, 16, 200)
    for t in threads:
        t.join()
    check(counts == {"OK": 3200}, "16 x 200 calls: %s" % counts)
    st.StopProfiling(pb.StopProfilingRequest(), timeout=10)
    target_untouched(mw.pid)
    ch.close()


def test_sigterm_during_calls():
    mw, lo, hi = memwrite(4)
    sock = sock_path("term")
    a = start_agent(["--pid", str(mw.pid), "--grace", "5"], sock)
    ch, st = unix(sock)
    st.StartProfiling(pb.StartProfilingRequest(interval_ms=50), timeout=10)
    wait_hot(st, lo, hi)
    ch.close()
    stop = threading.Event()
    threads, counts = hammer(sock, 8, 100000, stop)
    deadline = time.time() + 60
    while sum(counts.values()) < 200 and time.time() < deadline:
        time.sleep(0.01)
    a.send_signal(signal.SIGTERM)
    try:
        rc = a.wait(30)
    finally:
        stop.set()
        for t in threads:
            t.join()
    check(rc == 0, "agent exit %d: %s" % (rc, agent_err(a)))
    bad = {k: v for k, v in counts.items() if k not in ("OK", "UNAVAILABLE", "CANCELLED")}
    check(not bad and counts.get("OK", 0) >= 200, "client results %s" % counts)
    print("# client results during SIGTERM: %s" % counts)
    check(not os.path.exists(sock) and not os.path.exists(sock + ".lock"),
          "socket or lock left behind")
    check("refusing new calls" in agent_err(a), agent_err(a))
    # every call the agent had started finished within the grace period
    check("grace period over" not in agent_err(a), agent_err(a))
    target_untouched(mw.pid)


def test_second_agent_same_socket():
    sock = sock_path("second")
    first = start_agent(["--pid", str(os.getpid())], sock)
    r = subprocess.run([MEMLENS, "agent", "--socket", sock], capture_output=True, text=True,
                       timeout=20)
    check(r.returncode == 1, "second agent exit %d" % r.returncode)
    check("already serving" in r.stderr and str(first.pid) in r.stderr, r.stderr)
    check(os.path.exists(sock), "the first agent's socket was removed")
    ch, st = unix(sock)
    check(st.GetStatus(pb.GetStatusRequest(), timeout=5).version, "first agent not serving")
    ch.close()
    # a stale socket (its agent was killed) is taken over
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    start_agent(["--pid", str(os.getpid())], sock)
    ch, st = unix(sock)
    check(st.GetStatus(pb.GetStatusRequest(), timeout=5).version, "stale socket not reused")
    ch.close()
    # a path that is not a socket is never replaced
    path = os.path.join(TMP, "regular-file")
    open(path, "w").write("keep me")
    r = subprocess.run([MEMLENS, "agent", "--socket", path], capture_output=True, text=True,
                       timeout=20)
    check(r.returncode != 0 and "not a socket" in r.stderr, r.stderr)
    check(open(path).read() == "keep me", "a regular file was replaced")


METRIC_LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="[^"]*"'
                         r'(,[a-zA-Z_][a-zA-Z0-9_]*="[^"]*")*)?\})? (\S+)$')


def parse_metrics(text):
    samples, types = {}, {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, typ = line.split(" ", 3)
            types[name] = typ
            continue
        if line.startswith("#") or not line:
            continue
        m = METRIC_LINE.match(line)
        check(m, "not Prometheus text format: %r" % line)
        v = float(m.group(5))
        check(not math.isnan(v), "NaN in %r" % line)
        samples[(m.group(1), m.group(3) or "")] = v
    return samples, types


def test_metrics():
    mw, lo, hi = memwrite(4)
    sock = sock_path("metrics")
    port = free_port()
    start_agent(["--pid", str(mw.pid), "--metrics", "127.0.0.1:%d" % port], sock)
    ch, st = unix(sock)
    st.StartProfiling(pb.StartProfilingRequest(interval_ms=100, hot_consecutive=2), timeout=10)
    wait_hot(st, lo, hi)
    expect_code(st.StartProfiling, grpc.StatusCode.INVALID_ARGUMENT,
                pb.StartProfilingRequest(interval_ms=1))
    for _ in range(5):
        st.GetHotRegions(pb.GetHotRegionsRequest(), timeout=5)
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10) as r:
        check(r.headers["Content-Type"].startswith("text/plain; version=0.0.4"),
              r.headers["Content-Type"])
        samples, types = parse_metrics(r.read().decode())
    g = lambda n, lab="": samples.get(("memlens_agent_" + n, lab))  # noqa: E731
    check(g("profiling") == 1 and g("target_pid") == mw.pid, "profiling gauges")
    check(g("dirty_pages") > 0 and g("dirty_bytes") == g("dirty_pages") * 4096, "dirty")
    check(g("dirty_rate_pages_per_second") > 0 and g("hot_vmas") >= 1, "rate/hot")
    check(g("injections_total") == 1 and 0 < g("injection_duration_seconds") < 10, "injection")
    n = g("scan_duration_seconds_count")
    check(n and n >= 2 and g("scan_duration_seconds_bucket", 'le="+Inf"') == n, "histogram count")
    prev = 0
    for le in ("0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25",
               "0.5", "1", "2.5", "+Inf"):
        v = g("scan_duration_seconds_bucket", 'le="%s"' % le)
        check(v is not None and v >= prev, "bucket %s not cumulative" % le)
        prev = v
    check(types.get("memlens_agent_scan_duration_seconds") == "histogram", "TYPE histogram")
    check(g("checkpoints_total", 'kind="dump",result="ok"') == 0, "checkpoint counters")
    check(g("checkpoint_duration_seconds_count", 'kind="pre_dump"') == 0, "checkpoint durations")
    check(g("rpcs_total", 'method="GetHotRegions",code="OK"') >= 5, "rpc counts")
    check(g("errors_total", 'kind="INVALID_ARGUMENT"') >= 1, "errors by kind")
    try:
        urllib.request.urlopen("http://127.0.0.1:%d/other" % port, timeout=10)
        raise AssertionError("/other served")
    except urllib.error.HTTPError as e:
        check(e.code == 404, "code %d" % e.code)
    st.StopProfiling(pb.StopProfilingRequest(), timeout=10)
    ch.close()


def test_target_discovery():
    # a name no other process on this machine has (other tests may run memwrite)
    name = "mw-%08x" % random.getrandbits(32)
    exe = os.path.join(TMP, name)
    shutil.copy(os.path.join(WORKLOADS, "memwrite"), exe)
    out = open(os.path.join(TMP, name + ".out"), "w")
    mw = spawn([exe, "-m", "4"], stdout=out, stderr=subprocess.STDOUT)
    sock = sock_path("comm")
    start_agent(["--comm", name], sock)
    ch, st = unix(sock)
    r = st.StartProfiling(pb.StartProfilingRequest(interval_ms=100), timeout=10)
    check(r.success and r.pid == mw.pid, "comm target %d, expected %d" % (r.pid, mw.pid))
    st.StopProfiling(pb.StopProfilingRequest(), timeout=10)
    target_untouched(mw.pid)
    ch.close()
    sock = sock_path("nocomm")
    start_agent(["--comm", "no-such-comm"], sock)
    ch, st = unix(sock)
    msg = expect_code(st.StartProfiling, grpc.StatusCode.NOT_FOUND, pb.StartProfilingRequest())
    check("no-such-comm" in msg, msg)
    ch.close()


def wait_for(what, fn, secs=60):
    """Poll @fn until it returns something true (a state, not a time)."""
    deadline = time.time() + secs
    while time.time() < deadline:
        v = fn()
        if v:
            return v
        time.sleep(0.05)
    raise AssertionError("waited %d s for %s" % (secs, what))


def named_memwrite(name):
    exe = os.path.join(TMP, name)
    shutil.copy(os.path.join(WORKLOADS, "memwrite"), exe)
    out = open(os.path.join(TMP, name + ".out"), "w")
    return spawn([exe, "-m", "4"], stdout=out, stderr=subprocess.STDOUT)


def test_agent_says_its_target():
    """The start-up line names the target --comm chose; GetStatus has it, the
    state and the capabilities; the target_pid metric is set before any
    profiling; a --comm that is not running yet is warned about at start and
    found once it runs; errors name request fields, not command-line flags."""
    name = "mw-%08x" % random.getrandbits(32)
    mw = named_memwrite(name)
    wait_for("the target to run", lambda: os.path.exists("/proc/%d/comm" % mw.pid) and
             open("/proc/%d/comm" % mw.pid).read().strip() == name)
    sock = sock_path("says")
    port = free_port()
    criu = criu_path()
    a = start_agent(["--comm", name, "--metrics", "127.0.0.1:%d" % port] +
                    (["--criu", criu, "--images-root", os.path.join(TMP, "says")] if criu
                     else []), sock)
    line = "target: pid %d (%s), chosen by --comm %s" % (mw.pid, name, name)
    wait_for("the start-up line naming the target", lambda: line in agent_err(a))
    ch, st = unix(sock)
    s = st.GetStatus(pb.GetStatusRequest(), timeout=5)
    check(s.target_pid == mw.pid and s.target_comm == name and
          s.target_chosen_by.startswith("--comm " + name) and s.state == "ready",
          "status before profiling: %s" % s)
    check("profile_writes" in s.capabilities, "capabilities: %s" % list(s.capabilities))
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10) as r:
        samples, _ = parse_metrics(r.read().decode())
    check(samples.get(("memlens_agent_target_pid", "")) == mw.pid and
          samples.get(("memlens_agent_profiling", "")) == 0,
          "target_pid metric before profiling: %s" %
          samples.get(("memlens_agent_target_pid", "")))
    st.StartProfiling(pb.StartProfilingRequest(interval_ms=100), timeout=10)
    s = st.GetStatus(pb.GetStatusRequest(), timeout=5)
    check(s.state == "profiling" and s.target_pid == mw.pid, "status profiling: %s" % s)
    if criu:
        try:
            r = st.PreCheckpoint(pb.PreCheckpointRequest(images_dir="pre"), timeout=120)
            check(r.success, "pre-dump: %s" % r)
        except grpc.RpcError as e:
            msg = e.details()
            print("# PreCheckpoint refused: " + msg)
            check(e.code() == grpc.StatusCode.FAILED_PRECONDITION and "FinalDump" in msg and
                  "--pre-dump" not in msg and "leave_running" in msg,
                  "a client is told about requests, not flags: %s" % msg)
        s = st.GetStatus(pb.GetStatusRequest(), timeout=5)
        check("checkpoint" in s.capabilities and
              ("pre_dump" in s.capabilities) == s.criu_pre_dump,
              "capabilities after a CRIU call: %s" % list(s.capabilities))
    st.StopProfiling(pb.StopProfilingRequest(), timeout=10)
    ch.close()
    target_untouched(mw.pid)

    # a name that is not running yet: warned about, then found
    later = "mw-%08x" % random.getrandbits(32)
    sock = sock_path("later")
    b = start_agent(["--comm", later], sock)
    wait_for("the warning", lambda: "no process named '%s'" % later in agent_err(b))
    check("looks again every second" in agent_err(b), agent_err(b))
    ch, st = unix(sock)
    s = st.GetStatus(pb.GetStatusRequest(), timeout=5)
    check(s.state == "waiting_for_target" and s.target_pid == 0, "waiting: %s" % s)
    mw2 = named_memwrite(later)
    s = wait_for("the agent to find the new process", lambda: (lambda s: s.target_pid == mw2.pid
                 and s)(st.GetStatus(pb.GetStatusRequest(), timeout=5)))
    check(s.state == "ready" and s.target_comm == later, "found: %s" % s)
    check("target: pid %d (%s)" % (mw2.pid, later) in agent_err(b), agent_err(b))
    ch.close()


def in_pid_namespace(script, sock):
    """Run the sh @script as PID 1 of a new PID namespace; wait for the agent it
    starts to create @sock. Skips where PID namespaces cannot be made."""
    p = spawn(["unshare", "--pid", "--fork", "--mount-proc", "sh", "-c", script])
    deadline = time.time() + 60
    # the socket's file exists from bind(), before listen(): wait until it accepts
    while time.time() < deadline:
        if p.poll() is not None:
            raise Skip("cannot create a PID namespace here (unshare exit %d)" % p.returncode)
        if os.path.exists(sock):
            try:
                s = socket.socket(socket.AF_UNIX)
                s.connect(sock)
                s.close()
                return p
            except OSError:
                s.close()
        time.sleep(0.05)
    check(False, "the agent did not start in the namespace (%s does not accept)" % sock)
    return p


def test_auto_discovery_shared_pid_namespace():
    if not shutil.which("unshare"):
        raise Skip("unshare (util-linux) is not installed")
    sock = sock_path("auto")
    out = os.path.join(TMP, "auto.out")
    # PID 1 of the new namespace starts a "pause" process (as a pod's infrastructure
    # container), then the application, then the agent, all siblings as with
    # shareProcessNamespace; the oldest non-agent process is "pause": it must be skipped
    pause = os.path.join(TMP, "pause")
    shutil.copy(os.path.join(WORKLOADS, "sleeper"), pause)
    # (the 0.1 s: "pause" starts a clock tick before the application, so it
    # is the oldest; the agent starts once memwrite runs)
    script = ('%s nanosleep 600000 >/dev/null & sleep 0.1; %s -P -m 4 >%s 2>&1 & '
              'for i in $(seq 500); do grep -qs writes %s && break; sleep 0.02; done; '
              '%s agent --socket %s 2>%s.err & wait'
              % (pause, os.path.join(WORKLOADS, "memwrite"), out, out, MEMLENS, sock, out))
    in_pid_namespace(script, sock)
    m = re.search(r"pid (\d+) writes 0x([0-9a-f]+)-0x([0-9a-f]+)", open(out).read())
    check(m, "memwrite did not start")
    ch, st = unix(sock)
    r = st.StartProfiling(pb.StartProfilingRequest(interval_ms=100), timeout=10)
    check(r.success and r.pid == int(m.group(1)), "picked pid %d, memwrite is %s" % (r.pid, m.group(1)))
    wait_hot(st, int(m.group(2), 16), int(m.group(3), 16))
    st.StopProfiling(pb.StopProfilingRequest(), timeout=10)
    ch.close()


def test_tcp_and_tls():
    if not shutil.which("openssl"):
        raise Skip("openssl is not installed: cannot make a test certificate")
    cert, key = os.path.join(TMP, "cert.pem"), os.path.join(TMP, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost",
                    "-keyout", key, "-out", cert], check=True, capture_output=True)
    port = free_port()
    start_agent(["--listen", "127.0.0.1:%d" % port, "--pid", str(os.getpid())],
                wait_for=port)
    ch, st = stub("127.0.0.1:%d" % port)
    check(st.GetStatus(pb.GetStatusRequest(), timeout=5).version, "plain TCP")
    ch.close()
    port = free_port()
    start_agent(["--listen", "127.0.0.1:%d" % port, "--tls-cert", cert, "--tls-key", key,
                 "--pid", str(os.getpid())], wait_for=port)
    creds = grpc.ssl_channel_credentials(root_certificates=open(cert, "rb").read())
    ch = grpc.secure_channel("localhost:%d" % port, creds)
    st = pbg.CRIUAgentStub(ch)
    check(st.GetStatus(pb.GetStatusRequest(), timeout=10).version, "TLS call")
    ch.close()
    ch, st = stub("127.0.0.1:%d" % port)
    expect_code(st.GetStatus, grpc.StatusCode.UNAVAILABLE, pb.GetStatusRequest(), timeout=5)
    ch.close()
    # mutual TLS: the client must present a certificate the CA signed
    ccert, ckey = os.path.join(TMP, "client.pem"), os.path.join(TMP, "client-key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=memlens-test-client", "-keyout", ckey, "-out", ccert],
                   check=True, capture_output=True)
    port = free_port()
    start_agent(["--listen", "127.0.0.1:%d" % port, "--tls-cert", cert, "--tls-key", key,
                 "--tls-client-ca", ccert, "--pid", str(os.getpid())], wait_for=port)
    root = open(cert, "rb").read()
    for client_key, client_cert, ok in ((None, None, False), (key, cert, False), (ckey, ccert, True)):
        creds = grpc.ssl_channel_credentials(
            root_certificates=root,
            private_key=open(client_key, "rb").read() if client_key else None,
            certificate_chain=open(client_cert, "rb").read() if client_cert else None)
        ch = grpc.secure_channel("localhost:%d" % port, creds)
        st = pbg.CRIUAgentStub(ch)
        if ok:
            check(st.GetStatus(pb.GetStatusRequest(), timeout=10).version, "mTLS call")
        else:
            expect_code(st.GetStatus, grpc.StatusCode.UNAVAILABLE, pb.GetStatusRequest(),
                        timeout=5)
        ch.close()
    r = subprocess.run([MEMLENS, "agent", "--listen", "127.0.0.1:%d" % free_port(),
                        "--tls-cert", key, "--tls-key", os.path.join(TMP, "missing.pem")],
                       capture_output=True, text=True, timeout=20)
    check(r.returncode != 0 and "missing.pem" in r.stderr, "bad TLS files: %s" % r.stderr)


def test_target_exits():
    mw, lo, hi = memwrite(4)
    sock = sock_path("exit")
    start_agent(["--pid", str(mw.pid)], sock)
    ch, st = unix(sock)
    st.StartProfiling(pb.StartProfilingRequest(interval_ms=50), timeout=10)
    mw.terminate()  # once profiled, however long the agent took to get there
    mw.wait(30)
    deadline = time.time() + 60
    while time.time() < deadline:
        s = st.GetStatus(pb.GetStatusRequest(), timeout=5)
        if not s.profiling:
            break
        time.sleep(0.05)
    check(not s.profiling and "exited" in s.last_error, "status after exit: %s" % s)
    # profiling ended by itself: no stale answers, the reason instead
    for call, req in ((st.GetHotRegions, pb.GetHotRegionsRequest()),
                      (st.GetDirtyVolume, pb.GetDirtyVolumeRequest())):
        msg = expect_code(call, grpc.StatusCode.FAILED_PRECONDITION, req)
        check("has ended" in msg and "exited" in msg and str(mw.pid) in msg, msg)
    msg = expect_code(st.StartProfiling, grpc.StatusCode.NOT_FOUND, pb.StartProfilingRequest())
    check(str(mw.pid) in msg, msg)
    check(st.StopProfiling(pb.StopProfilingRequest(), timeout=5).success, "stop")
    ch.close()


def criu_path():
    for c in (os.environ.get("MEMLENS_CRIU"), os.path.join(ROOT, ".cache/criu/bin/criu"),
              shutil.which("criu")):
        if c and os.access(c, os.X_OK):
            r = subprocess.run([c, "check"], capture_output=True, timeout=60)
            if r.returncode == 0:
                return c
    return None


def test_checkpoint_without_criu():
    mw, lo, hi = memwrite(8)
    sock = sock_path("nocriu")
    images = os.path.join(TMP, "images-nocriu")
    env = dict(os.environ, PATH="/usr/bin:/bin")
    env.pop("MEMLENS_CRIU", None)
    start_agent(["--pid", str(mw.pid), "--criu", os.path.join(TMP, "no-criu"),
                 "--images-root", images], sock, env=env)
    ch, st = unix(sock)
    st.StartProfiling(pb.StartProfilingRequest(interval_ms=100), timeout=10)
    for bad in ("", "../x", "a/../../x", "/etc", images + "x/y"):
        msg = expect_code(st.PreCheckpoint, grpc.StatusCode.INVALID_ARGUMENT,
                          pb.PreCheckpointRequest(images_dir=bad))
        check("images" in msg, msg)
    expect_code(st.FinalDump, grpc.StatusCode.INVALID_ARGUMENT,
                pb.FinalDumpRequest(images_dir="d", page_server_port=70000,
                                    page_server_address="127.0.0.1"))
    expect_code(st.StartPageServer, grpc.StatusCode.INVALID_ARGUMENT,
                pb.StartPageServerRequest(images_dir="d", port=-1))
    for call, req in ((st.PreCheckpoint, pb.PreCheckpointRequest(images_dir="p", timeout_ms=86400001)),
                      (st.FinalDump, pb.FinalDumpRequest(images_dir="d", timeout_ms=4000000000)),
                      (st.Restore, pb.RestoreRequest(images_dir="d", timeout_ms=86400001))):
        check("timeout_ms" in expect_code(call, grpc.StatusCode.INVALID_ARGUMENT, req), str(req))
    for call, req in ((st.PreCheckpoint, pb.PreCheckpointRequest(images_dir="p1")),
                      (st.FinalDump, pb.FinalDumpRequest(images_dir="d1", leave_running=True)),
                      (st.StartPageServer, pb.StartPageServerRequest(images_dir="s1"))):
        msg = expect_code(call, grpc.StatusCode.FAILED_PRECONDITION, req)
        check("CRIU" in msg or "criu" in msg, msg)
    msg = expect_code(st.Restore, grpc.StatusCode.FAILED_PRECONDITION,
                      pb.RestoreRequest(images_dir="d1"))
    check("StopProfiling" in msg, msg)
    # profiling went on, untouched by the refused checkpoints
    wait_hot(st, lo, hi)
    check(st.GetStatus(pb.GetStatusRequest(), timeout=5).profiling, "profiling stopped")
    st.StopProfiling(pb.StopProfilingRequest(), timeout=10)
    target_untouched(mw.pid)
    ch.close()


def test_checkpoint_without_sys_admin():
    # an agent without CAP_SYS_ADMIN (a sidecar's): it profiles, but refuses
    # every call that would run CRIU to dump or restore, CRIU not run, and
    # names the node-side command; the target carries on, profiled
    if not shutil.which("setpriv"):
        print("# no setpriv here: test_checkpoint_without_sys_admin not run")
        return
    mw, lo, hi = memwrite(8)
    sock = sock_path("noadmin")
    images = os.path.join(TMP, "images-noadmin")
    start_agent(["--pid", str(mw.pid), "--images-root", images], sock,
                prefix=("setpriv", "--bounding-set=-sys_admin", "--inh-caps=-sys_admin"))
    ch, st = unix(sock)
    st.StartProfiling(pb.StartProfilingRequest(interval_ms=100), timeout=10)
    wait_hot(st, lo, hi)
    for call, req in ((st.PreCheckpoint, pb.PreCheckpointRequest(images_dir="p1")),
                      (st.FinalDump, pb.FinalDumpRequest(images_dir="d1", parent_dir="p1")),
                      (st.Restore, pb.RestoreRequest(images_dir="d1")),
                      (st.Migrate, pb.MigrateRequest(images_dir="m1", destination_dir="m2"))):
        msg = expect_code(call, grpc.StatusCode.FAILED_PRECONDITION, req)
        check("CAP_SYS_ADMIN" in msg and "memlens migrate --container" in msg, msg)
    check(not os.path.exists(os.path.join(images, "p1")) and
          not os.path.exists(os.path.join(images, "m1")), "images directories made")
    s = st.GetStatus(pb.GetStatusRequest(), timeout=5)
    check(s.profiling and s.checkpoints == 0, "profiling %s, %d checkpoints" % (s.profiling, s.checkpoints))
    wait_hot(st, lo, hi)
    st.StopProfiling(pb.StopProfilingRequest(), timeout=10)
    check(mw.poll() is None, "memwrite exited")
    target_untouched(mw.pid)
    ch.close()


def test_checkpoint_with_criu():
    criu = criu_path()
    if not criu:
        raise Skip("no working CRIU (set MEMLENS_CRIU or run scripts/ensure-criu.sh); "
                   "the no-CRIU path is tested by test_checkpoint_without_criu")
    mw, lo, hi = memwrite(8)
    sock = sock_path("criu")
    images = os.path.join(TMP, "images")
    start_agent(["--pid", str(mw.pid), "--criu", criu, "--images-root", images,
                 "--criu-timeout", "60"], sock)
    ch, st = unix(sock)
    st.StartProfiling(pb.StartProfilingRequest(interval_ms=100, hot_consecutive=2), timeout=10)
    wait_hot(st, lo, hi)
    s = st.GetStatus(pb.GetStatusRequest(), timeout=5)
    try:
        r = st.PreCheckpoint(pb.PreCheckpointRequest(images_dir="pre1"), timeout=120)
        check(r.success and r.images_dir.endswith("pre1"), "pre-dump: %s" % r)
    except grpc.RpcError as e:
        # upstream CRIU on a kernel without soft-dirty refuses pre-dump: say so clearly
        check(e.code() == grpc.StatusCode.FAILED_PRECONDITION and "soft-dirty" in e.details(),
              "pre-dump: %s %s" % (e.code(), e.details()))
    r = st.FinalDump(pb.FinalDumpRequest(images_dir="d1", leave_running=True), timeout=120)
    print("# FinalDump: " + str(r).replace("\n", " "))
    check(r.success and r.profiler_reinit and r.duration_ms > 0 and r.image_bytes > 8 << 20,
          "dump --leave-running: %s" % r)
    # a dump writes every VMA (CRIU's exclude options apply to pre-dumps)
    check(len(r.excluded) == 0 and "a dump writes every VMA" in r.note,
          "hot VMAs of a dump: %s / %s" % (list(r.excluded), r.note))
    s = st.GetStatus(pb.GetStatusRequest(), timeout=5)
    # the agent names its CRIU by its real path (a checkout's .cache may be a link)
    check(s.profiling and s.checkpoints == 1 and s.criu_works and
          os.path.realpath(s.criu_path) == os.path.realpath(criu),
          "status after dump: %s" % s)
    wait_hot(st, lo, hi)
    # pages to a page server started through the agent
    port = free_port()
    ps = st.StartPageServer(pb.StartPageServerRequest(images_dir="ps", address="127.0.0.1",
                                                      port=port), timeout=60)
    check(ps.success and ps.pid > 0 and ps.port == port, "page server: %s" % ps)
    r = st.FinalDump(pb.FinalDumpRequest(images_dir="d-ps", page_server_address="127.0.0.1",
                                         page_server_port=port, leave_running=True), timeout=120)
    check(r.success and "--page-server" in r.cmdline, "dump to the page server: %s" % r)
    pages = sum(os.path.getsize(os.path.join(images, "ps", f))
                for f in os.listdir(os.path.join(images, "ps")) if f.startswith("pages-"))
    check(pages >= 8 << 20, "the page server received %d bytes of pages" % pages)
    check(st.StopProfiling(pb.StopProfilingRequest(), timeout=10).success, "stop")
    r = st.FinalDump(pb.FinalDumpRequest(images_dir="d2"), timeout=120)
    check(r.success, "final dump: %s" % r)
    mw.wait(30)
    r = st.Restore(pb.RestoreRequest(images_dir="d2"), timeout=120)
    check(r.success and r.pid == mw.pid, "restore: %s" % r)
    try:
        p = st.StartProfiling(pb.StartProfilingRequest(interval_ms=100, hot_consecutive=2),
                              timeout=10)
        check(p.pid == r.pid, "the restored process is the new target")
        wait_hot(st, lo, hi)
        st.StopProfiling(pb.StopProfilingRequest(), timeout=10)
        target_untouched(r.pid)
    finally:
        os.kill(r.pid, signal.SIGKILL)
    ch.close()


# the application in a mount namespace of its own (a container's, seen from
# a sidecar): a tmpfs root, /usr and the workloads bound from outside (the
# dump names them external), its main process a `sleep` that holds the
# namespace while the dumped process is gone
MNTNS_SH = r"""
R=$1 W=$2
mount -t tmpfs -o mode=0755 memlens-app-root "$R" || exit 1
mkdir "$R/usr" "$R/w" "$R/proc" "$R/tmp" "$R/old" || exit 1
for d in bin lib lib64 sbin; do [ -e "/$d" ] && ln -s "usr/$d" "$R/$d"; done
mount --bind /usr "$R/usr" && mount --bind "$W" "$R/w" && mount -t proc proc "$R/proc" || exit 1
echo app-root >"$R/marker"
cd "$R" && pivot_root . old && umount -l /old && rmdir /old || exit 1
: >/tmp/in
setsid -f /w/memwrite -P -m 8 </tmp/in >/tmp/memwrite.out 2>&1
exec sleep infinity
"""


def test_restore_own_mount_namespace():
    criu = criu_path()
    if not criu:
        raise Skip("no working CRIU (set MEMLENS_CRIU or run scripts/ensure-criu.sh)")
    if not shutil.which("unshare") or not shutil.which("pivot_root"):
        raise Skip("no unshare(1) or pivot_root(8) here (util-linux)")
    # the application's root has /usr only: its /bin and /lib are links there
    if any(os.path.exists("/" + d) and os.path.realpath("/" + d) != "/usr/" + d
           for d in ("bin", "lib", "lib64", "sbin")):
        raise Skip("this system's /bin, /lib are not links into /usr (merged /usr)")
    root = os.path.join(TMP, "app-root")
    os.mkdir(root)
    keeper = spawn(["unshare", "-m", "--propagation", "private", "sh", "-c", MNTNS_SH, "sh",
                    root, WORKLOADS], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    out = "/proc/%d/root/tmp/memwrite.out" % keeper.pid
    m = None
    for _ in range(3000):
        try:
            m = re.search(r"pid (\d+) writes", open(out).read())
        except OSError:
            pass
        if m or keeper.poll() is not None:
            break
        time.sleep(0.02)
    check(m, "the application's mount namespace was not made (unshare, pivot_root): %s"
          % keeper.poll())
    pid = int(m.group(1))
    ns = os.stat("/proc/%d/ns/mnt" % pid).st_ino
    check(ns != os.stat("/proc/self/ns/mnt").st_ino and
          ns == os.stat("/proc/%d/ns/mnt" % keeper.pid).st_ino, "memwrite's mount namespace")
    sock = sock_path("mntns")
    images = os.path.join(TMP, "images-mntns")
    start_agent(["--pid", str(pid), "--criu", criu, "--images-root", images,
                 "--criu-timeout", "120", "--criu-opt=--external=mnt[/usr]:usr",
                 "--criu-opt=--external=mnt[/w]:w"], sock)
    ch, st = unix(sock)
    try:
        r = st.FinalDump(pb.FinalDumpRequest(images_dir="own-ns"), timeout=300)
        check(r.success, "final dump: %s" % r)
        rec = open(os.path.join(images, "own-ns", "memlens-mntns")).read()
        check("keeper %d %d\n" % (keeper.pid, ns) in rec and "ext usr /usr\n" in rec and
              "ext w /w\n" in rec, "the record of the mount namespace: %r" % rec)
        for _ in range(500):
            if not os.path.exists("/proc/%d" % pid):
                break
            time.sleep(0.02)
        check(not os.path.exists("/proc/%d" % pid), "the dumped process is still there")
        r = st.Restore(pb.RestoreRequest(images_dir="own-ns"), timeout=300)
        check(r.success and r.pid == pid, "restore: %s" % r)
        # back in a namespace whose root is the application's, with its mounts
        rns = os.stat("/proc/%d/ns/mnt" % pid).st_ino
        check(rns != os.stat("/proc/self/ns/mnt").st_ino,
              "the restored process is in the agent's mount namespace")
        check(open("/proc/%d/root/marker" % pid).read() == "app-root\n",
              "the restored process's root is not the application's")
        check(os.path.exists("/proc/%d/root/w/memwrite" % pid) and
              os.path.isdir("/proc/%d/root/usr/bin" % pid), "its external mounts")
        check(not os.listdir(os.path.join(images, "own-ns")) or
              not os.path.exists(os.path.join(images, "own-ns", "memlens-mntns.d")),
              "the staged mounts were left beside the images")
        target_untouched(pid)
        # a namespace that nothing else holds: its dump is refused before CRIU runs
        try:
            st.FinalDump(pb.FinalDumpRequest(images_dir="own-ns-2"), timeout=300)
            check(False, "a dump of the restored process, alone in its namespace, ran")
        except grpc.RpcError as e:
            check(e.code() == grpc.StatusCode.FAILED_PRECONDITION and
                  "no other process to hold it" in e.details(), "%s %s" % (e.code(), e.details()))
        check(os.path.exists("/proc/%d" % pid), "the refused dump harmed the target")
    finally:
        if os.path.exists("/proc/%d" % pid):
            os.kill(pid, signal.SIGKILL)
        ch.close()


def migwork(args, prefix=()):
    """migwork (workloads/migwork.c), its output in a file; returns (proc, out path).
    @prefix: a command that runs it (nsenter into a network namespace)."""
    path = os.path.join(TMP, "migwork-%d.out" % next(SEQ))
    out = open(path, "a")
    p = spawn(list(prefix) + [os.path.join(WORKLOADS, "migwork")] + args, stdout=out,
              stderr=subprocess.STDOUT)
    for _ in range(500):
        if "ready" in open(path).read():
            return p, path
        time.sleep(0.05)
    raise AssertionError("migwork did not start: %s" % open(path).read())


def gone(pid):
    try:
        return open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[0] in "ZX"
    except OSError:
        return True


def hot_count(st):
    return len(st.GetHotRegions(pb.GetHotRegionsRequest(), timeout=5).regions)


def wait_until(what, fn, secs=60):
    deadline = time.time() + secs
    while time.time() < deadline:
        if fn():
            return
        time.sleep(0.2)
    raise AssertionError("timed out waiting for " + what)


def test_checkpoint_chain():
    """Three PreCheckpoints and a FinalDump through the agent: a region turns
    hot -> cold and one cold -> hot between rounds 1 and 2, exclusion is off
    in round 3, 13 hot ranges (more than 10); the FinalDump is incremental;
    the restored target verifies its own memory."""
    criu = criu_path()
    if not criu:
        raise Skip("no working CRIU (set MEMLENS_CRIU or run scripts/ensure-criu.sh)")
    if subprocess.run([criu, "check", "--feature", "mem_dirty_track"], capture_output=True,
                      timeout=60).returncode:
        raise Skip("this kernel has no soft-dirty tracking: pre-dump chains need it "
                   "(they run in the 6.12 guest of tests/kernels)")
    fork = subprocess.run([criu, "--exclude-range=1000:2000", "--no-parent-range=1000:2000",
                           "--version"], capture_output=True, timeout=60).returncode == 0
    mw, out = migwork(["-H", "12", "-k", "12", "-I", "32", "-C", "4", "-W", "4", "-t", "2"])
    sock = sock_path("chain")
    images = os.path.join(TMP, "images-chain")
    start_agent(["--pid", str(mw.pid), "--criu", criu, "--images-root", images,
                 "--criu-timeout", "300"], sock)
    ch, st = unix(sock)
    st.StartProfiling(pb.StartProfilingRequest(interval_ms=300, hot_consecutive=2), timeout=10)
    wait_until("13 hot ranges", lambda: hot_count(st) >= 13)
    rounds = []
    r = st.PreCheckpoint(pb.PreCheckpointRequest(images_dir="c1"), timeout=600)
    rounds.append(r)
    if fork:
        # what was hot at that moment (on a slow machine not always all 13)
        check(len(r.excluded) >= 1 and ("--exclude-file" in r.cmdline) == (len(r.excluded) > 10),
              "round 1: %s" % r)
    else:
        check(r.exclude_skipped and "--exclude" not in r.cmdline, "round 1: %s" % r)
    mw.send_signal(signal.SIGUSR2)  # the hot-then-cold region goes cold, the other hot
    wait_until("phase 2", lambda: "phase 2" in open(out).read())
    time.sleep(2)
    wait_until("13 hot ranges again", lambda: hot_count(st) >= 13)
    r = st.PreCheckpoint(pb.PreCheckpointRequest(images_dir="c2", parent_dir="c1"), timeout=600)
    rounds.append(r)
    check(r.success and "--prev-images-dir=../c1" in r.cmdline, "round 2: %s" % r)
    excluded2 = len(r.excluded)
    r = st.PreCheckpoint(pb.PreCheckpointRequest(images_dir="c3", parent_dir="c2",
                                                  no_exclude=True), timeout=600)
    rounds.append(r)
    check(r.success and len(r.excluded) == 0 and "--exclude-" not in r.cmdline, "round 3: %s" % r)
    if fork:
        # exactly what round 2 left out goes without its parent
        check(r.no_parent_ranges == excluded2 and "exclusion off" in r.note, "round 3: %s" % r)
    r = st.FinalDump(pb.FinalDumpRequest(images_dir="c4", parent_dir="c3"), timeout=600)
    rounds.append(r)
    check(r.success and "--track-mem" in r.cmdline and "--prev-images-dir=../c3" in r.cmdline,
          "final dump: %s" % r)
    # incremental: the hot 12 + 4 MiB (4096 pages) and a little more, not all 52 MiB
    check(0 < r.pages_written <= 4096 + 2048, "final dump wrote %d pages" % r.pages_written)
    for i, x in enumerate(rounds):
        print("# agent chain %s round %d: pages %d, %d ranges excluded, %d no-parent, %d ms" %
              ("fork" if fork else "upstream", i + 1, x.pages_written, len(x.excluded),
               x.no_parent_ranges, x.duration_ms))
    mw.wait(60)
    rs = st.Restore(pb.RestoreRequest(images_dir="c4"), timeout=600)
    check(rs.success and rs.pid == mw.pid, "restore: %s" % rs)
    os.kill(rs.pid, signal.SIGTERM)
    wait_until("the restored target to finish", lambda: gone(rs.pid))
    text = open(out).read()
    check("migwork: correct" in text, "restored target: %s" % text)
    ch.close()


def test_migrate_validation():
    """Migrate's request is checked before anything runs: each wrong field
    is named, the target keeps running untouched."""
    mw, lo, hi = memwrite(4)
    sock = sock_path("migval")
    images = os.path.join(TMP, "images-migval")
    start_agent(["--pid", str(mw.pid), "--images-root", images], sock)
    ch, st = unix(sock)
    ok = dict(images_dir="src", destination_dir="dst")
    bad = [(dict(images_dir="src"), "destination"),
           (dict(ok, destination="127.0.0.1:7000"), "exactly one"),
           (dict(destination_dir="dst"), "images_dir"),
           (dict(images_dir="src", destination="no-port"), "HOST:PORT"),
           (dict(images_dir="src", destination="127.0.0.1:0"), "HOST:PORT"),
           (dict(images_dir="src", destination="127.0.0.1:70000"), "HOST:PORT"),
           (dict(ok, max_rounds=51), "max_rounds"), (dict(ok, max_rounds=-1), "max_rounds"),
           (dict(ok, threshold_mib=float("nan")), "threshold_mib"),
           (dict(ok, threshold_mib=-1), "threshold_mib"),
           (dict(ok, round_seconds=3601), "round_seconds"),
           (dict(ok, interval_ms=5), "interval_ms"),
           (dict(ok, timeout_ms=86400001), "timeout_ms"),
           (dict(ok, images_dir="../x"), "images_dir"),
           (dict(ok, destination_dir="/etc"), "destination_dir"),
           (dict(ok, destination_dir="src"), "must differ")]
    for kw, word in bad:
        msg = expect_code(st.Migrate, grpc.StatusCode.INVALID_ARGUMENT, pb.MigrateRequest(**kw))
        check(word in msg, "%s: the message does not say %r: %s" % (kw, word, msg))
    check(mw.poll() is None, "the target died")
    target_untouched(mw.pid)
    ch.close()


def test_migrate_container_errors():
    """Migrate of a container (the request's container, as `memlens migrate
    --container`): given with pid, malformed, unknown, an empty cgroup or a
    cgroup of two trees, it is refused before anything runs, with a status
    that names what failed and says what to do; the agent's target runs on
    untouched."""
    mw, lo, hi = memwrite(4)
    sock = sock_path("migctr")
    images = os.path.join(TMP, "images-migctr")
    start_agent(["--pid", str(mw.pid), "--images-root", images], sock)
    ch, st = unix(sock)
    ok = dict(images_dir="src", destination_dir="dst")
    inval = grpc.StatusCode.INVALID_ARGUMENT
    unknown = "memlens-no-such-container-%d" % os.getpid()
    bad = [(dict(ok, container="c1", pid=mw.pid), inval, ["container or pid, not both"]),
           (dict(ok, pid=-4), inval, ["pid must be"]),
           (dict(ok, pid=4194304 + 1), grpc.StatusCode.NOT_FOUND,
            ["no process 4194305 (the request's pid)", "none for the agent's target"]),
           (dict(ok, container="-c1"), inval, ["container must be", "starts with '-'"]),
           (dict(ok, container="c 1"), inval, ["container must be", "space"]),
           (dict(ok, container="/etc/c1"), inval, ["under /sys/fs/cgroup"]),
           (dict(ok, container="a/../../../etc"), inval, ["'..'"]),
           (dict(ok, container="c1", postcopy=True), inval, ["postcopy is not for a container"]),
           (dict(ok, container=unknown), grpc.StatusCode.NOT_FOUND,
            ["no container '%s'" % unknown, "podman ps", "cgroup directory"]),
           (dict(ok, container="memlens.slice/" + unknown), grpc.StatusCode.NOT_FOUND,
            ["no container 'memlens.slice/%s'" % unknown, "cgroup directory"])]
    # a cgroup directory: empty, then with two trees (not one container)
    cg = None
    for root in ("/sys/fs/cgroup/unified", "/sys/fs/cgroup/pids", "/sys/fs/cgroup"):
        d = os.path.join(root, "memlens-agent-test-%d" % os.getpid())
        try:
            os.mkdir(d)
        except OSError:
            continue
        if os.path.exists(os.path.join(d, "cgroup.procs")):
            cg = d
            break
        os.rmdir(d)
    sleepers = []
    try:
        if cg:
            expect = expect_code(st.Migrate, grpc.StatusCode.FAILED_PRECONDITION,
                                 pb.MigrateRequest(container=cg, **ok))
            check("no process" in expect and "start it first" in expect, expect)
            for _ in range(2):
                sleepers.append(spawn(["sleep", "600"]))
                with open(os.path.join(cg, "cgroup.procs"), "w") as f:
                    f.write(str(sleepers[-1].pid))
            bad.append((dict(ok, container=cg), grpc.StatusCode.FAILED_PRECONDITION,
                        ["2 trees, not one container", "give the cgroup of one container"]))
        else:
            print("# no cgroup could be made here: the cgroup directory cases are left out")
        for kw, code, words in bad:
            msg = expect_code(st.Migrate, code, pb.MigrateRequest(**kw))
            check(msg.startswith("Migrate: ") and all(w in msg for w in words),
                  "%s: the message does not say %s: %s" % (kw, words, msg))
    finally:
        for p in sleepers:
            p.kill()
            p.wait()
        if cg:
            for _ in range(100):
                try:
                    os.rmdir(cg)
                    break
                except OSError:
                    time.sleep(0.05)
    check(mw.poll() is None, "the target died")
    check(not os.path.exists(os.path.join(images, "src")), "images were made")
    target_untouched(mw.pid)
    ch.close()


def test_migrate_pid():
    """Migrate with the request's pid: that process tree is migrated (to a
    directory on this machine), not the agent's target, which goes on
    being profiled; the restored tree verifies its own memory."""
    criu = criu_path()
    if not criu:
        raise Skip("no working CRIU (set MEMLENS_CRIU or run scripts/ensure-criu.sh)")
    target, lo, hi = memwrite(4)
    mw, out = migwork(["-H", "4", "-k", "4", "-I", "8", "-C", "2", "-t", "2"])
    threading.Thread(target=mw.wait, daemon=True).start()
    sock = sock_path("migpid")
    start_agent(["--pid", str(target.pid), "--criu", criu, "--images-root",
                 os.path.join(TMP, "images-migpid"), "--criu-timeout", "300"], sock)
    ch, st = unix(sock)
    st.StartProfiling(pb.StartProfilingRequest(interval_ms=100, hot_consecutive=2), timeout=10)
    r = st.Migrate(pb.MigrateRequest(pid=mw.pid, images_dir="src", destination_dir="dest",
                                     max_rounds=2, threshold_mib=1, round_seconds=1,
                                     interval_ms=300, timeout_ms=300000), timeout=1200)
    print("# migrate pid %d: %d round(s), total %d bytes, downtime %d ms" %
          (mw.pid, len(r.rounds), r.total_bytes, r.downtime_ms))
    check(r.success and r.pid == mw.pid and r.restored_pid == mw.pid and not r.container_id,
          "reply: %s" % r)
    s = st.GetStatus(pb.GetStatusRequest(), timeout=5)
    check(s.profiling and s.pid == target.pid and s.target_pid == target.pid,
          "the agent's target after another tree's migration: %s" % s)
    wait_hot(st, lo, hi)
    os.kill(r.restored_pid, signal.SIGTERM)
    wait_until("the restored tree to finish", lambda: gone(r.restored_pid))
    text = open(out).read()
    check("migwork: correct" in text, "restored tree: %s" % text[-300:])
    st.StopProfiling(pb.StopProfilingRequest(), timeout=10)
    target_untouched(target.pid)
    ch.close()


def test_checkpoint_tree_pids():
    """PreCheckpoint of a process tree (forktree: a root and two children,
    each writing its own private pages and one shared mapping): every
    excluded range names its process, each process's private buffer is
    left out under its own pid, the shared mapping never. Pre-dumps need
    soft-dirty (the 6.12 guest of tests/kernels)."""
    criu = criu_path()
    if not criu:
        raise Skip("no working CRIU (set MEMLENS_CRIU or run scripts/ensure-criu.sh)")
    if subprocess.run([criu, "check", "--feature", "mem_dirty_track"], capture_output=True,
                      timeout=60).returncode:
        raise Skip("this kernel has no soft-dirty tracking: pre-dumps need it "
                   "(they run in the 6.12 guest of tests/kernels)")
    out = open(os.path.join(TMP, "forktree-ckpt.out"), "w+")
    ft = spawn([os.path.join(WORKLOADS, "forktree"), "-c", "2", "-p", "64", "-s", "32", "-P"],
               stdout=out, stderr=subprocess.STDOUT)
    tree = {}
    for _ in range(3000):
        out.seek(0)
        tree = {int(p): (int(a, 16), int(s, 16)) for p, a, s in re.findall(
            r"forktree: pid (\d+) private 0x([0-9a-f]+)-\S+ shared 0x([0-9a-f]+)-", out.read())}
        if len(tree) == 3:
            break
        time.sleep(0.02)
    check(len(tree) == 3, "forktree's processes: %s" % tree)
    sock = sock_path("treeckpt")
    start_agent(["--pid", str(ft.pid), "--criu", criu, "--images-root",
                 os.path.join(TMP, "images-treeckpt"), "--criu-timeout", "300"], sock)
    ch, st = unix(sock)
    st.StartProfiling(pb.StartProfilingRequest(interval_ms=300, hot_consecutive=2), timeout=10)

    def all_hot():
        h = st.GetHotRegions(pb.GetHotRegionsRequest(), timeout=5)
        return all(any(x.pid == pid and x.start_addr <= priv < x.end_addr for x in h.hot_ranges)
                   for pid, (priv, _) in tree.items())
    wait_until("every process's private pages hot", all_hot, 120)
    r = st.PreCheckpoint(pb.PreCheckpointRequest(images_dir="t1"), timeout=600)
    for x in r.excluded:
        print("# tree pre-dump: pid %d left out %x-%x" % (x.pid, x.start_addr, x.end_addr))
    if r.exclude_skipped:
        raise Skip("this CRIU leaves nothing out: %s" % r.note)
    check(r.success and r.excluded, "nothing left out: %s" % r)
    check(all(x.pid in tree for x in r.excluded), "a range without its process: %s" %
          list(r.excluded))
    # what was hot at that moment: at least one process's own buffer, under its pid
    for pid, (priv, shared) in tree.items():
        check(not any(x.start_addr <= shared < x.end_addr for x in r.excluded),
              "the shared mapping was left out: %s" % list(r.excluded))
    owners = {pid for pid, (priv, _) in tree.items()
              if any(x.pid == pid and x.start_addr <= priv < x.end_addr for x in r.excluded)}
    check(owners, "no process's private buffer is in the excluded list under its pid: %s" %
          list(r.excluded))
    print("# tree pre-dump: %d range(s) left out, the private buffers of %d of 3 processes "
          "under their own pid" % (len(r.excluded), len(owners)))
    st.StopProfiling(pb.StopProfilingRequest(), timeout=10)
    ch.close()
    os.killpg(ft.pid, signal.SIGINT)


def test_migrate():
    """The Migrate RPC: the whole live migration in one call, the flow of
    `memlens migrate` (pre-dump rounds with the agent's hot regions left
    out when the CRIU can, the final dump to the destination's page
    server, the restore there), every round in the reply; to a directory
    on this machine, and, when MEMLENS_TEST_NETNS="NS_A NS_B ADDR_B" names
    two network namespaces, from NS_A to a `memlens migrate --receive` in
    NS_B. The restored target verifies its own memory. Without soft-dirty:
    one stop-and-copy dump, said so."""
    criu = criu_path()
    if not criu:
        raise Skip("no working CRIU (set MEMLENS_CRIU or run scripts/ensure-criu.sh)")
    precopy = subprocess.run([criu, "check", "--feature", "mem_dirty_track"],
                             capture_output=True, timeout=60).returncode == 0
    fork = subprocess.run([criu, "--exclude-range=1000:2000", "--no-parent-range=1000:2000",
                           "--version"], capture_output=True, timeout=60).returncode == 0
    tag = "fork" if fork else "upstream"
    ns = os.environ.get("MEMLENS_TEST_NETNS", "").split()
    variants = [("local", None)] + ([("netns", ns)] if len(ns) == 3 else [])
    for name, nsv in variants:
        in_a = ["nsenter", "--net=/run/netns/" + nsv[0]] if nsv else []
        mw, out = migwork(["-H", "12", "-k", "12", "-I", "32", "-C", "4", "-t", "2"], in_a)
        # the dumped target is a child of ours: reap it, so that its pid is
        # free for the restore
        threading.Thread(target=mw.wait, daemon=True).start()
        sock = sock_path("migrate-" + name)
        images = os.path.join(TMP, "images-migrate-" + name)
        start_agent(["--pid", str(mw.pid), "--criu", criu, "--images-root", images,
                     "--criu-timeout", "300"], sock, prefix=in_a)
        ch, st = unix(sock)
        req = dict(images_dir="src", max_rounds=3, threshold_mib=1, round_seconds=2,
                   interval_ms=300, timeout_ms=300000)
        if nsv:
            # the agent profiles nothing: the flow's own profiler decides what is hot
            recv_out = open(os.path.join(TMP, "recv-%s.out" % name), "w+")
            port = 7412
            spawn(["nsenter", "--net=/run/netns/" + nsv[1], MEMLENS, "migrate", "--receive",
                   "--listen", "%s:%d" % (nsv[2], port), "--criu", criu, "-D",
                   os.path.join(TMP, "dest-" + name)], stdout=recv_out, stderr=subprocess.STDOUT)
            wait_until("the receiver", lambda: "receiving" in open(recv_out.name).read())
            req["destination"] = "%s:%d" % (nsv[2], port)
        else:
            try:
                st.StartProfiling(pb.StartProfilingRequest(interval_ms=300, hot_consecutive=2),
                                  timeout=10)
                if precopy:
                    wait_until("13 hot ranges", lambda: hot_count(st) >= 13)
            except grpc.RpcError as e:
                # before Linux 6.7 there is nothing to profile writes with: the
                # migration still runs, leaving nothing out
                check(e.code() == grpc.StatusCode.FAILED_PRECONDITION and
                      "PAGEMAP_SCAN" in e.details(), "StartProfiling: %s %s" %
                      (e.code(), e.details()))
                print("# migrate %s %s: no profiling here: %s" % (tag, name, e.details()))
            req["destination_dir"] = "dest"
        r = st.Migrate(pb.MigrateRequest(**req), timeout=1200)
        for x in r.rounds:
            print("# migrate %s %s: %s %d: %d pages, %d ms, %d excluded, %d no-parent: %s" %
                  (tag, name, x.kind, x.round, x.pages, x.duration_ms, x.excluded_ranges,
                   x.no_parent_ranges, x.note[:100]))
        print("# migrate %s %s: total %d bytes, downtime %d ms (frozen in the dump %d ms, "
              "restore %d ms)" % (tag, name, r.total_bytes, r.downtime_ms, r.frozen_in_dump_ms,
                                  r.restore_ms))
        check(r.success and r.restored_pid == mw.pid and r.criu_version, "reply: %s" % r)
        check(r.rounds and r.rounds[-1].kind == "dump" and
              all(x.kind == "pre-dump" for x in r.rounds[:-1]), "kinds: %s" % r)
        check(r.total_bytes == sum(x.bytes for x in r.rounds) and r.total_bytes > 0,
              "total: %s" % r)
        # a round sent what the destination stored (its pages, and their maps)
        # and, the final one, the other images after them
        check(all(x.stored_bytes >= (x.pages + max(x.shpages, 0)) * 4096 and
                  x.stored_bytes + x.images_bytes == x.bytes and
                  (x.images_bytes > 0) == (x.kind == "dump") for x in r.rounds),
              "what the destination stored: %s" % r)
        check(r.downtime_ms > 0 and r.final_dump_ms > 0 and r.restore_ms > 0, "times: %s" % r)
        if precopy:
            check(r.precopy and len(r.rounds) >= 2, "pre-copy: %s" % r)
            # incremental: the hot 12 + 4 MiB (4096 pages) and a little more, not all 52 MiB
            check(r.rounds[-1].pages <= 4096 + 2048, "the final dump: %s" % r.rounds[-1])
            if fork:
                # what was hot when a round ran (a slow guest's profiler does
                # not always see all 13 ranges hot yet): all of it left out
                pre = r.rounds[:-1]
                check(r.exclusion and "whole VMAs" in r.limits and
                      all(x.excluded_ranges == x.hot_ranges for x in pre) and
                      any(x.excluded_ranges for x in pre), "exclusion: %s" % r)
                # round 1 sends what was not hot (12318 pages in all) and a little
                check(r.rounds[0].pages <= 12318 + 512 - r.rounds[0].hot_bytes // 4096,
                      "round 1 with exclusion: %s" % r.rounds[0])
                # what the last pre-dump left out goes in full in the final dump
                check(r.rounds[-1].no_parent_ranges == pre[-1].excluded_ranges,
                      "the final dump: %s" % r.rounds[-1])
            else:
                check(not r.exclusion and "cannot leave memory out" in r.rounds[0].note,
                      "round 1 without the exclude options: %s" % r.rounds[0])
        else:
            check(not r.precopy and len(r.rounds) == 1 and not r.exclusion,
                  "stop-and-copy: %s" % r)
        if nsv:
            where = subprocess.run(["ip", "netns", "identify", str(r.restored_pid)],
                                   capture_output=True, text=True).stdout.strip()
            check(where == nsv[1], "restored pid %d in %r, not %s" % (r.restored_pid, where,
                                                                       nsv[1]))
        else:
            s = st.GetStatus(pb.GetStatusRequest(), timeout=5)
            check(not s.profiling and s.pid == r.restored_pid and s.checkpoints == len(r.rounds),
                  "status after the migration: %s" % s)
        os.kill(r.restored_pid, signal.SIGTERM)
        wait_until("the restored target to finish", lambda: gone(r.restored_pid))
        text = open(out).read()
        check("migwork: correct" in text, "restored target (%s): %s" % (name, text[-300:]))
        ch.close()
        cleanup()


def test_checkpoint_session_zero_target():
    """A target CRIU refuses to dump (its session id reads 0: here its session
    leader is outside the agent's PID namespace): FinalDump answers
    FAILED_PRECONDITION and says what to do, CRIU is not run, and profiling
    goes on with the heat it had learnt."""
    criu = criu_path()
    if not criu:
        raise Skip("no working CRIU (set MEMLENS_CRIU or run scripts/ensure-criu.sh)")
    if not shutil.which("unshare"):
        raise Skip("unshare (util-linux) is not installed")
    sock = sock_path("sid0")
    out = os.path.join(TMP, "sid0.out")
    images = os.path.join(TMP, "images-sid0")
    # the agent starts once memwrite runs (it finds its target by comm)
    script = ('%s -P -m 4 >%s 2>&1 & for i in $(seq 500); do grep -qs writes %s && break; '
              'sleep 0.02; done; %s agent --socket %s --comm memwrite '
              '--criu %s --images-root %s 2>%s.err & wait'
              % (os.path.join(WORKLOADS, "memwrite"), out, out, MEMLENS, sock, criu, images,
                 out))
    in_pid_namespace(script, sock)
    m = re.search(r"pid (\d+) writes 0x([0-9a-f]+)-0x([0-9a-f]+)", open(out).read())
    check(m, "memwrite did not start")
    lo, hi = int(m.group(2), 16), int(m.group(3), 16)
    ch, st = unix(sock)
    st.StartProfiling(pb.StartProfilingRequest(interval_ms=100, hot_consecutive=2), timeout=10)
    wait_hot(st, lo, hi)
    msg = expect_code(st.FinalDump, grpc.StatusCode.FAILED_PRECONDITION,
                      pb.FinalDumpRequest(images_dir="d", leave_running=True), timeout=60)
    check("session" in msg and "setsid" in msg and "CRIU was not run" in msg, msg)
    check(not os.path.exists(os.path.join(images, "d", "dump.log")), "CRIU ran anyway")
    s = st.GetStatus(pb.GetStatusRequest(), timeout=5)
    check(s.profiling and s.checkpoints == 0, "status after the refusal: %s" % s)
    hot = st.GetHotRegions(pb.GetHotRegionsRequest(), timeout=5)
    check(any(r.start_addr <= lo < r.end_addr for r in hot.regions),
          "the hot buffer was forgotten: %s" % hot)
    st.StopProfiling(pb.StopProfilingRequest(), timeout=10)
    ch.close()


def test_dump_call_timeout():
    """FinalDump's own timeout_ms: CRIU stuck on a page server that never
    answers is killed at that limit, not the agent's --criu-timeout (600 s
    here); the target carries on and profiling resumes."""
    criu = criu_path()
    if not criu:
        raise Skip("no working CRIU: the time limit needs a CRIU run")
    mw, lo, hi = memwrite(8)
    sock = sock_path("calltmo")
    start_agent(["--pid", str(mw.pid), "--criu", criu, "--images-root",
                 os.path.join(TMP, "images-tmo"), "--criu-timeout", "600"], sock)
    ch, st = unix(sock)
    st.StartProfiling(pb.StartProfilingRequest(interval_ms=100, hot_consecutive=2), timeout=10)
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)   # accepts (the kernel does) and never answers
    t0 = time.monotonic()
    try:
        msg = expect_code(st.FinalDump, grpc.StatusCode.DEADLINE_EXCEEDED,
                          pb.FinalDumpRequest(images_dir="tmo", leave_running=True,
                                              page_server_address="127.0.0.1",
                                              page_server_port=srv.getsockname()[1],
                                              timeout_ms=2000))
    finally:
        srv.close()
    took = time.monotonic() - t0
    print("# FinalDump timeout_ms=2000 against a silent page server: %.1f s: %s" % (took, msg))
    check(took < 60, "the call took %.1f s: the per-call limit was not applied" % took)
    check("2 s" in msg or "2000" in msg or "killed" in msg, msg)
    check(mw.poll() is None, "the target died")
    s = st.GetStatus(pb.GetStatusRequest(), timeout=5)
    check(s.profiling and s.checkpoints == 0, "status after the timeout: %s" % s)
    wait_hot(st, lo, hi)
    st.StopProfiling(pb.StopProfilingRequest(), timeout=10)
    target_untouched(mw.pid)
    ch.close()


def test_criu_opt():
    """--criu-opt reaches every dump: a target connected to an outside unix
    socket is refused before anything is frozen (FAILED_PRECONDITION naming
    the socket and --ext-unix-sk) unless the agent runs with --criu-opt
    --ext-unix-sk, which the check then takes into account."""
    r = subprocess.run([MEMLENS, "agent", "--socket", sock_path("usage"), "--criu-opt",
                        "--images-dir=/x"], capture_output=True, text=True, timeout=20)
    check(r.returncode == 2 and "sets --images-dir itself" in r.stderr,
          "--criu-opt --images-dir=/x: exit %d %s" % (r.returncode, r.stderr))
    criu = criu_path()
    if not criu:
        raise Skip("no working CRIU: the option must reach a CRIU run")
    peer = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    peer.bind(os.path.join(TMP, "peer.sock"))
    mine = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    mine.connect(os.path.join(TMP, "peer.sock"))
    mw, lo, hi = memwrite(8, pass_fds=(mine.fileno(),))
    images = os.path.join(TMP, "images-opt")
    for tag, extra, ok in (("plain", [], False), ("ext", ["--criu-opt", "--ext-unix-sk"], True)):
        sock = sock_path("criuopt-" + tag)
        a = start_agent(["--pid", str(mw.pid), "--criu", criu, "--images-root", images]
                        + extra, sock)
        ch, st = unix(sock)
        if ok:
            r = st.FinalDump(pb.FinalDumpRequest(images_dir=tag, leave_running=True), timeout=120)
            check(r.success and "--ext-unix-sk" in r.cmdline, "dump: %s" % r)
        else:
            msg = expect_code(st.FinalDump, grpc.StatusCode.FAILED_PRECONDITION,
                              pb.FinalDumpRequest(images_dir=tag, leave_running=True), timeout=120)
            check("--ext-unix-sk" in msg and "pid %d (memwrite)" % mw.pid in msg and
                  "nothing was frozen" in msg, msg)
            check(not os.path.exists(os.path.join(images, tag, "dump.log")), "CRIU ran")
        ch.close()
        a.send_signal(signal.SIGTERM)
        a.wait(30)
    check(mw.poll() is None, "the target died")
    mine.send(b"still connected")
    check(peer.recv(64) == b"still connected", "the socket broke")
    target_untouched(mw.pid)


def test_tcp_policy():
    """A target with an established TCP connection: without --tcp the agent
    refuses FinalDump before anything is frozen (FAILED_PRECONDITION naming
    the connection); with --tcp close CRIU gets --tcp-close, or, where this
    kernel makes this CRIU refuse the socket, the refusal (before anything
    is frozen) says what to do."""
    criu = criu_path()
    if not criu:
        raise Skip("no working CRIU: the policy goes to a CRIU run")
    lsock = socket.socket()
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(1)
    client = socket.create_connection(lsock.getsockname())
    conn, _ = lsock.accept()
    lsock.close()
    mw, lo, hi = memwrite(8, pass_fds=(conn.fileno(),))
    conn.close()  # the target holds the server end, the test the client end
    port = client.getpeername()[1]
    images = os.path.join(TMP, "images-tcp")
    for tag, extra in (("refuse", []), ("close", ["--tcp", "close"])):
        sock = sock_path("tcp-" + tag)
        a = start_agent(["--pid", str(mw.pid), "--criu", criu, "--images-root", images]
                        + extra, sock)
        ch, st = unix(sock)
        if not extra:
            msg = expect_code(st.FinalDump, grpc.StatusCode.FAILED_PRECONDITION,
                              pb.FinalDumpRequest(images_dir=tag, leave_running=True), timeout=120)
            check("127.0.0.1:%d <-> 127.0.0.1:%d" % (port, client.getsockname()[1])
                  in msg and "--tcp established" in msg and "pid %d (memwrite)" % mw.pid in msg,
                  msg)
            check(not os.path.exists(os.path.join(images, tag, "dump.log")), "CRIU ran")
        else:
            try:
                r = st.FinalDump(pb.FinalDumpRequest(images_dir=tag, leave_running=True),
                                 timeout=120)
                check(r.success and "--tcp-close" in r.cmdline, "dump: %s" % r)
            except grpc.RpcError as e:
                # where this kernel makes this CRIU refuse the socket, the
                # check before the freeze says so (else CRIU, ABORTED)
                check((e.code() == grpc.StatusCode.FAILED_PRECONDITION and
                       "CRIU 4.2" in e.details() and "nothing was frozen" in e.details()) or
                      (e.code() == grpc.StatusCode.ABORTED and "What to do:" in e.details()),
                      "unexplained: %s %s" % (e.code(), e.details()))
                check(not os.path.exists(os.path.join(images, tag, "dump.log")) or
                      e.code() == grpc.StatusCode.ABORTED, "CRIU ran")
        ch.close()
        a.send_signal(signal.SIGTERM)
        a.wait(30)
    check(mw.poll() is None, "the target died")
    client.sendall(b"x")  # the connection is still there
    target_untouched(mw.pid)
    client.close()


def proc_state(pid):
    stat_line = open("/proc/%d/stat" % pid).read()
    return stat_line[stat_line.rindex(")") + 2]


def tracer_of(pid):
    for line in open("/proc/%d/status" % pid):
        if line.startswith("TracerPid:"):
            return int(line.split()[1])
    return -1


def test_preflight_refusal():
    """A target holding what CRIU refuses (one end of a unix stream
    connection whose other end is outside its tree): FinalDump and Migrate
    answer FAILED_PRECONDITION naming the process, the socket and the fix,
    before anything is frozen: CRIU does not run and the target runs on,
    neither stopped nor touched. PreCheckpoint checks what a pre-dump, which
    dumps no files, refuses: a tree another process traces."""
    criu = criu_path()
    if not criu:
        raise Skip("no working CRIU: the check runs before a CRIU run")
    mine, peer = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    mw, lo, hi = memwrite(8, pass_fds=(mine.fileno(),))
    mine.close()  # the target holds one end, the test the other
    sock = sock_path("preflight")
    images = os.path.join(TMP, "images-preflight")
    start_agent(["--pid", str(mw.pid), "--criu", criu, "--images-root", images], sock)
    ch, st = unix(sock)
    st.StartProfiling(pb.StartProfilingRequest(interval_ms=100, hot_consecutive=2), timeout=10)
    calls = (("FinalDump", st.FinalDump,
              pb.FinalDumpRequest(images_dir="fd", leave_running=True), "fd"),
             ("Migrate", st.Migrate,
              pb.MigrateRequest(images_dir="mig", destination_dir="mig-dest", max_rounds=2,
                                round_seconds=1), "mig"))
    for name, call, req, d in calls:
        msg = expect_code(call, grpc.StatusCode.FAILED_PRECONDITION, req, timeout=120)
        print("# %s: %s" % (name, msg))
        check("pid %d (memwrite)" % mw.pid in msg and "unix" in msg and "fix:" in msg and
              "nothing was frozen" in msg, "%s: %s" % (name, msg))
        check(not os.path.exists(os.path.join(images, d, "dump.log")), "%s: CRIU ran" % name)
        check(mw.poll() is None and proc_state(mw.pid) not in "tT",
              "%s: the target is not running (state %s)" % (name, proc_state(mw.pid)))
    s = st.GetStatus(pb.GetStatusRequest(), timeout=5)
    check(s.profiling and s.checkpoints == 0, "status after the refusals: %s" % s)
    wait_hot(st, lo, hi)
    st.StopProfiling(pb.StopProfilingRequest(), timeout=10)
    if shutil.which("strace"):
        # a pre-dump dumps no files, but CRIU must trace the tree itself
        tracer = spawn(["strace", "-o", "/dev/null", "-p", str(mw.pid)],
                       stderr=subprocess.DEVNULL)
        wait_for("strace to attach", lambda: tracer_of(mw.pid) == tracer.pid)
        msg = expect_code(st.PreCheckpoint, grpc.StatusCode.FAILED_PRECONDITION,
                          pb.PreCheckpointRequest(images_dir="pre"), timeout=120)
        print("# PreCheckpoint: %s" % msg)
        check("pid %d (memwrite)" % mw.pid in msg and
              "traced by pid %d (strace)" % tracer.pid in msg and "nothing was frozen" in msg,
              "PreCheckpoint: %s" % msg)
        check(not os.path.exists(os.path.join(images, "pre", "dump.log")),
              "PreCheckpoint: CRIU ran")
        tracer.terminate()
        tracer.wait(30)
        wait_for("strace to detach", lambda: tracer_of(mw.pid) == 0)
    peer.sendall(b"x")  # the connection is still there
    target_untouched(mw.pid)
    peer.close()
    ch.close()


def children_named(ppid, comm):
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            stat_line = open("/proc/%s/stat" % d).read()
        except OSError:
            continue
        name = stat_line[stat_line.index("(") + 1:stat_line.rindex(")")]
        if name == comm and int(stat_line[stat_line.rindex(")") + 2:].split()[1]) == ppid:
            found.append(int(d))
    return found


def test_sigterm_during_checkpoint():
    criu = criu_path()
    if not criu:
        raise Skip("no working CRIU: the grace-period expiry needs a long call (a dump)")
    mw, lo, hi = memwrite(256)
    sock = sock_path("termckpt")
    a = start_agent(["--pid", str(mw.pid), "--criu", criu, "--images-root",
                     os.path.join(TMP, "images-term"), "--grace", "0"], sock)
    ch, st = unix(sock)
    st.StartProfiling(pb.StartProfilingRequest(interval_ms=100), timeout=10)
    result = {}

    def dump():
        try:
            st.FinalDump(pb.FinalDumpRequest(images_dir="t", leave_running=True), timeout=120)
            result["code"] = "OK"
        except grpc.RpcError as e:
            result["code"] = e.code().name

    t = threading.Thread(target=dump)
    t.start()
    seen = False
    while t.is_alive() and not seen:
        seen = bool(children_named(a.pid, "criu"))
    if not seen:
        t.join()
        raise Skip("the dump ended before SIGTERM could be sent during it (%s)" % result)
    a.send_signal(signal.SIGTERM)
    rc = a.wait(120)
    t.join()
    ch.close()
    check(rc == 0, "agent exit %d: %s" % (rc, agent_err(a)))
    if result["code"] in ("CANCELLED", "UNAVAILABLE"):
        check("grace period over: cancelled 1 call" in agent_err(a), agent_err(a))
    else:
        check(result["code"] == "OK", "FinalDump: %s" % result)
    check(not children_named(a.pid, "criu"), "CRIU left running")
    check(not os.path.exists(sock), "socket left behind")
    target_untouched(mw.pid)


def test_deploy_files():
    try:
        import yaml
    except ImportError:
        raise Skip("python3-yaml is not installed: cannot parse deploy/kubernetes")
    docs = list(yaml.safe_load_all(open(os.path.join(
        ROOT, "deploy/kubernetes/memlens-agent-sidecar.yaml"))))
    pod = docs[0]["spec"]
    check(pod["shareProcessNamespace"] is True, "shareProcessNamespace")
    agent = [c for c in pod["containers"] if c["name"] == "memlens-agent"][0]
    caps = agent["securityContext"]["capabilities"]["add"]
    check("SYS_PTRACE" in caps and "CHECKPOINT_RESTORE" in caps, "capabilities %s" % caps)
    mounts = {m["mountPath"]: m["name"] for m in agent["volumeMounts"]}
    check(any("--socket=/run/memlens/" in a for a in agent["command"]) and
          "/run/memlens" in mounts, "the socket is not on the shared volume")
    others = [c for c in pod["containers"] if c["name"] == "controller"][0]
    check(any(m["name"] == mounts["/run/memlens"] for m in others["volumeMounts"]),
          "no other container mounts the socket volume")
    unit = open(os.path.join(ROOT, "deploy/systemd/memlens-agent@.service")).read()
    check("memlens agent" in unit and "KillSignal=SIGTERM" in unit, "systemd unit")
    # the unit's command line is one the agent accepts
    m = re.search(r"^ExecStart=\S+ (agent .*) \$MEMLENS_AGENT_ARGS$", unit, re.M)
    check(m, "ExecStart not found")
    args = m.group(1).replace("%i", "memwrite").split()[1:]
    args = [a.replace("/run/memlens/", TMP + "/").replace("/var/lib/memlens/", TMP + "/")
            for a in args]
    mw, lo, hi = memwrite(4)
    a = start_agent(args, os.path.join(TMP, "memwrite.sock"))
    a.send_signal(signal.SIGTERM)
    check(a.wait(20) == 0, "the unit's agent exited %s" % a.returncode)


def main():
    if os.geteuid() != 0:
        print("skip - agent: the agent tests need root (ptrace, userfaultfd of another process)")
        return 0
    for t in (test_cli_usage, test_socket_mode_and_lock, test_startup_errors_clean,
              test_socket_dir_security, test_profile_flow, test_hot_ranges, test_interval_kept,
              test_tree, test_sampled,
              test_sampled_error, test_validation,
              test_deadline_and_fuzz, test_concurrent_clients, test_sigterm_during_calls,
              test_second_agent_same_socket, test_metrics, test_target_discovery,
              test_agent_says_its_target,
              test_auto_discovery_shared_pid_namespace, test_tcp_and_tls, test_target_exits,
              test_checkpoint_without_criu, test_checkpoint_without_sys_admin,
              test_checkpoint_with_criu, test_restore_own_mount_namespace,
              test_checkpoint_chain,
              test_migrate_validation, test_migrate_container_errors, test_migrate,
              test_migrate_pid, test_checkpoint_tree_pids,
              test_checkpoint_session_zero_target,
              test_dump_call_timeout, test_criu_opt, test_tcp_policy, test_preflight_refusal,
              test_sigterm_during_checkpoint,
              test_deploy_files):
        if len(sys.argv) > 1 and t.__name__ not in sys.argv[1:]:
            continue
        run_test(t)
    if not os.environ.get("MEMLENS_TEST_KEEP"):
        shutil.rmtree(TMP, ignore_errors=True)
    return 1 if results["fail"] else 0


if __name__ == "__main__":
    sys.exit(main())
