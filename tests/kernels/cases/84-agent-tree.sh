#!/bin/bash
# The agent's PreCheckpoint of a process tree (tests/agent/agent_test.py
# test_checkpoint_tree_pids, a real gRPC client): every excluded range
# names its process, with CRIU 4.1.1 with memlens's patches (each process's
# own ranges, page by page). Pre-dumps need soft-dirty (the 6.12 guest).
cd "$(dirname "$0")/../../.." || exit 1
. tests/kernels/cases/needs_write_tracking.bash agent
. tests/kernels/cases/criu_lib.bash
WHICH=page

agent_tree() {
	local name=$1 path=$2
	MEMLENS_CRIU=$path MEMLENS="$MEMLENS" WORKLOADS="$WORKLOADS" \
		"$PY" tests/agent/agent_test.py test_checkpoint_tree_pids >"$tmp/$name.out" 2>&1
	sed "s/test_checkpoint_tree_pids/agent_tree_pids_$name/" "$tmp/$name.out" | grep -E '^(ok|not ok|skip) - |^#'
}

for_criu agent_tree_pids agent_tree "this kernel has no soft-dirty tracking (pre-dumps need it)"
exit 0
