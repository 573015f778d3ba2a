#!/bin/bash
# Hot ranges inside a VMA on a real process: memwrite -x writes eight small
# runs of pages scattered through one 64 MiB anonymous VMA, once per
# profiler interval (paced against the profiler, -P, so CPU share does not
# matter). `memlens writes` must report exactly those runs as hot ranges
# once they were written in -c intervals in a row, never the VMA itself
# (its written ratio is tiny), keep them over one interval in which they
# are not written (hysteresis), and say the same in the text summary and
# the --record trace that migrate-model replays. No timing is asserted:
# the test waits for states.
set -u
. "$(dirname "$0")/../lib.bash"
M=${MEMLENS:?} W=${WORKLOADS:?}
PY=${PYTHON:-python3}
t_tmpdir hotranges

"$W/memwrite" -x -P -m 64 -s 300 >"$tmp/mw" &
mw=$!
t_bg $mw
if ! wait_for_line "$tmp/mw" "first pass written" 20; then
	notok memwrite_started "$(cat "$tmp/mw")"
	exit 1
fi
buf=$(awk '/ writes / {print $5}' "$tmp/mw")
runs=$(awk '/^memwrite: run / {print $3}' "$tmp/mw" | tr '\n' ' ')

# --cool 10: a loaded machine that delays memwrite by an interval or two
# around the skipped one must not turn the runs cold (cool itself is
# counted exactly by the unit tests)
"$M" writes -p $mw -i 100 -c 3 --cool 10 --json -o "$tmp/w.jsonl" --record "$tmp/rec.jsonl" \
	2>"$tmp/w.err" &
wr=$!
t_bg $wr

# state FILE WHAT: is WHAT true of the intervals written so far?
#   hot      the last interval reports exactly the runs inside the buffer
#   skipped  an interval after they turned hot wrote nothing in the buffer
#   long     the trace holds 15 intervals (1.5 s at -i 100): enough for
#            migrate-model's two rounds of 0.5 s however fast the rest went
state() {
	$PY - "$1" "$2" "$buf" "$runs" <<'PY'
import json, sys
path, what, buf, runs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4].split()
lo, hi = (int(x, 16) for x in buf.split("-"))
want = [tuple(int(x, 16) for x in r.split("-")) for r in runs]
iv = []
for l in open(path):
    try:
        j = json.loads(l)
    except ValueError:
        break  # the line being written
    if j["type"] == "interval":
        iv.append(j)
def inbuf(j):
    return [(int(r["start_addr"], 16), int(r["end_addr"], 16))
            for r in j["hot_ranges"]["ranges"]
            if lo <= int(r["start_addr"], 16) < hi]
def bufdirty(j):
    return sum(r["dirty_pages"] for r in j["regions"]
               if int(r["start_addr"], 16) <= lo < int(r["end_addr"], 16))
hot = [k for k, j in enumerate(iv) if inbuf(j) == want]
if what == "hot":
    sys.exit(0 if iv and inbuf(iv[-1]) == want else 1)
if what == "skipped":
    sys.exit(0 if hot and any(bufdirty(j) == 0 for j in iv[hot[0]:]) else 1)
if what == "long":
    sys.exit(0 if len(iv) >= 15 else 1)
PY
}

if t_wait 60 state "$tmp/rec.jsonl" hot; then
	ok hot_ranges_found
else
	notok hot_ranges_found "want $runs in $buf" "$(tail -c 600 "$tmp/rec.jsonl")" "$(cat "$tmp/w.err")"
fi

kill -USR1 $mw
wait_for_line "$tmp/mw" "skipped one pass" 60
if t_wait 60 state "$tmp/rec.jsonl" skipped && t_wait 60 state "$tmp/rec.jsonl" hot; then
	ok skipped_interval_seen
else
	notok skipped_interval_seen "$(tail -n 3 "$tmp/mw")"
fi

t_wait 60 state "$tmp/rec.jsonl" long
kill -INT $wr
wait $wr
wrc=$?
check writes_exit_ok '[ $wrc = 0 ]' "$(cat "$tmp/w.err")"

# the text summary of a run of its own (one profiler at a time: a second
# one would find the VMAs registered already and leave them alone)
"$M" writes -p $mw -i 100 -d 2 -q -o "$tmp/text" 2>"$tmp/text.err"
missing=
for r in $runs; do
	s=${r%-*} e=${r#*-}
	grep -qE "^    ${s#0x}-${e#0x} +[0-9]+ pages?$" "$tmp/text" || missing="$missing $r"
done
check text_summary_lists_ranges '[ -z "$missing" ] && grep -q "^  hot ranges: " "$tmp/text"' \
	"missing:$missing" "$(cat "$tmp/text" "$tmp/text.err")"

$PY - "$tmp/rec.jsonl" "$tmp/w.jsonl" "$buf" "$runs" >"$tmp/py" 2>&1 <<'PY'
import json, sys
rec, out, buf, runs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4].split()
lo, hi = (int(x, 16) for x in buf.split("-"))
want = [tuple(int(x, 16) for x in r.split("-")) for r in runs]
iv = [j for j in map(json.loads, open(rec)) if j["type"] == "interval"]
lines = [json.loads(l) for l in open(out)]
sm = lines[-1]
fails = []
def report(name, good, *detail):
    print(("ok - " if good else "not ok - ") + name)
    for d in ([] if good else detail):
        print("#   " + str(d)[:400])
