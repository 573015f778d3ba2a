#!/bin/bash
# What people read: every command's default text output fits 80 columns
# when stdout is not a terminal and COLUMNS is unset; sizes in one unit per
# table; a wider COLUMNS widens; on a terminal (a pseudo-terminal here),
# snapshot, writes, slab and leaks redraw a live view, q and Ctrl-C end it
# with status 0 and the terminal restored; --batch keeps the plain output;
# writes -q is quiet: its summary goes only to -o FILE.
. "$(dirname "$0")/bpf_common.bash"
unset COLUMNS
M=$MEMLENS W=$WORKLOADS

# widest FILE: the length of its longest line
widest() { awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }' "$1"; }

# fits NAME FILE: ok when no line of FILE is wider than 80 columns
fits() {
	local w
	w=$(widest "$2")
	if [ ! -s "$2" ]; then
		notok "$1" "no output"
	elif [ "$w" -le 80 ]; then
		ok "$1 (widest line $w, $(wc -l <"$2") lines)"
	else
		notok "$1" "a line of $w columns: $(awk 'length($0) > 80' "$2" | head -2)"
	fi
}

# a target that runs until killed: paced, so with nobody profiling it writes
# its buffer once and then holds still (what the views show of it does not
# depend on how far a loaded machine let it get)
"$W/memwrite" -P -s 600 >"$T_TMP/mw.out" 2>&1 &
MW=$!
T_BG+=("$MW")
wait_for_line "$T_TMP/mw.out" "first pass written" 120

# --- 80 columns, one unit ---
"$M" snapshot -p $MW >"$T_TMP/snap.txt" 2>"$T_TMP/snap.err"
fits snapshot_80_columns "$T_TMP/snap.txt"

# the region table: every size column a plain number of KiB (the header says the unit)
if grep -q '^regions (sizes in KiB):' "$T_TMP/snap.txt" &&
	awk '/^ADDRESS/ { t = 1; next } t && (NF == 0 || /^\(/) { exit } t && /^ / { next } t { n = NF; if ($n !~ /^[0-9]+$/) n--; for (i = 4; i <= n; i++) if ($i !~ /^[0-9]+$/) bad++ ; rows++ }
	     END { exit !(rows > 5 && bad == 0) }' "$T_TMP/snap.txt" &&
	grep -q '^by region kind (sizes in KiB):' "$T_TMP/snap.txt"; then
	ok snapshot_one_unit_per_table
else
	notok snapshot_one_unit_per_table "$(head -20 "$T_TMP/snap.txt")"
fi
# the mapped file's basename, not its path (the path is in --json)
if awk '/^ADDRESS/ { t = 1; next } t && NF == 0 { exit } t && $NF ~ /\// { bad++ } t && $NF == "libc.so.6" { libc++ }
	END { exit !(libc > 0 && bad == 0) }' "$T_TMP/snap.txt" &&
	"$M" snapshot -p $MW --json | python3 -c 'import json,sys; d=json.loads(sys.stdin.readline()); assert any(r["path"].startswith("/") and r["path"].endswith("libc.so.6") for r in d["regions"])'; then
	ok snapshot_basenames_paths_in_json
else
	notok snapshot_basenames_paths_in_json "$(grep libc "$T_TMP/snap.txt" | head -3)"
fi

# --pages: more columns than fit; left out with a note, and shown when COLUMNS is wide
"$M" snapshot -p $MW --pages >"$T_TMP/pages.txt" 2>&1
COLUMNS=200 "$M" snapshot -p $MW --pages >"$T_TMP/pages200.txt" 2>&1
if [ "$(widest "$T_TMP/pages.txt")" -le 80 ] && grep -q 'left out to fit 80 columns' "$T_TMP/pages.txt" &&
	grep -q '^ADDRESS .* DIRTY .* SHARED MAPPING' "$T_TMP/pages200.txt" &&
	[ "$(widest "$T_TMP/pages200.txt")" -gt 80 ] && ! grep -q 'left out' "$T_TMP/pages200.txt"; then
	ok snapshot_pages_fit_or_widen
else
	notok snapshot_pages_fit_or_widen "widths $(widest "$T_TMP/pages.txt") and $(widest "$T_TMP/pages200.txt"): $(grep -m2 'ADDRESS\|left out' "$T_TMP/pages.txt" "$T_TMP/pages200.txt")"
fi

