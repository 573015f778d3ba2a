#!/bin/bash
# make bench: what `memlens leaks` costs a malloc-heavy program, exact and
# sampled (--sample), the sample taken in the process by the preloaded
# sampler (the default for -- CMD) and by uprobes on every call
# (--sampler uprobe). Each workload runs untracked, under `leaks` exact and
# under `leaks --sample` both ways (SAMPLES, default "512K 64K"), one after the other
# in the same run, REPS times each (default 3; the median is shown): the
# wall time of the whole command over the untracked one's (memlens's own
# start and end, about the time of `leaks -- /bin/true`, included: shown
# apart), and the outstanding bytes the sampled run estimates against the
# exact run's, with the standard error it gives.
#
# The peers run the same workloads in the same run, each as a ratio to the
# untracked run: heaptrack (LD_PRELOAD, every allocation and its stack,
# written to a file; its own start and end, heaptrack -- /bin/true, shown
# apart too) and bpftrace (BT_SCRIPT below: uprobes on libc's malloc, its
# return and free, outstanding bytes per ustack, the classic one-liner
# grown to count what is left; it probes malloc and free only, memlens
# the ten allocating functions). A peer that is missing or cannot run here
# is left out with the reason printed.
#
# The floor, in the same run: what the uprobes alone cost each workload,
# with an empty BPF program on every probe memlens takes
# (bench/uprobe_floor.c: the offsets `leaks -v` prints, one uprobe_multi
# link): entries only (what a sampled run cannot do without) and entries
# and returns (what an exact run takes). That time is the target's own,
# exec to exit, without any tracer's start and end; so is the untracked
# time it is a ratio to, measured there too; and so is the target's time
# under `memlens leaks -p` (the first of SAMPLES, and exact), started on
# the held target: memlens's own work in each call, on top of the traps;
# and with the preloaded sampler: the target started with it (as `leaks
# --sample -- CMD` starts it), memlens -p on its markers, and the sampler
# alone (no memlens: its decisions in the process, nothing probed).
# Its CPU time (user and system: the traps and the programs are system
# time) is shown too: on a loaded machine it moves much less than the wall
# time.
#
# Workloads: mallocbench (N malloc(64)+free pairs), Debian's sqlite3 (an
# in-memory table of 20000 rows of 600-byte blobs, half deleted) and
# Debian's python3 (20000 600-byte bytearrays, half deleted, then
# os._exit) where
# installed; else workloads/memalloc.
set -u
M=${MEMLENS:?} W=${WORKLOADS:?} B=${BUILD:-build}
T=${TMPDIR:-/tmp}/leaks_cost.$$
mkdir -p "$T"
trap 'rm -rf "$T"' EXIT
reps=${REPS:-3} samples=${SAMPLES:-512K 64K} pairs=${PAIRS:-100000}

# wall NAME CMD...: the median wall time of CMD over $reps runs, in seconds; stdout in $T/NAME.out
wall() {
	local name=$1 r t0 t1
	shift
	for r in $(seq 1 "$reps"); do
		t0=$(date +%s.%N)
		"$@" >"$T/$name.out" 2>"$T/$name.err"
		t1=$(date +%s.%N)
		echo "$t1 - $t0" | bc
	done | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

# outstanding bytes (and the stderr, when sampled) of a JSON report
outst() {
	python3 -c '
import json, sys
d = json.loads([l for l in open(sys.argv[1]).read().splitlines() if l.startswith("{")][-1])
print(d["outstanding_bytes"], d.get("outstanding_bytes_stderr", 0), d["mode"])' "$1" 2>/dev/null ||
		echo "? ? ?"
}

cat >"$T/sql" <<'EOF'
CREATE TABLE t(id INTEGER PRIMARY KEY, b BLOB);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 20000)
INSERT INTO t SELECT x, randomblob(600) FROM c;
DELETE FROM t WHERE id % 2 = 0;
SELECT count(*), sum(length(b)) FROM t;
EOF
names=(mallocbench) cmds=("$W/mallocbench $pairs 64")
if [ -x /usr/bin/sqlite3 ]; then
	names+=(sqlite3) cmds+=("/usr/bin/sqlite3 -init $T/sql :memory: .quit")
fi
if [ -x /usr/bin/python3 ]; then
	names+=(python3)
	# os._exit: what is outstanding then, not what the interpreter's teardown leaves
	cmds+=("/usr/bin/python3 -S -c l=[bytearray(600)for(i)in(range(20000))];del(l[::2]);__import__('os')._exit(0)")
