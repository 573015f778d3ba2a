#!/bin/bash
# The shipped Pod (deploy/kubernetes/memlens-agent-sidecar.yaml) under
# podman kube play, with the image make image builds: its application
# container runs workloads/memwrite (the build's workloads mounted from the
# host) and its controller container the same image idle, all else as
# shipped (the agent's command, capabilities, read-only root, the socket
# volume and its init container, the seccomp profile that lets the agent
# inject userfaultfd into the application, made by
# deploy/podman/seccomp-userfaultfd.py); the agent's --comm names memwrite,
# which it finds through the shared PID namespace, and a real
# gRPC client (python3-grpcio) drives StartProfiling then GetHotRegions
# until memwrite's buffer is hot; the time from pod start to that answer is
# printed. The metrics endpoint is then read from inside the pod (the app's
# container, bash's /dev/tcp: target_pid is memwrite's, profiling 1), and
# PreCheckpoint, FinalDump and Restore must be refused (FAILED_PRECONDITION:
# the sidecar has no CAP_SYS_ADMIN, which CRIU needs) with memwrite left
# running, the same pid, the MiB it wrote once unchanged. From the node,
# `memlens migrate --container` of the application's container is refused
# before CRIU runs: it shares the pod's PID namespace, which CRIU can dump
# only from its init (the pod's infra process). Skipped where podman is
# missing.
#
# APP=redis (tests/integration/test_pod_redis.sh): the application
# container is Debian's redis-server instead, in its own image made from
# Debian's packages (scripts/app-image.sh, localhost/memlens-app-redis), the
# agent's --comm names redis-server; 100000 keys are loaded (DEBUG POPULATE)
# and a writer in the same container (redis-cli repeating a Lua script that
# rewrites 2000 keys of 1 KiB every 100 ms) keeps them hot until
# GetHotRegions reports at least 1 MiB of hot pages in redis; the writer is
# then stopped, and redis's DEBUG DIGEST must be the same after the refused
# checkpoint calls as before them.
set -u
. "$(dirname "$0")/../lib.bash"
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
W=${WORKLOADS:-$PWD/$BUILD/workloads}
PY=/usr/bin/python3
APP=${APP:-memwrite}
POD=app-with-memlens-agent
YAML=deploy/kubernetes/memlens-agent-sidecar.yaml

for tool in podman mmdebstrap runc catatonit; do
	if ! command -v "$tool" >/dev/null && [ ! -x "/usr/libexec/podman/$tool" ]; then
		skip pod "$tool is not installed (scripts/packages/optional/image.txt; make test installs it)"
		exit 0
	fi
done
if ! $PY -c 'import grpc, grpc_tools, google.protobuf, yaml' 2>/dev/null; then
	skip pod "$PY lacks grpcio/grpc_tools/protobuf/yaml (scripts/packages/agent.txt, optional/image.txt)"
	exit 0
fi
[ "$(id -u)" -eq 0 ] || { skip pod "podman kube play of the Pod needs root"; exit 0; }
case $APP in
memwrite) [ -x "$W/memwrite" ] || { notok pod "no $W/memwrite: build the workloads (make)"; exit 1; } ;;
redis) ;;
*) notok pod "APP=$APP: memwrite or redis"; exit 1 ;;
esac
t_tmpdir pod-test
export CONTAINERS_CONF=${CONTAINERS_CONF:-$PWD/deploy/podman/containers.conf}

if ! make --no-print-directory image BUILD="$BUILD" >"$tmp/image.log" 2>&1; then
	notok make_image "$(tail -n 8 "$tmp/image.log")"
	exit 1
fi
image=$(sed -n 's/^ *image: \(localhost\/memlens:[^ ]*\).*/\1/p' "$YAML" | sort -u)
check manifest_names_the_built_image '[ "$image" = "localhost/memlens:$(sed -n "s/^VERSION *:= *//p" Makefile)" ]' \
	"the manifest's memlens image: $image"
