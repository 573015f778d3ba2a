#!/bin/bash
# bench/bpf.sh: what the eBPF tracers cost the traced program, side by side
# with bpftrace doing the same counting in the same run.
#   1. per page fault: faultgen touches 1 GiB of fresh anonymous memory
#      (262144 minor faults), alone / under `memlens faults` / under bpftrace
#      (exception tracepoint start + minor/major perf events, count per comm
#      and a latency histogram).
#   2. per malloc+free pair: mallocbench, alone / under `memlens leaks` /
#      under bpftrace (malloc entry+return, free entry, outstanding map).
#   3. per call of each allocator entry point (calloc, realloc,
#      reallocarray, aligned_alloc, posix_memalign, memalign, valloc, pvalloc,
#      each with a free): memlens leaks / bpftrace probing the same ten
#      functions with the same bookkeeping (a per-thread depth for the calls
#      libc makes to itself, the size, the old block of realloc, *memptr of
#      posix_memalign). REPS_FN runs each (default 3).
#   4. per fault taken by get_user_pages() (faultgen gup: process_vm_readv
#      of 1 GiB of a child's untouched memory): alone / memlens faults /
#      bpftrace with the script of 1 (or fentry on handle_mm_fault when
#      memlens runs in fentry mode, which sees these faults).
# Each configuration runs REPS times (default 5), interleaved, after one
# discarded warm-up run; medians, and every run's value so the noise shows.
# PARTS="faults pairs fns gup" (the default) chooses the sections.
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
MEMLENS=${MEMLENS:-$PWD/$BUILD/memlens}
WORKLOADS=${WORKLOADS:-$PWD/$BUILD/workloads}
REPS=${REPS:-5}
REPS_FN=${REPS_FN:-3}
PARTS=" ${PARTS:-faults pairs fns gup} "
part() { [[ "$PARTS" == *" $1 "* ]]; }
FN_PAIRS=${FN_PAIRS:-20000}
MIB=${MIB:-1024}
PAIRS=${PAIRS:-100000}
TMP=$(mktemp -d /tmp/memlens-bench-bpf.XXXXXX)
MOUNTED_TRACEFS=0
BG=""

cleanup() {
	[ -n "$BG" ] && kill -INT $BG 2>/dev/null && wait $BG 2>/dev/null
	[ $MOUNTED_TRACEFS = 1 ] && umount /sys/kernel/tracing
	rm -rf "$TMP"
}
trap cleanup EXIT

if [ "$(id -u)" != 0 ]; then
	echo "bench/bpf.sh: needs root (eBPF)"; exit 1
fi
for f in "$MEMLENS" "$WORKLOADS/faultgen" "$WORKLOADS/mallocbench"; do
	[ -x "$f" ] || { echo "bench/bpf.sh: $f missing: run make first"; exit 1; }
done
HAVE_BT=1
command -v bpftrace >/dev/null || { HAVE_BT=0; echo "bench/bpf.sh: bpftrace not installed: peer columns skipped (apt-get install bpftrace)"; }
# bpftrace's tracepoint probes read tracefs, which this kernel does not mount
if [ $HAVE_BT = 1 ] && [ ! -d /sys/kernel/tracing/events ]; then
	mount -t tracefs nodev /sys/kernel/tracing && MOUNTED_TRACEFS=1
fi

median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
val() { tr ' ' '\n' | sed -n "s/^$1=//p"; }

# bg_start CMD...: a tracer in the background, ready once it has attached
bg_start() {
	"$@" >"$TMP/bg.out" 2>"$TMP/bg.err" &
	BG=$!
	for _ in $(seq 1 300); do
		grep -Eqs 'tracing|Attaching' "$TMP/bg.err" "$TMP/bg.out" && { sleep 0.3; return 0; }
		kill -0 $BG 2>/dev/null || break
		sleep 0.1
	done
	echo "bench/bpf.sh: tracer did not start: $*"; cat "$TMP/bg.err"; exit 1
}
bg_stop() { kill -INT $BG; wait $BG 2>/dev/null; BG=""; }

