#!/bin/bash
# The agent's pre-dump chain with the CRIU fork that has the exclude options
# (tests/kernels/cases/agent_chain.bash).
set -u
cd "$(dirname "$0")/../../.." || exit 1
WHICH=fork
. tests/kernels/cases/agent_chain.bash
exit 0
