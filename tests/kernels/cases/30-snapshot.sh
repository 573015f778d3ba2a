#!/bin/bash
# memlens snapshot: per-VMA counts exact against /proc/PID/smaps, with
# PAGEMAP_SCAN where the kernel has it (6.7+) and, on every kernel, with
# the read of each VMA's /proc/PID/pagemap entries (the only method before
# 6.7, chosen by probing the ioctl).
. tests/kernels/cases/lib.bash
if ! kernel_at_least 6 7; then
	echo "# no PAGEMAP_SCAN before Linux 6.7: snapshots read /proc/PID/pagemap"
	"$MEMLENS" snapshot --json -- /bin/sleep 0.5 >"$C_TMP/s.out" 2>"$C_TMP/s.err"
	rc=$?
	m=$(jq_last "$C_TMP/s.out" "ds[0]['method']" 2>/dev/null)
	[ $rc = 0 ] && [ "$m" = pagemap_read ] &&
		ok snapshot_reads_pagemap_without_pagemap_scan ||
		notok snapshot_reads_pagemap_without_pagemap_scan "exit $rc, method $m: $(cat "$C_TMP/s.err")"
	"$MEMLENS" snapshot --method scan -- /bin/sleep 0.5 >/dev/null 2>"$C_TMP/s.err"
	rc=$?
	echo "# --method scan: $(cat "$C_TMP/s.err")"
	[ $rc = 5 ] && grep -q 'no PAGEMAP_SCAN ioctl' "$C_TMP/s.err" &&
		ok snapshot_method_scan_refused_exit_5 ||
		notok snapshot_method_scan_refused_exit_5 "exit $rc: $(cat "$C_TMP/s.err")"
fi
# per-VMA resident/swapped/zero/file/huge vs smaps, totals vs smaps_rollup,
# with the default method and with the pagemap read forced (the C test)
if [ -x build/tests/integration/test_snapshot ]; then
	build/tests/integration/test_snapshot
else
	notok test_snapshot "build/tests/integration/test_snapshot is not built (make all)"
fi
# The counts that depend on what a read of untouched memory maps: here
# (these kernels map the zero page) and again with MEMLENS_TEST_NO_ZERO_PAGE=1,
# the expectations of a machine whose reads map fresh pages (the host may be
# one), so that both sets are run wherever the suite runs.
zero_page_tests() {	# PREFIX [ENV=VALUE]: the tests' lines, names as PREFIX/PROGRAM/TEST
	local prefix=$1 t p
	shift
	for t in unit/test_snapshot integration/test_profiler integration/test_snapshot; do
		[ "$prefix" != zero_page ] || [ "$t" != integration/test_snapshot ] || continue # ran above
		p=$prefix/${t//\//_}/
		if [ -x "build/tests/$t" ]; then
			# of the snapshot's integration tests, those that count zero pages
			env "$@" T_ONLY="$([ "$t" = integration/test_snapshot ] && echo zero,read_matches,counting_scan)" \
				"build/tests/$t" | sed -E "s#^(ok|not ok|skip) - #\1 - $p#"
		else
			notok "${p%/}" "build/tests/$t is not built (make all)"
		fi
	done
}
if kernel_at_least 6 7; then
	zero_page_tests zero_page
	zero_page_tests no_zero_page MEMLENS_TEST_NO_ZERO_PAGE=1
else
	echo "# the profiler's and the snapshot's read tests need PAGEMAP_SCAN (6.7+): not run again here"
fi
# the command line, and totals exact every cycle while the VMAs change
run_host_test test_snapshot_cli.sh
run_host_test test_snapshot_exact.sh CHURN_SECONDS=4
c_done
