#!/bin/bash
# One exit-status table for every command, run as a user would run each
# command in each situation: a bad option (2), -- CMD that cannot be
# started (127), no such process (3), a kernel thread (2), a zombie (3),
# permission denied (4: "run as root" said only when memlens is not root),
# nothing seen (0, and the output says so), a missing input file (2).
# The table itself: `memlens --help`, the README and memlens(8) list the
# same codes with the same meanings.
set -u
. "$(dirname "$0")/../lib.bash"
. "$(dirname "$0")/proc.bash"
cd "$(dirname "$0")/../.." || exit 1
M=${MEMLENS:?}
PY=${PYTHON:-python3}
t_tmpdir exit-codes

# --- the table, in its three places -----------------------------------------
"$M" --help >"$tmp/help"
"$PY" - "$tmp/help" README.md doc/man/memlens.8.rst <<'PYEOF'
import re, sys

def norm(s):
    s = re.sub(r"[`*\\]", "", s)
    s = " ".join(s.split()).rstrip(".")
    return s[:1].lower() + s[1:]

help_lines = open(sys.argv[1]).read().split("Exit status, the same for every command:")[1]
help_rows, cur = [], None
for l in help_lines.splitlines():
    m = re.match(r"^\s+(\d+)  (.*)", l)
    if m and len(l) - len(l.lstrip()) <= 4:
        cur = [int(m.group(1)), m.group(2)]
        help_rows.append(cur)
    elif cur and l.strip():
        cur[1] += " " + l.strip()
readme = open(sys.argv[2]).read().split("## Exit status")[1].split("\n## ")[0]
readme_rows = [[int(m.group(1)), m.group(2)] for m in re.finditer(r"^\| (\d+) \| (.*) \|$", readme, re.M)]
man = open(sys.argv[3]).read().split("EXIT STATUS\n===========")[1].split("\n=====")[0]
man_rows = [[int(m.group(1)), m.group(2)] for m in re.finditer(r"^\*\*(\d+)\*\*\n((?:    .*\n?)+)", man, re.M)]
want = [(c, norm(t)) for c, t in help_rows]
bad = 0
for name, rows in (("README", readme_rows), ("memlens(8)", man_rows)):
    got = [(c, norm(t)) for c, t in rows]
    if got == want and len(want) >= 7:
        print(f"ok - exit_table_{name.split('(')[0].lower()}")
    else:
        bad += 1
        print(f"not ok - exit_table_{name.split('(')[0].lower()}")
        for a, b in zip(want + [None] * 9, got + [None] * 9):
            if a != b:
                print(f"#   --help: {a}\n#   {name}: {b}")
PYEOF

# --- the commands and what they take ------------------------------------------
cmds=$("$M" --help | awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 } on && /^$/ { on = 0 }')
have_agent=1
"$M" agent --help >/dev/null 2>&1 || have_agent=
pid_cmds= cmd_cmds=
for c in $cmds; do
	[ "$c" = agent ] && [ -z "$have_agent" ] && continue
	"$M" "$c" --list-options >"$tmp/opts" 2>/dev/null
	grep -q '^p pid PID' "$tmp/opts" && pid_cmds+=" $c"
	grep -q '^-- - CMD' "$tmp/opts" && cmd_cmds+=" $c"
done
[ -z "$have_agent" ] && skip agent_exit_codes "memlens-agent is not built (scripts/packages/agent.txt)"

# what else a command needs before it looks at its target
extra() {
	case $1 in
	checkpoint) echo "-D $tmp/ck" ;;
	migrate) echo "--to $tmp/mig" ;;
	agent) echo "--socket $tmp/agent.sock" ;;
	esac
}

# expect NAME WANT GREP [NOT-GREP] -- COMMAND...: its exit status and message
expect() {
	local name=$1 want=$2 re=$3 not=$4 rc
	shift 5
	timeout 60 "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
	rc=$?
	if [ "$rc" = "$want" ] && { [ -z "$re" ] || grep -qE -- "$re" "$tmp/err" "$tmp/out"; } &&
		{ [ -z "$not" ] || ! grep -qE -- "$not" "$tmp/err"; }; then
		ok "$name"
	else
		notok "$name" "exit $rc, want $want; $*" "$(head -c 400 "$tmp/err")"
	fi
}

# a bad option: every command, 2
for c in $cmds; do
	[ "$c" = agent ] && [ -z "$have_agent" ] && continue
	expect "${c}_bad_option" 2 "unknown option" "" -- "$M" "$c" --no-such-option
done

