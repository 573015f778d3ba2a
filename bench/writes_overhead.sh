#!/bin/bash
# make bench BENCH=writes_overhead: what each way of tracking writes costs
# the target, all five in one run. memwrite -m MIB paced at RATES MiB/s
# (default "1 10 100 1000 max", max: unpaced, as fast as it can), SECS s each,
# untracked, under `memlens writes -i INTERVAL` (exact), `--sample 1/K`
# (sampled), `--max-overhead PCT` (bounded: exact while the faults cost
# under PCT % of a CPU at the cost memlens measured, sampled beyond) and
# `--max-error ERR --max-overhead PCT` (adaptive: the least fraction, down
# to 1/K, whose standard error is under ERR % of the written pages), one
# after the other, REPS times, the order of the modes rotated each time
# (so that they share the machine's load). Per rate and mode, medians of
# the runs: the MiB/s it kept and its wall-time slowdown (the untracked
# runs' MiB/s over its own: the time to write the same bytes), its CPU
# time per MiB over the untracked runs' (CPU slowdown), the buffer's mean
# written ratio over the intervals and the sampled runs' error against the
# exact runs' (|sampled - exact| / exact), and what memlens said it cost
# (percent of one CPU) and the fraction the bounded and adaptive runs
# ended at. Then bench/writes_redis.sh with the first four modes (REDIS=0:
# not).
set -eu
M=${MEMLENS:?} W=${WORKLOADS:?}
T=$(mktemp -d "${TMPDIR:-/tmp}/writes_overhead.XXXXXX")
trap 'rm -rf "$T"' EXIT

secs=${SECS:-8} iv=${INTERVAL:-1000} mib=${MIB:-64} k=${K:-10} pct=${PCT:-2} reps=${REPS:-3}
err=${ERR:-5}
modes=(untracked exact sampled bounded adaptive)
echo "memwrite -m $mib for $secs s, $reps runs of each mode interleaved: untracked,"
echo "writes -i $iv (exact), --sample 1/$k (sampled), --max-overhead $pct (bounded),"
echo "--max-error $err --sample 1/$k --max-overhead $pct (adaptive)"

# one run: RATE ("max": unpaced) MODE REP -> a line of $T/runs
run() {
	local rate=$1 mode=$2 rep=$3 pace=() extra=() out=$T/$1.$2.$3
	[ "$rate" != max ] && pace=(-R "$rate")
	case $mode in
	sampled) extra=(--sample "1/$k") ;;
	bounded) extra=(--max-overhead "$pct") ;;
	adaptive) extra=(--max-error "$err" --sample "1/$k" --max-overhead "$pct") ;;
	esac
	if [ "$mode" = untracked ]; then
		"$W/memwrite" -m "$mib" "${pace[@]}" -s "$secs" -r >"$out" 2>&1 || true
	else
		"$M" writes -i "$iv" "${extra[@]}" -q --json -o "$out.json" -- \
			"$W/memwrite" -m "$mib" "${pace[@]}" -s "$secs" -r >"$out" 2>&1 || true
	fi
	grep -q cost "$out" || echo "    $rate $mode run $rep: no result: $(tail -n 1 "$out")" >&2
}

rates=${RATES:-1 10 100 1000 max}
for rate in $rates; do
	for rep in $(seq "$reps"); do
		for i in 0 1 2 3 4; do
			run "$rate" "${modes[$(((i + rep) % 5))]}" "$rep"
		done
	done
done

python3 - "$T" "$mib" "$reps" "$rates" <<'PY'
import json, os, re, statistics, sys
t, mib, reps, rates = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4].split()
modes = ("untracked", "exact", "sampled", "bounded", "adaptive")
med = lambda v: statistics.median(v) if v else None

