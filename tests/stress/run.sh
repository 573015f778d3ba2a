#!/bin/bash
# The stress suite: memlens against self-checking targets, attaching,
# detaching and dying in every way (tests/stress/main.c has the cases).
# STRESS=full (make stress): at most ~10 min; otherwise the short run that
# tests/run.sh makes (~2 min). STRESS_CASES=PATTERN runs only matching cases.
# The results table (Markdown) goes to $BUILD/stress-table.md.
set -u
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
export MEMLENS=${MEMLENS:-$PWD/$BUILD/memlens} WORKLOADS=${WORKLOADS:-$PWD/$BUILD/workloads}
bin=$BUILD/tests/stress/stress
if [ ! -x "$bin" ]; then
	echo "not ok - stress: $bin is not built (make -j2 all)"
	exit 1
fi
args=(-T "$BUILD/stress-table.md")
[ "${STRESS:-short}" = full ] && args+=(-f)
[ -n "${STRESS_CASES:-}" ] && args+=(-c "$STRESS_CASES")
# first the instrument itself: no harm seen without memlens, harm seen
# when a stand-in harms the target on purpose
[ -n "${STRESS_CASES:-}" ] || bash tests/stress/selftest.sh
tmp=$(mktemp -d /tmp/memlens-stress.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
STRESS_TMP=$tmp "$bin" "${args[@]}"
rc=$?
echo "# results table: $BUILD/stress-table.md"
exit $rc
