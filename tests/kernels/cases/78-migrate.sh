#!/bin/bash
# memlens migrate with pre-copy between two network namespaces, with CRIU
# 4.1.1 and memlens's patches (criu/patches/): hot memory left out page by
# page (tests/kernels/cases/migrate_ns.bash).
set -u
cd "$(dirname "$0")/../../.." || exit 1
. tests/kernels/cases/needs_write_tracking.bash migrate
WHICH=page
. tests/kernels/cases/migrate_ns.bash
exit 0
