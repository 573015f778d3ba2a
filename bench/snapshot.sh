#!/bin/bash
# make bench, snapshot part: on one idle
# process of 1 GiB in ~50 VMAs, the cost of one collection cycle of
# `memlens snapshot` against `pmap -X`, reading /proc/PID/smaps and `gcore`
# (a core dump), all measured in this run, as ratios; then the CPU cost of
# sustained 100 Hz sampling.
set -eu
M=${MEMLENS:?} W=${WORKLOADS:?}
PY=/usr/bin/python3
MIB=${MIB:-1024} REGIONS=${REGIONS:-14} REPS=${REPS:-15}
tmp=$(mktemp -d)
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

"$W/bigmap" "$MIB" "$REGIONS" >"$tmp/ready" &
pid=$!
for _ in $(seq 600); do grep -q ready "$tmp/ready" && break; sleep 0.05; done
grep -q ready "$tmp/ready" || { echo "bigmap did not start"; exit 1; }
vmas=$(wc -l <"/proc/$pid/maps")
rss=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status")
echo "target: bigmap, $((rss / 1024)) MiB resident in $vmas VMAs (idle)"

# median wall time of a command, in microseconds, over N runs
med_us() {	# N CMD...
	local n=$1; shift
	for _ in $(seq "$n"); do
		local t0 t1
		t0=$(date +%s%N)
		"$@" >/dev/null 2>&1
		t1=$(date +%s%N)
		echo $(((t1 - t0) / 1000))
	done | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'
}

