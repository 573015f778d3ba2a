#!/bin/bash
# memlens writes: exact written-page counts where the kernel has
# PAGEMAP_SCAN (6.7+), a clear refusal (exit 5) where it has not.
. tests/kernels/cases/lib.bash
mkfifo "$C_TMP/in"
"$WORKLOADS/pagewriter" <"$C_TMP/in" >"$C_TMP/pw.out" 2>&1 &
pw=$!
C_BG+=("$pw")
exec 7>"$C_TMP/in"
echo "map a 1000" >&7
wait_for_line "$C_TMP/pw.out" '^mapped a' 10
start=$(awk '/^mapped a/ {print $3}' "$C_TMP/pw.out")

if ! kernel_at_least 6 7; then
	echo "# unsupported: no PAGEMAP_SCAN before Linux 6.7"
	"$MEMLENS" writes -p $pw -d 1 >"$C_TMP/w.out" 2>"$C_TMP/w.err"
	rc=$?
	echo "# $(cat "$C_TMP/w.err")"
	[ $rc = 5 ] && grep -q 'no PAGEMAP_SCAN ioctl' "$C_TMP/w.err" && grep -q '6.7' "$C_TMP/w.err" &&
		ok writes_refused_without_pagemap_scan_exit_5 ||
		notok writes_refused_without_pagemap_scan_exit_5 "exit $rc: $(cat "$C_TMP/w.err")"
	# the target is unharmed: alive, no uffd registration left, answers
	echo "write a 1" >&7
	wait_for_line "$C_TMP/pw.out" '^wrote' 10
	kill -0 $pw && grep -q '^wrote 1000' "$C_TMP/pw.out" && [ "$(grep -c uw /proc/$pw/smaps)" = 0 ] &&
		ok writes_refusal_leaves_target_unharmed ||
		notok writes_refusal_leaves_target_unharmed "$(cat "$C_TMP/pw.out")"
	exec 7>&-
	c_done
	exit
fi

# the library's exact-count tests (every 3rd page of 1000 -> 334, ...)
if [ -x build/tests/integration/test_profiler ]; then
	build/tests/integration/test_profiler
else
	notok test_profiler "build/tests/integration/test_profiler is not built (make all)"
fi

# and the command line: every 3rd page of a 1000-page VMA, once. With
# transparent huge pages "always" (Debian's 7.x default) the first write
# to an aligned 2 MiB of the VMA maps a huge page, and PAGEMAP_SCAN reports
# written at that granularity (all 512 pages): page-exact counts need THP
# off for the VMA, so the guest's THP mode is madvise for this test.
thp=/sys/kernel/mm/transparent_hugepage/enabled
thp_was=$(sed -n 's/.*\[\(.*\)\].*/\1/p' $thp 2>/dev/null)
echo "# transparent huge pages: $thp_was"
[ "$thp_was" = always ] && echo madvise >$thp
echo "remap a" >&7
for _ in $(seq 100); do [ "$(grep -c '^mapped a' "$C_TMP/pw.out")" = 2 ] && break; sleep 0.1; done
start=$(awk '/^mapped a/ {print $3}' "$C_TMP/pw.out" | tail -n 1)
"$MEMLENS" writes -p $pw -i 500 --json -a >"$C_TMP/w.json" 2>"$C_TMP/w.err" &
mp=$!
C_BG+=("$mp")
wait_for_line "$C_TMP/w.json" '"seq":1,' 30
echo "write a 3" >&7
wait_for_line "$C_TMP/pw.out" '^wrote' 10
n0=$(grep -c '"type":"interval"' "$C_TMP/w.json")
for _ in $(seq 300); do [ "$(grep -c '"type":"interval"' "$C_TMP/w.json")" -ge $((n0 + 2)) ] && break; sleep 0.1; done
kill -INT $mp
wait $mp
rc=$?
got=$(jq_last "$C_TMP/w.json" "sum(r['dirty_pages'] for x in ds if x['type'] == 'interval' for r in x['regions'] if r['start_addr'] == '$start')")
[ "$thp_was" = always ] && echo always >$thp
echo "# pagewriter: $(grep wrote "$C_TMP/pw.out"); memlens: $got pages written in the VMA at $start (exit $rc); per interval: $(jq_last "$C_TMP/w.json" "[r['dirty_pages'] for x in ds if x['type'] == 'interval' for r in x['regions'] if r['start_addr'] == '$start']")"
[ $rc = 0 ] && [ "$got" = 334 ] && grep -q '^wrote 334' "$C_TMP/pw.out" &&
	ok writes_cli_every_3rd_of_1000_is_334 ||
	notok writes_cli_every_3rd_of_1000_is_334 "got $got, exit $rc: $(tail -n 3 "$C_TMP/w.err")"
echo exit >&7
exec 7>&-
c_done