# -- CMD that cannot be started: 127, a path or a name not on PATH, a file
# without execute permission
printf '#!/bin/sh\nexit 0\n' >"$tmp/not-executable"
chmod 644 "$tmp/not-executable"
for c in $cmd_cmds; do
	expect "${c}_no_such_program_path" 127 "cannot run '/nonexistent/prog'" "" -- \
		"$M" "$c" -d 1 -- /nonexistent/prog
	expect "${c}_no_such_program_name" 127 "no such command in PATH" "" -- \
		"$M" "$c" -d 1 -- memlens-no-such-program-here
	expect "${c}_not_executable" 127 "cannot run '$tmp/not-executable': Permission denied" "" -- \
		"$M" "$c" -d 1 -- "$tmp/not-executable"
done

# no such process: a pid nobody has (looked for below pid_max)
nopid=
max=$(cat /proc/sys/kernel/pid_max 2>/dev/null || echo 32768)
for ((p = max - 1; p > max - 1000; p--)); do
	[ -e "/proc/$p" ] || { nopid=$p; break; }
done
kt=$(kthread_pid)
sleep 600 &
live=$!
t_bg "$live"
# a zombie: a child that exited and is not collected (its parent sleeps on)
bash -c 'sleep 0 & exec sleep 600' &
zparent=$!
t_bg "$zparent"
zombie=
for _ in $(seq 1 250); do
	zombie=$(ps -o pid= --ppid "$zparent" | tr -d ' ')
	[ -n "$zombie" ] && t_state_is "$zombie" Z && break
	sleep 0.02
done

for c in $pid_cmds; do
	# shellcheck disable=SC2046
	expect "${c}_no_such_pid" 3 "no process with pid $nopid" "" -- "$M" "$c" -p "$nopid" $(extra "$c")
	if [ -n "$kt" ]; then
		expect "${c}_kernel_thread" 2 "is a kernel thread" "" -- "$M" "$c" -p "$kt" $(extra "$c")
	else
		skip "${c}_kernel_thread" "no kernel thread is visible in this PID namespace"
	fi
	if [ -n "$zombie" ] && t_state_is "$zombie" Z; then
		expect "${c}_zombie" 3 "is a zombie" "" -- "$M" "$c" -p "$zombie" $(extra "$c")
	else
		skip "${c}_zombie" "no zombie could be made"
	fi
done

# permission denied: as an unprivileged user against root's process; as root,
# on a process root may not read (a container's init), without "run as root"
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	for c in $pid_cmds; do
		[ "$c" = agent ] && continue # (its socket directory is root's)
		expect "${c}_permission_denied" 4 "Permission denied \(run as root or with CAP_SYS_PTRACE\)" "" -- \
			setpriv --reuid=65534 --regid=65534 --clear-groups "$M" "$c" -p "$live" $(extra "$c" | sed "s|$tmp|/tmp|")
	done
elif [ "$(id -u)" != 0 ]; then
	for c in $pid_cmds; do
		expect "${c}_permission_denied" 4 "run as root" "" -- "$M" "$c" -p 1 $(extra "$c")
	done
else
	skip permission_denied "setpriv (util-linux) is not installed"
fi
if [ "$(id -u)" = 0 ] && ! cat /proc/1/maps >/dev/null 2>&1; then
	for c in $pid_cmds; do
		expect "${c}_permission_denied_as_root" 4 "runs as root already" "run as root or" -- \
			"$M" "$c" -p 1 $(extra "$c")
	done
else
	skip permission_denied_as_root "root reads /proc/1/maps here: no process root may not read"
fi

# nothing seen: exit 0, and the output says so
expect writes_nothing_written 0 "" "" -- "$M" writes -p "$live" -d 0.5 -i 100
if timeout 30 "$M" faults -d 0.05 >/dev/null 2>&1; then
	expect faults_no_faults 0 "no page faults" "" -- "$M" faults -p "$live" -d 0.3
	# oom watches the whole machine: a kill elsewhere in these 0.3 s (a
	# test beside this one) is counted, still with exit 0
	expect oom_no_kills 0 "^[0-9]+ OOM kills? seen" "" -- "$M" oom -d 0.3
	expect leaks_no_leaks 0 "" "" -- "$M" leaks -p "$live" -d 0.3
	expect slab_quiet 0 "" "" -- "$M" slab -d 0.3
else
	skip tracers_nothing_seen "the eBPF tracers cannot run here ($(timeout 30 "$M" faults -d 0.05 2>&1 >/dev/null | tail -n 1))"
fi

# an input that is not there: 2, whatever comes after it
expect report_missing_input 2 "cannot read /nonexistent/in.jsonl" "" -- "$M" report /nonexistent/in.jsonl
expect migrate_model_missing_input 2 "cannot read /nonexistent/t.jsonl" "" -- \
	"$M" migrate-model /nonexistent/t.jsonl -b 0
expect restore_missing_images 2 "images directory /nonexistent/ck" "" -- "$M" restore -D /nonexistent/ck

t_done
