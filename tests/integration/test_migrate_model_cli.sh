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
"$M" migrate-model "$tmp/t.jsonl" -b 50 -F 0.25 --json >"$tmp/f.json" 2>"$tmp/f.err"
rc=$?
check freeze_overhead_json '[ $rc = 0 ] && "$PY" -c "
import json, sys
j = json.load(open(sys.argv[1]))
ok = j[\"freeze_overhead_s\"] == 0.25
for p in j[\"policies\"]:
    ok = ok and abs(p[\"downtime_ms\"] - (250 + p[\"final_round_bytes\"] / 50 / 1048576 * 1000)) < 1e-6
    ok = ok and p[\"postcopy_downtime_ms\"] == 250 and p[\"postcopy_last_page_ms\"] == p[\"downtime_ms\"]
sys.exit(not ok)" "$tmp/f.json"' "rc=$rc $(cat "$tmp/f.err") $(head -c 400 "$tmp/f.json")"
"$M" migrate-model "$tmp/t.jsonl" -F 0.25 | tr -s ' \n' ' ' >"$tmp/f.txt"
check freeze_overhead_said 'grep -q "with post-copy: running again after 250.0 ms (the freeze overhead)" "$tmp/f.txt"' \
	"$(cat "$tmp/f.txt")"
"$M" migrate-model "$tmp/t.jsonl" -F -1 >/dev/null 2>"$tmp/e"
rc=$?
check freeze_overhead_negative '[ $rc = 2 ] && grep -q "freeze-overhead" "$tmp/e"' "$(cat "$tmp/e")"
"$M" migrate-model --help | tr -s ' \n' ' ' >"$tmp/help"
check help_defaults 'grep -q "MiB/s (default 100" "$tmp/help" && grep -q "rounds (default 2" "$tmp/help"' \
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

t_done