appimage=$image
if [ "$APP" = redis ]; then
	appimage=$(scripts/app-image.sh 2>"$tmp/app-image.log" | tail -n 1)
	[ -n "$appimage" ] || { notok app_image "$(tail -n 8 "$tmp/app-image.log")"; exit 1; }
	ok "app_image ($(tail -n 1 "$tmp/app-image.log" | sed 's/^app-image: //'))"
fi

# the seccomp profile the manifest names, in a profile root of our own
mkdir -p "$tmp/seccomp"
profile=$(sed -n 's|.*seccomp.security.alpha.kubernetes.io/app: localhost/||p' "$YAML")
deploy/podman/seccomp-userfaultfd.py "$tmp/seccomp/$profile" || { notok seccomp_profile; exit 1; }

# the manifest, its example application and controller replaced
$PY - "$YAML" "$tmp/pod.yaml" "$image" "$W" "$APP" "$appimage" <<'EOF' || { notok pod_yaml; exit 1; }
import sys, yaml
src, dst, image, workloads, app, appimage = sys.argv[1:7]
comm = {"memwrite": "memwrite", "redis": "redis-server"}[app]
docs = list(yaml.safe_load_all(open(src)))
pod = next(d for d in docs if d["kind"] == "Pod")
for c in pod["spec"]["containers"]:
    if c["name"] == "app" and app == "redis":
        # Debian's redis-server, on the loopback the pod shares, nothing
        # saved; DEBUG (POPULATE, DIGEST) from inside the pod only
        c["image"] = appimage
        c["command"] = ["redis-server", "--bind", "127.0.0.1", "--port", "6379", "--save", "",
                        "--appendonly", "no", "--dir", "/tmp", "--enable-debug-command", "local"]
    elif c["name"] == "app":
        c["image"] = image
        # a 4 MiB buffer rewritten in a loop: every page of it written in
        # each profiling interval even on a loaded machine
        # (and 1 MiB written once, bytes of 1, never again: the data
        # checked at the end)
        c["command"] = ["/opt/workloads/memwrite", "-m", "4", "-s", "600", "-Z", "1"]
        c.setdefault("volumeMounts", []).append(
            {"name": "workloads", "mountPath": "/opt/workloads", "readOnly": True})
    elif c["name"] == "memlens-agent":
        c["command"] = [a if not a.startswith("--comm=") else "--comm=" + comm for a in c["command"]]
    elif c["name"] == "controller":
        c["image"] = image
        c["command"] = ["sleep", "infinity"]
# podman 4.3 removes a "once" init container as soon as it exits and, on a
# loaded machine, may find it still running and fail kube play: "always"
# keeps it (it runs at each start of the pod, as chmod may)
pod["metadata"].setdefault("annotations", {})["io.podman.annotations.init.container.type"] = "always"
if app == "memwrite":
    pod["spec"]["volumes"].append(
        {"name": "workloads", "hostPath": {"path": workloads, "type": "Directory"}})
yaml.safe_dump(pod, open(dst, "w"))
EOF

podman pod rm -f "$POD" >/dev/null 2>&1
t_at_exit "podman kube down '$tmp/pod.yaml' >/dev/null 2>&1; podman pod rm -f '$POD' >/dev/null 2>&1"
t0=$EPOCHREALTIME
if ! podman kube play --seccomp-profile-root "$tmp/seccomp" "$tmp/pod.yaml" >"$tmp/play.log" 2>&1; then
	notok kube_play "$(tail -n 6 "$tmp/play.log")"
	exit 1
fi
ok "kube_play (the shipped Pod with localhost/memlens)"

agent_ready() {
	local pid
	pid=$(podman inspect --format '{{.State.Pid}}' "$POD-memlens-agent" 2>/dev/null) &&
		[ "${pid:-0}" -gt 0 ] && [ -S "/proc/$pid/root/run/memlens/agent.sock" ]
}
if ! t_wait 120 agent_ready; then
	notok agent_serving "$(podman logs "$POD-memlens-agent" 2>&1 | tail -n 5)"
	exit 1
