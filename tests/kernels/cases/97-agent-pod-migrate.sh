#!/bin/bash
# case-timeout: 1500
# The shipped migration-capable Pod
# (deploy/kubernetes/memlens-agent-sidecar-migrate.yaml) under podman kube
# play, with the images make image and scripts/app-image.sh build (their
# tarballs, built on the host, imported into a podman store in the case's
# tmpfs), the example application replaced by Debian's redis-server (its
# command line put where the manifest's `myserver` is, nothing else
# changed) and a writer in its container (redis-cli repeating a Lua script
# that rewrites 2000 keys of 1 KiB every 100 ms). A real gRPC client
# (python3-grpcio) drives the agent in its own container through the
# socket: StartProfiling (the agent finds redis-server through the shared
# PID namespace), GetHotRegions until 1 MiB of redis is hot (the time from
# pod start to the first answer printed), two PreCheckpoints, the writer
# stopped and redis's DEBUG DIGEST taken, FinalDump (the second pre-dump
# its parent), Restore; the restored redis's digest must be the one taken
# before the final dump. Pre-dumps need soft-dirty (the 6.12 guest). A step
# CRIU or podman cannot do here is a skip with their words.
# Opt-in (minutes under TCG): OPTIN=pod, or CASES naming it.
set -u
cd "$(dirname "$0")/../../.." || exit 1
. tests/kernels/cases/needs_write_tracking.bash agent
. tests/kernels/cases/criu_lib.bash
T=agent_pod_migrate
if [[ "${memlens_cases:-}" != *pod* ]] && [[ "${memlens_optin:-}" != *pod* ]]; then
	skip $T "opt-in (several minutes): OPTIN=pod or CASES=pod-migrate"
	exit 0
fi
BUILD=${BUILD:-build}
YAML=deploy/kubernetes/memlens-agent-sidecar-migrate.yaml
VERSION=$(sed -n 's/^VERSION *:= *//p' Makefile)
for p in podman runc catatonit; do
	command -v $p >/dev/null || [ -x /usr/libexec/podman/$p ] ||
		{ skip $T "no $p here (scripts/packages/optional/image.txt)"; exit 0; }
