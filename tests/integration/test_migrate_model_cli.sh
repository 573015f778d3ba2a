#!/bin/bash
# memlens migrate-model as a user runs it: -b and -r have defaults (the
# ones --help and the man page give, said so in the output); a trace that
# cannot be read is reported before anything wrong with the options; and
# no number is ever cut: every round of a 100-round model is printed whole
# at 80 and at 40 columns, the same numbers --json gives.
set -u
. "$(dirname "$0")/../lib.bash"
cd "$(dirname "$0")/../.." || exit 1
M=${MEMLENS:?}
PY=${PYTHON:-python3}
t_tmpdir migrate-model-cli

# a trace of 120 one-second intervals writing 1 to 7 x 0x123000 bytes of one
# VMA that turns hot after the third (the --record format of memlens writes)
"$PY" - >"$tmp/t.jsonl" <<'PYEOF'
import json
for i in range(1, 121):
    print(json.dumps({"type": "interval", "seq": i, "t_ms": i * 1000,
                      "regions": [{"start_addr": "0x10000000", "end_addr": "0x20000000", "hot": i > 3}],
                      "written": [["0x10000000", "0x%x" % (0x10000000 + (i % 7 + 1) * 0x123000)]]}))
PYEOF

# 1. defaults: as documented, and said so
"$M" migrate-model "$tmp/t.jsonl" --json >"$tmp/d.json" 2>"$tmp/d.err"
rc=$?
check defaults_json '[ $rc = 0 ] && "$PY" -c "import json,sys; j=json.load(open(sys.argv[1])); sys.exit(not (j[\"bandwidth_mbps\"] == 100 and j[\"round_interval_s\"] == 2))" "$tmp/d.json"' \
	"rc=$rc $(cat "$tmp/d.err") $(head -c 200 "$tmp/d.json")"
"$M" migrate-model "$tmp/t.jsonl" >"$tmp/d.txt" 2>&1
tr -s ' \n' ' ' <"$tmp/d.txt" >"$tmp/d.flat"
check defaults_said 'grep -q "bandwidth 100.0 MiB/s (the default; -b sets it)" "$tmp/d.flat" && grep -q "every 2.0 s (the default; -r sets it)" "$tmp/d.flat"' \
	"$(head -n 3 "$tmp/d.txt")"
