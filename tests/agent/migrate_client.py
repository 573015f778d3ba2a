#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""
A gRPC client of `memlens agent`'s Migrate, for the guest cases:

    migrate_client.py SOCKET FIELD=VALUE...

calls Migrate on the agent listening on the unix socket SOCKET with a
MigrateRequest of those fields (proto/agent.proto; numbers and booleans
converted by the field's type) and prints the answer as one JSON object:
the MigrateResponse's fields (every one, zeros included), or {"error":
MESSAGE, "code": STATUS}. Exit status 0 when Migrate succeeded, 1 when it
answered an error. Stubs are generated from proto/agent.proto, as
agent_test.py does.
"""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TMP = tempfile.mkdtemp(prefix="memlens-migrate-client.")
subprocess.run([sys.executable, "-m", "grpc_tools.protoc", "-I", os.path.join(ROOT, "proto"),
                "--python_out=" + TMP, "--grpc_python_out=" + TMP,
                os.path.join(ROOT, "proto", "agent.proto")], check=True)
sys.path.insert(0, TMP)
import grpc  # noqa: E402
import agent_pb2 as pb  # noqa: E402
import agent_pb2_grpc as pbg  # noqa: E402
from google.protobuf.descriptor import FieldDescriptor as FD  # noqa: E402


def convert(field, value):
    if field.cpp_type == FD.CPPTYPE_BOOL:
        return value.lower() in ("1", "true", "yes")
    if field.cpp_type in (FD.CPPTYPE_INT32, FD.CPPTYPE_INT64, FD.CPPTYPE_UINT32,
                          FD.CPPTYPE_UINT64):
        return int(value)
    if field.cpp_type in (FD.CPPTYPE_DOUBLE, FD.CPPTYPE_FLOAT):
        return float(value)
    return value


def as_dict(msg):
    out = {}
    for f in msg.DESCRIPTOR.fields:
        v = getattr(msg, f.name)
        if f.label == FD.LABEL_REPEATED:
            out[f.name] = [as_dict(x) if f.message_type else x for x in v]
        elif f.message_type:
            out[f.name] = as_dict(v)
        else:
            out[f.name] = v
    return out


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    fields = pb.MigrateRequest.DESCRIPTOR.fields_by_name
    req = {}
    for arg in sys.argv[2:]:
        name, _, value = arg.partition("=")
        if name not in fields:
            print("no field %r in MigrateRequest" % name, file=sys.stderr)
            return 2
        req[name] = convert(fields[name], value)
    ch = grpc.insecure_channel("unix:" + sys.argv[1])
    try:
        r = pbg.CRIUAgentStub(ch).Migrate(pb.MigrateRequest(**req), timeout=3600)
    except grpc.RpcError as e:
        print(json.dumps({"error": e.details(), "code": e.code().name}))
        return 1
    finally:
        ch.close()
    print(json.dumps(as_dict(r)))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    finally:
        subprocess.run(["rm", "-rf", TMP])