# memlens: its own cycle time in periodic mode (median of 100 cycles)
# (default threads: one per 256 MiB mapped, at most half the CPUs; and 2 threads)
median_cycle() {	# FILE -> "median_us threads"
	$PY -c '
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
r = [x for x in r if x.get("type") == "snapshot"]
c = sorted(x["cycle_us"] for x in r)
print(c[len(c) // 2], r[-1]["scan_threads"])' "$1"
}
"$M" snapshot -p "$pid" --json -i 10 -n 100 -o "$tmp/cyc.json" >/dev/null
read -r cyc nthr < <(median_cycle "$tmp/cyc.json")
"$M" snapshot -p "$pid" --json -i 10 -n 100 --threads 2 -o "$tmp/cyc2.json" >/dev/null
read -r cyc2 _ < <(median_cycle "$tmp/cyc2.json")
"$M" snapshot -p "$pid" --json --pages -i 10 -n 20 -o "$tmp/cycp.json" >/dev/null
cycp=$($PY -c '
import json, sys
c = sorted(r["cycle_us"] for r in map(json.loads, open(sys.argv[1])) if r.get("type") == "snapshot")
print(c[len(c) // 2])' "$tmp/cycp.json")
# --pss: the cycle, then smaps read after it (PSS, USS, Dirty), in the same run
"$M" snapshot -p "$pid" --json --pss -i 10 -n 20 -o "$tmp/cycs.json" >/dev/null
read -r cycs smapsus < <($PY -c '
import json, sys
r = [x for x in map(json.loads, open(sys.argv[1])) if x.get("type") == "snapshot"]
c = sorted(x["cycle_us"] for x in r)
s = sorted(x["smaps_us"] for x in r)
print(c[len(c) // 2], s[len(s) // 2])' "$tmp/cycs.json")
inv=$(med_us "$REPS" "$M" snapshot -p "$pid" --json)
startup=$(med_us "$REPS" "$M" --help)
pmapx=$(med_us "$REPS" pmap -X "$pid")
# reading smaps in-process (no exec), median of REPS reads
smaps=$($PY -c '
import sys, time
p = "/proc/%s/smaps" % sys.argv[1]
t = []
for _ in range(int(sys.argv[2])):
    t0 = time.perf_counter()
    with open(p, "rb") as f:
        f.read()
    t.append((time.perf_counter() - t0) * 1e6)
t.sort()
print(int(t[len(t) // 2]))' "$pid" "$REPS")
cat_smaps=$(med_us "$REPS" cat "/proc/$pid/smaps")
if command -v gcore >/dev/null; then
	gc=$(med_us 3 gcore -o "$tmp/core" "$pid")
	rm -f "$tmp"/core*
else
	gc=
	echo "gcore: not installed (Debian package gdb); skipped"
fi

echo
echo "one collection cycle (medians; memlens reports more per VMA than any peer):"
printf "  %-44s %9d us\n" "memlens snapshot, cycle ($nthr scan threads)" "$cyc"
printf "  %-44s %9d us\n" "memlens snapshot, cycle (--threads 2)" "$cyc2"
printf "  %-44s %9d us\n" "memlens snapshot --pages, cycle" "$cycp"
printf "  %-44s %9d us\n" "memlens snapshot --pss: cycle" "$cycs"
printf "  %-44s %9d us\n" "  then smaps for PSS/USS/Dirty" "$smapsus"
printf "  %-44s %9d us\n" "memlens snapshot -p PID --json (whole run)" "$inv"
printf "  %-44s %9d us\n" "  of which memlens start-up (--help)" "$startup"
printf "  %-44s %9d us\n" "pmap -X PID (whole run)" "$pmapx"
printf "  %-44s %9d us\n" "read /proc/PID/smaps (in-process)" "$smaps"
printf "  %-44s %9d us\n" "cat /proc/PID/smaps (whole run)" "$cat_smaps"
[ -n "$gc" ] && printf "  %-44s %9d us\n" "gcore PID (core dump, whole run)" "$gc"
echo "ratios (peer time / memlens cycle time; > 1: memlens is faster):"
awk -v c="$cyc" -v c2="$cyc2" -v p="$pmapx" -v s="$smaps" -v cs="$cat_smaps" -v g="$gc" -v i="$inv" -v cp="$cycp" -v su="$smapsus" -v cs="$cycs" 'BEGIN {
	printf "  vs pmap -X:               %8.1fx   (whole memlens run vs whole pmap run: %.1fx)\n", p / c, p / i
	printf "  vs reading smaps:         %8.1fx   (cat smaps vs memlens run: %.1fx)\n", s / c, cs / i
	if (g != "") printf "  vs gcore:                 %8.0fx   (whole runs: %.0fx)\n", g / c, g / i
	printf "  --pages cycle vs pmap -X: %8.2fx\n", p / cp
	printf "  --pss: smaps read / cycle: %7.1fx (what PSS costs on top of a cycle)\n", su / cs
	printf "  --pages cycle / plain cycle: %5.0fx\n", cp / c
	printf "  --threads 2 cycle: vs pmap -X %.1fx, vs gcore %.0fx\n", p / c2, (g != "" ? g / c2 : 0)
}'

# Sustained 100 Hz sampling, JSON records written out: the cycles taken of
# those the interval asks for (the summary's cycles_wanted), the longest
# cycle, and the CPU it costs; then the same beside two busy loops per CPU
# (the machine under load), where the interval may not be kept.
secs=${SECS:-5}
hz100() {	# LABEL
	/usr/bin/time -f "%e %U %S" -o "$tmp/time" "$M" snapshot -p "$pid" -i 10 -d "$secs" \
		--json -o "$tmp/100hz.json" >/dev/null
	read -r el us sy <"$tmp/time"
	$PY - "$tmp/100hz.json" "$1" "$secs" "$el" "$us" "$sy" <<'PY'
import json, sys
f, label, secs, el, us, sy = sys.argv[1], sys.argv[2], *map(float, sys.argv[3:])
s = [r for r in map(json.loads, open(f)) if r.get("type") == "summary"][-1]
print("100 Hz for %g s%s: %d of %d cycles wanted (%.0f %%; interval %s), cycle median %.2f ms, "
      "longest %.2f ms; CPU %.2f s user + %.2f s sys = %.1f %% of one CPU"
      % (secs, label, s["cycles"], s["cycles_wanted"], 100.0 * s["cycles"] / s["cycles_wanted"],
         "kept" if s["interval_kept"] else "NOT kept", s["cycle_us_median"] / 1e3,
         s["cycle_us_max"] / 1e3, us, sy, (us + sy) / el * 100))
PY
}
hz100 ""
hogs=()
for _ in $(seq $((2 * $(nproc)))); do
	bash -c 'while :; do :; done' &
	hogs+=($!)
done
hz100 " beside $((2 * $(nproc))) busy loops on $(nproc) CPUs"
kill "${hogs[@]}" 2>/dev/null
wait "${hogs[@]}" 2>/dev/null || true

# The same comparison on memory backed by transparent huge pages: the kernel
# walks one PMD per 2 MiB instead of 512 PTEs, for memlens and the peers.
kill "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
"$W/bigmap" "$MIB" "$REGIONS" thp >"$tmp/ready2" &
pid=$!
for _ in $(seq 600); do grep -q ready "$tmp/ready2" && break; sleep 0.05; done
thp_kb=$(awk '/^AnonHugePages/ {s += $2} END {print s + 0}' "/proc/$pid/smaps")
rss=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status")
echo
echo "the same with MADV_HUGEPAGE: $((rss / 1024)) MiB resident, $((thp_kb / 1024)) MiB of it in huge pages"
"$M" snapshot -p "$pid" --json -i 10 -n 100 -o "$tmp/thp.json" >/dev/null
read -r cyct _ < <(median_cycle "$tmp/thp.json")
pmapt=$(med_us "$REPS" pmap -X "$pid")
smapst=$(med_us "$REPS" cat "/proc/$pid/smaps")
gct=
if command -v gcore >/dev/null; then
	gct=$(med_us 3 gcore -o "$tmp/core" "$pid")
	rm -f "$tmp"/core*
fi
printf "  %-44s %9d us\n" "memlens snapshot, cycle" "$cyct" "pmap -X PID (whole run)" "$pmapt" \
	"cat /proc/PID/smaps (whole run)" "$smapst"
[ -n "$gct" ] && printf "  %-44s %9d us\n" "gcore PID (core dump, whole run)" "$gct"
awk -v c="$cyct" -v p="$pmapt" -v s="$smapst" -v g="$gct" 'BEGIN {
	printf "  ratios: vs pmap -X %.1fx, vs cat smaps %.1fx", p / c, s / c
	if (g != "") printf ", vs gcore %.0fx", g / c
	printf "\n" }'
