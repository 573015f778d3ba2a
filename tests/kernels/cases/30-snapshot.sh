#!/bin/bash
# memlens snapshot: per-VMA counts exact against /proc/PID/smaps where the
# kernel has PAGEMAP_SCAN; where it has not, a clear refusal (exit 5).
. tests/kernels/cases/lib.bash
if ! kernel_at_least 6 7; then
	echo "# unsupported: no PAGEMAP_SCAN before Linux 6.7"
	"$MEMLENS" snapshot --json -- /bin/sleep 1 >"$C_TMP/s.out" 2>"$C_TMP/s.err"
	rc=$?
	echo "# $(cat "$C_TMP/s.err")"
	[ $rc = 5 ] && grep -q 'no PAGEMAP_SCAN ioctl' "$C_TMP/s.err" && grep -q '6.7' "$C_TMP/s.err" &&
		ok snapshot_refused_without_pagemap_scan_exit_5 ||
		notok snapshot_refused_without_pagemap_scan_exit_5 "exit $rc: $(cat "$C_TMP/s.err")"
	skip snapshot_exact_vs_smaps "no PAGEMAP_SCAN before Linux 6.7 and snapshot has no pagemap-read fallback"
	c_done
	exit
fi
# per-VMA resident/swapped/huge vs smaps, totals vs smaps_rollup (the C test)
if [ -x build/tests/integration/test_snapshot ]; then
	build/tests/integration/test_snapshot
else
	notok test_snapshot "build/tests/integration/test_snapshot is not built (make all)"
fi
c_done
