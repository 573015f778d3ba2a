#!/bin/bash
# make demo as a user runs it: it says each step with its time, and builds
# only what it runs (memlens and three workloads: no tests, sanitizer
# builds, fuzzers, benchmarks, nor a CRIU). What it would build is read from
# `make -n demo` into an empty build directory; then the demo runs for real
# (root only: it installs packages and ptraces its workloads; ~40 s).
# And scripts/ensure-criu.sh's progress filter on a CRIU build's output.
set -u
. "$(dirname "$0")/../lib.bash"
cd "$(dirname "$0")/../.." || exit 1
t_tmpdir demo
B=${BUILD:-build}

# 1. what it would build, from nothing
make -n --no-print-directory BUILD="$tmp/empty" demo >"$tmp/n.txt" 2>&1
rc=$?
builds() { grep -qE -- "-o $tmp/empty/$1( |\$)" "$tmp/n.txt"; }
check demo_builds_what_it_runs '[ $rc = 0 ] && builds memlens && builds workloads/memwrite && builds workloads/memalloc && builds workloads/matmul' \
	"rc=$rc" "$(grep -- "-o $tmp/empty/[a-z]*" "$tmp/n.txt" | grep -v '\.o ' | head -n 5)"
stray=$(grep -E -- "-fsanitize|/tests/|/bench/|/fuzz/|ensure-criu|memlens-agent|workloads/stress" "$tmp/n.txt" | head -n 5)
check demo_builds_nothing_else '[ -z "$stray" ]' "$stray"

# 2. the demo itself: each step and each part with its time
if [ "$(id -u)" != 0 ]; then
	skip demo_run "make demo needs root (it installs packages and ptraces its workloads)"
else
	DEMO_DIR=$tmp/demo timeout 600 make --no-print-directory BUILD="$B" demo >"$tmp/run.txt" 2>&1
	rc=$?
	steps=$(grep -cE '^==> demo [123]/3: .*: done in [0-9]+\.[0-9] s$' "$tmp/run.txt")
	parts=$(grep -cE '^    \(part [1-6] of 6: [0-9]+\.[0-9] s\)$' "$tmp/run.txt")
	check demo_run '[ $rc = 0 ] && [ "$steps" = 3 ] && [ "$parts" = 6 ] && [ -s "$tmp/demo/report.html" ]' \
		"rc=$rc, $steps steps and $parts parts with their times" "$(grep -E '^(==>|---)' "$tmp/run.txt")" \
		"$(tail -n 5 "$tmp/run.txt")"
	# each step is announced before it runs, not only once it is over
	first=$(grep -nE '^==> demo 3/3: .* \.\.\.$' "$tmp/run.txt" | cut -d: -f1)
	check demo_step_announced '[ -n "$first" ] && [ "$first" -lt "$(grep -n "^--- \[1/6\]" "$tmp/run.txt" | cut -d: -f1)" ]'
	wide=$(grep -E '^(==>|---)' "$tmp/run.txt" | awk 'length > 80')
	check demo_progress_fits_80 '[ -z "$wide" ]' "$wide"
fi

# 3. ensure-criu's progress: a line per part of CRIU's tree as the build
# reaches it, the files done, and the whole output kept in the log
{
	echo "make: Entering directory '/src/criu-4.1.1'"
	echo "  GEN      .gitid"
	for i in $(seq 1 20); do echo "  CC       compel/src/lib/f$i.o"; done
	for i in $(seq 1 30); do echo "  PBCC     images/i$i.pb-c.c"; done
	echo "warning: something the log keeps"
	for i in $(seq 1 5); do echo "  CC       criu/pie/p$i.o"; done
	for i in $(seq 1 40); do echo "  CC       criu/c$i.o"; done
	echo "  LINK     criu/criu"
} | scripts/build-progress.sh "ensure-criu: compiling CRIU" "$tmp/build.log" 770 2>"$tmp/progress"
check criu_progress_parts 'grep -q "1 of about 770 files done, now the top folder" "$tmp/progress" &&
	grep -q "2 of about 770 files done, now compel$" "$tmp/progress" &&
	grep -q "22 of about 770 files done, now images$" "$tmp/progress" &&
	grep -q "52 of about 770 files done, now criu/pie$" "$tmp/progress" &&
	grep -q "57 of about 770 files done, now criu$" "$tmp/progress" &&
	grep -q "97 files, done$" "$tmp/progress" && [ "$(wc -l <"$tmp/progress")" = 6 ]' "$(cat "$tmp/progress")"
check criu_progress_log_whole '[ "$(wc -l <"$tmp/build.log")" = 99 ] && grep -q "^warning: something the log keeps$" "$tmp/build.log"'
# and what it says of the time a build takes is what one takes
check criu_time_said '! grep -q "about a minute" scripts/ensure-criu.sh doc/criu.md &&
	grep -q "it takes 2-15 minutes on 2 CPUs" scripts/ensure-criu.sh &&
	grep -q "scripts/build-progress.sh \"ensure-criu: \[1/2\] compiling\"" scripts/ensure-criu.sh'

t_done
