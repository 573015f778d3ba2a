#!/bin/bash
# Pre-dump chains through `memlens checkpoint` with the CRIU fork that has
# the exclude options (tests/kernels/cases/checkpoint_chain.bash).
set -u
cd "$(dirname "$0")/../../.." || exit 1
WHICH=fork
. tests/kernels/cases/checkpoint_chain.bash
exit 0
