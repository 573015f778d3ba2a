# Sourced by 87-agent.sh and 88-agent.sh, WHICH=fork|upstream: the agent's
# Migrate RPC (tests/agent/agent_test.py test_migrate, a real gRPC client):
# to a directory on this machine, and from one network namespace to a
# `memlens migrate --receive` in another (two hosts joined by a veth pair).
. tests/kernels/cases/criu_lib.bash

ns_a=mlagA$$ ns_b=mlagB$$
trap 'cleanup; ip netns del $ns_a 2>/dev/null; ip netns del $ns_b 2>/dev/null' EXIT

agent_migrate() {
	local name=$1 path=$2
	MEMLENS_CRIU=$path MEMLENS="$MEMLENS" WORKLOADS="$WORKLOADS" MEMLENS_TEST_NETNS="$NETNS" \
		"$PY" tests/agent/agent_test.py test_migrate >"$tmp/$name.out" 2>&1
	sed "s/test_migrate/agent_migrate_$name/" "$tmp/$name.out" | grep -E '^(ok|not ok|skip) - |^#'
}

NETNS="$ns_a $ns_b 10.214.0.2"
if ! netns_up "$ns_a" "$ns_b" 10.214.0.1 10.214.0.2 2>"$tmp/ns.err"; then
	echo "# no second network namespace (only the local destination): $(cat "$tmp/ns.err")"
	NETNS=
fi
for_criu agent_migrate agent_migrate "this kernel has no soft-dirty tracking (pre-copy needs it)"
