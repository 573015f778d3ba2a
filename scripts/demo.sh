#!/bin/bash
# make demo: runs three workloads under `memlens writes` and prints a table
# of what each writes (VMAs, hot VMAs, written ratio, dirty rate) as
# measured on this machine; then migrate-model, snapshot, faults and report.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${BUILD:-build}
M=$B/memlens W=$B/workloads
out=${DEMO_DIR:-$B/demo}
mkdir -p "$out"

if [ "$(id -u)" -ne 0 ]; then
	echo "demo: memlens needs root (ptrace and another process's pagemap): run 'sudo make demo'" >&2
	exit 4
fi

# each part says what it does and, once done, how long it took
sec_name= sec_t0=
end_section() {
	[ -n "$sec_name" ] || return 0
	awk -v n="$sec_name" -v a="$sec_t0" -v b="$EPOCHREALTIME" \
		'BEGIN { printf "    (%s: %.1f s)\n", n, b - a }'
	sec_name=
}
section() {	# N TITLE
	end_section
	sec_name="part $1 of 6" sec_t0=$EPOCHREALTIME
	echo
	echo "--- [$1/6] $2"
}

profile() {	# name seconds cmd...
	local name=$1 secs=$2; shift 2
	"$@" >"$out/$name.stdout" 2>&1 &
	local pid=$!
	sleep 0.3
	echo "  profiling $name (pid $pid) for $secs s ..." >&2
	"$M" writes -p "$pid" -i 1000 -d "$secs" --json --record "$out/$name.record.jsonl" >"$out/$name.jsonl"
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

section 1 "what this machine supports (memlens check)"
"$M" check || true
section 2 "where do these programs write? (memlens writes, 23 s)"
echo "(an interval every 1000 ms; hot: written ratio > 0.3 for 3 intervals in a row)"
profile memwrite 6 "$W/memwrite"
profile memalloc 10 "$W/memalloc"
profile matmul 7 "$W/matmul"

/usr/bin/env python3 - "$out" <<'PY'
import json, sys, os
out = sys.argv[1]
desc = {"memwrite": "Continuous 64MB memset loop",
        "memalloc": "32MB allocation every 3 seconds",
        "matmul": "1024x1024 matrix multiplication"}
def rate(b):
    for unit in ("B/s", "KB/s", "MB/s", "GB/s"):
        if b < 1000 or unit == "GB/s":
            return f"{b:.1f} {unit}"
        b /= 1000
print()
print(f"{'Workload':<10} {'Description':<34} {'Total VMAs':>10} {'Hot VMAs':>9} {'Written Ratio':>14} {'Dirty Rate':>12}")
for name in ("memwrite", "memalloc", "matmul"):
    lines = [json.loads(l) for l in open(os.path.join(out, name + ".jsonl"))]
    iv = [l for l in lines if l["type"] == "interval"]
    sm = [l for l in lines if l["type"] == "summary"][-1]
    hot = sm["regions"]
    if hot:
        # page-weighted: the share of the hot VMAs' pages written per interval
        wr = f"~{sum(r['dirty_pages'] for r in hot) / sum(r['total_pages'] for r in hot):.2f}"
    else:
        # no hot VMA: the range of the most written VMA's ratio over time
        per = {}
        for l in iv:
            for r in l["regions"]:
                per.setdefault(r["start_addr"], []).append(r)
        top = max(per.values(), key=lambda rs: sum(r["dirty_pages"] for r in rs), default=[])
        rs = [r["written_ratio"] for r in top] or [0]
        wr = f"{min(rs):.2f}-{max(rs):.2f}"
    print(f"{name:<10} {desc[name]:<34} {sm['total_vmas']:>10} {sm['hot_vmas']:>9} {wr:>14} {rate(sm['dirty']['avg_dirty_rate']):>12}")
print()
print("Total VMAs: every mapping of the process; Hot VMAs: written above the threshold for 3 intervals in a row")
print("(what CRIU pre-dump should skip); Written Ratio: share of the hot VMAs' pages written per interval")
print("(with no hot VMA: the range of the most written VMA's ratio over the run);")
print("Dirty Rate: bytes written per second, each page counted once per interval.")
PY
echo
echo "JSON Lines of each run: $out/*.jsonl (page ranges per interval: $out/*.record.jsonl)"

# The rest of the toolkit on the same workloads, for the report.
section 3 "would leaving memwrite's hot memory out of pre-dumps pay?"
"$M" migrate-model "$out/memwrite.record.jsonl" --bandwidth 100 --round-interval 2
"$M" migrate-model "$out/memwrite.record.jsonl" --bandwidth 100 --round-interval 2 --json \
	>"$out/migrate.jsonl"
section 4 "memalloc's memory, 10 times a second for 4 s (memlens snapshot)"
# (-o: the records and the summary go to the file; memalloc keeps stdout)
"$M" snapshot -i 100 -d 4 --json -o "$out/snapshot.jsonl" -- "$W/memalloc" >"$out/snapshot.txt" 2>&1 || true
/usr/bin/env python3 -c '
import json, sys
try:
    s = [json.loads(l) for l in open(sys.argv[1])][-1]
    print("  %d snapshots; a cycle took %d us (median), %d us at most; stopped because %s"
          % (s["cycles"], s["cycle_us_median"], s["cycle_us_max"], s["stopped_because"]))
except (OSError, ValueError, IndexError, KeyError):
    print("  no snapshot summary: see " + sys.argv[2])
' "$out/snapshot.jsonl" "$out/snapshot.txt"
section 5 "page faults of matmul and their latency (memlens faults, 4 s)"
# (matmul's own output shares stdout with the JSON: keep the JSON line)
if "$M" faults -d 4 --json -- "$W/matmul" >"$out/faults.out" 2>"$out/faults.err"; then
	grep '^{"type":"faults"' "$out/faults.out" >"$out/faults.jsonl"
	/usr/bin/env python3 -c '
import json, sys
d = json.loads(open(sys.argv[1]).readline())
r = d["rows"][0] if d["rows"] else {"minor": 0, "major": 0}
print("  %d minor, %d major faults (%s mode)" % (r["minor"], r["major"], d.get("mode", "?")))' "$out/faults.jsonl"
else
	echo "  skipped: $(tail -n 1 "$out/faults.err")"
	rm -f "$out/faults.jsonl"
fi
section 6 "one HTML page of it all (memlens report)"
"$M" report --skip-unknown --title "memlens demo" -o "$out/report.html" "$out"/*.jsonl &&
	echo "report: $out/report.html (heat maps and dirty rates; open it in a browser)"
end_section
