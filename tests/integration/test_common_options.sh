#!/bin/bash
# The common options, as a user gives them: the README's table of which
# command takes which is the one scripts/options-table.sh generates from
# the option tables; an option that takes one value, given twice, is a
# usage error (exit 2) naming both values; -q is quiet on every command
# that takes it (nothing on stdout or stderr, exit 0; with -o FILE the
# output is in FILE); -o FILE on check, migrate-model, checkpoint and
# restore gets what stdout would have.
set -u
. "$(dirname "$0")/../lib.bash"
cd "$(dirname "$0")/../.." || exit 1
M=${MEMLENS:?} W=${WORKLOADS:?}
t_tmpdir common-options

# --- the README's table is the generated one ---------------------------------
MEMLENS=$M scripts/options-table.sh --print >"$tmp/table" 2>"$tmp/table.err"
awk '/<!-- options-table:begin/ { on = 1; next } /<!-- options-table:end/ { on = 0 } on' \
	README.md >"$tmp/readme-table"
# without memlens-agent (its packages are optional) the table has no agent row
grep -q '^| agent ' "$tmp/table" || sed -i '/^| agent /d' "$tmp/readme-table"
if [ -s "$tmp/table" ] && diff -u "$tmp/readme-table" "$tmp/table" >"$tmp/diff"; then
	ok readme_options_table_generated
else
	notok readme_options_table_generated "run make options-table; $(cat "$tmp/diff" "$tmp/table.err")"
fi

# the commands and what they take, from the table just printed
takes() { # CMD LONG: does CMD take --LONG (per the option table)?
	"$M" "$1" --list-options 2>/dev/null | awk -v n="$2" '$2 == n { f = 1 } END { exit !f }'
}
cmds=$(awk -F' \\| ' 'NR > 2 { sub(/^\| /, "", $1); print $1 }' "$tmp/table")

# --- a single-value option given twice: exit 2, both values named -----------
bad=
for c in $cmds; do
	for o in "pid 4000001 4000002" "duration 5 7" "interval 100 200" "output $tmp/a $tmp/b"; do
		set -- $o
		takes "$c" "$1" || continue
		"$M" "$c" "--$1" "$2" "--$1" "$3" >/dev/null 2>"$tmp/twice.err"
		rc=$?
		first=$(head -1 "$tmp/twice.err")
		if [ $rc != 2 ] || [[ $first != *"'$2'"*"'$3'"* ]]; then
			bad+=" $c --$1: exit $rc, '$first';"
		fi
	done
done
"$M" snapshot -p 4000001 4000002 >/dev/null 2>"$tmp/bare.err"
rc=$?
[ $rc = 2 ] && grep -q "'4000001' and as '4000002'" "$tmp/bare.err" ||
	bad+=" snapshot PID PID: exit $rc, $(head -1 "$tmp/bare.err");"
check option_twice_names_both '[ -z "$bad" ]' "$bad"
# a repeatable option stays repeatable
"$M" checkpoint --criu-opt --file-locks --criu-opt --ext-unix-sk -h >/dev/null 2>"$tmp/rep.err"
check_rc criu_opt_repeatable $? "$(cat "$tmp/rep.err")"

