#!/bin/bash
# memlens writes --tree on a real process tree: forktree's root and its
# children each write 64 private pages and the same 32 pages of one shared
# anonymous mapping every interval (paced against the profiler, -P, so CPU
# share does not matter; each also writes one shared page of its own, the
# pacing page). Every process must get its own row and regions with exact
# counts, the shared pages must count once in the tree's totals, a child
# that exits must stay in the rows marked exited without failing the run,
# and a child forked mid-run must be profiled from the next interval on.
# No timing is asserted: the test waits for states.
set -u
. "$(dirname "$0")/../lib.bash"
M=${MEMLENS:?} W=${WORKLOADS:?}
PY=${PYTHON:-python3}
t_tmpdir writes_tree

PRIV=64 SHARED=32
"$W/forktree" -c 2 -p $PRIV -s $SHARED -P >"$tmp/ft" &
root=$!
t_bg $root
t_at_exit "pkill -TERM -P $root 2>/dev/null"
# forktree has said N of its processes
said() { [ "$(grep -c '^forktree: pid ' "$tmp/ft" 2>/dev/null)" -ge "$1" ]; }
if ! wait_for_line "$tmp/ft" "first pass written" 20 || ! t_wait 20 said 3; then
	notok forktree_started "$(cat "$tmp/ft")"
	exit 1
fi

"$M" writes -p $root --tree -i 200 --json -o "$tmp/w.jsonl" --record "$tmp/rec.jsonl" \
	2>"$tmp/w.err" &
wr=$!
t_bg $wr

# state WHAT [PID]: is WHAT true of some interval written so far?
#   exact     every live process of forktree has its private pages and the
#             shared pages written exactly, and the shared pages count once
#   exited    PID is in the rows, marked exited, after an exact interval
#             of the others
#   profiled  PID (forked mid-run) has an exact interval
state() {
	$PY - "$tmp/w.jsonl" "$tmp/ft" $PRIV $SHARED "$@" <<'PY'
import json, re, sys
path, ft, priv, shared, what = sys.argv[1:6]
priv, shared = int(priv), int(shared)
pid = int(sys.argv[6]) if len(sys.argv) > 6 else 0
procs = {}
for l in open(ft):
    m = re.match(r"forktree: pid (\d+) private (0x[0-9a-f]+)-\S+ shared (0x[0-9a-f]+)-", l)
    if m:
        procs[int(m[1])] = (int(m[2], 16), int(m[3], 16))
iv = []
for l in open(path):
    try:
        j = json.loads(l)
    except ValueError:
        break  # the line being written
    if j["type"] == "interval":
        iv.append(j)
def dirty(j, p, addr):
    r = [r for r in j["regions"] if r["pid"] == p and int(r["start_addr"], 16) == addr]
    return r[0]["dirty_pages"] if r else None
def exact(j, p):
    a, s = procs[p]
    row = [r for r in j["processes"] if r["pid"] == p]
    return (row and row[0]["state"] == "profiled" and dirty(j, p, a) == priv and
            dirty(j, p, s) == shared and row[0]["shared_dirty_pages"] == shared + 1)
def all_exact(j):
    live = [r["pid"] for r in j["processes"] if r["state"] == "profiled"]
    if not j.get("tree") or set(live) - set(procs) or len(live) < 2:
        return False
    # the shared pages once, and each process's own pacing page
    return (all(exact(j, p) for p in live) and
            j["shared_dirty_pages"] == shared + len(live) and
            j["dirty"]["dirty_pages"] == j["shared_dirty_pages"] +
            sum(r["dirty_pages"] - r["shared_dirty_pages"] for r in j["processes"]))
ok = False
if what == "exact":
    ok = any(all_exact(j) and len(j["processes"]) == 3 for j in iv)
elif what == "exited":
    ok = any(all_exact(j) and any(r["pid"] == pid and r["state"] == "exited"
                                  for r in j["processes"]) for j in iv)
elif what == "profiled":
    ok = any(all_exact(j) and exact(j, pid) for j in iv)
sys.exit(0 if ok else 1)
PY
}

