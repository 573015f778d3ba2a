#!/bin/bash
# The agent's pre-dump chain (tests/agent/agent_test.py test_checkpoint_chain,
# a real gRPC client) with the CRIU fork that has the exclude options and
# with upstream CRIU 4.1.1.
set -u
cd "$(dirname "$0")/../../.." || exit 1
. tests/kernels/cases/criu_lib.bash

for c in "${CRIUS[@]}"; do
	name=${c%%=*} path=${c#*=}
	MEMLENS_CRIU=$path MEMLENS="$MEMLENS" WORKLOADS="$WORKLOADS" \
		"$PY" tests/agent/agent_test.py test_checkpoint_chain >"$tmp/$name.out" 2>&1
	sed "s/test_checkpoint_chain/agent_chain_$name/" "$tmp/$name.out" | grep -E '^(ok|not ok|skip) - |^#'
done
[ -n "$FORK_MISSING" ] && skip agent_chain_fork "$FORK_MISSING"
exit 0
