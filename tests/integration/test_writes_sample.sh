#!/bin/bash
# memlens writes --sample, --max-overhead and --max-error: the options as a user gives
# them, and the sampled profiler against memwrite, whose writes are known:
# a buffer rewritten in full every interval (-P) and one never written
# after the start (-Z). Its estimates must be exact there (1 and 0), its
# hot ranges those of exact tracking once every page was sampled, and never
# on memory that was not written (a hot range is what a checkpoint leaves
# out of a pre-dump: a wrong one costs bytes at the freeze, a missed one
# costs nothing, CRIU's final dump sends every page not in a parent).
set -u
. "$(dirname "$0")/../lib.bash"
M=${MEMLENS:?} W=${WORKLOADS:?}
tmp=$(mktemp -d); t_at_exit 'kill $(jobs -p) 2>/dev/null; rm -rf "$tmp"'
run() { "$@" >"$tmp/out" 2>"$tmp/err"; echo $? >"$tmp/rc"; }
rc() { cat "$tmp/rc"; }

# --- usage -------------------------------------------------------------------
run "$M" writes --help
check help_sample '[ "$(rc)" = 0 ] && grep -q -- "--sample FRACTION" "$tmp/out" && grep -q -- "--max-overhead PCT" "$tmp/out" && grep -q -- "--max-error PCT" "$tmp/out"'
for bad in "--sample 0" "--sample 1.5" "--sample 1/0" "--sample 1/2000" "--sample x" \
	"--sample 0.0001" "--max-overhead 0" "--max-overhead 101" "--max-overhead x" \
	"--max-error 0" "--max-error 101" "--max-error x"; do
	run "$M" writes -p $$ $bad -d 1
	check "bad_option_${bad// /_}" '[ "$(rc)" = 2 ] && [ -s "$tmp/err" ]' "rc=$(rc) $(cat "$tmp/err")"
done
run "$M" writes -p $$ --sample 1/4 --record "$tmp/rec" -d 1
check record_needs_exact '[ "$(rc)" = 2 ] && grep -q "record needs every written page" "$tmp/err"' "rc=$(rc) $(cat "$tmp/err")"
run "$M" writes -p $$ --max-error 5 --record "$tmp/rec" -d 1
check record_needs_exact_error '[ "$(rc)" = 2 ] && grep -q "record needs every written page" "$tmp/err"' "rc=$(rc) $(cat "$tmp/err")"

# --- estimates on a known write pattern ---------------------------------------
"$W/memwrite" -P -m 8 -Z 4 -s 300 >"$tmp/mw" &
mw=$!
wait_for_line "$tmp/mw" "first pass written" 10
buf=$(awk '/ writes / {print $5}' "$tmp/mw")
still=$(awk '/still/ {print $3}' "$tmp/mw")

# memlens writes --json until the state wanted, or 120 s; the lines into FILE
cat >"$tmp/until.py" <<'PY'
import json, signal, subprocess, sys, time
out, want = sys.argv[1], sys.argv[2]
buf = [int(x, 16) for x in sys.argv[3].split("-")]
cmd = sys.argv[4:]
p = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
lines, full, settled = [], 0, 0
deadline = time.monotonic() + 120
def covered(l):
    # the hot ranges cover the whole buffer
    r = [(int(h["start_addr"], 16), int(h["end_addr"], 16)) for h in l["hot_ranges"]["ranges"]]
    pos = buf[0]
    for s, e in sorted(r):
        if s <= pos < e:
            pos = e
    return pos >= buf[1]
for line in p.stdout:
    lines.append(line)
    l = json.loads(line)
    if l["type"] != "interval":
        continue
    big = [r for r in l["regions"] if int(r["start_addr"], 16) == buf[0]]
    full = full + 1 if big and big[0]["written_ratio"] == 1 else 0
    k = l.get("sampling", {}).get("k", 1)
    settled = settled + 1 if k > 1 else 0
    done = {"covered": full >= 3 and covered(l),
            "adapted": k > 1 and l["seq"] >= 4,
            "settled": settled >= 3,
            "six": l["seq"] >= 6}[want]
    if done or time.monotonic() > deadline:
        p.send_signal(signal.SIGINT)
        for rest in p.stdout:
            lines.append(rest)
        break
p.wait()
open(out, "w").writelines(lines)
sys.exit(p.returncode)
PY
python3 "$tmp/until.py" "$tmp/sampled" covered "$buf" "$M" writes -p $mw -i 200 --sample 1/4 --json 2>"$tmp/err"
check sampled_exit_ok '[ $? = 0 ]' "$(cat "$tmp/err")"
python3 "$tmp/until.py" "$tmp/exact" covered "$buf" "$M" writes -p $mw -i 200 --json 2>"$tmp/err"
check exact_exit_ok '[ $? = 0 ]' "$(cat "$tmp/err")"

