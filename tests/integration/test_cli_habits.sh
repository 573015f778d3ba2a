#!/bin/bash
# Habits a user brings from pmap and git, run as the user types them:
# `memlens snapshot PID` (a PID alone where a command takes -p), options
# after it, and the -p form giving the same answer; `memlens help CMD` and
# `memlens CMD help` printing CMD's --help; a mistyped command getting
# "did you mean" from the one command table; a PID after -- and a second
# -p refused with what to do; every -p command's --help saying so.
set -u
. "$(dirname "$0")/../lib.bash"
M=${MEMLENS:?}
t_tmpdir cli-habits

sleep 600 &
S=$!
t_bg "$S"

# 1. a bare PID is -p PID (snapshot, one cycle, JSON: the pid is in it)
"$M" snapshot "$S" -n 1 --json >"$tmp/bare.json" 2>"$tmp/bare.err"
rc=$?
check bare_pid '[ $rc = 0 ] && grep -q "\"pid\":$S[,}]" "$tmp/bare.json"' "rc=$rc" \
	"$(head -c 300 "$tmp/bare.err")"
"$M" snapshot -p "$S" -n 1 --json >"$tmp/p.json" 2>/dev/null
check bare_pid_same_as_p '[ "$(grep -c "\"type\"" "$tmp/bare.json")" = "$(grep -c "\"type\"" "$tmp/p.json")" ]'
# options before and after the PID
"$M" snapshot -n 1 "$S" --json >/dev/null 2>"$tmp/e"
rc1=$?
"$M" writes "$S" -d 0.2 -i 100 --json >/dev/null 2>"$tmp/e2"
rc2=$?
check bare_pid_options_around '[ $rc1 = 0 ] && [ $rc2 = 0 ]' "snapshot rc=$rc1 $(cat "$tmp/e")" \
	"writes rc=$rc2 $(cat "$tmp/e2")"
# a command without -- CMD: checkpoint takes the PID too (and then wants -D)
"$M" checkpoint "$S" 2>"$tmp/e"
rc=$?
check bare_pid_checkpoint '[ $rc = 2 ] && grep -q -- "-D DIR" "$tmp/e" && ! grep -q unexpected "$tmp/e"' \
	"rc=$rc $(cat "$tmp/e")"
# after -- a number is a command's name, and the message says how to mean the PID
"$M" snapshot -- "$S" 2>"$tmp/e"
rc=$?
check pid_after_dashdash '[ $rc = 127 ] && grep -q "leave out the --" "$tmp/e"' "rc=$rc $(cat "$tmp/e")"
# one process only
"$M" snapshot -p "$S" "$S" 2>"$tmp/e"
rc=$?
check second_pid_refused '[ $rc = 2 ] && grep -q "one process only" "$tmp/e" && grep -q "Try" "$tmp/e"' \
	"rc=$rc $(cat "$tmp/e")"
"$M" writes -p "$S" -p "$S" 2>"$tmp/e"
rc=$?
check second_p_refused '[ $rc = 2 ] && grep -q "given twice" "$tmp/e"' "rc=$rc $(cat "$tmp/e")"
# a command that takes no -p still refuses an operand
"$M" slab "$S" 2>"$tmp/e"
rc=$?
check no_pid_where_no_p '[ $rc = 2 ] && grep -q "unexpected argument" "$tmp/e"' "rc=$rc $(cat "$tmp/e")"

# 2. every command with -p says in its --help that a PID alone does
bad=
for c in $("$M" --help | awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 } on && /^$/ { on = 0 }'); do
	"$M" "$c" --list-options 2>/dev/null | grep -q '^p pid PID' || continue
	"$M" "$c" --help 2>/dev/null | tr -s ' \n' ' ' | grep -q "a PID alone means the same (memlens $c 1234)" ||
		bad+=" $c"
done
check help_says_bare_pid '[ -z "$bad" ]' "no sentence in:$bad"
"$M" --help | tr -s ' \n' ' ' | grep -q "'memlens snapshot 1234' is 'memlens snapshot -p 1234'"
check_rc main_help_says_bare_pid $?

# 3. help CMD and CMD help, as git's
"$M" writes --help >"$tmp/want" 2>&1
"$M" help writes >"$tmp/a" 2>&1
rc1=$?
"$M" writes help >"$tmp/b" 2>&1
rc2=$?
check help_cmd '[ $rc1 = 0 ] && cmp -s "$tmp/want" "$tmp/a"' "rc=$rc1 $(head -n 3 "$tmp/a")"
check cmd_help '[ $rc2 = 0 ] && cmp -s "$tmp/want" "$tmp/b"' "rc=$rc2 $(head -n 3 "$tmp/b")"
"$M" help >"$tmp/h" 2>&1
rc=$?
check help_alone '[ $rc = 0 ] && grep -q "^commands:" "$tmp/h"' "rc=$rc"
bad=
for c in $("$M" --help | awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 } on && /^$/ { on = 0 }'); do
	"$M" "$c" --help >"$tmp/want" 2>&1 || continue # (agent: without memlens-agent)
	"$M" help "$c" >"$tmp/a" 2>&1 && cmp -s "$tmp/want" "$tmp/a" || bad+=" $c"
done
check help_every_command '[ -z "$bad" ]' "differs:$bad"

# 4. did you mean: one edit, a swap, a beginning; nothing for what is far
dym() {	# NAME TYPED WANT
	local out rc
	out=$("$M" "$2" 2>&1)
	rc=$?
	if [ $rc = 2 ] && grep -q "unknown command '$2'; did you mean '$3'?" <<<"$out" &&
		grep -q "^Try 'memlens --help'" <<<"$out"; then
		ok "$1"
	else
		notok "$1" "rc=$rc $out"
	fi
}
dym did_you_mean_writes write writes
dym did_you_mean_swap fualts faults
dym did_you_mean_prefix snap snapshot
dym did_you_mean_model migrate-modle migrate-model
out=$("$M" xyzzy 2>&1)
rc=$?
check no_suggestion_far '[ $rc = 2 ] && grep -q "unknown command '"'"'xyzzy'"'"'" <<<"$out" && ! grep -q "did you mean" <<<"$out"' "rc=$rc $out"
out=$("$M" help write 2>&1)
rc=$?
check help_typo '[ $rc = 2 ] && grep -q "did you mean '"'"'writes'"'"'" <<<"$out"' "rc=$rc $out"

t_done
