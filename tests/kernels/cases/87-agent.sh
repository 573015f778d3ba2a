#!/bin/bash
# The agent's Migrate RPC with the CRIU fork that has the exclude options
# (tests/kernels/cases/agent_migrate.bash).
set -u
cd "$(dirname "$0")/../../.." || exit 1
WHICH=fork
. tests/kernels/cases/agent_migrate.bash
exit 0