# --- -q: nothing on the terminal -------------------------------------------
"$W/memwrite" -m 8 >"$tmp/mw.out" 2>&1 &
MW=$!
t_bg $MW
t_wait 10 grep -q "memwrite pid" "$tmp/mw.out"
bpf=
[ "$(id -u)" = 0 ] && [ -r /sys/kernel/btf/vmlinux ] && bpf=1
quiet_run() { # NAME CMD ARGS...: run it; stdout and stderr must be empty, exit 0
	local n=$1
	shift
	"$M" "$@" >"$tmp/$n.out" 2>"$tmp/$n.err"
	local rc=$?
	if [ $rc = 0 ] && [ ! -s "$tmp/$n.out" ] && [ ! -s "$tmp/$n.err" ]; then
		ok "quiet_$n"
	else
		notok "quiet_$n" "exit $rc" "$(head -c 600 "$tmp/$n.out")" "$(head -c 600 "$tmp/$n.err")"
	fi
}
for c in $cmds; do
	takes "$c" quiet || continue
	case $c in
	writes) quiet_run writes writes -q -p $MW -d 1 -i 200 ;;
	snapshot) quiet_run snapshot snapshot -q -p $MW -i 50 -d 0.3 ;;
	faults | slab | leaks | oom)
		if [ -z "$bpf" ]; then
			skip "quiet_$c" "needs root and kernel BTF"
			continue
		fi
		case $c in
		faults | leaks) quiet_run $c $c -q -p $MW -d 0.5 ;;
		*) quiet_run $c $c -q -d 0.5 ;;
		esac
		;;
	*) notok "quiet_$c" "$c takes -q: add its case to this test" ;;
	esac
done
# -q with -o FILE: the summary is in FILE, the terminal stays empty
"$M" writes -q -p $MW -d 1 -i 200 -o "$tmp/wq.txt" >"$tmp/wq.out" 2>&1
check quiet_output_file_has_summary \
	'[ ! -s "$tmp/wq.out" ] && grep -q "^summary: pid $MW" "$tmp/wq.txt"' \
	"$(cat "$tmp/wq.out" "$tmp/wq.txt")"
"$M" snapshot -q -p $MW -i 50 -d 0.3 --json -o "$tmp/sq.json" >"$tmp/sq.out" 2>&1
check quiet_json_to_file '[ ! -s "$tmp/sq.out" ] && grep -q "\"type\":\"summary\"" "$tmp/sq.json"' \
	"$(cat "$tmp/sq.out")"

# --- -o FILE where it was missing ------------------------------------------
"$M" check --no-criu -o "$tmp/check.txt" >"$tmp/check.out" 2>"$tmp/check.err"
check check_output_file '[ ! -s "$tmp/check.out" ] && grep -q "pagemap_scan" "$tmp/check.txt"' \
	"$(cat "$tmp/check.out" "$tmp/check.err")"
"$M" writes -p $MW -d 2 -i 200 -q --record "$tmp/trace.jsonl" >/dev/null 2>&1
"$M" migrate-model "$tmp/trace.jsonl" -r 0.5 --json -o "$tmp/mm.json" >"$tmp/mm.out" 2>"$tmp/mm.err"
check migrate_model_output_file \
	'[ ! -s "$tmp/mm.out" ] && grep -q "\"type\":\"migrate_model\"" "$tmp/mm.json"' \
	"$(cat "$tmp/mm.out" "$tmp/mm.err" "$tmp/mm.json")"
"$M" restore -D "$tmp/no-such-images" -o "$tmp/r.txt" >"$tmp/r.out" 2>"$tmp/r.err"
check restore_output_option_parsed '[ ! -s "$tmp/r.out" ] && ! grep -q "unknown option" "$tmp/r.err"' \
	"$(cat "$tmp/r.err")"
# --- --max-error: wherever --max-overhead is, the same bounds and message --
bad=
n=0
for c in $cmds; do
	takes "$c" max-overhead || continue
	takes "$c" max-error || { bad+=" $c takes --max-overhead, not --max-error;"; continue; }
	n=$((n + 1))
	for v in 0 0.05 101 nan x; do
		"$M" "$c" -p 4000001 --max-error "$v" >/dev/null 2>"$tmp/maxerr.err"
		rc=$?
		first=$(head -1 "$tmp/maxerr.err")
		if [ $rc != 2 ] || [[ $first != *"--max-error PCT must be a number from 0.1 to 100, not '$v'"* ]]; then
			bad+=" $c --max-error $v: exit $rc, '$first';"
		fi
	done
done
check max_error_where_max_overhead '[ -z "$bad" ] && [ $n -ge 3 ]' "$n commands;$bad"
t_exit
