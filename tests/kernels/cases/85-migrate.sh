#!/bin/bash
# memlens migrate with pre-copy between two network namespaces, with the CRIU
# fork that has the exclude options (tests/kernels/cases/migrate_ns.bash).
set -u
cd "$(dirname "$0")/../../.." || exit 1
case $KVER in [0-5].* | 6.[0-6].* | 6.[0-6]-*)
	# (without it, with upstream CRIU: the next case, which runs here)
	. tests/kernels/cases/lib.bash
	write_tracking_unsupported migrate
	c_done
	exit
	;;
esac
WHICH=fork
. tests/kernels/cases/migrate_ns.bash
exit 0
