#!/bin/bash
# The agent's pre-dump chain with upstream CRIU 4.1.1
# (tests/kernels/cases/agent_chain.bash).
set -u
cd "$(dirname "$0")/../../.." || exit 1
WHICH=upstream
. tests/kernels/cases/agent_chain.bash
exit 0
