#!/bin/bash
# The agent's Migrate RPC with upstream CRIU 4.1.1
# (tests/kernels/cases/agent_migrate.bash).
set -u
cd "$(dirname "$0")/../../.." || exit 1
WHICH=upstream
. tests/kernels/cases/agent_migrate.bash
exit 0