done
"$PY" -c 'import grpc, grpc_tools, yaml' 2>/dev/null || { skip $T "no python3-grpcio / grpc_tools / yaml here"; exit 0; }
img_tar=$BUILD/image/memlens-$VERSION.tar
[ -s "$img_tar" ] || { skip $T "no $img_tar: run make image on the host first"; exit 0; }
criu=
for c in "${CRIUS[@]}"; do [ "${c%%=*}" = page ] && criu=${c#*=}; done
[ -n "$criu" ] || { skip $T "no CRIU with memlens's patches here (scripts/ensure-criu.sh)"; exit 0; }
has_soft_dirty "$criu" || { skip $T "this kernel has no soft-dirty tracking (pre-dumps need it)"; exit 0; }

export CONTAINERS_CONF=$PWD/deploy/podman/containers.conf
S=$tmp/store
mkdir -p "$S" "$tmp/seccomp"
printf '[storage]\ndriver = "vfs"\ngraphroot = "%s/root"\nrunroot = "%s/run"\n' "$S" "$S" >"$S/storage.conf"
export CONTAINERS_STORAGE_CONF=$S/storage.conf
t0=$SECONDS
image=$(sed -n 's/^ *image: \(localhost\/memlens:[^ ]*\).*/\1/p' "$YAML" | sort -u)
[ "$image" = "localhost/memlens:$VERSION" ] || { notok $T "the manifest's memlens image is '$image'"; exit 0; }
# (the PATH scripts/image.sh gives the image)
podman import --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
	"$img_tar" "$image" >"$tmp/import.log" 2>&1 ||
	{ skip $T "podman import $img_tar: $(tail -n 2 "$tmp/import.log")"; exit 0; }
appimage=$(scripts/app-image.sh 2>"$tmp/app-image.log" | tail -n 1)
[ -n "$appimage" ] || { skip $T "scripts/app-image.sh: $(tail -n 2 "$tmp/app-image.log")"; exit 0; }
echo "# images imported into the case's store in $((SECONDS - t0)) s"
profile=$(sed -n 's|.*seccomp.security.alpha.kubernetes.io/app: localhost/||p' "$YAML")
deploy/podman/seccomp-userfaultfd.py "$tmp/seccomp/$profile" || { notok $T "seccomp profile"; exit 0; }

"$PY" - "$YAML" "$tmp/pod.yaml" "$appimage" <<'EOF' || { notok $T "the Pod's YAML"; exit 0; }
import sys, yaml
src, dst, appimage = sys.argv[1:4]
docs = list(yaml.safe_load_all(open(src)))
pod = next(d for d in docs if d["kind"] == "Pod")
redis = ("redis-server --port 0 --unixsocket /tmp/redis.sock --save '' --appendonly no "
         "--enable-debug-command local --dir /tmp")
for c in pod["spec"]["containers"]:
    if c["name"] == "app":
        c["image"] = appimage
        # the manifest's command, its example server replaced by redis
        c["command"] = [a.replace("myserver </dev/null >/tmp/myserver.log",
                                  redis + " </dev/null >/tmp/redis.log") for a in c["command"]]
        assert any("setsid redis-server" in a for a in c["command"]), c["command"]
    elif c["name"] == "memlens-agent":
        c["command"] = [a if a != "--comm=myserver" else "--comm=redis-server" for a in c["command"]]
        c["command"].append("--criu-timeout=600")
# as tests/integration/test_pod.sh: podman 4.3 may find a "once" init
# container still running and fail kube play
pod["metadata"].setdefault("annotations", {})["io.podman.annotations.init.container.type"] = "always"
yaml.safe_dump(pod, open(dst, "w"))
EOF
POD=$("$PY" -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["metadata"]["name"])' "$tmp/pod.yaml")
APP=$POD-app AGENT=$POD-memlens-agent
t_at_exit "podman pod rm -f -t 0 '$POD' >/dev/null 2>&1"
# podman 4.3 (Debian 12) with its cgroupfs manager on cgroup v2 (this
# guest: no systemd) makes a Pod's cgroup with a device filter that refuses
# every device, its children's included ("error reopening /dev/null inside
# container: operation not permitted"); with systemd, or on cgroup v1, it
# does not. So the Pod is made without starting it, that filter (eBPF
# programs of type cgroup_device on the Pod's own cgroup; each container
# keeps runc's) detached, then the Pod started.
unfilter_pod() {
	local cg id n=0
	cg=/sys/fs/cgroup$(podman pod inspect --format '{{.CgroupPath}}' "$POD" 2>/dev/null)
	[ -d "$cg" ] || return 0
	for id in $(bpftool cgroup show "$cg" 2>/dev/null | awk '$2 == "cgroup_device" {print $1}'); do
		bpftool cgroup detach "$cg" device id "$id" || return 1
		n=$((n + 1))
	done
	echo "# the Pod's cgroup ${cg#/sys/fs/cgroup}: $n device filter(s) of podman's detached"
}
tp=$EPOCHREALTIME
if ! podman kube play --start=false --seccomp-profile-root "$tmp/seccomp" "$tmp/pod.yaml" >"$tmp/play.log" 2>&1; then
	skip $T "podman kube play of the shipped Pod: $(tail -n 3 "$tmp/play.log" | tr '\n' ' ')"
	exit 0
fi
if [ "$(podman info --format '{{.Host.CgroupManager}} {{.Host.CgroupsVersion}}')" = "cgroupfs v2" ]; then
	command -v bpftool >/dev/null || { skip $T "no bpftool here to lift podman 4.3's device filter on the Pod's cgroup"; exit 0; }
	unfilter_pod || { notok $T "cannot detach the device filter of the Pod's cgroup"; exit 0; }
fi
if ! podman pod start "$POD" >"$tmp/start.log" 2>&1; then
	skip $T "podman pod start of the shipped Pod: $(tail -n 3 "$tmp/start.log" | tr '\n' ' ')"
	bpftool cgroup tree /sys/fs/cgroup 2>&1 | grep -B1 -A2 device | sed 's/^/#   /'
	exit 0
fi
ok "${T}_kube_play (the shipped Pod, localhost/memlens and $appimage)"
rcli() { timeout 60 podman exec "$APP" redis-cli -s /tmp/redis.sock "$@"; }
agent_ready() {
	apid=$(podman inspect --format '{{.State.Pid}}' "$AGENT" 2>/dev/null) &&
		[ "${apid:-0}" -gt 0 ] && [ -S "/proc/$apid/root/run/memlens/agent.sock" ]
}
t_wait 300 agent_ready || { notok $T "the agent did not serve: $(podman logs "$AGENT" 2>&1 | tail -n 3)"; exit 0; }
t_wait 120 eval '[ "$(rcli ping 2>/dev/null)" = PONG ]' ||
	{ notok $T "redis did not start: $(podman exec "$APP" cat /tmp/redis.log 2>&1 | tail -n 3)"; exit 0; }
rcli DEBUG POPULATE 100000 key 256 >/dev/null
lua="for i = 1, 2000 do redis.call('SET', 'hot:' .. i, string.rep(ARGV[1], 1024)) end"
podman exec -d "$APP" bash -c 'echo $$ >/tmp/writer.pid; exec redis-cli -s /tmp/redis.sock -r -1 -i 0.1 EVAL "$0" 0 x' \
	"$lua" >/dev/null || { notok $T "the writer did not start"; exit 0; }
hpid=$(podman exec "$APP" sh -c 'for p in /proc/[0-9]*; do [ "$(cat $p/comm)" = redis-server ] && echo ${p#/proc/}; done' | head -n 1)
echo "# redis-server: pid $hpid in the Pod; DBSIZE $(rcli DBSIZE)"

(cd "$tmp" && "$PY" -m grpc_tools.protoc -I "$OLDPWD/proto" --python_out=. --grpc_python_out=. \
	"$OLDPWD/proto/agent.proto") || { notok $T "grpc stubs"; exit 0; }
"$PY" - "/proc/$apid/root/run/memlens/agent.sock" "$hpid" "$tp" "$tmp" "$APP" <<'EOF'
import subprocess, sys, time
sys.path.insert(0, sys.argv[4])
import grpc, agent_pb2 as pb, agent_pb2_grpc as rpc
sock, rpid, tp, app = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[5]
T = "agent_pod_migrate"
MiB = 1 << 20
def sh(cmd):
    return subprocess.run(["podman", "exec", app, "sh", "-c", cmd], capture_output=True,
                          text=True, timeout=120).stdout.strip()
def rcli(*args):
    return subprocess.run(["podman", "exec", app, "redis-cli", "-s", "/tmp/redis.sock"] + list(args),
                          capture_output=True, text=True, timeout=120).stdout.strip()
def socks():
    return int(sh("ls -l /proc/%d/fd 2>/dev/null | grep -c socket:" % rpid) or 0)
st = rpc.CRIUAgentStub(grpc.insecure_channel("unix:" + sock))
def call(step, fn, req):
    """a CRIU step: its answer, or None after a skip (CRIU/podman cannot) or not ok"""
    t = time.monotonic()
    try:
        r = fn(req, timeout=900)
    except grpc.RpcError as e:
        c, d = e.code(), (e.details() or "").replace("\n", " ")
        if c in (grpc.StatusCode.ABORTED, grpc.StatusCode.FAILED_PRECONDITION):
            print("skip - %s_%s: CRIU in the agent's container cannot do it here: %s: %s"
                  % (T, step, c.name, d))
        else:
            print("not ok - %s_%s\n#   %s: %s" % (T, step, c.name, d))
        return None
    print("# %s: %d ms in the agent's answer, %.1f s the call" % (step, getattr(r, "duration_ms", 0),
                                                              time.monotonic() - t))
    return r
try:
    r = st.StartProfiling(pb.StartProfilingRequest(interval_ms=300), timeout=120)
except grpc.RpcError as e:
    print("not ok - %s_start_profiling\n#   %s: %s" % (T, e.code(), e.details()))
    sys.exit(0)
if not r.success or r.pid != rpid:
    print("not ok - %s_start_profiling\n#   picked pid %d (redis-server is %d): %s" % (T, r.pid, rpid, r.error))
    sys.exit(0)
print("ok - %s_start_profiling (redis-server, pid %d in the Pod, %d VMAs)" % (T, r.pid, r.vma_count))
first = None
deadline = time.monotonic() + 300
while time.monotonic() < deadline:
    h = st.GetHotRegions(pb.GetHotRegionsRequest(), timeout=60)
    if first is None:
        first = time.time() - tp
    if h.hot_range_bytes >= MiB:
        break
    time.sleep(0.3)
else:
    print("not ok - %s_hot_regions\n#   %d bytes hot after 300 s" % (T, h.hot_range_bytes))
    sys.exit(0)
print("ok - %s_hot_regions (%.1f MiB of redis hot in %d ranges)" % (T, h.hot_range_bytes / MiB, len(h.hot_ranges)))
print("# pod start to the first GetHotRegions answer: %.1f s (kube play in the guest, TCG)" % first)

parent = ""
for i in (1, 2):
    r = call("pre_checkpoint_%d" % i, st.PreCheckpoint,
             pb.PreCheckpointRequest(images_dir="pre%d" % i, parent_dir=parent))
    if r is None:
        sys.exit(0)
    print("ok - %s_pre_checkpoint_%d (%d pages written, %d ranges left out)"
          % (T, i, r.pages_written, len(r.excluded)))
    parent = "pre%d" % i
# the writer stopped; the digest; its connection closed before the dump
n0 = socks()
sh("kill $(cat /tmp/writer.pid)")
d1 = rcli("DEBUG", "DIGEST")
end = time.monotonic() + 60
while socks() > n0 - 1 and time.monotonic() < end:
    time.sleep(0.5)
print("# redis: %s keys, DEBUG DIGEST %s before the final dump" % (rcli("DBSIZE"), d1))
r = call("final_dump", st.FinalDump, pb.FinalDumpRequest(images_dir="final", parent_dir=parent))
if r is None:
    sys.exit(0)
print("ok - %s_final_dump (%d pages written, %d ranges left out, images %d bytes)"
      % (T, r.pages_written, len(r.excluded), r.image_bytes))
gone = not sh("[ -d /proc/%d ] && echo alive" % rpid)
r = call("restore", st.Restore, pb.RestoreRequest(images_dir="final"))
if r is None:
    sys.exit(0)
d2 = rcli("DEBUG", "DIGEST")
print("# restored redis-server: pid %d; DEBUG DIGEST %s" % (r.pid, d2))
if gone and d1 and d1 == d2 and r.pid == rpid:
    print("ok - %s_restore_data (digest equal before the final dump and after the restore)" % T)
else:
    print("not ok - %s_restore_data\n#   the dumped redis gone: %s; digest %s before, %s after; pid %d, was %d"
          % (T, gone, d1, d2, r.pid, rpid))
EOF
# a failed restore: what CRIU said before its last words (what it ran said)
rlog=/proc/$apid/root/var/lib/memlens/images/final/restore.log
if grep -q "Restoring FAILED" "$rlog" 2>/dev/null; then
	grep -E "Error|tar:|Warn" "$rlog" | tail -n 12 | sed 's/^/# restore.log: /'
fi
echo "# the case: $((SECONDS - t0)) s from the images' import"
podman logs "$AGENT" 2>&1 | tail -n 5 | sed 's/^/# agent: /'
exit 0
