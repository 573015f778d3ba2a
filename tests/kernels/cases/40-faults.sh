#!/bin/bash
# memlens faults --mode fentry (fentry/fexit on handle_mm_fault): a 64 MiB
# file read after eviction gives major == getrusage majflt, retried ==
# major (each major fault drops the mmap lock for its I/O and is called
# again: the second call must not count as another fault), minor == minflt;
# and 16 MiB of fresh anonymous memory gives minor == minflt; and so do four
# threads faulting 64 MiB at once (see there for kernels that preempt BPF
# programs).
. tests/kernels/cases/lib.bash
"$MEMLENS" faults --mode fentry -d 0.1 >/dev/null 2>"$C_TMP/probe.err"
rc=$?
if [ $rc != 0 ]; then
	# the tracepoint fallback is what the host suite tests
	echo "# unsupported: fentry refused ($(head -c 80 "$C_TMP/probe.err"))"
	skip faults_fentry "this kernel refuses fentry on handle_mm_fault (exit $rc: $(cat "$C_TMP/probe.err"))"
	exit 0
fi

# gated NAME FAULTGEN-ARGS...: faultgen -w waits on a fifo while the tracer
# attaches to it, touches its pages, waits again while the tracer stops.
# Sets G_OUT (faultgen's getrusage line) and TR_OUT.
gated() {
	local name=$1 fifo=$C_TMP/$1.fifo tp gp
	shift
	mkfifo "$fifo"
	"$WORKLOADS/faultgen" -w "$@" <"$fifo" >"$C_TMP/$name.fg" 2>"$C_TMP/$name.fgerr" &
	gp=$!
	C_BG+=("$gp")
	exec 7>"$fifo"
	TR_OUT=$C_TMP/$name.json
	"$MEMLENS" faults -v --mode fentry -p $gp --json >"$TR_OUT" 2>"$C_TMP/$name.err" &
	tp=$!
	C_BG+=("$tp")
	wait_for_line "$C_TMP/$name.err" tracing 60
	echo >&7
	wait_for_line "$C_TMP/$name.fgerr" touched 120
	kill -INT $tp
	wait $tp
	echo >&7
	exec 7>&-
	wait $gp
	G_OUT=$(cat "$C_TMP/$name.fg")
	G_PID=$gp
}
field() { echo "$G_OUT" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
row() { jq_last "$TR_OUT" "sum(r['$1'] or 0 for r in d['rows'] if r['pid'] == $G_PID)"; }

f=${SCRATCH:-/var/tmp}/memlens-kernels-faults.$$.bin
dd if=/dev/urandom of=$f bs=1M count=64 status=none conv=fsync
gated file file $f
rm -f $f
n=faults_fentry_file_64MiB_major_retried_minor_exact
echo "# $n: faultgen $G_OUT; memlens minor=$(row minor) major=$(row major) retried=$(row retried) mode=$(jq_last "$TR_OUT" "d['mode']")"
if [ "$(field cached_before)" != 0 ]; then
	skip $n "the file stayed in the page cache ($(field cached_before) pages) after POSIX_FADV_DONTNEED"
elif [ "$(jq_last "$TR_OUT" "d['mode']")" = fentry ] && [ "$(field majflt)" -gt 0 ] &&
	[ "$(row major)" = "$(field majflt)" ] && [ "$(row retried)" = "$(row major)" ] &&
	[ "$(row minor)" = "$(field minflt)" ]; then
	ok $n
else
	notok $n "want major=$(field majflt) retried=$(field majflt) minor=$(field minflt)" "$(cat "$C_TMP/file.err")"
fi

gated anon anon 16
n=faults_fentry_anon_16MiB_minor_exact
echo "# $n: faultgen $G_OUT; memlens minor=$(row minor) major=$(row major) retried=$(row retried)"
[ "$(field minflt)" -ge 4096 ] && [ "$(row minor)" = "$(field minflt)" ] && [ "$(row major)" = 0 ] &&
	ok $n || notok $n "want minor=$(field minflt) major=0" "$(cat "$C_TMP/anon.err")"

# four threads faulting at once (two of them exiting while traced): each
# thread's fault in progress is its own, whatever the others do. A kernel
# that preempts BPF programs (preempt=full or lazy, the only modes from
# Linux 7.0) skips a thread's run of a program while another thread's run
# of it is preempted on the same CPU: memlens counts those runs
# (recursion_misses) and reports the faults it did not see against the
# kernel's counters: each of those must be a skipped run.
gated threads threads 64
misses=$(jq_last "$TR_OUT" "d['recursion_misses']")
n=faults_fentry_threads_64MiB_every_fault_not_seen_is_a_skipped_run
unseen=$(jq_last "$TR_OUT" "d['not_seen']['minor']")
echo "# $n: faultgen minflt=$(field minflt); memlens minor=$(row minor) major=$(row major) not_seen=$unseen recursion_misses=$misses"
# the kernel's count read right, nothing counted twice, and each fault not
# seen explained by a run the kernel skipped
[ "$(field minflt)" -ge 16384 ] && [ "$(row major)" = 0 ] &&
	[ "$(jq_last "$TR_OUT" "d['kernel']['minor']")" = "$(field minflt)" ] &&
	[ "$(row minor)" -le "$(field minflt)" ] && [ "$unseen" -le "$misses" ] &&
	ok $n || notok $n "want kernel minor = $(field minflt), not_seen <= recursion_misses, major=0" "$(cat "$C_TMP/threads.err" "$TR_OUT")"
n=faults_fentry_threads_64MiB_minor_exact
if [ "$(row minor)" = "$(field minflt)" ]; then
	ok $n
elif [ "$misses" != 0 ]; then
	skip $n "this kernel preempts BPF programs (preemption mode $(preempt_mode)): it skipped runs of memlens's programs while others were preempted, and memlens reported the faults it did not see"
	echo "# $n: $misses runs skipped, $unseen faults not seen"
else
	notok $n "want minor=$(field minflt)" "$(cat "$TR_OUT")"
fi
c_done
