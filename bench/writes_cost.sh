#!/bin/bash
# make bench, what exact write tracking costs the target: (a) the fault a
# tracked write takes, measured alone (bench/wp_fault.c); (b) memwrite paced
# at RATES MiB/s (default 1 10 100 1000) for SECS s, once untracked and once
# under `memlens writes -i INTERVAL` side by side in the same run (the same
# load on the CPUs): the CPU time the target spent per MiB written, tracked
# over untracked (its slowdown), the rate it kept, the faults tracking added
# per second and the CPU each cost it.
set -eu
M=${MEMLENS:?} W=${WORKLOADS:?} B=${BUILD:-build}
T=${TMPDIR:-/tmp}/writes_cost.$$
mkdir -p "$T"
trap 'rm -rf "$T"' EXIT

"$B/bench/wp_fault" "${PAGES:-4096}" "${ROUNDS:-5}"

secs=${SECS:-8} iv=${INTERVAL:-1000} mib=${MIB:-64}
echo "(b) memwrite -m $mib paced, $secs s, untracked vs memlens writes -i $iv, side by side:"
printf '    %9s %15s %9s %9s %8s %9s %12s %8s\n' "MiB/s" "kept (untr/tr)" "CPU ms" "CPU ms" \
	"slowdown" "faults/s" "us CPU per" "invol."
printf '    %9s %15s %9s %9s %8s %9s %12s %8s\n' "asked" "" "untracked" "tracked" \
	"(CPU/MiB)" "tracked" "tracked fault" "cs (tr)"
for rate in ${RATES:-1 10 100 1000}; do
	"$W/memwrite" -m "$mib" -R "$rate" -s "$secs" -r >"$T/u" 2>&1 &
	u=$!
	"$M" writes -i "$iv" -q -o "$T/ml.json" --json -- \
		"$W/memwrite" -m "$mib" -R "$rate" -s "$secs" -r >"$T/t" 2>&1 || true
	wait $u || true
	if ! grep -q "cost" "$T/u" || ! grep -q "cost" "$T/t"; then
		echo "    $rate: no result (untracked: $(tail -1 "$T/u"); tracked: $(tail -1 "$T/t"))"
		continue
	fi
	awk -v rate="$rate" '
		FNR == 1 { f++ }
		/MiB\/s over/ { kept[f] = $2; secs[f] = $5 }
		/cost/ { cpu[f] = $3; mib[f] = $7; flt[f] = $9; vol[f] = $12; inv[f] = $15 }
		END {
			cu = cpu[1] / mib[1]; ct = cpu[2] / mib[2]
			extra = flt[2] - flt[1] * mib[2] / mib[1]
			per = extra > 0 ? (cpu[2] - cu * mib[2]) / extra * 1e6 : 0
			printf "    %9s %7.1f/%-7.1f %9.1f %9.1f %7.1fx %9.0f %12.1f %8d\n",
				rate, kept[1], kept[2], cpu[1] * 1e3, cpu[2] * 1e3, ct / cu,
				extra / secs[2], per, inv[2]
		}' "$T/u" "$T/t"
done
echo "    slowdown: CPU time per MiB written, tracked over untracked (same run); kept: the"
echo "    MiB/s each managed (below the rate asked: it fell behind); per tracked fault: the"
echo "    CPU beyond untracked's for the same MiB over the minor faults beyond untracked's"
