# Sourced by 63-agent.sh and 64-agent.sh, WHICH=fork|upstream: the agent's
# pre-dump chain (tests/agent/agent_test.py test_checkpoint_chain, a real
# gRPC client).
. tests/kernels/cases/criu_lib.bash

agent_chain() {
	local name=$1 path=$2
	MEMLENS_CRIU=$path MEMLENS="$MEMLENS" WORKLOADS="$WORKLOADS" \
		"$PY" tests/agent/agent_test.py test_checkpoint_chain >"$tmp/$name.out" 2>&1
	sed "s/test_checkpoint_chain/agent_chain_$name/" "$tmp/$name.out" | grep -E '^(ok|not ok|skip) - |^#'
}

for_criu agent_chain agent_chain ""
