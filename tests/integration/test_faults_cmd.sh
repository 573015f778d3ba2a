#!/bin/bash
# memlens faults -- CMD as a user runs it: CMD's standard output and the
# report share the terminal, so CMD's output comes whole, first, and the
# report after it (interval blocks included), never interleaved; with -o
# FILE CMD keeps stdout to itself. Nothing seen is one line, with -i one
# line per interval: no histograms of nothing.
. "$(dirname "$0")/bpf_common.bash"
M=$MEMLENS
if [ "$(id -u)" != 0 ] || [ ! -r /sys/kernel/btf/vmlinux ]; then
	skip faults_cmd "needs root and kernel BTF (/sys/kernel/btf/vmlinux)"
	t_done
	exit
fi

# CMD prints, waits for the tracer's first interval block to be due, prints again
prog='echo cmd-line-1; sleep 0.4; echo cmd-line-2; sleep 0.4; echo cmd-line-3'
"$M" faults -i 100 -- sh -c "$prog" >"$T_TMP/mixed.out" 2>"$T_TMP/mixed.err"
rc=$?
first_report=$(grep -n -m1 -e '^--- ' -e '^COMM ' "$T_TMP/mixed.out" | cut -d: -f1)
last_cmd=$(grep -n 'cmd-line-3' "$T_TMP/mixed.out" | cut -d: -f1)
check cmd_output_before_report \
	'[ $rc = 0 ] && [ "$(head -3 "$T_TMP/mixed.out" | tr "\n" " ")" = "cmd-line-1 cmd-line-2 cmd-line-3 " ] && [ -n "$first_report" ] && [ "$first_report" -gt "$last_cmd" ]' \
	"exit $rc" "$(head -20 "$T_TMP/mixed.out")"
check report_has_intervals_and_total \
	'[ "$(grep -c "^--- " "$T_TMP/mixed.out")" -ge 2 ] && grep -q "^COMM " "$T_TMP/mixed.out"' \
	"$(cat "$T_TMP/mixed.out")"

# -o FILE: stdout is CMD's alone
"$M" faults -o "$T_TMP/rep.txt" -- sh -c "$prog" >"$T_TMP/own.out" 2>/dev/null
check cmd_keeps_stdout_with_o \
	'[ "$(cat "$T_TMP/own.out" | tr "\n" " ")" = "cmd-line-1 cmd-line-2 cmd-line-3 " ] && grep -q "^COMM " "$T_TMP/rep.txt"' \
	"$(cat "$T_TMP/own.out")"

# nothing seen: one line (a process blocked in a read of a fifo faults no page)
mkfifo "$T_TMP/fifo"
sleep 300 >"$T_TMP/fifo" &
T_BG+=($!)
cat "$T_TMP/fifo" >/dev/null &
idle=$!
T_BG+=($idle)
in_pipe_read() { [ "$(cut -d' ' -f1 "/proc/$idle/syscall" 2>/dev/null)" = 0 ] && t_state_is "$idle" S; }
t_wait 10 in_pipe_read # blocked in read(): its buffer faulted in already
"$M" faults -p "$idle" -d 0.3 >"$T_TMP/none.out" 2>/dev/null
check no_faults_one_line \
	'[ "$(wc -l <"$T_TMP/none.out")" = 1 ] && grep -q "^no page faults by pid $idle" "$T_TMP/none.out"' \
	"$(cat "$T_TMP/none.out")"
"$M" faults -p "$idle" -d 0.5 -i 200 >"$T_TMP/none-i.out" 2>"$T_TMP/none-i.err"
check no_faults_interval_lines \
	'! grep -q "latency" "$T_TMP/none-i.out" && [ "$(grep -c "no page faults" "$T_TMP/none-i.out")" -ge 3 ]' \
	"$(cat "$T_TMP/none-i.out" "$T_TMP/none-i.err")"
t_done
