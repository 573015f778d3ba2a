#!/bin/bash
# The agent's pre-dump chain with the CRIU fork that has the exclude options
# (tests/kernels/cases/agent_chain.bash).
cd "$(dirname "$0")/../../.." || exit 1
. tests/kernels/cases/needs_write_tracking.bash agent
WHICH=fork
. tests/kernels/cases/agent_chain.bash
exit 0
