#!/bin/bash
# make bench, agent part: GetHotRegions p50/p99 latency and calls/s
# at 1 and 16 clients, over the unix socket, while the agent profiles a
# memwrite target every 100 ms (so the answer carries real hot regions).
# The client is Debian's python3-grpcio: its own cost is part of the numbers.
set -eu
M=${MEMLENS:?} W=${WORKLOADS:?}
PY=/usr/bin/python3
CALLS=${CALLS:-4000}
if ! "$M" agent --help >/dev/null 2>&1 || ! $PY -c 'import grpc, grpc_tools' 2>/dev/null; then
	echo "agent bench skipped: no agent command or no python3-grpcio/python3-grpc-tools"
	exit 0
fi
tmp=$(mktemp -d)
mw= ag=
cleanup() {
	[ -n "$ag" ] && kill "$ag" 2>/dev/null && wait "$ag" 2>/dev/null
	[ -n "$mw" ] && kill "$mw" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

"$W/memwrite" -m 64 >"$tmp/mw.out" &
mw=$!
"$M" agent --socket "$tmp/agent.sock" --pid "$mw" 2>"$tmp/agent.err" &
ag=$!
for _ in $(seq 200); do [ -S "$tmp/agent.sock" ] && break; sleep 0.05; done
$PY - "$tmp/agent.sock" <<'PYEOF'
import os, subprocess, sys, tempfile, time
root = os.getcwd()
d = tempfile.mkdtemp()
subprocess.run([sys.executable, "-m", "grpc_tools.protoc", "-I", root + "/proto", "--python_out=" + d,
                "--grpc_python_out=" + d, root + "/proto/agent.proto"], check=True)
sys.path.insert(0, d)
import grpc, agent_pb2 as pb, agent_pb2_grpc as pbg
st = pbg.CRIUAgentStub(grpc.insecure_channel("unix:" + sys.argv[1]))
r = st.StartProfiling(pb.StartProfilingRequest(interval_ms=100, hot_consecutive=2), timeout=10)
for _ in range(100):
    h = st.GetHotRegions(pb.GetHotRegionsRequest(), timeout=10)
    if h.hot_vmas:
        break
    time.sleep(0.1)
print("target: memwrite 64 MiB, pid %d, %d writable VMAs, %d hot" % (r.pid, r.vma_count, h.hot_vmas))
PYEOF
$PY bench/agent_bench.py "$tmp/agent.sock" "$CALLS"
