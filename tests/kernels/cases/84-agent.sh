#!/bin/bash
# The agent's pre-dump chain with upstream CRIU 4.1.1
# (tests/kernels/cases/agent_chain.bash).
cd "$(dirname "$0")/../../.." || exit 1
. tests/kernels/cases/needs_write_tracking.bash agent
WHICH=upstream
. tests/kernels/cases/agent_chain.bash
exit 0
