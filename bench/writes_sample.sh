#!/bin/bash
# make bench BENCH=writes_sample: what sampled write tracking saves the
# target, and what it costs in accuracy. memwrite paced at RATES MiB/s
# (default 1 10 100 1000) for SECS s, three copies side by side in the same
# run (the same load on the CPUs): untracked, under `memlens writes -i
# INTERVAL` (exact), and under `memlens writes -i INTERVAL --sample 1/K`.
# For each: the rate it kept and its CPU time per MiB written over the
# untracked copy's (slowdown); for the two tracked ones, the buffer's mean
# written ratio over the intervals (the first two and the last left out:
# the buffer is faulted in, the target exits) and its mean error against
# what memwrite's pattern makes it (it writes its kept rate round the
# buffer: min(1, kept MiB/s x interval / buffer)), the mean standard error
# the sampled run gave, and the overhead it reported.
set -eu
M=${MEMLENS:?} W=${WORKLOADS:?}
T=${TMPDIR:-/tmp}/writes_sample.$$
mkdir -p "$T"
trap 'rm -rf "$T"' EXIT

secs=${SECS:-8} iv=${INTERVAL:-1000} mib=${MIB:-64} k=${K:-10}
echo "memwrite -m $mib -R RATE for $secs s: untracked, exact and --sample 1/$k, side by side (-i $iv):"
printf '    %6s %20s %10s %10s %15s %15s %7s %9s\n' "MiB/s" "kept (u/exact/smp)" "slowdown" \
	"slowdown" "mean ratio" "|error|" "mean se" "overhead"
printf '    %6s %20s %10s %10s %15s %15s %7s %9s\n' "" "" "exact" "sampled" "exact/smp" \
	"exact/smp" "smp" "smp said"
for rate in ${RATES:-1 10 100 1000}; do
	"$W/memwrite" -m "$mib" -R "$rate" -s "$secs" -r >"$T/u" 2>&1 &
	u=$!
	"$M" writes -i "$iv" -q -o "$T/e.json" --json -- \
		"$W/memwrite" -m "$mib" -R "$rate" -s "$secs" -r >"$T/e" 2>&1 &
	e=$!
	"$M" writes -i "$iv" --sample "1/$k" -q -o "$T/s.json" --json -- \
		"$W/memwrite" -m "$mib" -R "$rate" -s "$secs" -r >"$T/s" 2>&1 || true
	wait $u || true
	wait $e || true
	if ! grep -q "cost" "$T/u" || ! grep -q "cost" "$T/e" || ! grep -q "cost" "$T/s"; then
		echo "    $rate: no result"
		continue
	fi
	python3 - "$rate" "$mib" "$T/u" "$T/e" "$T/s" "$T/e.json" "$T/s.json" <<'PY'
import json, re, sys
rate, mib = sys.argv[1], int(sys.argv[2])
def run(f):
    t = open(f).read()
    kept = float(re.search(r"([\d.]+) MiB/s over", t).group(1))
    m = re.search(r"cost ([\d.]+) s cpu for ([\d.]+) MiB", t)
    return kept, float(m.group(1)) / float(m.group(2))
def ratios(f, kept):
    # per interval: the buffer's written ratio, its standard error, the overhead
    # reported, and what memwrite's pattern makes it (kept MiB/s round a buffer)
    iv = [json.loads(l) for l in open(f)]
    iv = [l for l in iv if l["type"] == "interval"][2:-1]
    out = []
    for l in iv:
        big = [r for r in l["regions"] if r["total_pages"] == mib * 256]
        if big:
            truth = min(1.0, kept * l["interval_s"] / mib)
            out.append((big[0]["written_ratio"], big[0].get("ratio_stderr", 0),
                        l.get("sampling", {}).get("overhead_pct", 0), truth))
    return out
(ku, cu), (ke, ce), (ks, cs) = run(sys.argv[3]), run(sys.argv[4]), run(sys.argv[5])
re_, rs = ratios(sys.argv[6], ke), ratios(sys.argv[7], ks)
if not re_ or not rs:
    print(f"    {rate:>6}: too few intervals")
    sys.exit()
mean = lambda v: sum(v) / len(v)
me, ms = mean([x[0] for x in re_]), mean([x[0] for x in rs])
ee = mean([abs(x[0] - x[3]) for x in re_])
es = mean([abs(x[0] - x[3]) for x in rs])
se = mean([x[1] for x in rs])
oh = mean([x[2] for x in rs])
print(f"    {rate:>6} {ku:6.1f}/{ke:6.1f}/{ks:6.1f} {ce / cu:9.2f}x {cs / cu:9.2f}x"
      f" {me:7.4f}/{ms:7.4f} {ee:7.4f}/{es:7.4f} {se:7.4f} {oh:8.2f}%")
PY
done
echo "    slowdown: the target's CPU time per MiB written over the untracked copy's (same run);"
echo "    ratio: the buffer's mean written ratio per interval, exact and estimated; |error|: mean"
echo "    distance to min(1, kept MiB/s x interval / buffer), what memwrite wrote; mean se: the"
echo "    standard error the sampled run reported; overhead: what the sampled run said it cost"
echo "    (its tracked faults x the fault cost it measured, over the interval, percent of one CPU)"