fi
apid=$(podman inspect --format '{{.State.Pid}}' "$POD-memlens-agent")
mode=$(stat -c %a "/proc/$apid/root/run/memlens")
check socket_dir_closed '[ "$mode" = 750 ]' "/run/memlens is $mode (the init container makes it 0750)"
if [ "$APP" = memwrite ]; then
comm=memwrite
memwrite_pid() { podman logs "$POD-app" 2>&1 | sed -n 's/^memwrite pid \([0-9]*\) writes.*/\1/p'; }
memwrite_started() { [ -n "$(memwrite_pid)" ]; }
t_wait 60 memwrite_started || { notok memwrite_started "$(podman logs "$POD-app" 2>&1 | tail -n 3)"; exit 1; }
wpid=$(memwrite_pid)
wrange=$(podman logs "$POD-app" 2>&1 | sed -n 's/^memwrite pid [0-9]* writes \(0x[0-9a-f]*-0x[0-9a-f]*\).*/\1/p')
srange=$(podman logs "$POD-app" 2>&1 | sed -n 's/^memwrite: still \(0x[0-9a-f]*-0x[0-9a-f]*\).*/\1/p')
hpid=$(podman inspect --format '{{.State.Pid}}' "$POD-app")
# still_intact: memwrite's once-written MiB still holds only bytes of 1
still_intact() {
	$PY - "$hpid" "$srange" <<'EOF'
import sys
pid, (lo, hi) = sys.argv[1], (int(a, 16) for a in sys.argv[2].split("-"))
with open("/proc/%s/mem" % pid, "rb") as f:
    f.seek(lo)
    b = f.read(hi - lo)
sys.exit(0 if len(b) == hi - lo and b.count(1) == len(b) else 1)
EOF
}
check memwrite_data_written still_intact "memwrite's still range $srange (host pid $hpid) is not all ones"
intact_what() { echo "memwrite's still range $srange changed"; }
else
comm=redis-server
rcli() { timeout 60 podman exec "$POD-app" redis-cli "$@"; }
redis_up() {
	hpid=$(podman inspect --format '{{.State.Pid}}' "$POD-app" 2>/dev/null) &&
		[ "${hpid:-0}" -gt 0 ] && [ "$(rcli ping 2>/dev/null)" = PONG ]
}
t_wait 60 redis_up || { notok redis_started "$(podman logs "$POD-app" 2>&1 | tail -n 3)"; exit 1; }
# redis's pid in the pod's PID namespace, which the agent sees
wpid=$(awk '/^NSpid:/ { print $NF }' "/proc/$hpid/status")
wrange=
rcli DEBUG POPULATE 100000 key 256 >/dev/null
# the writer: 2000 keys of 1 KiB rewritten every 100 ms, in the app's
# container (its pid kept to stop it)
lua="for i = 1, 2000 do redis.call('SET', 'hot:' .. i, string.rep(ARGV[1], 1024)) end"
podman exec -d "$POD-app" bash -c 'echo $$ >/tmp/writer.pid; exec redis-cli -r -1 -i 0.1 EVAL "$0" 0 x' \
	"$lua" >/dev/null || { notok redis_writer; exit 1; }
check redis_loaded '[ "$(rcli DBSIZE)" -ge 100000 ]' "DBSIZE $(rcli DBSIZE)"
# still_intact: the digest the Python client took once the writer stopped
still_intact() { [ -s "$tmp/digest" ] && [ "$(rcli DEBUG DIGEST)" = "$(cat "$tmp/digest")" ]; }
intact_what() { echo "redis's DEBUG DIGEST $(cat "$tmp/digest" 2>/dev/null) before, $(rcli DEBUG DIGEST) after"; }
fi

(cd "$tmp" && $PY -m grpc_tools.protoc -I "$OLDPWD/proto" --python_out=. --grpc_python_out=. \
	"$OLDPWD/proto/agent.proto") || { notok grpc_stubs; exit 1; }