def inbuf(j):
    return [(int(r["start_addr"], 16), int(r["end_addr"], 16), r["pages"], r["hot_pages"])
            for r in j["hot_ranges"]["ranges"] if lo <= int(r["start_addr"], 16) < hi]
def bufregion(j):
    return [r for r in j["regions"] if int(r["start_addr"], 16) <= lo < int(r["end_addr"], 16)][0]
def wrote_all(j):
    w = [(int(a, 16), int(b, 16)) for a, b in j["written"]]
    return all(any(a <= s and e <= b for a, b in w) for s, e in want)
exact = [(s, e, (e - s) // 4096, (e - s) // 4096) for s, e in want]
first = next((k for k, j in enumerate(iv) if inbuf(j) == exact), None)
report("ranges_exact", first is not None, [inbuf(j) for j in iv[-3:]], exact)
# each run hot only once it was written in 3 intervals in a row
late = []
for s, e in want:
    k = next((k for k, j in enumerate(iv) if any(r[:2] == (s, e) for r in inbuf(j))), None)
    wrote = lambda j: any(int(a, 16) <= s and e <= int(b, 16) for a, b in j["written"])
    if k is None or k < 2 or not all(wrote(iv[x]) for x in (k - 2, k - 1, k)):
        late.append((hex(s), k))
report("hot_after_consecutive", first is not None and not late, late)
# while the VMA itself never is
report("vma_stays_cold", all(not bufregion(j)["hot"] and bufregion(j)["written_ratio"] < 0.01
                             for j in iv), [bufregion(j) for j in iv if bufregion(j)["hot"]][:2])
# an interval without writes to the buffer: the ranges are still reported
skips = [k for k in range(first or 0, len(iv)) if bufregion(iv[k])["dirty_pages"] == 0]
report("hysteresis_over_skipped_interval",
       first is not None and skips and all(inbuf(iv[k]) == exact for k in skips),
       f"skipped intervals {skips}", [inbuf(iv[k]) for k in skips])
# the --json output says what the record says, and the summary too
report("json_matches_record",
       [l["hot_ranges"] for l in lines if l["type"] == "interval"] == [j["hot_ranges"] for j in iv],
       "differs")
h = sm["hot_ranges"]
report("summary_hot_ranges", sm["type"] == "summary" and inbuf(sm) == exact and
       h["count"] == len(h["ranges"]) and h["merge_cost_bytes"] == 0 and
       h["unmerged"] == h["count"], h)
PY
cat "$tmp/py"

# migrate-model replays the record: the same module, so it runs cleanly on it
"$M" migrate-model "$tmp/rec.jsonl" -b 100 -r 0.5 >"$tmp/mm" 2>&1
check migrate_model_reads_record '[ $? = 0 ] && grep -q "^hot-range" "$tmp/mm"' "$(cat "$tmp/mm")"
# the record says each VMA's resident pages (at most its pages; in
# memwrite's buffer its runs' 20 written pages at least), and the model
# takes its memory from them
check record_resident_pages '$PY -c "
import json, sys
iv = [json.loads(l) for l in open(sys.argv[1]) if json.loads(l)[\"type\"] == \"interval\"]
lo, hi = (int(x, 16) for x in sys.argv[2].split(\"-\"))
ok = all(0 <= r[\"resident_pages\"] <= r[\"total_pages\"] for j in iv for r in j[\"regions\"])
buf = [r for r in iv[-1][\"regions\"] if int(r[\"start_addr\"], 16) <= lo and hi <= int(r[\"end_addr\"], 16)]
sys.exit(not (ok and buf and buf[0][\"resident_pages\"] >= 20))" "$tmp/rec.jsonl" "$buf"' \
	"$(head -c 600 "$tmp/rec.jsonl")"
"$M" migrate-model "$tmp/rec.jsonl" -b 100 -r 0.5 --json >"$tmp/mm.json" 2>&1
check migrate_model_resident_memory 'grep -q "\"memory\":\"resident\"" "$tmp/mm.json"' "$(head -c 300 "$tmp/mm.json")"
kill $mw
wait $mw 2>/dev/null
t_done