def one(rate, mode, rep):
    f = os.path.join(t, f"{rate}.{mode}.{rep}")
    try:
        txt = open(f).read()
    except OSError:
        return None
    m1 = re.search(r"([\d.]+) MiB/s over", txt)
    m2 = re.search(r"cost ([\d.]+) s cpu for ([\d.]+) MiB", txt)
    if not m1 or not m2:
        return None
    r = {"kept": float(m1.group(1)), "cpu": float(m2.group(1)) / float(m2.group(2))}
    if mode != "untracked" and os.path.exists(f + ".json"):
        iv = [json.loads(l) for l in open(f + ".json") if l.strip()]
        iv = [l for l in iv if l["type"] == "interval"][2:-1]
        ratios = [rg["written_ratio"] for l in iv for rg in l["regions"]
                  if rg["total_pages"] == mib * 256]
        s = [l["sampling"] for l in iv if "sampling" in l]
        if ratios:
            r["ratio"] = sum(ratios) / len(ratios)
            r["ratios"] = ratios
        if s:
            r["oh"] = sum(x["overhead_pct"] for x in s) / len(s)
            r["k"] = s[-1]["k"]
            errs = [x["error_pct"] for x in s if "error_pct" in x]
            if errs:
                r["se"] = max(errs)
            r["fault_ns"] = s[0]["fault_ns"]
    return r

print("    %-6s %-9s %9s %8s %8s %8s %9s %9s %8s %9s %6s %7s" % ("MiB/s", "mode", "kept",
      "wall", "CPU/MiB", "CPU more", "written", "ratio err", "interval", "cost said", "k",
      "se said"))
print("    %-6s %-9s %9s %8s %8s %8s %9s %9s %8s %9s %6s %7s" % ("asked", "", "MiB/s", "x untr",
      "x untr", "% of CPU", "ratio", "vs exact", "err", "% of CPU", "(end)", "max %"))
fault_ns = set()
for rate in rates:
    runs = {m: [x for x in (one(rate, m, r) for r in range(1, reps + 1)) if x] for m in modes}
    u_kept = med([x["kept"] for x in runs["untracked"]])
    u_cpu = med([x["cpu"] for x in runs["untracked"]])
    e_ratio = med([x["ratio"] for x in runs["exact"] if "ratio" in x])
    for m in modes:
        v = runs[m]
        if not v or not u_kept:
            print(f"    {rate:<6} {m:<9} no result")
            continue
        kept, cpu = med([x["kept"] for x in v]), med([x["cpu"] for x in v])
        ratio = med([x["ratio"] for x in v if "ratio" in x])
        oh = med([x["oh"] for x in v if "oh" in x])
        kk = med([x["k"] for x in v if "k" in x])
        se = med([x["se"] for x in v if "se" in x])
        fault_ns |= {x["fault_ns"] for x in v if "fault_ns" in x}
        err = iverr = "-"
        if m != "untracked" and ratio is not None and e_ratio:
            if m != "exact":
                err = "%.1f%%" % (abs(ratio - e_ratio) / e_ratio * 100)
            # each interval's ratio against the exact runs' mean: what one interval says
            # (for the exact runs, how much the pace itself varies)
            iv = med([sum(abs(q - e_ratio) for q in x["ratios"]) / len(x["ratios"])
                      for x in v if "ratios" in x])
            iverr = "%.1f%%" % (iv / e_ratio * 100)
        print("    %-6s %-9s %9.1f %7.3fx %7.2fx %8.2f %9s %9s %8s %9s %6s %7s" % (
            rate, m, kept, u_kept / kept, cpu / u_cpu, (cpu - u_cpu) * kept * 100,
            "-" if ratio is None else "%.4f" % ratio, err, iverr,
            "-" if oh is None else "%.2f" % oh, "-" if kk is None else "1/%d" % kk,
            "-" if se is None else "%.1f" % se))
print("    wall: the untracked runs' MiB/s over the mode's (the time to write the same bytes);")
print("    CPU/MiB: the target's CPU time per MiB written over the untracked runs'; CPU more:")
print("    the CPU it spent beyond the untracked runs' for its MiB/s, percent of one CPU; written")
print("    ratio: the buffer's mean per interval (the first two and the last left out), and the")
print("    sampled runs' distance to the exact runs' in percent of it; interval err: the mean")
print("    distance of each interval's ratio to the exact runs' mean, percent of it (exact: the")
print("    pace's own variation); cost said: what memlens reported (tracked faults x the fault")
print("    cost it measured: %s ns); se said: the" % ", ".join(str(x) for x in sorted(fault_ns)))
print("    largest standard error of a VMA's written pages the adaptive runs stated, percent")
print("    of them; medians of the runs")
PY

if [ "${REDIS:-1}" != 0 ]; then
	MODES="untracked exact sampled bounded" K=$k PCT=$pct bash "$(dirname "$0")/writes_redis.sh"
fi