python3 - "$tmp/sampled" "$tmp/exact" "$buf" "$still" >"$tmp/py" 2>&1 <<'PY'
import json, sys
def load(f):
    return [json.loads(l) for l in open(f)]
sampled, exact = load(sys.argv[1]), load(sys.argv[2])
buf = [int(x, 16) for x in sys.argv[3].split("-")]
still = [int(x, 16) for x in sys.argv[4].split("-")]
def region(l, r):
    m = [x for x in l["regions"] if int(x["start_addr"], 16) == r[0]]
    assert len(m) == 1 and int(m[0]["end_addr"], 16) == r[1], (r, l["seq"])
    return m[0]
def hot(l, within):
    out = []
    for h in l["hot_ranges"]["ranges"]:
        s, e = max(int(h["start_addr"], 16), within[0]), min(int(h["end_addr"], 16), within[1])
        if s < e:
            out.append((s, e))
    return sorted(out)
iv = [l for l in sampled if l["type"] == "interval"]
assert len(iv) >= 12, f"only {len(iv)} sampled intervals"
for l in iv:
    s = l["sampling"]
    assert s["k"] == 4 and s["fraction"] == 0.25 and s["next_fraction"] == 0.25, s
    assert isinstance(s["target_minflt"], int) and s["target_minflt"] >= 0, s
    assert l["hot_ranges"].get("estimated") is True, l["hot_ranges"]
    b, z = region(l, buf), region(l, still)
    # 2048 pages in 128 blocks of 16 (two pieces more if not aligned): a quarter
    assert b["estimated"] and abs(b["sampled_pages"] - 512) <= 16, b
    assert b["sampled_dirty_pages"] <= b["sampled_pages"] and 0 <= b["written_ratio"] <= 1, b
    # never written while profiled: exactly 0, with no error, every interval
    assert z["estimated"] and abs(z["sampled_pages"] - 256) <= 16, z
    assert z["written_ratio"] == 0 and z["dirty_pages"] == 0 and z["ratio_stderr"] == 0, z
    assert not z["hot"] and hot(l, still) == [], l["hot_ranges"]
    # the faults said are the pages found written in the sample
    assert s["faults"] == sum(r.get("sampled_dirty_pages", 0) for r in l["regions"]), s
    if b["written_ratio"] == 1:
        assert b["dirty_pages"] == 2048 and b["ratio_stderr"] == 0, b
# written in full: exactly 1 (the state waited for)
assert [region(l, buf)["written_ratio"] for l in iv[-3:]] == [1, 1, 1]
# a hot page must have been seen written: the sampled hot pages of the buffer
# need 3 sampled intervals in a row, 12 intervals, before any
first_hot = min(l["seq"] for l in iv if hot(l, buf))
assert first_hot >= 9, first_hot
ex = [l for l in exact if l["type"] == "interval"]
for l in ex:
    z = region(l, still)
    assert not z.get("estimated") and "sampling" not in l and not l["hot_ranges"].get("estimated")
    assert z["dirty_pages"] == 0 and hot(l, still) == []
# the same hot ranges on the buffer, sampled and exact: all of it
assert hot(iv[-1], buf) == hot(ex[-1], buf) == [tuple(buf)], (hot(iv[-1], buf), hot(ex[-1], buf))
sm = [l for l in sampled if l["type"] == "summary"]
assert len(sm) == 1 and sm[0]["sampling"]["k"] == 4 and sm[0]["hot_ranges"]["estimated"] is True
# every estimate exact (1 and 0): nothing to note
assert "sampling_error" not in sm[0], sm[0]["sampling_error"]
print("fine")
PY
check sampled_matches_exact 'grep -q fine "$tmp/py"' "$(cat "$tmp/py")"
check sampled_detached_no_uw 'kill -0 $mw && [ "$(grep -c " uw" /proc/$mw/smaps)" = 0 ]'

# --- --max-overhead: memlens measures its cost and samples to stay under it ---
# 2048 faults per 200 ms interval at the cost measured here (0.2-20 us on the
# machines seen) are 0.2-20% of a CPU: 0.1% needs sampling on every one
python3 "$tmp/until.py" "$tmp/bound" adapted "$buf" "$M" writes -p $mw -i 200 --max-overhead 0.1 --json 2>"$tmp/err"
check bound_exit_ok '[ $? = 0 ]' "$(cat "$tmp/err")"
python3 - "$tmp/bound" >"$tmp/py" 2>&1 <<'PY'
import json, sys
iv = [json.loads(l) for l in open(sys.argv[1])]
iv = [l for l in iv if l["type"] == "interval"]
s = [l["sampling"] for l in iv]
# exact to start with, then 1/k: each interval uses what the one before chose
assert s[0]["k"] == 1 and s[-1]["k"] > 1, s
for a, b in zip(s, s[1:]):
    assert abs(b["fraction"] - a["next_fraction"]) < 1e-9, (a, b)
