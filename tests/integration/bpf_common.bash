# Shared by tests/integration/test_{faults,slab,leaks,oom}.sh (sourced, not run).
# Prints the harness lines: "ok - NAME", "not ok - NAME", "skip - NAME: reason".
set -u
. "$(dirname "${BASH_SOURCE[0]}")/../lib.bash"
: "${MEMLENS:?set MEMLENS to the memlens binary (tests/run.sh does)}"
: "${WORKLOADS:?set WORKLOADS to the workloads directory (tests/run.sh does)}"
T_FAILS=0
T_TMP=$(mktemp -d /tmp/memlens-bpf-test.XXXXXX)
T_BG=()
T_DIRS=()	# more directories to remove at exit

t_cleanup() {
	local p
	for p in "${T_BG[@]:-}"; do
		[ -n "$p" ] && kill -KILL "$p" 2>/dev/null
	done
	rm -rf "$T_TMP" "${T_DIRS[@]}"
}
t_at_exit t_cleanup

# check NAME COND-EXIT-STATUS MESSAGE: one line per test from a list of conditions
expect() {	# expect NAME "description" cmd...
	local name=$1 what=$2
	shift 2
	if "$@"; then return 0; fi
	echo "#   $name: $what"
	return 1
}

# json FILE PY-EXPR: evaluate PY-EXPR with d = the last JSON line of FILE
json() {
	python3 - "$1" "$2" <<'PY'
import json, sys
lines = [l for l in open(sys.argv[1]).read().splitlines() if l.strip()]
d = json.loads(lines[-1]) if lines else None
print(eval(sys.argv[2]))
PY
}

# jsonl FILE TYPE PY-EXPR: the same, d = the last line of FILE whose "type" is TYPE
jsonl() {
	python3 - "$1" "$2" "$3" <<'PY'
import json, sys
ds = [json.loads(l) for l in open(sys.argv[1]).read().splitlines() if l.strip()]
ds = [x for x in ds if x.get('type') == sys.argv[2]]
d = ds[-1] if ds else None
print(eval(sys.argv[3]))
PY
}

# intervals FILE TYPE PY-EXPR: evaluate PY-EXPR with iv = the "TYPE_interval"
# objects of FILE (JSON Lines) and d = its last "TYPE" object
intervals() {
	python3 - "$1" "$2" "$3" <<'PY'
import json, sys
ds = [json.loads(l) for l in open(sys.argv[1]).read().splitlines() if l.startswith('{')]
iv = [x for x in ds if x.get('type') == sys.argv[2] + '_interval']
fin = [x for x in ds if x.get('type') == sys.argv[2]]
d = fin[-1] if fin else None
print(eval(sys.argv[3]))
PY
}

# tracer_start NAME SUBCOMMAND ARGS...: memlens SUBCOMMAND -v ARGS in the
# background, until it says it is tracing. Sets TR_PID, TR_OUT, TR_ERR.
tracer_start() {
	local name=$1 sub=$2
	shift 2
	TR_OUT=$T_TMP/$name.out
	TR_ERR=$T_TMP/$name.err
	"$MEMLENS" "$sub" -v "$@" >"$TR_OUT" 2>"$TR_ERR" &
	TR_PID=$!
	T_BG+=("$TR_PID")
	for _ in $(seq 1 300); do
		grep -qs 'tracing' "$TR_ERR" && return 0
		kill -0 "$TR_PID" 2>/dev/null || break
		sleep 0.1
	done
	return 1
}

# tracer_stop: SIGINT, wait; sets TR_RC
tracer_stop() {
	kill -INT "$TR_PID" 2>/dev/null
	wait "$TR_PID"
	TR_RC=$?
}

# pidns_usable NAME: can we run a command in a new PID namespace? (else skip NAME)
pidns_usable() {
	unshare --pid --fork --mount-proc true 2>/dev/null && return 0
	skip "$1" "unshare --pid is not allowed here"
	return 1
}

