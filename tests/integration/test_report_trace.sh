#!/bin/bash
# memlens report on what the tracers and repeated runs write: real `memlens
# leaks`, `slab`, `oom` (a 64 MiB memory cgroup's hog, killed twice) and
# `faults -i` runs, and three `snapshot -- CMD` runs of one command that
# peaks and then frees its memory. Rendered by a real browser (Debian's
# headless chromium): every number checked in the DOM it parsed equals the
# JSON (tests/report/check_trace_dom.py), and the screenshot is not blank.
# REPORT_SCREENSHOT=FILE keeps the screenshot (doc/report-trace.png).
. "$(dirname "$0")/bpf_common.bash"
cd "$(dirname "$0")/../.."
F=tests/report
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
browse() {	# html, what (--screenshot=PNG | --dump-dom), window height
	local prof
	prof=$(mktemp -d "$T_TMP/profile.XXXXXX")
	timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic \
		--no-first-run --disable-background-networking --disable-component-update \
		--disable-sync --hide-scrollbars --user-data-dir="$prof" --window-size=1100,"$3" \
		--enable-logging=stderr --v=0 "$2" "file://$(realpath "$1")" 2>"$T_TMP/chromium.err"
	rm -rf "$prof"
}
inputs=()
kinds=()
kills_seen() { [ "$(grep -c '"type":"oom_kill"' "$TR_OUT")" -ge "$1" ]; }

# --- leaks: blocks of four sizes from six call paths that branch (leaktree)
if "$MEMLENS" leaks --json -T 100 -i 100 -- "$WORKLOADS/leaktree" \
	>"$T_TMP/leaks.jsonl" 2>"$T_TMP/leaks.err" && grep -q '"type":"leaks"' "$T_TMP/leaks.jsonl"; then
	inputs+=("$T_TMP/leaks.jsonl"); kinds+=("leaks:$T_TMP/leaks.jsonl")
else
	skip report_leaks "memlens leaks could not trace here: $(tail -1 "$T_TMP/leaks.err")"
fi

# --- slab: intervals while a tree of files is made and removed
if tracer_start slab slab --json -i 200 -T 500; then
	d=$(mktemp -d /var/tmp/memlens-report-slab.XXXXXX)
	for i in $(seq 1 20); do
		mkdir "$d/$i" && (cd "$d/$i" && touch $(seq -f 'f%g' 1 200))
	done
	rm -rf "$d"
	wait_for_line "$TR_OUT" '"type":"slab_interval"' 10
	tracer_stop
	inputs+=("$TR_OUT"); kinds+=("slab:$TR_OUT")
else
	skip report_slab "memlens slab could not trace here: $(tail -1 "$TR_ERR")"
fi

# --- oom: a hog in a 64 MiB memory cgroup, killed, twice
CG=""
if [ -f /sys/fs/cgroup/cgroup.controllers ] && grep -qw memory /sys/fs/cgroup/cgroup.controllers; then
	CG=/sys/fs/cgroup/memlens-report-oom.$$
	grep -qw memory /sys/fs/cgroup/cgroup.subtree_control ||
		echo +memory >/sys/fs/cgroup/cgroup.subtree_control
	mkdir "$CG" && echo 64M >"$CG/memory.max" || CG=""
	[ -n "$CG" ] && [ -f "$CG/memory.swap.max" ] && echo 0 >"$CG/memory.swap.max"
elif [ -d /sys/fs/cgroup/memory ]; then
	CG=/sys/fs/cgroup/memory/memlens-report-oom.$$
	mkdir "$CG" && echo 64M >"$CG/memory.limit_in_bytes" || CG=""
	[ -n "$CG" ] && [ -f "$CG/memory.memsw.limit_in_bytes" ] &&
		echo 64M >"$CG/memory.memsw.limit_in_bytes"
fi
if [ -z "$CG" ]; then
	skip report_oom "no memory cgroup controller to create a 64 MiB cgroup in"