# the cost of a fault, measured on this machine once: the same in every interval
ns = s[0]["fault_ns"]
assert 0 < ns < 1000000 and all(x["fault_ns"] == ns for x in s), s
for l, x in zip(iv, s):
    # the cost said: faults * fault_ns over the interval, in percent of a CPU
    assert abs(x["overhead_pct"] - x["faults"] * ns * 1e-9 / l["interval_s"] * 100) < 1e-6 * max(1, x["overhead_pct"]), (x, l["interval_s"])
print("fault_ns", ns, "measured" if s[0]["fault_ns_measured"] else "assumed")
print("fine")
PY
check bound_adapts 'grep -q fine "$tmp/py"' "$(cat "$tmp/py")"

# the text output says the fraction in use
"$M" writes -p $mw -i 200 -d 1 --sample 0.25 --batch >"$tmp/h" 2>&1
check text_says_fraction 'grep -q "^sampling: 1/4 of the pages" "$tmp/h" && grep -q "^interval 1 .* sample 1/4  overhead" "$tmp/h"' "$(head -8 "$tmp/h")"
# and what a fault costs: measured here, as the JSON said it
if grep -q '"fault_ns_measured": *true' "$tmp/bound"; then
	check text_says_fault_cost 'grep -Eq "^fault cost: [0-9]+\.[0-9]+ us of the target.s CPU per tracked write fault \(measured on this machine\)" "$tmp/h"' "$(head -6 "$tmp/h")"
else
	check text_says_fault_cost 'grep -q "^fault cost: 20.00 us of the target.s CPU per tracked write fault (assumed" "$tmp/h"' "$(head -6 "$tmp/h")"
fi

# --- --max-error: exact first, then as few pages as the error allows ----------
# the buffer rewritten in full and the one never written have no spread: the
# error predicted at any fraction is 0, and after one exact interval the
# profiler samples the least fraction asked for, its estimates exact
python3 "$tmp/until.py" "$tmp/adaptive" settled "$buf" "$M" writes -p $mw -i 200 --max-error 5 --sample 1/4 --json 2>"$tmp/err"
check adaptive_exit_ok '[ $? = 0 ]' "$(cat "$tmp/err")"
python3 - "$tmp/adaptive" "$buf" "$still" >"$tmp/py" 2>&1 <<'PY'
import json, sys
ls = [json.loads(l) for l in open(sys.argv[1])]
buf = [int(x, 16) for x in sys.argv[2].split("-")]
still = [int(x, 16) for x in sys.argv[3].split("-")]
iv = [l for l in ls if l["type"] == "interval"]
s = [l["sampling"] for l in iv]
assert s[0]["k"] == 1, s[0]
assert all(x["max_error_pct"] == 5 for x in s), s
for a, b in zip(s, s[1:]):
    assert abs(b["fraction"] - a["next_fraction"]) < 1e-9, (a, b)
# at most 1/4 once the error allows it (fewer only if the cost bound wants it)
assert s[-1]["k"] >= 4, s
for l in iv:
    if l["sampling"]["k"] == 1:
        continue
    for r in l["regions"]:
        lo = int(r["start_addr"], 16)
        if lo == still[0]:
            assert r["written_ratio"] == 0 and r["ratio_stderr"] == 0, r
        if lo == buf[0] and r["written_ratio"] == 1:
            assert r["dirty_pages"] == 2048 and r["ratio_stderr"] == 0, r
    assert l["sampling"]["error_pct"] <= 5, l["sampling"]
sm = [l for l in ls if l["type"] == "summary"]
assert len(sm) == 1 and "sampling_error" not in sm[0], sm
print("fine")
PY
check adaptive_dense_samples 'grep -q fine "$tmp/py"' "$(cat "$tmp/py")"
"$M" writes -p $mw -i 200 -d 1 --max-error 5 --batch >"$tmp/h" 2>&1
check adaptive_text_says_rule 'grep -q "^sampling: every page to start with, then as few as keep the standard error of each VMA.s written pages under 5.0% of them, 1/10 at least" "$tmp/h" && grep -q "^interval 1 .* sample 1/1 (every page)  overhead .*, error 0.0%" "$tmp/h"' "$(head -8 "$tmp/h")"
kill $mw; wait $mw 2>/dev/null

