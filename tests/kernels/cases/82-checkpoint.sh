#!/bin/bash
# Pre-dump chains through `memlens checkpoint` with upstream CRIU 4.1.1
# (tests/kernels/cases/checkpoint_chain.bash).
set -u
cd "$(dirname "$0")/../../.." || exit 1
WHICH=upstream
. tests/kernels/cases/checkpoint_chain.bash
exit 0
