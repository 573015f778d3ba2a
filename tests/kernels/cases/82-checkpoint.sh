#!/bin/bash
# Pre-dump chains through `memlens checkpoint` with upstream CRIU 4.1.1
# (tests/kernels/cases/checkpoint_chain.bash).
cd "$(dirname "$0")/../../.." || exit 1
. tests/kernels/cases/needs_write_tracking.bash checkpoint
WHICH=upstream
. tests/kernels/cases/checkpoint_chain.bash
exit 0
