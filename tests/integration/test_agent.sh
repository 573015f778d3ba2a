#!/bin/bash
# memlens agent with a real gRPC client: Debian's /usr/bin/python3 with
# python3-grpcio; stubs are generated from proto/agent.proto at test time.
# Prints "ok - NAME" / "not ok - NAME" / "skip - NAME: reason" lines.
set -u
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
export MEMLENS=${MEMLENS:-$PWD/$BUILD/memlens} WORKLOADS=${WORKLOADS:-$PWD/$BUILD/workloads}
PY=/usr/bin/python3

if ! "$MEMLENS" agent --help >/dev/null 2>&1; then
	echo "skip - agent: $MEMLENS has no agent command (build deps missing: scripts/packages/agent.txt)"
	exit 0
fi
if ! $PY -c 'import grpc, grpc_tools, google.protobuf' 2>/dev/null; then
	echo "skip - agent: $PY lacks grpcio/grpc_tools/protobuf (install python3-grpcio python3-grpc-tools python3-protobuf)"
	exit 0
fi
exec $PY tests/agent/agent_test.py "$@"
