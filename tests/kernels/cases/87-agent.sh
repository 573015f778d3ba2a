#!/bin/bash
# The agent's Migrate RPC with the CRIU fork that has the exclude options
# (tests/kernels/cases/agent_migrate.bash).
cd "$(dirname "$0")/../../.." || exit 1
# (before Linux 6.7 the Migrate RPC still runs with upstream CRIU, without
# exclusion: the next case)
. tests/kernels/cases/needs_write_tracking.bash agent
WHICH=fork
. tests/kernels/cases/agent_migrate.bash
exit 0
