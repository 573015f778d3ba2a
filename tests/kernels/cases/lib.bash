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
