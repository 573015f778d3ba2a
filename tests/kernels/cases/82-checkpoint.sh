#!/bin/bash
# Pre-dump chains through `memlens checkpoint` with upstream CRIU 4.1.1
# (tests/kernels/cases/checkpoint_chain.bash).
set -u
cd "$(dirname "$0")/../../.." || exit 1
case $KVER in [0-5].* | 6.[0-6].* | 6.[0-6]-*)
	. tests/kernels/cases/lib.bash
	write_tracking_unsupported checkpoint
	c_done
	exit
	;;
esac
WHICH=upstream
. tests/kernels/cases/checkpoint_chain.bash
exit 0
