#!/bin/bash
# Runs every test and ends with "N passed, N failed, N skipped".
# Test programs print "ok - NAME", "not ok - NAME" or "skip - NAME: reason";
# a program that dies without saying so counts as one failure.
# TESTS=pattern runs only the tests whose label contains it (TESTS=agent);
# TEST="LABEL..." only those with exactly these labels, separated by spaces
# or commas (TEST=integration/test_agent.sh); a label that names no test
# is a failure. Labels: unit/NAME, asan/NAME, integration/NAME(.sh),
# asan-integration/NAME, fuzz/NAME, asan-cli/NAME.sh, stress/short,
# kernels/VERSION.
set -u
cd "$(dirname "$0")/.."
# Close whatever the caller left open beyond stdio (a CI runner's sockets,
# make's jobserver pipes): the tests' targets would inherit them, and CRIU
# refuses to dump a process holding a socket connected to the outside.
for fd in $(ls /proc/$$/fd); do
	[ "$fd" -gt 2 ] && eval "exec $fd>&-" 2>/dev/null
done
BUILD=${BUILD:-build}
export MEMLENS="$PWD/$BUILD/memlens" WORKLOADS="$PWD/$BUILD/workloads"
# CRIU's probe answers stay in the build tree, not in the machine's cache
export MEMLENS_CACHE_DIR=${MEMLENS_CACHE_DIR:-$PWD/$BUILD/cache}
pass=0 fail=0 skip=0
failed_names=()
failed_logs=()
log_dir=$BUILD/test-logs
mkdir -p "$log_dir"

run_one() {	# $1: label, rest: command
	local label=$1; shift
	local log="$log_dir/$(echo "$label" | tr '/ ' '__').log"
	local t0=$SECONDS
	timeout --kill-after=10 "${TEST_TIMEOUT:-600}" "$@" >"$log" 2>&1
	local rc=$?
	local p f s
	p=$(grep -c '^ok - ' "$log"); f=$(grep -c '^not ok - ' "$log"); s=$(grep -c '^skip - ' "$log")
	grep -E '^(ok|not ok|skip) - |^#' "$log" | sed "s|^|[$label] |"
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "[$label] not ok - $label exited with status $rc (log: $log)"
		tail -n 20 "$log" | sed "s|^|[$label]   |"
		f=$((f + 1))
	fi
	pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + s))
	[ "$f" -gt 0 ] && failed_names+=("$label") && failed_logs+=("$log")
	echo "[$label] $p passed, $f failed, $s skipped ($((SECONDS - t0)) s)"
}

# TESTS matches the test's label (e.g. unit/test_maps, integration/test_agent.sh)
# as a substring, TEST as one of its exact labels
declare -A test_seen=()
want() {
	[ -z "${TESTS:-}" ] || [[ "$1" == *${TESTS}* ]] || return 1
	[ -z "${TEST:-}" ] && return 0
	local t IFS=$' \t\n,'
	for t in $TEST; do
		[ "$t" = "$1" ] && test_seen[$t]=1 && return 0
	done
	return 1
}

