# The one helper library of the shell tests (sourced, not run): by
# tests/integration/*.sh (directly or through bpf_common.bash) and the guest
# cases (tests/kernels/cases/lib.bash).
#   ok NAME / notok NAME [REASON...] / skip NAME REASON   the harness lines
#   check NAME COND [DETAIL...]   ok if `eval COND` succeeds, else notok with
#                                 the condition and the details
#   check_rc NAME RC [DETAIL]     ok if RC (a command's exit status) is 0
#   t_done                        true when no notok was printed
#   t_at_exit CMD                 run CMD at exit (last registered first)
#   t_bg PID...                   kill these at exit
#   t_tmpdir NAME                 a temporary directory removed at exit
#   wait_for_line FILE REGEX [S]  until a line of FILE matches (ERE)
#   wait_for_file FILE [S]        until FILE exists and is not empty
#   wait_for_state PID REGEX [S]  until /proc/PID/stat's state matches
#   wait_gone PID [S]             until PID has exited (or is a zombie)
# The waits poll every 20 ms for at most S seconds (default 10) and return 1
# when the time is up: they are how a test synchronises, never a sleep.
T_FAILS=0
T_BG=()
T_EXIT=()

ok() { echo "ok - $1"; }
notok() {
	echo "not ok - $1"
	shift
	local l
	# every line of a message is a comment line: the runner keeps those
	for l in "$@"; do printf '%s\n' "$l" | sed 's/^/#   /'; done
	T_FAILS=$((T_FAILS + 1))
}
skip() { echo "skip - $1: $2"; }
t_done() { [ "$T_FAILS" -eq 0 ]; }
check() {
	# (names no condition uses: it is evaluated here and sees these)
	local _check_name=$1 _check_cond=$2
	shift 2
	if eval "$_check_cond"; then
		ok "$_check_name"
	else
		notok "$_check_name" "condition: $_check_cond" "$@"
	fi
}
check_rc() { if [ "$2" -eq 0 ]; then ok "$1"; else notok "$1" "${3:-}"; fi; }

t_at_exit() { T_EXIT+=("$*"); }
t_bg() { T_BG+=("$@"); }
t_exit() {
	local i p
	for ((i = ${#T_EXIT[@]} - 1; i >= 0; i--)); do
		eval "${T_EXIT[$i]}"
	done
	for p in "${T_BG[@]:-}"; do
		[ -n "$p" ] && kill -KILL "$p" 2>/dev/null
	done
	p=$(jobs -p)
	[ -n "$p" ] && kill $p 2>/dev/null
	return 0
}
trap t_exit EXIT

# t_tmpdir NAME: sets tmp to a new directory /tmp/memlens-NAME.XXXXXX
t_tmpdir() {
	tmp=$(mktemp -d "/tmp/memlens-$1.XXXXXX") || exit 1
	t_at_exit "rm -rf '$tmp'"
}

t_wait() {	# S CMD...: poll CMD every 20 ms for S seconds
	local s=$1 i
	shift
	for ((i = 0; i < s * 50; i++)); do
		"$@" && return 0
		sleep 0.02
	done
	"$@"
}
wait_for_line() { t_wait "${3:-10}" grep -qE -- "$2" "$1" 2>/dev/null; }
wait_for_file() { t_wait "${2:-10}" test -s "$1"; }
# start_ready NAME OUT CMD...: CMD in a session of its own, its output in
# OUT, killed at the end; waits (60 s at most) for its line "ready PID" and
# sets ready_pid to that PID. If it never comes: not ok NAME_ready, exit 1.
start_ready() {
	local name=$1 out=$2
	shift 2
	setsid "$@" </dev/null >"$out" 2>&1 &
	t_bg $!
	if ! wait_for_line "$out" '^ready ' 60; then
		notok "${name}_ready" "$(cat "$out")"
		exit 1
	fi
	ready_pid=$(awk '/^ready /{print $2; exit}' "$out")
}
t_state_is() {
	local s
	s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	s=${s##*) }
	[[ "${s%% *}" =~ ^($2)$ ]]
}
wait_for_state() { t_wait "${3:-10}" t_state_is "$1" "$2"; }
t_gone() { ! kill -0 "$1" 2>/dev/null || t_state_is "$1" 'Z|X'; }
wait_gone() { t_wait "${2:-10}" t_gone "$1"; }
# preempt_mode [FILE]: the kernel's preemption mode, the one in parentheses
# in debugfs's sched/preempt (or FILE, a copy of it); nothing when it
# cannot be read
preempt_mode() { sed -n 's/.*(\(.*\)).*/\1/p' "${1:-/sys/kernel/debug/sched/preempt}" 2>/dev/null; }
# preemption_says MODE: how memlens check's preemption detail begins for
# MODE read from sched/preempt
preemption_says() {
	case $1 in
	none | voluntary) echo "$1 (sched/preempt): BPF programs are not preempted" ;;
	*) echo "$1 (sched/preempt): BPF programs are preempted" ;;
	esac
}