elif tracer_start oom oom --json -i 200; then
	for i in 1 2; do
		sh -c "echo \$\$ >$CG/cgroup.procs && exec $WORKLOADS/hog 1024" 2>/dev/null
		t_wait 10 kills_seen $i
	done
	t_wait 10 kills_seen 2
	tracer_stop
	inputs+=("$TR_OUT"); kinds+=("oom:$TR_OUT")
else
	skip report_oom "memlens oom could not trace here: $(tail -1 "$TR_ERR")"
fi
[ -n "$CG" ] && rmdir "$CG" 2>/dev/null

# --- faults over time
if timeout 30 "$MEMLENS" faults --json -i 200 -d 1 >"$T_TMP/faults.jsonl" 2>"$T_TMP/faults.err" &&
	grep -q '"type":"faults_interval"' "$T_TMP/faults.jsonl"; then
	inputs+=("$T_TMP/faults.jsonl"); kinds+=("faults:$T_TMP/faults.jsonl")
else
	skip report_faults_interval "memlens faults could not trace here: $(tail -1 "$T_TMP/faults.err")"
fi

# --- three runs of one command: 96 MiB allocated, held, freed, then an idle tail
PY=$(readlink -f /usr/bin/python3 2>/dev/null || true)
if [ -x "$PY" ]; then
	for i in 1 2 3; do
		"$MEMLENS" snapshot -i 50 --json -- "$PY" -c \
			'import time; b = bytearray(96 << 20); time.sleep(0.4); del b; time.sleep(0.4)' \
			>>"$T_TMP/runs.jsonl" 2>>"$T_TMP/runs.err"
	done
	check report_runs_recorded '[ "$(grep -c "\"type\":\"summary\"" "$T_TMP/runs.jsonl")" = 3 ]' \
		"$(tail -3 "$T_TMP/runs.err")"
	inputs+=("$T_TMP/runs.jsonl"); kinds+=("runs:$T_TMP/runs.jsonl")
else
	skip report_runs "no /usr/bin/python3 to run three times"
fi

"$MEMLENS" report "${inputs[@]}" --title "memlens report: tracers and runs" \
	-o "$T_TMP/trace.html" >"$T_TMP/report.out" 2>"$T_TMP/report.err"
rc=$?
check report_trace_written '[ $rc = 0 ] && grep -q "wrote .*trace.html" "$T_TMP/report.out"' \
	"$(cat "$T_TMP/report.err")"
check report_trace_self_contained '! grep -qi -e "<script" -e "src=" -e "href=" "$T_TMP/trace.html"'
# the same input, as it was before report read it: no type is refused
check report_trace_no_unknown_type '! grep -q "unknown type" "$T_TMP/report.err"'

if [ -z "$CHROMIUM" ]; then
	skip report_trace_browser "chromium is not installed (scripts/install-deps.sh installs it)"
	t_done
	exit
fi
browse "$T_TMP/trace.html" --dump-dom 1000 >"$T_TMP/trace.dom"
check report_trace_no_console_errors '[ -s "$T_TMP/trace.dom" ] && ! grep -q ":CONSOLE" "$T_TMP/chromium.err"' \
	"$(grep ":CONSOLE" "$T_TMP/chromium.err" | head -5)"
for k in "${kinds[@]}"; do
	kind=${k%%:*}
	if out=$(python3 "$F/check_trace_dom.py" "$T_TMP/trace.dom" "$kind" "${k#*:}" 2>&1); then
		ok "report_${kind}_dom_equals_json"
		echo "#   $kind: $out"
	else
		notok "report_${kind}_dom_equals_json" "$out"
	fi
done
browse "$T_TMP/trace.html" --screenshot="$T_TMP/trace.png" 5800
read -r w h colours ink <<<"$(python3 "$F/pngstat.py" "$T_TMP/trace.png" 2>&1)"
check report_trace_png '[ "${w:-0}" = 1100 ] && [ "${colours:-0}" -ge 40 ] && awk "BEGIN{exit !(${ink:-0} > 0.05)}"' \
	"png: $w $h colours=$colours ink=$ink"
[ -n "${REPORT_SCREENSHOT:-}" ] && cp "$T_TMP/trace.png" "$REPORT_SCREENSHOT"
t_done
