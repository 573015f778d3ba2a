#!/bin/bash
# make bench, stop time as the target sees it: a target with 5000 VMAs whose
# threads read the clock in a tight loop; the longest gap per attach cycle
# of `memlens writes -i 10 -d 0.05`, against as long again unprofiled (the
# peer, same run): median, p99, max and their ratios (bench/stop_time.c).
# CYCLES (default 200) and VMAS (default 5000) change the run. Run it on an
# otherwise idle machine: other load shows in both columns.
set -eu
M=${MEMLENS:?} B=${BUILD:-build}
"$B/bench/stop_time" "$M" "${CYCLES:-200}" "${VMAS:-5000}"
