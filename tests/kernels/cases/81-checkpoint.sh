#!/bin/bash
# Pre-dump chains through `memlens checkpoint` with the CRIU fork that has
# the exclude options (tests/kernels/cases/checkpoint_chain.bash).
cd "$(dirname "$0")/../../.." || exit 1
. tests/kernels/cases/needs_write_tracking.bash checkpoint
WHICH=fork
. tests/kernels/cases/checkpoint_chain.bash
exit 0