$PY - "/proc/$apid/root/run/memlens/agent.sock" "$wpid" "$t0" "$tmp" "$wrange" "$POD-app" "$comm" <<'EOF'
import subprocess, sys, time
sys.path.insert(0, sys.argv[4])
import grpc, agent_pb2 as pb, agent_pb2_grpc as rpc
sock, wpid, t0, app, comm = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[6], sys.argv[7]
lo, hi = (int(a, 16) for a in sys.argv[5].split("-")) if sys.argv[5] else (0, 0)
MiB = 1 << 20
def rcli(*args):
    return subprocess.run(["podman", "exec", app, "redis-cli"] + list(args), capture_output=True,
                          text=True, timeout=60).stdout.strip()
st = rpc.CRIUAgentStub(grpc.insecure_channel("unix:" + sock))
try:
    r = st.StartProfiling(pb.StartProfilingRequest(interval_ms=200), timeout=60)
except grpc.RpcError as e:
    print("not ok - start_profiling\n#   %s: %s" % (e.code(), e.details()))
    sys.exit(1)
if not r.success or str(r.pid) != wpid:
    print("not ok - start_profiling\n#   picked pid %d (%s is %s): %s" % (r.pid, comm, wpid, r.error))
    sys.exit(1)
print("ok - start_profiling (the agent found %s, pid %d in the pod, %d VMAs)" % (comm, r.pid, r.vma_count))
first = None
deadline = time.monotonic() + 120
while time.monotonic() < deadline:
    h = st.GetHotRegions(pb.GetHotRegionsRequest(), timeout=10)
    if first is None:
        first = time.time() - t0
    if not lo:
        # redis: the writer's keys, at least 1 MiB of hot pages
        if h.hot_range_bytes >= MiB:
            print("ok - hot_regions (redis: %.1f MiB hot in %d ranges, %d of %d VMAs hot)"
                  % (h.hot_range_bytes / MiB, len(h.hot_ranges), h.hot_vmas, h.total_vmas))
            break
        time.sleep(0.2)
        continue
    big = [x for x in h.regions if x.start_addr <= lo and x.end_addr >= hi]
    if big:
        print("ok - hot_regions (memwrite's buffer hot: %#x-%#x, written ratio %.2f)"
              % (big[0].start_addr, big[0].end_addr, big[0].written_ratio))
        break
    time.sleep(0.2)
else:
    if not lo:
        print("not ok - hot_regions\n#   redis: %d bytes hot after 120 s (%d VMAs hot)"
              % (h.hot_range_bytes, h.hot_vmas))
        sys.exit(1)
    print("not ok - hot_regions\n#   memwrite's buffer %s not hot in 120 s: %s"
          % (sys.argv[5], [(hex(x.start_addr), hex(x.end_addr), round(x.written_ratio, 2)) for x in h.regions]))
    sys.exit(1)
print("# pod start to the first GetHotRegions answer: %.1f s (kube play, image on this host)" % first)
failed = 0
if not lo:
    # the writer stopped, redis's data as it is now: the same at the end
    subprocess.run(["podman", "exec", app, "bash", "-c", "kill $(cat /tmp/writer.pid)"],
                   timeout=60)
    time.sleep(0.5)
    d = rcli("DEBUG", "DIGEST")
    open(sys.argv[4] + "/digest", "w").write(d)
    print("# redis: %s keys, DEBUG DIGEST %s" % (rcli("DBSIZE"), d))

# the metrics endpoint, from inside the pod: the application's container
# (the image has no curl: bash's /dev/tcp) to the agent's port on the
# pod's loopback
get = ("exec 3<>/dev/tcp/127.0.0.1/9464 && "
       "printf 'GET /metrics HTTP/1.0\\r\\nHost: localhost\\r\\n\\r\\n' >&3 && cat <&3")
m = subprocess.run(["podman", "exec", app, "bash", "-c", get], capture_output=True, text=True,
                   timeout=60)