# periodic: one compact line per cycle under one header
"$M" snapshot -p $MW -i 50 -n 6 --writes >"$T_TMP/per.txt" 2>&1
if [ "$(grep -c '^ *[0-9]\+ \+[0-9.]\+ \+[0-9.]\+ ' "$T_TMP/per.txt")" = 6 ] &&
	[ "$(grep -c '^CYCLE ' "$T_TMP/per.txt")" = 1 ] && grep -q 'WRITN' "$T_TMP/per.txt"; then
	fits snapshot_periodic_one_line_per_cycle "$T_TMP/per.txt"
else
	notok snapshot_periodic_one_line_per_cycle "$(head -12 "$T_TMP/per.txt")"
fi

"$M" check >"$T_TMP/check.txt" 2>&1
fits check_80_columns "$T_TMP/check.txt"

"$M" writes -p $MW -d 2.5 -i 500 >"$T_TMP/writes.txt" 2>"$T_TMP/writes.err"
fits writes_80_columns "$T_TMP/writes.txt"
if grep -qE '^  sizes in KiB[:;]' "$T_TMP/writes.txt" &&
	awk '/^  ADDRESS/ { t = 1; next } /^  (dirty|hot ranges):/ { t = 0 } t { if ($3 !~ /^[0-9]+$/ || $4 !~ /^[0-9]+$/) bad++; rows++ }
	     END { exit !(rows > 0 && bad == 0) }' "$T_TMP/writes.txt"; then
	ok writes_one_unit_per_table
else
	notok writes_one_unit_per_table "$(head -12 "$T_TMP/writes.txt")"
fi

# -q: nothing on the terminal; the summary only, in -o FILE
"$M" writes -q -p $MW -d 1 -i 200 -o "$T_TMP/q.txt" >"$T_TMP/q.out" 2>"$T_TMP/q.err"
if [ ! -s "$T_TMP/q.out" ] && [ ! -s "$T_TMP/q.err" ] &&
	grep -q "^summary: pid $MW" "$T_TMP/q.txt" && ! grep -q '^interval' "$T_TMP/q.txt"; then
	ok writes_quiet_summary_to_file_only
else
	notok writes_quiet_summary_to_file_only "$(cat "$T_TMP/q.out" "$T_TMP/q.err" "$T_TMP/q.txt")"
fi

# the tracers (eBPF: root and BTF)
if [ "$(id -u)" != 0 ] || [ ! -r /sys/kernel/btf/vmlinux ]; then
	skip tracers_80_columns "needs root and kernel BTF (/sys/kernel/btf/vmlinux)"
	BPF=
else
	BPF=1
	"$M" faults -d 1 -i 400 -- "$W/faultgen" gup 16 >"$T_TMP/faults.txt" 2>/dev/null
	grep -q '^COMM ' "$T_TMP/faults.txt" && fits faults_80_columns "$T_TMP/faults.txt" ||
		notok faults_80_columns "$(cat "$T_TMP/faults.txt")"
	"$M" slab -d 1.2 -i 500 --top 0 --slabinfo >"$T_TMP/slab.txt" 2>/dev/null
	grep -q '^CACHE ' "$T_TMP/slab.txt" && fits slab_80_columns "$T_TMP/slab.txt" ||
		notok slab_80_columns "$(head "$T_TMP/slab.txt")"
	"$M" leaks -i 300 -- "$W/leaky" 500 >"$T_TMP/leaks.txt" 2>/dev/null
	grep -q 'outstanding: 500 blocks' "$T_TMP/leaks.txt" && fits leaks_80_columns "$T_TMP/leaks.txt" ||
		notok leaks_80_columns "$(cat "$T_TMP/leaks.txt")"
fi

# migrate-model: the policy table
"$M" writes -p $MW -d 2 -i 250 --record "$T_TMP/rec.jsonl" -q >/dev/null 2>&1
"$M" migrate-model "$T_TMP/rec.jsonl" --bandwidth 100 --round-interval 0.5 >"$T_TMP/mm.txt" 2>&1
fits migrate_model_80_columns "$T_TMP/mm.txt"

# checkpoint: the dump report (a session leader: CRIU dumps it without --shell-job)
CRIU_BIN=${MEMLENS_CRIU:-$(cd "$(dirname "$0")/../.." && pwd)/.cache/criu/bin/criu}
if [ ! -x "$CRIU_BIN" ]; then
	skip checkpoint_80_columns "no CRIU at $CRIU_BIN (scripts/ensure-criu.sh builds one)"