BT_FAULTS='tracepoint:exceptions:page_fault_user,tracepoint:exceptions:page_fault_kernel { @s[tid] = nsecs; }
software:minor-faults:1 { @c[comm] = count(); if (@s[tid]) { @h = hist((nsecs - @s[tid]) / 1000); delete(@s[tid]); } }
software:major-faults:1 { @m[comm] = count(); if (@s[tid]) { @hm = hist((nsecs - @s[tid]) / 1000); delete(@s[tid]); } }'

fault_run() {	# prints ns per fault
	local out
	out=$("$WORKLOADS/faultgen" anon "$MIB")
	awk -v ns="$(echo "$out" | val ns)" -v n="$(echo "$out" | val minflt)" 'BEGIN {printf "%.1f\n", ns / n}'
}

runs() { sort -g "$1" | awk '{printf "%s%.0f", (NR > 1 ? " " : ""), $1}'; }

if part faults; then
echo "== cost per page fault: faultgen touching $MIB MiB, $REPS runs each, median ns/fault"
fault_run >/dev/null	# warm-up: the first touch of this much memory can cost the VM more
for r in $(seq 1 "$REPS"); do
	fault_run >>"$TMP/f.base"
	bg_start "$MEMLENS" faults -v
	fault_run >>"$TMP/f.memlens"
	bg_stop
	if [ $HAVE_BT = 1 ]; then
		bg_start bpftrace -e "$BT_FAULTS"
		fault_run >>"$TMP/f.bpftrace"
		bg_stop
	fi
done
fb=$(median <"$TMP/f.base")
fm=$(median <"$TMP/f.memlens")
fbt=$([ $HAVE_BT = 1 ] && median <"$TMP/f.bpftrace" || echo 0)
awk -v b="$fb" -v m="$fm" -v t="$fbt" -v rb="$(runs "$TMP/f.base")" -v rm="$(runs "$TMP/f.memlens")" \
    -v rt="$([ $HAVE_BT = 1 ] && runs "$TMP/f.bpftrace")" 'BEGIN {
	printf "  untraced          %8.0f ns/fault  (runs: %s)\n", b, rb
	printf "  memlens faults    %8.0f ns/fault  (%+.0f ns, %.2fx untraced; runs: %s)\n", m, m - b, m / b, rm
	if (t > 0) {
		printf "  bpftrace          %8.0f ns/fault  (%+.0f ns, %.2fx untraced; runs: %s)\n", t, t - b, t / b, rt
		if (m - b > 0 && t - b > 0)
			printf "  ratio memlens/bpftrace added cost per fault: %.2f\n", (m - b) / (t - b)
		else
			printf "  ratio memlens/bpftrace added cost per fault: not measurable in this run (an added cost is below the run-to-run noise; see the runs)\n"
	}
}'
fi

BT_LEAKS='uprobe:libc:malloc /pid == cpid/ { @sz[tid] = arg0; }
uretprobe:libc:malloc /pid == cpid && @sz[tid]/ { @a[retval] = @sz[tid]; delete(@sz[tid]); @n = count(); }
uprobe:libc:free /pid == cpid/ { if (@a[arg0]) { delete(@a[arg0]); @f = count(); } else { @u = count(); } }
END { clear(@a); clear(@sz); }'

if part pairs; then
echo "== cost per malloc+free pair: mallocbench, $REPS runs each, median ns/pair"
for r in $(seq 1 "$REPS"); do
	"$WORKLOADS/mallocbench" $((PAIRS * 20)) | val ns_per_pair >>"$TMP/m.base"
	"$MEMLENS" leaks --json -- "$WORKLOADS/mallocbench" "$PAIRS" 2>/dev/null |
		grep '^pairs=' | val ns_per_pair >>"$TMP/m.memlens"
	"$MEMLENS" leaks --json --no-stacks -- "$WORKLOADS/mallocbench" "$PAIRS" 2>/dev/null |
		grep '^pairs=' | val ns_per_pair >>"$TMP/m.nostacks"
	"$MEMLENS" leaks --json --free-at-entry -- "$WORKLOADS/mallocbench" "$PAIRS" 2>/dev/null |
		grep '^pairs=' | val ns_per_pair >>"$TMP/m.entry"
	if [ $HAVE_BT = 1 ]; then
		bpftrace -c "$WORKLOADS/mallocbench $PAIRS" -e "$BT_LEAKS" 2>/dev/null |
			grep '^pairs=' | val ns_per_pair >>"$TMP/m.bpftrace"
	fi
