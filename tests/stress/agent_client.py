#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""
The gRPC client of the stress driver's agent cases (a real client: Debian's
python3-grpcio, stubs generated from proto/agent.proto at start). It reads
one command a line on stdin and answers one line on stdout:

  start SOCK INTERVAL_MS       StartProfiling -> "ok MS VMAS" | "err CODE DETAILS"
  stop SOCK                    StopProfiling  -> "ok" | "err CODE DETAILS"
  status SOCK                  GetStatus      -> "ok PROFILING INTERVALS LAST_ERROR"
  killstart SOCK PID DELAY_US  StartProfiling; DELAY_US after it was sent,
                               SIGKILL to PID (the agent) -> "ok OUTCOME"
"ready" once the stubs are loaded; "fatal WHY" (and exit) if they cannot be.
"""
import os
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main():
    tmp = tempfile.mkdtemp(prefix="memlens-stress-grpc.")
    try:
        subprocess.run([sys.executable, "-m", "grpc_tools.protoc", "-I",
                        os.path.join(ROOT, "proto"), "--python_out=" + tmp,
                        "--grpc_python_out=" + tmp, os.path.join(ROOT, "proto", "agent.proto")],
                       check=True, capture_output=True)
        sys.path.insert(0, tmp)
        import grpc
        import agent_pb2 as pb
        import agent_pb2_grpc as pbg
    except Exception as e:  # no grpcio, no grpc_tools: the driver skips and says why
        print("fatal cannot load the gRPC stubs: %s" % e, flush=True)
        return 1

    def stub(sock):
        ch = grpc.insecure_channel("unix:" + sock)
        return ch, pbg.CRIUAgentStub(ch)

    def err(e):
        return "err %s %s" % (e.code().name, (e.details() or "").replace("\n", " "))

    print("ready", flush=True)
    for line in sys.stdin:
        a = line.split()
        if not a:
            continue
        ch = None
        try:
            ch, st = stub(a[1])
            if a[0] == "start":
                t0 = time.monotonic()
                r = st.StartProfiling(pb.StartProfilingRequest(interval_ms=int(a[2])),
                                      timeout=20)
                out = "ok %.1f %d" % ((time.monotonic() - t0) * 1000, r.vma_count)
            elif a[0] == "stop":
                st.StopProfiling(pb.StopProfilingRequest(), timeout=20)
                out = "ok"
            elif a[0] == "status":
                r = st.GetStatus(pb.GetStatusRequest(), timeout=20)
                out = "ok %d %d %s" % (r.profiling, r.intervals,
                                       (r.last_error or "-").replace("\n", " "))
            elif a[0] == "killstart":
                # connect first, so that the delay is measured from the call
                grpc.channel_ready_future(ch).result(timeout=10)
                fut = st.StartProfiling.future(pb.StartProfilingRequest(interval_ms=10),
                                               timeout=20)
                time.sleep(int(a[3]) / 1e6)
                os.kill(int(a[2]), signal.SIGKILL)
                try:
                    fut.result()
                    out = "ok answered"
                except grpc.RpcError as e:
                    out = "ok " + e.code().name
            else:
                out = "err UNKNOWN_COMMAND " + a[0]
        except grpc.RpcError as e:
            out = err(e)
        except Exception as e:
            out = "err EXCEPTION %s" % str(e).replace("\n", " ")
        finally:
            if ch is not None:
                ch.close()
        print(out, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
