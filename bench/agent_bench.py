#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""GetHotRegions latency (p50/p99) and calls/s over the agent's unix socket,
with 1 and 16 concurrent clients (each its own channel), Debian's grpcio."""
import os
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
tmp = tempfile.mkdtemp(prefix="memlens-agent-bench.")
subprocess.run([sys.executable, "-m", "grpc_tools.protoc", "-I", os.path.join(ROOT, "proto"),
                "--python_out=" + tmp, "--grpc_python_out=" + tmp,
                os.path.join(ROOT, "proto", "agent.proto")], check=True)
sys.path.insert(0, tmp)
import grpc  # noqa: E402
import agent_pb2 as pb  # noqa: E402
import agent_pb2_grpc as pbg  # noqa: E402

sock, calls = sys.argv[1], int(sys.argv[2])


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(len(v) * p))]


def client(n, lat, barrier):
    ch = grpc.insecure_channel("unix:" + sock)
    st = pbg.CRIUAgentStub(ch)
    req = pb.GetHotRegionsRequest()
    for _ in range(20):	# warm-up: connect
        st.GetHotRegions(req, timeout=10)
    barrier.wait()
    for _ in range(n):
        t = time.perf_counter()
        st.GetHotRegions(req, timeout=10)
        lat.append(time.perf_counter() - t)
    ch.close()


for nclients in (1, 16):
    lats = [[] for _ in range(nclients)]
    barrier = threading.Barrier(nclients + 1)
    threads = [threading.Thread(target=client, args=(calls // nclients if nclients > 1 else calls,
                                                     lats[i], barrier)) for i in range(nclients)]
    for t in threads:
        t.start()
    barrier.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    all_l = [x for l in lats for x in l]
    print("GetHotRegions, %2d client(s): %5d calls  p50 %7.1f us  p99 %7.1f us  %7.0f calls/s"
          % (nclients, len(all_l), pct(all_l, 0.5) * 1e6, pct(all_l, 0.99) * 1e6, len(all_l) / wall))