# --- sparse writes: the sample's stated error is large, and memlens says so ----
# 2 MiB/s into a 4 MiB buffer (64 blocks) for 500 ms intervals: one run of
# about 16 blocks an interval, of which a 1/16 sample (4 blocks) holds one
# or two, the others unwritten: a standard error of about 0.2 each interval
"$W/memwrite" -m 4 -R 2 -s 300 >"$tmp/mws" &
mws=$!
wait_for_line "$tmp/mws" "writes" 10
run "$M" writes -p $mws -i 500 -d 3 --sample 1/16 --json
check sparse_exit_ok '[ "$(rc)" = 0 ]' "$(cat "$tmp/err")"
python3 - "$tmp/out" >"$tmp/py" 2>&1 <<'PY'
import json, sys
ls = [json.loads(l) for l in open(sys.argv[1])]
iv = [l for l in ls if l["type"] == "interval"]
sm = [l for l in ls if l["type"] == "summary"][0]
e = sm["sampling_error"]
# the largest stated error of a VMA sampled in two blocks or more, as the intervals said it
se = max(r["ratio_stderr"] for l in iv for r in l["regions"]
         if r.get("estimated") and r["sampled_pages"] > 16)
assert e["ratio_stderr_max"] == se > 0.05 and e["ratio_stderr_note_above"] == 0.05, (e, se)
assert 1 <= e["intervals_over"] <= len(iv), (e, len(iv))
assert "--sample" in e["note"] and "-d" in e["note"], e
print("fine")
PY
check sparse_json_notes_error 'grep -q fine "$tmp/py"' "$(cat "$tmp/py")"
run "$M" writes -p $mws -i 500 -d 3 --sample 1/16 --batch
check sparse_text_notes_error 'grep -Eq "^  note: a sampled written ratio had a standard error of up to 0\.[0-9]+, over 0\.05" "$tmp/out"' "$(tail -6 "$tmp/out")"
# exact: no estimate, no note
run "$M" writes -p $mws -i 500 -d 2 --json
check exact_no_error_note '[ "$(rc)" = 0 ] && ! grep -q sampling_error "$tmp/out"' "$(tail -1 "$tmp/out")"
# --max-error 5: the error a sample would have is measured on every block and
# found over the bound at any fraction, so the writes are tracked exactly
# (they cost the target little): no error stated over it, and no note
python3 "$tmp/until.py" "$tmp/out" six 0-0 "$M" writes -p $mws -i 500 --max-error 5 --json 2>"$tmp/err"
check sparse_adaptive_exit_ok '[ $? = 0 ]' "$(cat "$tmp/err")"
python3 - "$tmp/out" >"$tmp/py" 2>&1 <<'PY'
import json, sys
ls = [json.loads(l) for l in open(sys.argv[1])]
iv = [l for l in ls if l["type"] == "interval"]
sm = [l for l in ls if l["type"] == "summary"][0]
assert len(iv) >= 6, len(iv)
for l in iv:
    s = l["sampling"]
    assert s["max_error_pct"] == 5 and s["error_pct"] <= 5 and s["next_error_pct"] <= 5, s
    for r in l["regions"]:
        assert r.get("ratio_stderr", 0) <= 0.05, r
assert "sampling_error" not in sm, sm["sampling_error"]
print("fine", [l["sampling"]["k"] for l in iv])
PY
check sparse_adaptive_within_bound 'grep -q fine "$tmp/py"' "$(cat "$tmp/py")"
kill $mws; wait $mws 2>/dev/null

# --- a tree: each process sampled, the tree's estimates added up -----------------
"$W/forktree" >"$tmp/ft" 2>&1 &
ft=$!
wait_for_line "$tmp/ft" "ready" 10
run "$M" writes -p $ft --tree -i 200 -d 2 --sample 1/4 --json
check tree_exit_ok '[ "$(rc)" = 0 ]' "$(cat "$tmp/err")"
python3 - "$tmp/out" >"$tmp/py" 2>&1 <<'PY'
import json, sys
iv = [json.loads(l) for l in open(sys.argv[1])]
iv = [l for l in iv if l["type"] == "interval"]
assert len(iv) >= 5 and all(l["tree"] for l in iv)
for l in iv:
    assert l["sampling"]["k"] == 4 and l["hot_ranges"].get("estimated") is True, l["sampling"]
    assert len(l["processes"]) >= 2
    # every process's regions sampled; the tree's pages its processes' sum
    assert all(r["estimated"] for r in l["regions"])
    assert l["dirty"]["dirty_pages"] <= sum(p["dirty_pages"] for p in l["processes"])
    assert l["sampling"]["faults"] == sum(r.get("sampled_dirty_pages", 0) for r in l["regions"])
print("fine")
PY
check tree_sampled 'grep -q fine "$tmp/py"' "$(cat "$tmp/py")"
kill $ft; wait $ft 2>/dev/null
t_done