vals = {}
for line in m.stdout.splitlines():
    w = line.split()
    if len(w) == 2 and not line.startswith("#"):
        vals[w[0]] = w[1]
if (m.returncode == 0 and " 200 " in m.stdout.split("\n", 1)[0]
        and vals.get("memlens_agent_target_pid") == wpid
        and vals.get("memlens_agent_profiling") == "1"):
    print("ok - metrics_in_pod (from the app's container: target_pid %s, profiling 1)" % wpid)
else:
    failed += 1
    print("not ok - metrics_in_pod\n#   exit %d, target_pid %s (%s is %s), profiling %s: %s"
          % (m.returncode, vals.get("memlens_agent_target_pid"), comm, wpid,
             vals.get("memlens_agent_profiling"), (m.stdout[:200] + m.stderr[-300:]).replace("\n", " ")))

# the checkpoint RPCs: the sidecar has no CAP_SYS_ADMIN, so the agent
# refuses them (CRIU not run) and names the node-side command
calls = [("PreCheckpoint", st.PreCheckpoint, pb.PreCheckpointRequest(images_dir="pod-pre")),
         ("FinalDump", st.FinalDump,
          pb.FinalDumpRequest(images_dir="pod-final", parent_dir="pod-pre")),
         ("Restore", st.Restore, pb.RestoreRequest(images_dir="pod-final"))]
for name, call, req in calls:
    try:
        r = call(req, timeout=120)
        why = "answered OK: %s" % str(r).replace("\n", " ")
    except grpc.RpcError as e:
        d = e.details() or ""
        if (e.code() == grpc.StatusCode.FAILED_PRECONDITION and "CAP_SYS_ADMIN" in d
                and "memlens migrate --container" in d):
            print("ok - %s_refused (FAILED_PRECONDITION, naming CAP_SYS_ADMIN and "
                  "memlens migrate --container)" % name.lower())
            continue
        why = "%s: %s" % (e.code(), d)
    failed += 1
    print("not ok - %s_refused\n#   %s" % (name.lower(), why))
st.StopProfiling(pb.StopProfilingRequest(), timeout=10)
sys.exit(1 if failed else 0)
EOF
[ $? = 0 ] || podman exec "$POD-memlens-agent" sh -c 'for p in /proc/[0-9]*; do
	echo "#   pid ${p#/proc/} $(cat $p/comm) start $(cut -d" " -f22 $p/stat) $(grep Seccomp: $p/status)"
	done' 2>/dev/null
# from the node: memlens migrate --container of the application alone is
# refused before CRIU runs, since it shares the pod's PID namespace (CRIU
# dumps one only from its init, the pod's infra process)
MEMLENS=${MEMLENS:-$PWD/$BUILD/memlens}
"$MEMLENS" migrate --container "$POD-app" --to "$tmp/node-dest" -D "$tmp/node-src" \
	>"$tmp/node.out" 2>"$tmp/node.err"
rc=$?
check node_migrate_refused '[ $rc = 1 ] && grep -q "shares its PID namespace" "$tmp/node.err" &&
	[ ! -e "$tmp/node-src/1" ]' "exit $rc: $(tail -n 3 "$tmp/node.err")"
# the application unharmed: the same process, running, its data as written
check app_running_same_pid '[ "$(podman inspect --format "{{.State.Running}} {{.State.Pid}}" "$POD-app")" = "true $hpid" ] &&
	[ "$(cat /proc/$hpid/comm 2>/dev/null)" = $comm ]' \
	"app: $(podman inspect --format "{{.State.Status}} {{.State.Pid}}" "$POD-app" 2>&1), $comm was host pid $hpid"
check app_data_intact still_intact "$(intact_what)"
check agent_log_clean '! podman logs "$POD-memlens-agent" 2>&1 | grep -qiE "error|failed"' \
	"$(podman logs "$POD-memlens-agent" 2>&1 | tail -n 5)"
t_done
