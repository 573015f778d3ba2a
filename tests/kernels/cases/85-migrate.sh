#!/bin/bash
# memlens migrate with pre-copy between two network namespaces, with the CRIU
# fork that has the exclude options (tests/kernels/cases/migrate_ns.bash).
set -u
cd "$(dirname "$0")/../../.." || exit 1
# (before Linux 6.7 memlens migrate still runs with upstream CRIU, without
# exclusion: the next case)
. tests/kernels/cases/needs_write_tracking.bash migrate
WHICH=fork
. tests/kernels/cases/migrate_ns.bash
exit 0