done
mb=$(median <"$TMP/m.base")
mm=$(median <"$TMP/m.memlens")
mn=$(median <"$TMP/m.nostacks")
me=$(median <"$TMP/m.entry")
mbt=$([ $HAVE_BT = 1 ] && median <"$TMP/m.bpftrace" || echo 0)
awk -v b="$mb" -v m="$mm" -v n="$mn" -v e="$me" -v t="$mbt" 'BEGIN {
	printf "  untraced                    %9.1f ns/pair\n", b
	printf "  memlens leaks               %9.1f ns/pair  (%.0fx untraced)\n", m, m / b
	printf "  memlens leaks --no-stacks   %9.1f ns/pair  (%.0fx untraced)\n", n, n / b
	printf "  memlens --free-at-entry     %9.1f ns/pair  (%.0fx untraced; free probe single-stepped)\n", e, e / b
	if (t > 0) {
		printf "  bpftrace                    %9.1f ns/pair  (%.0fx untraced)\n", t, t / b
		printf "  ratio memlens/bpftrace added cost per pair: %.2f\n", (m - b) / (t - b)
	}
}'
fi

# the ten functions memlens leaks probes, with its bookkeeping: only the
# outermost call of a thread counts (libc calls malloc from realloc...)
BT_ALLOC_FNS='uprobe:libc:malloc,uprobe:libc:valloc,uprobe:libc:pvalloc /pid == cpid/ { if (@d[tid] == 0) { @sz[tid] = arg0; } @d[tid]++; }
uprobe:libc:calloc /pid == cpid/ { if (@d[tid] == 0) { @sz[tid] = arg0 * arg1; } @d[tid]++; }
uprobe:libc:realloc /pid == cpid/ { if (@d[tid] == 0) { @sz[tid] = arg1; @old[tid] = arg0; } @d[tid]++; }
uprobe:libc:reallocarray /pid == cpid/ { if (@d[tid] == 0) { @sz[tid] = arg1 * arg2; @old[tid] = arg0; } @d[tid]++; }
uprobe:libc:memalign /pid == cpid/ { if (@d[tid] == 0) { @sz[tid] = arg1; } @d[tid]++; }
uprobe:libc:posix_memalign /pid == cpid/ { if (@d[tid] == 0) { @sz[tid] = arg2; @mp[tid] = arg0; } @d[tid]++; }
uretprobe:libc:malloc,uretprobe:libc:valloc,uretprobe:libc:pvalloc,uretprobe:libc:calloc,uretprobe:libc:memalign /pid == cpid && @d[tid]/ { @d[tid]--; if (@d[tid] == 0) { @a[retval] = @sz[tid]; delete(@sz[tid]); @n = count(); } }
uretprobe:libc:realloc,uretprobe:libc:reallocarray /pid == cpid && @d[tid]/ { @d[tid]--; if (@d[tid] == 0) { if (@old[tid]) { delete(@a[@old[tid]]); } @a[retval] = @sz[tid]; delete(@sz[tid]); delete(@old[tid]); @n = count(); } }
uretprobe:libc:posix_memalign /pid == cpid && @d[tid]/ { @d[tid]--; if (@d[tid] == 0) { $p = *(uint64 *)uptr(@mp[tid]); @a[$p] = @sz[tid]; delete(@sz[tid]); delete(@mp[tid]); @n = count(); } }
uprobe:libc:free /pid == cpid && @d[tid] == 0/ { if (@a[arg0]) { delete(@a[arg0]); @f = count(); } else { @u = count(); } }
END { clear(@a); clear(@sz); clear(@d); clear(@old); clear(@mp); }'

