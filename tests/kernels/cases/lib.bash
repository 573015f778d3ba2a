# Sourced by the guest cases (tests/kernels/cases/NN-NAME.sh).
set -u
: "${MEMLENS:?}" "${WORKLOADS:?}" "${KCONFIG:?}"
PY=/usr/bin/python3
C_TMP=$(mktemp -d /tmp/memlens-case.XXXXXX)
. tests/lib.bash	# ok, notok, skip, t_done, the waits
C_BG=()
c_cleanup() {
	local p
	for p in "${C_BG[@]:-}"; do [ -n "$p" ] && kill -KILL "$p" 2>/dev/null; done
	rm -rf "$C_TMP"
}
t_at_exit c_cleanup
# kconfig OPTION: y, m or nothing, from the kernel's own config
kconfig() { sed -n "s/^CONFIG_$1=//p" "$KCONFIG"; }
# kernel_at_least MAJOR MINOR
kernel_at_least() {
	local maj min
	IFS=. read -r maj min _ <<<"$KVER"
	[ "$maj" -gt "$1" ] || { [ "$maj" -eq "$1" ] && [ "${min%%[!0-9]*}" -ge "$2" ]; }
}
# jq_last FILE PY-EXPR: PY-EXPR with d = the last JSON line of FILE
# (ds = all of them)
jq_last() {
	"$PY" - "$1" "$2" <<'PYEOF'
import json, sys
ds = [json.loads(l) for l in open(sys.argv[1]).read().splitlines() if l.strip().startswith("{")]
d = ds[-1] if ds else None
print(eval(sys.argv[2]))
PYEOF
}
# run_host_test FILE [ENV=VALUE...]: a host test script, whose lines are ours
run_host_test() {
	local t=$1
	shift
	env "$@" bash "tests/integration/$t"
}
c_done() { t_done; }
# pre_dump_or_skip TEST: end the case with a skip of TEST unless a CRIU was
# built (MEMLENS_CRIU) and the kernel has soft-dirty, which pre-dump needs
pre_dump_or_skip() {
	if [ -z "${MEMLENS_CRIU:-}" ]; then
		skip "$1" "no CRIU built (scripts/ensure-criu.sh)"
		exit 0
	fi
	if [ "$(kconfig MEM_SOFT_DIRTY)" != y ]; then
		echo "# unsupported: no soft-dirty (CONFIG_MEM_SOFT_DIRTY unset)"
		skip "$1" "this kernel has no soft-dirty bits (CONFIG_MEM_SOFT_DIRTY unset): CRIU cannot pre-dump"
		exit 0
	fi
}
# write_tracking_unsupported COMMAND: before Linux 6.7 (no PAGEMAP_SCAN, no
# async write-protect) COMMAND cannot profile the target's writes. Says so
# ("# unsupported: ..." for the kernel table), checks that memlens check
# says it too, and that memlens checkpoint's profiler refuses clearly and
# leaves its target running.
write_tracking_unsupported() {
	local what=$1 pid rc st
	echo "# unsupported: profiling writes needs PAGEMAP_SCAN and async write-protect (Linux 6.7+)"
	"$MEMLENS" check --json >"$C_TMP/wt.json" 2>/dev/null
	[ "$(jq_last "$C_TMP/wt.json" "next((f['state'] for f in d['features'] if f['name'] == 'pagemap_scan'), '')")" = missing ] &&
		jq_last "$C_TMP/wt.json" "next(f['used_by'] for f in d['features'] if f['name'] == 'pagemap_scan')" | grep -qw "$what" &&
		ok "${what}_missing_in_check" ||
		notok "${what}_missing_in_check" "$(jq_last "$C_TMP/wt.json" "[f for f in d['features'] if f['name'] == 'pagemap_scan']")"
	setsid sleep 120 &	# in its own session, as CRIU wants it
	pid=$!
	C_BG+=("$pid")
	# until it is its session's leader (setsid runs in the child)
	for _ in $(seq 1 50); do
		[ "$(awk '{print $6}' /proc/$pid/stat 2>/dev/null)" = "$pid" ] && break
		sleep 0.1
	done
	"$MEMLENS" checkpoint -p $pid -D "$C_TMP/wt-images" -d 1 >"$C_TMP/wt.out" 2>"$C_TMP/wt.err"
	rc=$?
	st=$(awk '/^State:/ {print $2}' /proc/$pid/status 2>/dev/null)
	echo "# memlens checkpoint: exit $rc: $(tail -n 1 "$C_TMP/wt.err")"
	[ $rc != 0 ] && grep -q 'no PAGEMAP_SCAN ioctl' "$C_TMP/wt.err" && [ "$st" = S ] &&
		ok "${what}_profiling_refused_target_unharmed" ||
		notok "${what}_profiling_refused_target_unharmed" "exit $rc, target state '$st': $(cat "$C_TMP/wt.err")"
	kill $pid 2>/dev/null
}