else
	setsid "$W/memwrite" -s 120 </dev/null >"$T_TMP/ck.out" 2>&1 &
	CK=$!
	T_BG+=("$CK")
	for _ in $(seq 1 100); do grep -qs writes "$T_TMP/ck.out" && break; sleep 0.05; done
	MEMLENS_CRIU=$CRIU_BIN timeout 180 "$M" checkpoint -p $CK -D "$T_TMP/ck" -R -d 1 \
		>"$T_TMP/ck.txt" 2>"$T_TMP/ck.err"
	if grep -q "^dump of pid $CK into" "$T_TMP/ck.txt"; then
		fits checkpoint_80_columns "$T_TMP/ck.txt"
	else
		notok checkpoint_80_columns "$(cat "$T_TMP/ck.txt" "$T_TMP/ck.err" | tail -5)"
	fi
	kill $CK 2>/dev/null
fi

# --- the live view, on a pseudo-terminal ---
# ontty KEY CMD...: run CMD on a pty of 30x100; once it has drawn two
# frames, type KEY (q, or ^C); print "rc=N frames=N restored=0|1 batch=0|1"
ontty() {
	python3 - "$@" <<'PY'
import os, pty, select, signal, struct, sys, termios, fcntl, time
key, cmd = sys.argv[1], sys.argv[2:]
pid, fd = pty.fork()
if pid == 0:
    os.environ.pop("COLUMNS", None)
    os.environ["TERM"] = "xterm"
    os.execvp(cmd[0], cmd)
fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
out, sent, deadline = b"", False, time.time() + 60
while time.time() < deadline:
    r, _, _ = select.select([fd], [], [], 0.2)
    if r:
        try:
            d = os.read(fd, 65536)
        except OSError:
            break
        if not d:
            break
        out += d
    if not sent and (out.count(b"\x1b[H\x1b[2J") >= 2 or (key == "batch" and out.count(b"\n") >= 8)):
        os.write(fd, b"\x03" if key in ("ctrl-c", "batch") else b"q")
        sent = True
else:
    os.kill(pid, signal.SIGKILL)
_, st = os.waitpid(pid, 0)
last = out.rfind(b"\x1b[H\x1b[2J")
restored = int(last >= 0 and out.find(b"\x1b[?25h", last) > 0 and out.find(b"\x1b[?1049l", last) > 0)
open(os.environ["T_TMP"] + "/tty.out", "wb").write(out)
print("rc=%d frames=%d restored=%d sent=%d" % (os.waitstatus_to_exitcode(st), out.count(b"\x1b[H\x1b[2J"), restored, sent))
PY
}
export T_TMP

# live NAME KEY CMD...: the view redrawn, KEY ends it with 0, the terminal restored
live() {
	local name=$1 key=$2 res
	shift 2
	res=$(ontty "$key" "$@")
	if [[ "$res" =~ ^rc=0\ frames=([0-9]+)\ restored=1\ sent=1$ ]] && [ "${BASH_REMATCH[1]}" -ge 2 ]; then
		ok "$name ($res)"
	else
		notok "$name" "$res: $(tail -c 600 "$T_TMP/tty.out" | tr -d '\033' | tail -5)"
	fi
}

live snapshot_live_q_quits q "$M" snapshot -p $MW -i 100
live snapshot_live_ctrl_c ctrl-c "$M" snapshot -p $MW -i 100
live writes_live_q_quits q "$M" writes -p $MW -i 200
if [ -n "$BPF" ]; then
	live slab_live_q_quits q "$M" slab -i 300
	live slab_live_ctrl_c ctrl-c "$M" slab -i 300
	live leaks_live_q_quits q "$M" leaks -p $MW -i 300
else
	skip tracers_live "needs root and kernel BTF (/sys/kernel/btf/vmlinux)"
fi

# --batch on a terminal: the lines, no redrawing
res=$(ontty batch "$M" snapshot -p $MW -i 50 --batch)
if [[ "$res" =~ ^rc=0\ frames=0 ]] && grep -q '^CYCLE ' <(tr -d '\r' <"$T_TMP/tty.out"); then
	ok "snapshot_batch_on_a_terminal ($res)"
else
	notok snapshot_batch_on_a_terminal "$res"
fi

kill $MW 2>/dev/null
wait $MW 2>/dev/null
exit $((T_FAILS > 0))
