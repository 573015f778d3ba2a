#!/bin/bash
# The bash completion (scripts/bash-completion/memlens), sourced as
# bash-completion loads it, driven with COMP_WORDS/COMP_CWORD as readline
# does: the commands of `memlens --help`; for every command exactly the
# options of its --help; process IDs after -p/--pid and for a bare number
# where a command takes -p; `memlens help` completes commands; file names after
# -o FILE; a command after --. Once with bash-completion's helpers loaded,
# once without them (the script's own fallbacks).
set -u
cd "$(dirname "$0")/../.." || exit 1
M=${MEMLENS:-$PWD/build/memlens}
COMPLETION=${COMPLETION:-$PWD/scripts/bash-completion/memlens}
. tests/lib.bash
t_tmpdir completion-test

# the memlens under test, found as "memlens" on PATH
mkdir -p "$tmp/bin" && ln -s "$M" "$tmp/bin/memlens"

# comp LOADER WORD...: the completions of the command line WORD... (the last
# word is the one being completed), one per line, sorted
comp() {
	local loader=$1
	shift
	PATH=$tmp/bin:$PATH bash --norc --noprofile -c '
		[ -n "$1" ] && source "$1"
		source "$2" || exit 1
		shift 2
		COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
		COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}; COMP_TYPE=9; COMP_KEY=9
		COMPREPLY=()
		_memlens memlens "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
		printf "%s\n" "${COMPREPLY[@]}"' _ "$loader" "$COMPLETION" "$@" 2>/dev/null | sort -u
}

# the commands and options as the --help texts print them
"$M" --help | awk '/^commands:/{on=1; next} on && /^  [a-z]/{print $1} on && /^$/{on=0}' |
	sort -u >"$tmp/cmds"
# and help (memlens help COMMAND)
{ cat "$tmp/cmds"; echo help; } | sort -u >"$tmp/words"
help_opts() {	# $1: command: the long options of its option column
	"$M" "$1" --help | grep -oE '^ {1,8}(-[a-zA-Z], )?--[a-z][a-z0-9-]*' | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u
}

sleep 600 &
sleeper=$!
t_bg "$sleeper"

run_checks() {	# $1: label, $2: file to source first ("" for none)
	local label=$1 loader=$2 c bad= got
	comp "$loader" memlens "" | grep -v '^--' >"$tmp/got"
	if [ -s "$tmp/cmds" ] && diff -q "$tmp/words" "$tmp/got" >/dev/null; then
		ok "${label}_commands"
	else
		notok "${label}_commands" "$(diff "$tmp/words" "$tmp/got" | head -n 5 | tr '\n' ' ')"
	fi
	comp "$loader" memlens help "" >"$tmp/got"
	diff -q "$tmp/cmds" "$tmp/got" >/dev/null && ok "${label}_help_command" ||
		notok "${label}_help_command" "$(diff "$tmp/cmds" "$tmp/got" | head -n 5 | tr '\n' ' ')"
	# a PID alone where the command takes -p (memlens snapshot 1234)
	comp "$loader" memlens snapshot "${sleeper:0:1}" >"$tmp/pids"
	grep -qx "$sleeper" "$tmp/pids" && ok "${label}_bare_pid" ||
		notok "${label}_bare_pid" "no pid $sleeper among: $(head -c 200 "$tmp/pids")"
	got=$(comp "$loader" memlens report 1)
	[[ $got != *"$sleeper"* ]] && ok "${label}_no_pid_where_no_p" ||
		notok "${label}_no_pid_where_no_p" "report 1 -> pids"
	got=$(comp "$loader" memlens sn)
	[ "$got" = snapshot ] && ok "${label}_command_prefix" || notok "${label}_command_prefix" "sn -> $got"

	for c in $(cat "$tmp/cmds"); do
		help_opts "$c" >"$tmp/want"
		comp "$loader" memlens "$c" -- | sed -n '/^--/p' >"$tmp/got"
		if [ ! -s "$tmp/want" ] || ! diff -q "$tmp/want" "$tmp/got" >/dev/null; then
			bad="$bad $c: $(diff "$tmp/want" "$tmp/got" | grep '^[<>]' | head -n 4 | tr '\n' ' ');"
		fi
	done
	[ -z "$bad" ] && ok "${label}_options_of_every_command" || notok "${label}_options_of_every_command" "$bad"

	for w in "-p" "--pid"; do
		comp "$loader" memlens writes "$w" "" >"$tmp/pids"
		if grep -qx "$sleeper" "$tmp/pids" && grep -qx 1 "$tmp/pids" && ! grep -qv '^[0-9][0-9]*$' "$tmp/pids"; then
			ok "${label}_pids_after_$w"
		else
			notok "${label}_pids_after_$w" "no pid $sleeper among: $(head -c 200 "$tmp/pids")"
		fi
	done
	got=$(comp "$loader" memlens agent --pid "$sleeper")
	[ "$got" = "$sleeper" ] && ok "${label}_agent_pid" || notok "${label}_agent_pid" "$got"

	touch "$tmp/out-file.jsonl"
	got=$(comp "$loader" memlens writes -o "$tmp/out-")
	[ "$got" = "$tmp/out-file.jsonl" ] && ok "${label}_file_after_output" ||
		notok "${label}_file_after_output" "-o $tmp/out- -> $got"
	got=$(comp "$loader" memlens writes -i "")
	[ -z "$got" ] && ok "${label}_nothing_after_interval" || notok "${label}_nothing_after_interval" "$got"

	comp "$loader" memlens writes -d 5 -- bas >"$tmp/cmd"
	grep -qx bash "$tmp/cmd" && ok "${label}_command_after_dashdash" ||
		notok "${label}_command_after_dashdash" "-- bas -> $(head -c 200 "$tmp/cmd")"
}

if [ -f /usr/share/bash-completion/bash_completion ]; then
	run_checks bash_completion /usr/share/bash-completion/bash_completion
else
	skip bash_completion "bash-completion is not installed (scripts/packages/docs.txt)"
fi
run_checks plain ""