if part fns; then
echo "== cost per call of each entry point (+ its free): mallocbench FN, $REPS_FN runs each, median ns/pair"
echo "   (bpftrace probes the same ten functions with the same bookkeeping)"
printf "  %-15s %10s %12s %12s %8s\n" FN untraced memlens bpftrace ratio
for fn in calloc realloc reallocarray aligned_alloc posix_memalign memalign valloc pvalloc; do
	rm -f "$TMP/x.base" "$TMP/x.memlens" "$TMP/x.bpftrace"
	for r in $(seq 1 "$REPS_FN"); do
		"$WORKLOADS/mallocbench" $((FN_PAIRS * 20)) 64 $fn | val ns_per_pair >>"$TMP/x.base"
		"$MEMLENS" leaks --json -- "$WORKLOADS/mallocbench" "$FN_PAIRS" 64 $fn 2>/dev/null |
			grep '^pairs=' | val ns_per_pair >>"$TMP/x.memlens"
		if [ $HAVE_BT = 1 ]; then
			bpftrace -c "$WORKLOADS/mallocbench $FN_PAIRS 64 $fn" -e "$BT_ALLOC_FNS" 2>/dev/null |
				grep '^pairs=' | val ns_per_pair >>"$TMP/x.bpftrace"
		fi
	done
	awk -v f=$fn -v b="$(median <"$TMP/x.base")" -v m="$(median <"$TMP/x.memlens")" \
	    -v t="$([ $HAVE_BT = 1 ] && median <"$TMP/x.bpftrace" || echo 0)" 'BEGIN {
		r = (t > b && m > b) ? sprintf("%.2f", (m - b) / (t - b)) : "-"
		printf "  %-15s %10.1f %12.1f %12.1f %8s\n", f, b, m, t, r
	}'
done
echo "  ratio: memlens's added cost per pair / bpftrace's, same run"
fi

BT_FAULTS_FENTRY='kfunc:handle_mm_fault { @s[tid] = nsecs; }
kretfunc:handle_mm_fault { if (@s[tid]) { @c[comm] = count(); @h = hist((nsecs - @s[tid]) / 1000); delete(@s[tid]); } }'

gup_run() {	# prints ns per fault (the faults of process_vm_readv)
	local out
	out=$("$WORKLOADS/faultgen" gup "$MIB")
	awk -v ns="$(echo "$out" | val ns)" -v n="$(echo "$out" | val minflt)" 'BEGIN {printf "%.1f\n", ns / n}'
}

part gup || exit 0
echo "== cost per fault taken by get_user_pages(): faultgen gup $MIB MiB (process_vm_readv), $REPS runs each, median ns/fault"
bg_start "$MEMLENS" faults -v
gmode=$(grep -o 'mode [a-z]*' "$TMP/bg.err" | head -n 1)
bg_stop
bt_gup=$BT_FAULTS
[ "$gmode" = "mode fentry" ] && bt_gup=$BT_FAULTS_FENTRY
gup_run >/dev/null
for r in $(seq 1 "$REPS"); do
	gup_run >>"$TMP/g.base"
	bg_start "$MEMLENS" faults -v
	gup_run >>"$TMP/g.memlens"
	bg_stop
	if [ $HAVE_BT = 1 ]; then
		bg_start bpftrace -e "$bt_gup"
		gup_run >>"$TMP/g.bpftrace"
		bg_stop
	fi
done
awk -v b="$(median <"$TMP/g.base")" -v m="$(median <"$TMP/g.memlens")" -v mode="$gmode" \
    -v t="$([ $HAVE_BT = 1 ] && median <"$TMP/g.bpftrace" || echo 0)" -v rb="$(runs "$TMP/g.base")" \
    -v rm="$(runs "$TMP/g.memlens")" -v rt="$([ $HAVE_BT = 1 ] && runs "$TMP/g.bpftrace")" 'BEGIN {
	printf "  untraced          %8.0f ns/fault  (runs: %s)\n", b, rb
	printf "  memlens faults    %8.0f ns/fault  (%+.0f ns; %s; runs: %s)\n", m, m - b, mode, rm
	if (t > 0) {
		printf "  bpftrace          %8.0f ns/fault  (%+.0f ns; runs: %s)\n", t, t - b, rt
		if (mode != "mode fentry")
			printf "  ratio: not meaningful here: in tracepoint mode neither tracer runs a program for these faults (no perf event without user registers); memlens counts them from the kernel'"'"'s counters (not_seen)\n"
		else if (m - b > 0 && t - b > 0)
			printf "  ratio memlens/bpftrace added cost per fault: %.2f\n", (m - b) / (t - b)
		else
			printf "  ratio memlens/bpftrace added cost per fault: not measurable in this run (below the noise)\n"
	}
}'
