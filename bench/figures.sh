#!/bin/bash
# The figures the README and the man pages state, measured on this machine
# in one run, each as min / median / max over its repetitions, next to a
# peer measured in the same run where one exists:
#   stop:   how long `writes` stops the target while it creates a
#           userfaultfd in it (what memlens reports, attach.stopped_ms), over
#           REPS attaches to an idle 64 MiB process in 24 VMAs;
#   cycle:  one `snapshot` cycle of an idle 1 GiB process in 24 VMAs, its own
#           cycle_us, against `cat /proc/PID/smaps` and `pmap -X PID`;
#   pages:  a `snapshot --pages` cycle per GiB resident (page flags);
#   pss:    the smaps read of a `snapshot --pss` cycle per GiB resident;
#   kept:   `snapshot -i 10 -d 3`: cycles taken of those asked for;
#   tick:   a `writes -i 10` tick on the 1 GiB process (tick_us), and how
#           many ticks were longer than the 10 ms interval.
# The load average is printed first: on 2 shared CPUs it is most of the
# spread. Needs root (ptrace, /proc/kpageflags).
#   MEMLENS=build/memlens WORKLOADS=build/workloads bench/figures.sh
set -eu
M=${MEMLENS:-build/memlens} W=${WORKLOADS:-build/workloads}
PY=${PYTHON:-python3}
REPS=${REPS:-15}
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || :; done
	rm -rf "$tmp"
}
trap cleanup EXIT

start_bigmap() { # MIB REGIONS -> pid in $bm
	"$W/bigmap" "$1" "$2" >"$tmp/ready.$1" &
	pids+=($!)
	bm=$!
	for _ in $(seq 1200); do grep -qs ready "$tmp/ready.$1" && return; sleep 0.05; done
	echo "bigmap $1 $2 did not start" >&2
	exit 1
}

# "min median max" of numbers on stdin
mmm() { sort -g | awk '{a[NR] = $1} END {printf "%s %s %s\n", a[1], a[int((NR + 1) / 2)], a[NR]}'; }

# wall time of a command in microseconds, one line per run
wall_us() { # N CMD...
	local n=$1
	shift
	for _ in $(seq "$n"); do
		local t0 t1
		t0=$(date +%s%N)
		"$@" >/dev/null 2>&1
		t1=$(date +%s%N)
		echo $(((t1 - t0) / 1000))
	done
}

echo "machine: $(nproc) CPUs, $(uname -r), THP $(grep -o "\[[a-z]*\]" /sys/kernel/mm/transparent_hugepage/enabled), load average $(cut -d' ' -f1-3 /proc/loadavg)"

start_bigmap 64 24
small=$bm
for _ in $(seq "$REPS"); do
	"$M" writes -p "$small" -d 0.05 --json -o "$tmp/w.json" >/dev/null 2>&1
	$PY -c 'import json,sys
s=[j for j in map(json.loads, open(sys.argv[1])) if j.get("type")=="summary"][-1]
print(s["attach"]["stopped_ms"])' "$tmp/w.json"
done | mmm >"$tmp/stop"
read -r a b c <"$tmp/stop"
echo "stop: writes stopped the target for setup $a / $b / $c ms (min / median / max of $REPS attaches, 64 MiB in 24 VMAs)"

start_bigmap 1024 24
big=$bm
rss=$(awk '/^VmRSS/ {print $2}' "/proc/$big/status")
"$M" snapshot -p "$big" -i 10 -n "$REPS" --json -o "$tmp/s.json" >/dev/null
read -r a b c < <($PY -c 'import json,sys
for r in map(json.loads, open(sys.argv[1])):
    if r.get("type") == "snapshot":
        print(r["cycle_us"])' "$tmp/s.json" | mmm)
read -r sa sb sc < <(wall_us "$REPS" cat "/proc/$big/smaps" | mmm)
read -r pa pb pc < <(wall_us "$REPS" pmap -X "$big" | mmm)
echo "cycle: snapshot of $((rss / 1024)) MiB resident: $a / $b / $c us; cat smaps $sa / $sb / $sc us; pmap -X $pa / $pb / $pc us"
$PY -c 'import sys; m,s,p = map(float, sys.argv[1:]); print("cycle: median ratio: cat smaps %.1fx, pmap -X %.1fx the snapshot cycle" % (s/m, p/m))' "$b" "$sb" "$pb"

"$M" snapshot -p "$big" -i 10 -n 5 --pages --json -o "$tmp/p.json" >/dev/null
$PY -c 'import json,sys
c=sorted(r["cycle_us"] for r in map(json.loads, open(sys.argv[1])) if r.get("type")=="snapshot")
g=int(sys.argv[2])/1048576
print("pages: snapshot --pages cycle %.0f / %.0f / %.0f ms per GiB resident (5 cycles)" % (c[0]/1000/g, c[len(c)//2]/1000/g, c[-1]/1000/g))' "$tmp/p.json" "$rss"

"$M" snapshot -p "$big" -i 10 -n 5 --pss --json -o "$tmp/ps.json" >/dev/null
$PY -c 'import json,sys
c=sorted(r["smaps_us"] for r in map(json.loads, open(sys.argv[1])) if r.get("type")=="snapshot")
g=int(sys.argv[2])/1048576
print("pss: snapshot --pss reads smaps in %.0f / %.0f / %.0f ms per GiB resident (5 cycles)" % (c[0]/1000/g, c[len(c)//2]/1000/g, c[-1]/1000/g))' "$tmp/ps.json" "$rss"

"$M" snapshot -p "$big" -i 10 -d 3 --json -o "$tmp/k.json" >/dev/null
$PY -c 'import json,sys
s=[j for j in map(json.loads, open(sys.argv[1])) if j.get("type")=="summary"][-1]
print("kept: snapshot -i 10 -d 3 took %d of %d cycles asked for (%.0f%%), the longest %.1f ms, interval_kept %s" % (
    s["cycles"], s["cycles_wanted"], 100.0*s["cycles"]/s["cycles_wanted"], s["cycle_us_max"]/1000, s["interval_kept"]))' "$tmp/k.json"

"$M" writes -p "$big" -i 10 -d 2 --json -o "$tmp/t.json" >/dev/null 2>&1
$PY -c 'import json,sys
r=list(map(json.loads, open(sys.argv[1])))
t=sorted(j["tick_us"] for j in r if j.get("type")=="interval")
s=[j for j in r if j.get("type")=="summary"][-1]
print("tick: writes -i 10 on 1 GiB in 24 VMAs: tick %.2f / %.2f / %.2f ms over %d intervals; %d longer than 10 ms; %d of %d intervals asked for" % (
    t[0]/1000, t[len(t)//2]/1000, t[-1]/1000, len(t), s["ticks_over_interval"], s["intervals"], s["intervals_wanted"]))' "$tmp/t.json"
