#!/bin/bash
# The guest suite: runs inside a matrix guest (tests/kernels/guest-init.sh
# starts it), against the binaries already built on the host under build/.
#
# Interface for case files (add one to extend the suite):
#   tests/kernels/cases/NN-NAME.sh, run in the order of NN, each by bash with
#   the repository as the working directory and in the environment:
#     MEMLENS    the memlens binary (build/memlens)
#     WORKLOADS  the workloads directory (build/workloads)
#     MEMLENS_CRIU  CRIU 4.1.1 (scripts/ensure-criu.sh), when it is built
#     KERNEL     the matrix's name of the kernel (6.1, 6.12, 7.2, ...)
#     KVER       uname -r
#     KCONFIG    the kernel's config file (from its Debian package)
#     SCRATCH    a directory on a guest-local ext4 (a 256 MiB RAM disk, brd):
#                a real block device, for major faults and dentries that
#                drop_caches frees, much faster than the virtiofs root
#                (unset when it could not be made: use /var/tmp then)
#   The guest also has 256 MiB of swap on zram where the kernel has zram.
#   tests/kernels/cases/lib.bash has the helpers (ok, notok, skip, kconfig,
#   kernel_at_least).
#   Each prints "ok - TEST", "not ok - TEST" (then "#   reason" lines) or
#   "skip - TEST: reason"; other lines should start with "#". A case that
#   exits non-zero without a "not ok" line counts as one failure; a case is
#   killed after CASE_TIMEOUT seconds (the memlens_case_timeout boot parameter
#   run.sh sets from CASE_TIMEOUT; default 600) and counted as failed.
#   A case that finds its command unsupported on this kernel (and tests
#   the clear refusal instead) prints "# unsupported: WHY" once.
#   NAME is the memlens command the case covers (check, writes, snapshot,
#   faults, oom, slab, leaks, criu, ...): the README's kernel table has one
#   row per NAME (tests/kernels/table.sh).
#   memlens_cases=PATTERN[,PATTERN...] (a boot parameter; run.sh sets it
#   from CASES) runs only the cases whose file name contains one of them.
#   A case's first lines may hold "# case-timeout: SEC", a longer limit.
#   memlens_optin=NAME[,NAME...] (run.sh, from OPTIN) runs opt-in cases
#   that look for it (the real servers but 96-server-redis-tcp:
#   OPTIN=server; make test-kernels; the migration-capable sidecar Pod:
#   OPTIN=pod).
# Output: each case's lines prefixed with "[NAME] ", then per case
# "[NAME] N passed, N failed, N skipped (T s)", then the totals.
set -u
cd "$(dirname "$0")/../.."
CASE_TIMEOUT=${CASE_TIMEOUT:-${memlens_case_timeout:-600}}
BUILD=${BUILD:-build}
export MEMLENS=$PWD/$BUILD/memlens WORKLOADS=$PWD/$BUILD/workloads
export KVER=$(uname -r) KERNEL=${memlens_kernel:-$(uname -r)} KCONFIG=${memlens_config:-/boot/config-$(uname -r)}
CRIU=$(scripts/ensure-criu.sh 2>/dev/null) && [ -n "$CRIU" ] && export MEMLENS_CRIU=$CRIU
pass=0 fail=0 skip=0
log_dir=/tmp/memlens-guest-logs
mkdir -p $log_dir
echo "# kernel $KERNEL ($KVER), $(nproc) CPUs, $(awk '/MemTotal/ {print $2}' /proc/meminfo) kB"
SCRATCH=/tmp/memlens-scratch
mkdir -p $SCRATCH
if modprobe brd rd_nr=1 rd_size=262144 2>/tmp/scratch.err && [ -b /dev/ram0 ] &&
	mkfs.ext4 -q -F /dev/ram0 2>>/tmp/scratch.err && mount /dev/ram0 $SCRATCH 2>>/tmp/scratch.err; then
	export SCRATCH
else
	echo "# no scratch ext4 (the cases use /var/tmp): $(tail -n 1 /tmp/scratch.err)"
	unset SCRATCH
fi
# swap (zram, 256 MiB): the paths that count swapped pages need some
if [ -z "$(tail -n +2 /proc/swaps)" ] && modprobe zram num_devices=1 2>/dev/null &&
	echo 256M >/sys/block/zram0/disksize && mkswap -q /dev/zram0 >/dev/null 2>&1 &&
	swapon /dev/zram0 2>/dev/null; then
	:
fi
echo "# swap: $(tail -n +2 /proc/swaps | awk '{print $1, $3 " kB"}' | tr '\n' ' ')"
echo "# $(grep -c . /proc/self/mountinfo) mounts; cgroup: $(stat -fc %T /sys/fs/cgroup); scratch: ${SCRATCH:-none}"
for c in tests/kernels/cases/[0-9]*.sh; do
	[ -f "$c" ] || continue
	if [ -n "${memlens_cases:-}" ]; then
		want_case=
		for pat in ${memlens_cases//,/ }; do
			[[ "$c" == *${pat}* ]] && want_case=1
		done
		[ -n "$want_case" ] || continue
	fi
	name=${c##*/}
	name=${name%.sh}
	name=${name#*-}
	log=$log_dir/$name.log
	t0=$SECONDS
	# a case may ask for more time: "# case-timeout: SEC" in its first lines
	ct=$(head -n 5 "$c" | sed -n 's/^# case-timeout: \([0-9]*\)$/\1/p')
	[ -n "$ct" ] && [ "$ct" -gt "${CASE_TIMEOUT:-600}" ] || ct=${CASE_TIMEOUT:-600}
	timeout --kill-after=10 "$ct" bash "$c" >"$log" 2>&1
	rc=$?
	p=$(grep -c '^ok - ' "$log"); f=$(grep -c '^not ok - ' "$log"); s=$(grep -c '^skip - ' "$log")
	grep -E '^(ok|not ok|skip) - |^#' "$log" | sed "s|^|[$name] |"
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		[ "$rc" = 124 ] || [ "$rc" = 137 ] && why="killed after $ct s" || why="exited with status $rc"
		echo "[$name] not ok - $name $why"
		tail -n 20 "$log" | sed "s|^|[$name] #   |"
		f=$((f + 1))
	fi
	pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + s))
	echo "[$name] $p passed, $f failed, $s skipped ($((SECONDS - t0)) s)"
done
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