pids=$(awk '/^forktree: pid / {print $3}' "$tmp/ft")
child1=$(echo "$pids" | grep -vx $root | head -n1)
if t_wait 60 state exact; then
	ok tree_exact_per_process
else
	notok tree_exact_per_process "pids: $pids" "$(tail -n 2 "$tmp/w.jsonl" | cut -c1-1500)" \
		"$(cat "$tmp/w.err")"
fi

# a child exits mid-run: marked exited, the run goes on
kill -TERM $child1
if t_wait 60 state exited $child1; then
	ok child_exit_marked
else
	notok child_exit_marked "$(tail -n 1 "$tmp/w.jsonl" | cut -c1-1500)" "$(cat "$tmp/w.err")"
fi
check writes_survives_child_exit 'kill -0 $wr' "$(cat "$tmp/w.err")"

# a child forked mid-run: profiled from the next interval on
kill -USR1 $root
if t_wait 20 said 4; then
	child3=$(awk '/^forktree: pid / {print $3}' "$tmp/ft" | tail -n1)
	if t_wait 60 state profiled $child3; then
		ok forked_child_profiled
	else
		notok forked_child_profiled "pid $child3" "$(tail -n 1 "$tmp/w.jsonl" | cut -c1-1500)"
	fi
else
	notok forked_child_profiled "forktree did not fork: $(cat "$tmp/ft")"
fi

kill -INT $wr
wait $wr
wrc=$?
check writes_exit_ok '[ $wrc = 0 ]' "$(cat "$tmp/w.err")"

# the record: every written range says its process; migrate-model reads it
$PY - "$tmp/rec.jsonl" >"$tmp/py" 2>&1 <<'PY'
import json, sys
iv = [j for j in map(json.loads, open(sys.argv[1])) if j["type"] == "interval"]
good = iv and all(len(j["written_pid"]) == len(j["written"]) for j in iv if j["written"])
print("ok - record_written_pid" if good else "not ok - record_written_pid")
PY
cat "$tmp/py"
"$M" migrate-model "$tmp/rec.jsonl" -b 100 -r 1 >"$tmp/mm" 2>&1
check record_replayable '[ $? = 0 ]' "$(cat "$tmp/mm")"

# the same tree without --tree: the root alone (its own rows, no pid column)
"$M" writes -p $root -i 200 -d 2 --json -o "$tmp/one.jsonl" 2>"$tmp/one.err"
check root_alone_without_tree \
	'! grep -q "\"processes\"" "$tmp/one.jsonl" && grep -qE "\"type\": *\"summary\"" "$tmp/one.jsonl"' \
	"$(tail -n 2 "$tmp/one.jsonl" | cut -c1-800)" "$(cat "$tmp/one.err")"
# the human output names the processes
"$M" writes -p $root --tree -i 200 -d 2 >"$tmp/text" 2>"$tmp/text.err"
check text_process_rows 'grep -qE "^ +$root +[0-9]+ forktree " "$tmp/text" &&
	grep -q "^  tree: [0-9]* processes; shared memory written" "$tmp/text"' \
	"$(cat "$tmp/text" "$tmp/text.err")"
# a mapping's name wraps between words, at any width: "(shared)" stays whole
bad=
for w in 64 70 76 80 90; do
	COLUMNS=$w "$M" writes -p $root --tree -a -i 200 -d 1 >"$tmp/wrap" 2>/dev/null
	grep -q '(shared)' "$tmp/wrap" || bad+=" $w: no (shared);"
	grep -qE '\(shar?e?d?$|^ *\)$|^ *a?r?e?d\)$' "$tmp/wrap" && bad+=" $w: $(grep -E -B1 '^ *(a?r?e?d)?\)$' "$tmp/wrap" | head -n2 | tr -s ' ');"
done
check text_shared_whole '[ -z "$bad" ]' "$bad"

kill -INT $root
wait_for_line "$tmp/ft" "forktree: data " 20
check forktree_data_intact 'grep -q "forktree: data intact" "$tmp/ft"' "$(tail -n 3 "$tmp/ft")"
t_done
