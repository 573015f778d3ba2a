#!/bin/bash
# memlens migrate with pre-copy between two network namespaces, with upstream
# CRIU 4.1.1 (tests/kernels/cases/migrate_ns.bash).
set -u
cd "$(dirname "$0")/../../.." || exit 1
WHICH=upstream
. tests/kernels/cases/migrate_ns.bash
exit 0
