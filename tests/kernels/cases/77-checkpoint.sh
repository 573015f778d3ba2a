#!/bin/bash
# Pre-dump chains through `memlens checkpoint` with CRIU 4.1.1 and memlens's
# patches (criu/patches/): hot memory left out page by page
# (tests/kernels/cases/checkpoint_chain.bash).
cd "$(dirname "$0")/../../.." || exit 1
. tests/kernels/cases/needs_write_tracking.bash checkpoint
WHICH=page
. tests/kernels/cases/checkpoint_chain.bash
exit 0