"$M" migrate-model "$tmp/t.jsonl" -b 50 -r 1 >"$tmp/g.txt" 2>&1
check given_not_called_default '! grep -q "the default" "$tmp/g.txt"' "$(head -n 3 "$tmp/g.txt")"
# the freeze overhead: added to every policy's downtime; post-copy's downtime is it alone
# when the fixed parts are 0, its last page the tree's memory later at -b
Z="--dump-fixed 0 --restore-fixed 0 --restore-bandwidth 0"
# shellcheck disable=SC2086
"$M" migrate-model "$tmp/t.jsonl" -b 50 -F 0.25 $Z --json >"$tmp/f.json" 2>"$tmp/f.err"
rc=$?
check freeze_overhead_json '[ $rc = 0 ] && "$PY" -c "
import json, sys
j = json.load(open(sys.argv[1]))
ok = j[\"freeze_overhead_s\"] == 0.25
for p in j[\"policies\"]:
    ok = ok and abs(p[\"downtime_ms\"] - (250 + p[\"final_round_bytes\"] / 50 / 1048576 * 1000)) < 1e-6
    ok = ok and p[\"postcopy_downtime_ms\"] == 250 and p[\"lazy_bytes\"] == p[\"restored_bytes\"] > 0
    ok = ok and abs(p[\"postcopy_last_page_ms\"] - (250 + p[\"lazy_bytes\"] / 50 / 1048576 * 1000)) < 1e-6
sys.exit(not ok)" "$tmp/f.json"' "rc=$rc $(cat "$tmp/f.err") $(head -c 400 "$tmp/f.json")"
# shellcheck disable=SC2086
"$M" migrate-model "$tmp/t.jsonl" -F 0.25 $Z | tr -s ' \n' ' ' >"$tmp/f.txt"
check freeze_overhead_said 'grep -q "with post-copy: running again after 250.0 ms (the fixed parts" "$tmp/f.txt"' \
	"$(cat "$tmp/f.txt")"
# the downtime's parts: the final dump (fixed + the final round at -b), the
# restore (fixed + the tree's 256 MiB at --restore-bandwidth); post-copy: the
# fixed parts, its last page the tree's 256 MiB later at -b (5.12 s)
"$M" migrate-model "$tmp/t.jsonl" -b 50 --dump-fixed 0.5 --restore-fixed 1.5 --restore-bandwidth 128 \
	--json >"$tmp/p.json" 2>"$tmp/p.err"
rc=$?
check downtime_parts_json '[ $rc = 0 ] && "$PY" -c "
import json, sys
j = json.load(open(sys.argv[1]))
ok = (j[\"dump_fixed_s\"], j[\"restore_fixed_s\"], j[\"restore_bandwidth_mbps\"]) == (0.5, 1.5, 128)
for p in j[\"policies\"]:
    send = p[\"final_round_bytes\"] / 50 / 1048576 * 1000
    ok = ok and p[\"restored_bytes\"] == 256 << 20 and p[\"restore_ms\"] == 1500 + 2000
    ok = ok and abs(p[\"dump_ms\"] - 500 - send) < 1e-6 and abs(p[\"downtime_ms\"] - p[\"dump_ms\"] - 3500) < 1e-6
    ok = ok and p[\"postcopy_downtime_ms\"] == 2000 and p[\"postcopy_last_page_ms\"] == 2000 + 5120
sys.exit(not ok)" "$tmp/p.json"' "rc=$rc $(cat "$tmp/p.err") $(head -c 400 "$tmp/p.json")"
# -m 0: no pre-dump round, one final dump of everything (as migrate -m 0),
# said in the JSON; a trace without resident pages models the VMAs' size
"$M" migrate-model "$tmp/t.jsonl" -m 0 --json >"$tmp/m0.json" 2>"$tmp/m0.err"
rc=$?
check max_rounds_0 '[ $rc = 0 ] && "$PY" -c "
import json, sys
j = json.load(open(sys.argv[1]))
ok = j.get(\"pre_dump_rounds\") == 0 and j[\"memory\"] == \"vmas\"
for p in j[\"policies\"]:
    ok = ok and len(p[\"rounds\"]) == 1 and p[\"rounds\"][0][\"bytes\"] == 256 << 20 == p[\"restored_bytes\"]
sys.exit(not ok)" "$tmp/m0.json"' "rc=$rc $(cat "$tmp/m0.err") $(head -c 300 "$tmp/m0.json")"
# resident pages in the trace: the memory is those (64 MiB of the 256 MiB
# VMA, written ones included), the first round sends them, a restore loads them
"$PY" - "$tmp/t.jsonl" >"$tmp/tr.jsonl" <<'PYEOF'
import json, sys
for l in open(sys.argv[1]):
    j = json.loads(l)
    j["regions"][0]["resident_pages"] = 16384
    print(json.dumps(j))
PYEOF
"$M" migrate-model "$tmp/tr.jsonl" -m 0 --json >"$tmp/mr.json" 2>"$tmp/mr.err"
rc=$?
check resident_memory '[ $rc = 0 ] && "$PY" -c "
import json, sys
j = json.load(open(sys.argv[1]))
ok = j[\"memory\"] == \"resident\"
for p in j[\"policies\"]:
    ok = ok and p[\"rounds\"][0][\"bytes\"] == 64 << 20 == p[\"restored_bytes\"] == p[\"lazy_bytes\"]
sys.exit(not ok)" "$tmp/mr.json"' "rc=$rc $(cat "$tmp/mr.err") $(head -c 300 "$tmp/mr.json")"
"$M" migrate-model "$tmp/tr.jsonl" | tr -s ' \n' ' ' >"$tmp/mr.txt"
check resident_memory_said 'grep -q "the tree.s memory: the resident pages the trace recorded" "$tmp/mr.txt"' \
	"$(cat "$tmp/mr.txt")"

# --round-at: the rounds when a migration made them (the last the final
# dump); not increasing, or not numbers: a usage error
"$M" migrate-model "$tmp/tr.jsonl" --round-at 1,2.5,7 --json >"$tmp/ra.json" 2>"$tmp/ra.err"
rc=$?
check round_at '[ $rc = 0 ] && "$PY" -c "
import json, sys
j = json.load(open(sys.argv[1]))
sys.exit(not all(len(p[\"rounds\"]) == 3 and p[\"rounds\"][0][\"bytes\"] == 64 << 20 for p in j[\"policies\"]))" "$tmp/ra.json"' \
	"rc=$rc $(cat "$tmp/ra.err") $(head -c 300 "$tmp/ra.json")"
for bad in 2,1 1,,2 1, x 0,1; do
	"$M" migrate-model "$tmp/tr.jsonl" --round-at "$bad" >/dev/null 2>"$tmp/rb.err"
	rc=$?
	check "round_at_refused_$bad" '[ $rc = 2 ] && grep -q "round-at wants seconds" "$tmp/rb.err"' "rc=$rc $(cat "$tmp/rb.err")"
done

# --calibrate: the bandwidth from the rounds' slope (32 MiB/s), the dump's
# fixed part (3.5 s frozen - 2.25 s restore - 8 MiB / 32 MiB/s = 1 s), the
# restore's bandwidth (64 MiB in 2.25 s less its fixed 0.25 s: 32 MiB/s)
"$PY" - >"$tmp/mig.json" <<'PYEOF'
import json
r = [(67108864, 2500), (16777216, 1000), (8388608, 750), (8388608, 750)]
print(json.dumps({"type": "migrate", "pid": 42, "ok": True, "criu": {}, "downtime_ms": 3500,
                  "restore_ms": 2250,
                  "rounds": [{"round": i + 1, "kind": "pre-dump" if i < 3 else "dump", "bytes": b,
                              "duration_ms": d, "pages_scanned": 16384} for i, (b, d) in enumerate(r)]}))
PYEOF
"$M" migrate-model "$tmp/t.jsonl" --calibrate "$tmp/mig.json" --restore-fixed 0.25 --json \
	>"$tmp/c.json" 2>"$tmp/c.err"
rc=$?
check calibrate_json '[ $rc = 0 ] && "$PY" -c "
import json, sys
j = json.load(open(sys.argv[1]))
sys.exit(not ((j[\"bandwidth_mbps\"], j[\"dump_fixed_s\"], j[\"restore_fixed_s\"], j[\"restore_bandwidth_mbps\"]) == (32, 1, 0.25, 32) and j[\"calibrated_from\"] == sys.argv[2]))" "$tmp/c.json" "$tmp/mig.json"' \
	"rc=$rc $(cat "$tmp/c.err") $(head -c 400 "$tmp/c.json")"
# given on the command line, an option wins over the fit
"$M" migrate-model "$tmp/t.jsonl" --calibrate "$tmp/mig.json" -b 10 --dump-fixed 2 --json >"$tmp/c2.json" 2>&1
check calibrate_option_wins '"$PY" -c "
import json, sys
j = json.load(open(sys.argv[1]))
sys.exit(not (j[\"bandwidth_mbps\"] == 10 and j[\"dump_fixed_s\"] == 2))" "$tmp/c2.json"' "$(head -c 400 "$tmp/c2.json")"
# --calibrate on a post-copy migration: its lazy pages, 8192 copied in (32
# MiB), the last 11.5 s after the freeze: 11.5 - 3.5 s less 1000 faults of 4
# ms is 4 s, 8 MiB/s; the tree's 256 MiB then arrive in 32 s, the faults'
# waits after: 2 s of fixed parts (-F 0 --dump-fixed 0.5 --restore-fixed
# 1.5) + 32 s + 4 s
"$PY" - "$tmp/mig.json" >"$tmp/pc.json" <<'PYEOF'
import json, sys
j = json.load(open(sys.argv[1]))
j["postcopy"] = True
j["lazy"] = {"pages_left": 2048, "pages_total": 8192, "pages_copied": 8192, "pages_parent": 6144,
             "bytes": 8388608, "faults": 1000, "faults_served": 1000, "fault_wait_avg_us": 4000,
             "last_page_ms": 11500}
print(json.dumps(j))
PYEOF
"$M" migrate-model "$tmp/t.jsonl" --calibrate "$tmp/pc.json" --dump-fixed 0.5 --restore-fixed 1.5 \
	--json >"$tmp/pc.out" 2>"$tmp/pc.err"
rc=$?
check calibrate_lazy_json '[ $rc = 0 ] && "$PY" -c "
import json, sys
j = json.load(open(sys.argv[1]))
ok = (j[\"lazy_bandwidth_mbps\"], j[\"lazy_faults\"], j[\"lazy_fault_ms\"]) == (8, 1000, 4)
for p in j[\"policies\"]:
    ok = ok and p[\"lazy_bytes\"] == 256 << 20 and p[\"postcopy_last_page_ms\"] == 2000 + 32000 + 4000
sys.exit(not ok)" "$tmp/pc.out"' "rc=$rc $(cat "$tmp/pc.err") $(head -c 400 "$tmp/pc.out")"
"$M" migrate-model "$tmp/t.jsonl" --calibrate "$tmp/pc.json" --lazy-bandwidth 64 --lazy-faults 0 \
	--json >"$tmp/pc2.out" 2>&1
check calibrate_lazy_option_wins '"$PY" -c "
import json, sys
j = json.load(open(sys.argv[1]))
sys.exit(not (j[\"lazy_bandwidth_mbps\"] == 64 and j[\"lazy_faults\"] == 0))" "$tmp/pc2.out"' \
	"$(head -c 400 "$tmp/pc2.out")"
"$M" migrate-model "$tmp/t.jsonl" --calibrate "$tmp/t.jsonl" >/dev/null 2>"$tmp/e"
rc=$?
check calibrate_not_a_migration '[ $rc = 2 ] && grep -q "no \"migrate\" line" "$tmp/e"' "rc=$rc $(cat "$tmp/e")"
"$M" migrate-model "$tmp/t.jsonl" -F -1 >/dev/null 2>"$tmp/e"
rc=$?
check freeze_overhead_negative '[ $rc = 2 ] && grep -q "freeze-overhead" "$tmp/e"' "$(cat "$tmp/e")"
"$M" migrate-model --help | tr -s ' \n' ' ' >"$tmp/help"
check help_defaults 'grep -q "MiB/s (default 100" "$tmp/help" && grep -q "rounds (default 2" "$tmp/help" &&
	grep -q "over (default 0.1" "$tmp/help" && grep -q "sockets (default 0.2" "$tmp/help" &&
	grep -q "byte (default 1000" "$tmp/help" && grep -q -- "--lazy-bandwidth MIBPS" "$tmp/help"' \
	"$(cat "$tmp/help")"
check man_defaults 'tr -s " \n" " " <doc/man/memlens-migrate-model.8.rst | grep -q "(default 100" &&
	tr -s " \n" " " <doc/man/memlens-migrate-model.8.rst | grep -q "(default 2"'

# 2. the missing file first, whatever is wrong with the options
for opts in "-b 0" "-r abc" "--no-such-option" "-b"; do
	# shellcheck disable=SC2086
	"$M" migrate-model /nonexistent/trace.jsonl $opts >/dev/null 2>"$tmp/e"
	rc=$?
	if [ $rc = 2 ] && head -n 1 "$tmp/e" | grep -q "cannot read /nonexistent/trace.jsonl: No such file or directory; check the path"; then
		ok "missing_file_before '$opts'"
	else
		notok "missing_file_before '$opts'" "rc=$rc $(cat "$tmp/e")"
	fi
done
# but --help is --help, whatever file is named beside it
"$M" migrate-model /nonexistent/trace.jsonl --help >"$tmp/h" 2>"$tmp/e"
rc=$?
check help_beside_missing_file '[ $rc = 0 ] && grep -q "^usage: memlens migrate-model" "$tmp/h" && [ ! -s "$tmp/e" ]' \
	"rc=$rc $(cat "$tmp/e")"
"$M" migrate-model "$tmp" >/dev/null 2>"$tmp/e"
rc=$?
check directory_refused '[ $rc = 2 ] && grep -q "is a directory" "$tmp/e"' "rc=$rc $(cat "$tmp/e")"
"$M" migrate-model "$tmp/t.jsonl" -b 0 >/dev/null 2>"$tmp/e"
rc=$?
check option_error_with_good_file '[ $rc = 2 ] && grep -q -- "-b/--bandwidth MIBPS must be" "$tmp/e"' "rc=$rc $(cat "$tmp/e")"

# 3. nothing cut: 100 rounds, every one printed whole, the same as --json
"$M" migrate-model "$tmp/t.jsonl" -r 1 -m 100 --json >"$tmp/m.json"
for cols in 80 40; do
	COLUMNS=$cols "$M" migrate-model "$tmp/t.jsonl" -r 1 -m 100 >"$tmp/m$cols.txt" 2>&1
	if "$PY" - "$tmp/m.json" "$tmp/m$cols.txt" "$cols" <<'PYEOF'; then
import json, re, sys
j = json.load(open(sys.argv[1]))
text = open(sys.argv[2]).read()
cols = int(sys.argv[3])
bad = [l for l in text.splitlines() if "~" in l]
bad += [l for l in text.splitlines() if len(l) > cols and " " in l.strip()]
unit = re.search(r"sizes in (\S+):", text).group(1)
div = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[unit]
block = " ".join(text.split(" per round, the last one")[1].split("\n", 1)[1:])
block = block.split("final dump:", 1)[-1].split("\n\n")[0]
got, cur = {}, None
for l in block.strip("\n").splitlines():
    w = l.split()
    if l.startswith("  ") and not l.startswith("   ") and w:
        cur = w[0]
        got[cur] = [int(x) for x in w[1:]]
    elif cur:
        got[cur] += [int(x) for x in w]
for p in j["policies"]:
    want = [r["bytes"] // div for r in p["rounds"]]
    if got.get(p["name"]) != want:
        bad.append(f"{p['name']}: {len(got.get(p['name'], []))} rounds printed, {len(want)} in --json")
if len(j["policies"][0]["rounds"]) < 50:
    bad.append("the model has too few rounds to test: %d" % len(j["policies"][0]["rounds"]))
for b in bad[:8]:
    print("#   " + b)
sys.exit(1 if bad else 0)
PYEOF
		ok "rounds_whole_at_$cols"
	else
		notok "rounds_whole_at_$cols" "$(head -n 12 "$tmp/m$cols.txt")"
	fi
done

# --sweep: hot-range at every -c of 1-3 and --cool of 1, 2, 3, 5, 8, 1000; each
# setting's figures are those of a plain run with that -c and --cool, none's
# those of a plain run's none; the fewest bytes are the least total, and the
# one "with the downtime kept" has none's downtime at most
"$M" migrate-model "$tmp/t.jsonl" -r 3 -m 6 --sweep --json >"$tmp/s.json" 2>"$tmp/s.err"
rc=$?
for cc in "1 5" "3 2"; do
	set -- $cc
	"$M" migrate-model "$tmp/t.jsonl" -r 3 -m 6 -c "$1" --cool "$2" --json >"$tmp/s-$1-$2.json"
done
check sweep_json '[ $rc = 0 ] && "$PY" - "$tmp/s.json" "$tmp/s-1-5.json" "$tmp/s-3-2.json" <<"PYEOF"
import json, sys
s = json.load(open(sys.argv[1]))
grid = [(x["consecutive"], x["cool"]) for x in s["settings"]]
ok = s["type"] == "migrate_model_sweep" and grid == [(c, k) for c in (1, 2, 3) for k in (1, 2, 3, 5, 8, 1000)]
for f, c, k in ((sys.argv[2], 1, 5), (sys.argv[3], 3, 2)):
    j = json.load(open(f))
    pol = {p["name"]: p for p in j["policies"]}
    x = s["settings"][grid.index((c, k))]
    h = pol["hot-range"]
    ok = ok and x["total_bytes"] == h["total_bytes"] and x["final_round_bytes"] == h["final_round_bytes"]
    ok = ok and x["precopy_bytes"] == h["total_bytes"] - h["final_round_bytes"]
    ok = ok and x["rounds"] == len(h["rounds"]) and abs(x["downtime_ms"] - h["downtime_ms"]) < 1e-6
    ok = ok and s["none"]["total_bytes"] == pol["none"]["total_bytes"]
ok = ok and s["fewest_bytes"]["total_bytes"] == min(x["total_bytes"] for x in s["settings"])
k = s["fewest_bytes_downtime_kept"]
kept = [x for x in s["settings"] if x["downtime_ms"] <= s["none"]["downtime_ms"]]
ok = ok and (k is None if not kept else k["total_bytes"] == min(x["total_bytes"] for x in kept))
ok = ok and (k is None or k["downtime_ms"] <= s["none"]["downtime_ms"])
sys.exit(not ok)
PYEOF' "rc=$rc $(cat "$tmp/s.err") $(head -c 400 "$tmp/s.json")"
"$M" migrate-model "$tmp/t.jsonl" -r 3 -m 6 --sweep >"$tmp/s.txt" 2>&1
rc=$?
tr -s ' \n' ' ' <"$tmp/s.txt" >"$tmp/s.flat"
check sweep_text '[ $rc = 0 ] && [ "$(grep -c "^ *[123] *[12358] " "$tmp/s.txt")" = 15 ] && grep -q "fewest bytes" "$tmp/s.flat"' \
	"rc=$rc $(head -n 24 "$tmp/s.txt")"
"$M" migrate-model "$tmp/t.jsonl" --sweep --cool 3 >"$tmp/sc.txt" 2>&1
rc=$?
check sweep_refuses_c '[ $rc = 2 ] && grep -q "give neither" "$tmp/sc.txt"' "rc=$rc $(cat "$tmp/sc.txt")"

t_done