fi
[ ${#names[@]} = 1 ] && { names+=(memalloc) cmds+=("$W/memalloc -m 8 -p 10 -s 2"); }

# bpftrace: outstanding bytes per user stack of the traced command (-c), and in all
# shellcheck disable=SC2016
BT_SCRIPT='uprobe:libc:malloc /pid == cpid/ { @sz[tid] = arg0; }
uretprobe:libc:malloc /pid == cpid && @sz[tid]/ {
	$s = @sz[tid]; delete(@sz[tid]);
	if (retval) { @a[retval] = $s; @st[retval] = ustack; @out[ustack] += $s; @outst += $s; }
}
uprobe:libc:free /pid == cpid && @a[arg0]/ {
	@out[@st[arg0]] -= @a[arg0]; @outst -= @a[arg0]; delete(@a[arg0]); delete(@st[arg0]);
}
END { clear(@a); clear(@st); clear(@sz); }'
# every block outstanding has its entry (bpftrace's default is 4096 per map)
export BPFTRACE_MAP_KEYS_MAX=${BPFTRACE_MAP_KEYS_MAX:-1048576}

# peers: those that run here (a trial run on /bin/true), else the reason
ht=0 bt=0
if ! command -v heaptrack >/dev/null; then
	echo "leaks_cost: heaptrack left out: not installed (apt-get install heaptrack)"
elif ! heaptrack -o "$T/trial-ht" /bin/true >"$T/trial-ht.log" 2>&1; then
	echo "leaks_cost: heaptrack left out: it fails here: $(tail -n 1 "$T/trial-ht.log")"
else
	ht=1
fi
if ! command -v bpftrace >/dev/null; then
	echo "leaks_cost: bpftrace left out: not installed (apt-get install bpftrace)"
elif [ "$(id -u)" != 0 ]; then
	echo "leaks_cost: bpftrace left out: needs root"
elif ! bpftrace -c /bin/true -e "$BT_SCRIPT" >"$T/trial-bt.log" 2>&1 ||
	! grep -q '^Attaching' "$T/trial-bt.log"; then
	echo "leaks_cost: bpftrace left out: it fails here: $(grep -m 1 ERROR "$T/trial-bt.log")"
else
	bt=1
fi

# the floor: memlens's probes (file offsets, entries and returns) in the C library
fl=0
if [ ! -x "$B/bench/uprobe_floor" ]; then
	echo "leaks_cost: the floor left out: no $B/bench/uprobe_floor (make)"
elif ! "$M" leaks -v --json --sample 1M --sampler uprobe -- /bin/true >"$T/probes.out" 2>"$T/probes.err"; then
	echo "leaks_cost: the floor left out: memlens leaks -v failed: $(tail -n 1 "$T/probes.err")"
else
	lib=$(python3 -c '
import json, sys
print(json.loads([l for l in open(sys.argv[1]) if l.startswith("{")][-1])["allocator"])' "$T/probes.out")
	ent=$(sed -n 's/^memlens leaks: uprobe[+a-z]* [a-z_0-9]* at \(0x[0-9a-f]*\).*/\1/p' "$T/probes.err" | paste -sd,)
	ret=$(sed -n 's/^memlens leaks: uprobe+uretprobe [a-z_0-9]* at \(0x[0-9a-f]*\).*/\1/p' "$T/probes.err" | paste -sd,)
	[ -n "$lib" ] && [ -n "$ent" ] && fl=1
	[ $fl = 1 ] || echo "leaks_cost: the floor left out: no probe offsets in leaks -v's output"
fi

base=$(wall true "$M" leaks --json -- /bin/true)
sbase=$(wall true-s "$M" leaks --json --sample 512K -- /bin/true)
echo "memlens leaks -- /bin/true (its own start and end): ${base} s, --sample 512K (preloaded): ${sbase} s; median of $reps runs each"
if [ $ht = 1 ]; then
	hbase=$(wall true-ht heaptrack -o "$T/true-ht" /bin/true)
	echo "heaptrack /bin/true (its own start and end): ${hbase} s"
fi
if [ $bt = 1 ]; then
	bbase=$(wall true-bt bpftrace -c /bin/true -e "$BT_SCRIPT")
	echo "bpftrace -c /bin/true (its own start and end): ${bbase} s"
fi
printf '%-12s %-14s %9s %8s %14s %14s %10s %s\n' workload mode "wall s" "x untr." \
	"outst. bytes" "exact bytes" "stderr" "probes"
for i in "${!names[@]}"; do
	name=${names[$i]} cmd=${cmds[$i]}
	# shellcheck disable=SC2086
	u=$(wall "$name-u" $cmd)
	# shellcheck disable=SC2086
	e=$(wall "$name-e" "$M" leaks --json -T 0 -- $cmd)
	read -r eb _ emode <<<"$(outst "$T/$name-e.out")"
	printf '%-12s %-14s %9.3f %8s %14s %14s %10s %s\n' "$name" untracked "$u" 1.00 - - - -
	printf '%-12s %-14s %9.3f %8.2f %14s %14s %10s %s\n' "$name" exact "$e" \
		"$(echo "$e / $u" | bc -l)" "$eb" "$eb" 0 "$emode"
	for s in $samples; do
		for sm in preload uprobe; do
			# shellcheck disable=SC2086
			t=$(wall "$name-s$s-$sm" "$M" leaks --json -T 0 --sample "$s" --sampler $sm -- $cmd)
			read -r sb se smode <<<"$(outst "$T/$name-s$s-$sm.out")"
			[ $sm = preload ] && smode="preload, $smode"
			printf '%-12s %-14s %9.3f %8.2f %14s %14s %10s %s\n' "$name" "-s $s $sm" "$t" \
				"$(echo "$t / $u" | bc -l)" "$sb" "$eb" "$se" "$smode"
		done
	done
	if [ $ht = 1 ]; then
		rm -f "$T/$name-ht".zst "$T/$name-ht".gz
		# shellcheck disable=SC2086
		h=$(wall "$name-ht" heaptrack -o "$T/$name-ht" $cmd)
		# what it found leaked, as heaptrack_print writes it (e.g. 14.66M)
		hb=$(heaptrack_print -f "$(ls "$T/$name-ht".zst "$T/$name-ht".gz 2>/dev/null | head -n 1)" 2>/dev/null |
			sed -n 's/^total memory leaked: *//p' | head -n 1)
		printf '%-12s %-14s %9.3f %8.2f %14s %14s %10s %s\n' "$name" heaptrack "$h" \
			"$(echo "$h / $u" | bc -l)" "${hb:-?}" "$eb" - LD_PRELOAD
	fi
	if [ $bt = 1 ]; then
		b=$(wall "$name-bt" bpftrace -c "$cmd" -e "$BT_SCRIPT")
		bb=$(sed -n 's/^@outst: //p' "$T/$name-bt.out")
		printf '%-12s %-14s %9.3f %8.2f %14s %14s %10s %s\n' "$name" bpftrace "$b" \
			"$(echo "$b / $u" | bc -l)" "${bb:-?}" "$eb" - uprobe
	fi
done
if [ $fl = 1 ]; then
	s1=${samples%% *}
	echo
	echo "the target's own time (exec to exit, no tracer's start and end), median of $reps: untracked;"
	echo "the floor: uprobes alone, an empty program on memlens's $(echo "$ent" | tr , '\n' | wc -l) entry and" \
		"$(echo "$ret" | tr , '\n' | wc -l) return probes in $lib"
	echo "(entries: what sampling cannot do without; +returns: what exact mode takes); and under"
	echo "memlens leaks -p, --sample $s1 --sampler uprobe and exact: memlens's own work in each call"
	echo "on top of the traps; the preloaded sampler at $s1: with memlens on its markers (preload),"
	echo "and alone (no memlens)"
	sampler=$(dirname "$M")/libmemlens-sample.so
	popt=()
	if [ -f "$sampler" ]; then
		popt=(-P "--json -T 0 --sample $s1" -S "$s1")
	else
		echo "leaks_cost: the preloaded sampler left out of the floor: no $sampler (make)"
	fi
	printf '%-12s %-22s %9s %8s %9s %8s\n' workload mode "wall s" "x untr." "cpu s" "x untr."
	for i in "${!names[@]}"; do
		# shellcheck disable=SC2086
		if MEMLENS=$M MEMLENS_SAMPLER=$sampler "$B/bench/uprobe_floor" "$reps" "$lib" "$ent" \
			"${ret:--}" -M "--json -T 0 --sample $s1 --sampler uprobe" "${popt[@]}" \
			-M "--json -T 0" -- ${cmds[$i]} >"$T/floor.out" 2>"$T/floor.err"; then
			while read -r _ mode w wr c cr; do
				case $mode in
				entries) mode="uprobes (entries)" ;;
				entries+returns) mode="uprobes (+returns)" ;;
				memlens:*--sample*) mode="memlens -s uprobe" ;;
				memlens-preload:*) mode="memlens -s preload" ;;
				sampler-alone:*) mode="sampler alone" ;;
				memlens:*) mode="memlens exact" ;;
				esac
				printf '%-12s %-22s %9.4f %8.2f %9.4f %8.2f\n' "${names[$i]}" "$mode" "$w" "$wr" \
					"$c" "$cr"
			done < <(grep '^floor ' "$T/floor.out")
		else
			echo "${names[$i]}: the floor failed: $(tail -n 1 "$T/floor.err")"
		fi
	done
fi
echo "x untr.: wall time over the untracked run's, same run; outst. bytes: what the mode reports"
echo "outstanding at the end (sampled: the estimate), exact bytes: the exact run's, stderr: the"
echo "standard error the sampled run gives for its estimate; heaptrack's is what heaptrack_print"
echo "finds leaked, bpftrace's counts malloc and free only"