# CPU_HOGS=N: N busy loops per CPU beside the whole run (make test-loaded),
# as on a build machine shared with other jobs: no test may depend on how
# much CPU its workload gets
hogs=()
stop_hogs() { [ ${#hogs[@]} -eq 0 ] || kill "${hogs[@]}" 2>/dev/null; }
trap stop_hogs EXIT
if [ "${CPU_HOGS:-0}" -gt 0 ]; then
	for _ in $(seq 1 $((CPU_HOGS * $(nproc)))); do
		bash -c 'while :; do :; done' &
		hogs+=($!)
	done
	echo "# ${#hogs[@]} busy loops beside the tests (CPU_HOGS=$CPU_HOGS per CPU)"
fi

for t in "$BUILD"/tests/unit/*; do
	[ -f "$t" ] && [ -x "$t" ] && want "unit/${t##*/}" && run_one "unit/${t##*/}" "$t"
done
for t in "$BUILD"/tests/asan/*; do
	[ -f "$t" ] && [ -x "$t" ] && want "asan/${t##*/}" &&
		ASAN_OPTIONS=detect_leaks=1 run_one "asan/${t##*/}" "$t"
done
for t in "$BUILD"/tests/integration/*; do
	[ -f "$t" ] && [ -x "$t" ] && want "integration/${t##*/}" && run_one "integration/${t##*/}" "$t"
done
for t in "$BUILD"/tests/asan-integration/*; do
	[ -f "$t" ] && [ -x "$t" ] && want "asan-integration/${t##*/}" &&
		ASAN_OPTIONS=detect_leaks=1 run_one "asan-integration/${t##*/}" "$t"
done
# the libFuzzer harnesses (make fuzz-bins; make fuzz runs them for minutes)
for t in "$BUILD"/fuzz/fuzz_*; do
	[ -f "$t" ] && [ -x "$t" ] && want "fuzz/${t##*/}" &&
		run_one "fuzz/${t##*/}" tests/fuzz/run.sh "$t" "${FUZZ_TEST_SECONDS:-3}"
done
for t in tests/integration/*.sh; do
	[ -f "$t" ] && want "${t#tests/}" && run_one "${t#tests/}" bash "$t"
done
# the stress suite's short run (~2 min; `make stress` runs the full one)
want stress/short && STRESS=short run_one stress/short bash tests/stress/run.sh

# The command-line tests that feed memlens untrusted input (the agent's gRPC
# payloads, report files, command lines, target ELF files, CRIU's images
# and logs) again, on memlens and memlens-agent
# built with ASan+UBSan (make asan-bins): any sanitizer report fails the run,
# including one from a process the test only talks to.
ASAN_BIN=$BUILD/asan-bin
if [ -x "$ASAN_BIN/memlens" ]; then
	san_logs=$PWD/$log_dir/asan-cli-reports
	[ -n "${KEEP_SAN_LOGS:-}" ] || rm -rf "$san_logs"
	mkdir -p "$san_logs"
	for t in test_writes_cli.sh test_snapshot_cli.sh test_report.sh test_agent.sh test_migrate.sh \
		test_leaks.sh test_leaks_sample.sh test_leaks_preload.sh test_leaks_dwarf.sh test_criu.sh \
		test_writes_tree.sh; do
		want "asan-cli/$t" || continue
		# LM_RUNS=1: test_leaks.sh's exactness loops once here (the
		# sanitizers look at memlens's code paths, which one run covers;
		# the repeated runs are the plain binary's)
		LM_RUNS=1 MEMLENS=$PWD/$ASAN_BIN/memlens \
			ASAN_OPTIONS=detect_leaks=1:log_path=$san_logs/asan \
			UBSAN_OPTIONS=print_stacktrace=1:log_path=$san_logs/ubsan \
			run_one "asan-cli/$t" bash "tests/integration/$t"
	done
	if want asan-cli/reports; then
		run_one asan-cli/reports bash -c '
			for f in "$1"/*; do
				[ -e "$f" ] || continue
				echo "not ok - sanitizer report $f"
				sed "s/^/#   /" "$f" | head -n 60
			done
			echo "ok - sanitizer reports read"' _ "$san_logs"
	fi
fi

# The guest suite on the kernels users run (Linux 6.12: soft-dirty, fentry,
# kprobes, cgroup v2), booted in QEMU: tests/kernels/run.sh, every case of
# it (about 11 minutes). GUEST_KERNELS="" leaves it out; GUEST_CASES=PATTERN
# runs only some cases; `make test-kernels` runs the whole matrix.
for k in ${GUEST_KERNELS-6.12}; do
	want "kernels/$k" &&
		CASES=${GUEST_CASES:-} \
		GUEST_TIMEOUT=${GUEST_TIMEOUT:-2400} TEST_TIMEOUT=$((${GUEST_TIMEOUT:-2400} + 120)) \
		run_one "kernels/$k" tests/kernels/run.sh --plain "$k"
done

# a label TEST named that is no test here (a typo, a test not built)
if [ -n "${TEST:-}" ]; then
	IFS=$' \t\n,' read -r -d '' -a test_named <<<"$TEST"
	for t in "${test_named[@]}"; do
		[ -n "${test_seen[$t]:-}" ] && continue
		echo "[$t] not ok - TEST names $t, which is no test here (labels: tests/run.sh)"
		fail=$((fail + 1))
		failed_names+=("$t")
		failed_logs+=(/dev/null)
	done
fi

echo
# Repeat what failed at the very end, where a CI log that keeps only its tail
# still shows it: each failing check with its reasons, then the log's tail.
if [ ${#failed_names[@]} -gt 0 ]; then
	for i in "${!failed_names[@]}"; do
		echo "=== failed: ${failed_names[$i]} (log: ${failed_logs[$i]})"
		grep -E '^(not ok - |#   )' "${failed_logs[$i]}" | head -n 40
		echo "--- last lines of the log:"
		tail -n 15 "${failed_logs[$i]}"
	done
	echo
	echo "failing: ${failed_names[*]}"
fi
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
