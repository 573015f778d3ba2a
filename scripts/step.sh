#!/bin/bash
# step.sh LABEL CMD [ARGS...]: one step of `make demo`: says what starts,
# runs CMD, and says how long it took (or that it failed, and with what
# status); exits with CMD's status.
set -u
label=$1
shift
t0=$EPOCHREALTIME
echo "==> $label ..."
"$@"
rc=$?
dt=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
if [ $rc -eq 0 ]; then
	echo "==> $label: done in $dt s"
else
	echo "==> $label: FAILED (exit status $rc) after $dt s" >&2
fi
exit $rc
