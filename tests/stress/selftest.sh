#!/bin/bash
# The stress suite checks itself: with a memlens that does nothing
# (/bin/true) every attach-cycle case must pass (no harm where there is
# none), and with one that harms its target on purpose
# (harmful_memlens.sh) each case must fail, naming that harm.
set -u
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
export WORKLOADS=${WORKLOADS:-$PWD/$BUILD/workloads}
bin=$BUILD/tests/stress/stress
tmp=$(mktemp -d /tmp/memlens-stress-selftest.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

MEMLENS=/bin/true STRESS_TMP=$tmp "$bin" -n 15 -c 'cycles/*' >"$tmp/null.out" 2>&1
bad=$(grep -c '^not ok' "$tmp/null.out")
if [ "$bad" = 0 ] && grep -q '^ok - stress/cycles/busy$' "$tmp/null.out"; then
	echo "ok - selftest/no_harm_without_memlens"
else
	echo "not ok - selftest/no_harm_without_memlens: $bad cases saw harm with /bin/true as memlens"
	grep -E '^(not ok|cycles/|#)' "$tmp/null.out" | sed 's/^/#   /' | head -n 30
fi

# case | harm | what the case must report | tries (the kill-random cases
# kill memlens 0-50 ms after its start: on a loaded machine the stand-in
# often has not run by then, so more tries are needed for one that harms)
while IFS='|' read -r case harm want tries; do
	STRESS_HARM=$harm MEMLENS=$PWD/tests/stress/harmful_memlens.sh STRESS_TMP=$tmp \
		"$bin" -n "${tries:-3}" -c "$case" >"$tmp/harm.out" 2>&1
	row=$(grep "^$case |" "$tmp/harm.out")
	name=selftest/${case//\//_}_sees_${harm//:/_}
	if grep -q "^not ok - stress/$case:" "$tmp/harm.out" && [[ "$row" == *"$want"* ]]; then
		echo "ok - $name"
	else
		echo "not ok - $name: wanted \"$want\""
		sed 's/^/#   /' "$tmp/harm.out" | head -n 20
	fi
done <<'LIST'
cycles/sigalrm-1ms|sig:ALRM|SIGALRM not from the kernel
cycles/sigqueue-rt-1ms|sig:RTMIN|SIGRTMIN without its payload
cycles/segv-barrier|sig:SEGV|SIGSEGV not from the write barrier
cycles/waiter-epoll|stopcont|epoll_wait returned other than 0
cycles/busy|stop|target left stopped
cycles/busy|sig:KILL|target killed by SIGKILL
kill-random/waiter-nanosleep|sig:TERM|target exit 0|20
LIST
