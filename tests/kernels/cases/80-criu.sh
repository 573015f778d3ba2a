#!/bin/bash
# CRIU 4.1.1 on this kernel: pre-dump -> pre-dump --prev-images-dir -> dump
# -> restore of cksum_worker, a target that rewrites its memory step by step
# and at the end checks every byte and a running hash of it: "correct" after
# the restore means the chain of incremental images carried its memory intact.
# pre-dump needs soft-dirty (CONFIG_MEM_SOFT_DIRTY).
. tests/kernels/cases/lib.bash
n=criu_pre_dump_chain_dump_restore_memory_intact
pre_dump_or_skip $n
CRIU=$MEMLENS_CRIU
D=$C_TMP/img
mkdir -p $D/1 $D/2 $D/3
crun() {	# LOG ARGS...: criu with a time limit (a hung dump is a failure)
	local log=$1
	shift
	timeout --kill-after=5 300 "$CRIU" "$@" -o "$log" -v4 >/dev/null 2>&1
}
# soft-dirty marks a whole 2 MiB huge page dirty on a write to any of it:
# with transparent huge pages "always" (Debian's 7.x default) every
# pre-dump of this target holds all of it; the test wants 4 KiB pages
thp=/sys/kernel/mm/transparent_hugepage/enabled
thp_was=$(sed -n 's/.*\[\(.*\)\].*/\1/p' $thp 2>/dev/null)
echo "# transparent huge pages: $thp_was"
[ "$thp_was" = always ] && echo madvise >$thp
out=$C_TMP/ck.out
# 32 MiB in 128 chunks of 256 KiB, one (re)written every 300 ms for 90 s:
# after 20 s the first pre-dump takes what was written so far; the next
# pre-dump and the dump, seconds apart, find only a few chunks changed
setsid "$WORKLOADS/cksum_worker" -m 32 -n 300 -t 300 </dev/null >"$out" 2>&1 &
ck=$!
C_BG+=("$ck")
wait_for_line "$out" 'pid' 10
sleep 20	# the thing tested: what the workload wrote in its first 20 s goes into pre-dump 1
step() {	# NAME RC: one line per stage
	if [ "$2" = 0 ]; then
		ok "$1"
	else
		notok "$1" "exit $2" "$(grep -E 'Error|error' "$3" | tail -n 5)"
		exit 1
	fi
}
crun $D/1/pre.log pre-dump -t $ck -D $D/1 --track-mem
step criu_pre_dump $? $D/1/pre.log
sleep 2
crun $D/2/pre.log pre-dump -t $ck -D $D/2 --track-mem --prev-images-dir ../1
step criu_pre_dump_prev_images_dir $? $D/2/pre.log
sleep 1
rss=$(awk '/^Anonymous:/ {print $2}' /proc/$ck/smaps_rollup)
crun $D/3/dump.log dump -t $ck -D $D/3 --track-mem --prev-images-dir ../2
step criu_dump_after_pre_dumps $? $D/3/dump.log
wait $ck 2>/dev/null
# the page data of each image set (pages-*.img; the rest is metadata)
sz() { cat $D/$1/pages-*.img 2>/dev/null | wc -c | awk '{print int($1 / 1024)}'; }
echo "# page data (kB): pre-dump $(sz 1), pre-dump 2 $(sz 2), dump $(sz 3); target's anonymous memory before the dump $rss kB"
[ "$thp_was" = always ] && echo always >$thp
# a full dump would hold all of the target's anonymous memory
[ "$(sz 3)" -lt $((rss / 2)) ] && [ "$(sz 1)" -gt "$(sz 3)" ] &&
	ok criu_pre_dumps_are_incremental ||
	notok criu_pre_dumps_are_incremental "the dump after two pre-dumps should hold only what changed since the last (soft-dirty), less than half of the $rss kB"
crun $D/3/restore.log restore -D $D/3 -d --pidfile $C_TMP/rpid
step criu_restore $? $D/3/restore.log
rp=$(cat $C_TMP/rpid 2>/dev/null)
for _ in $(seq 3000); do
	st=$(awk '{print $3}' /proc/$rp/stat 2>/dev/null) || break
	[ "$st" = Z ] && break
	sleep 0.2
done
echo "# restored pid $rp: $(tail -n 1 "$out")"
grep -q '^cksum_worker: correct' "$out" && ok $n || notok $n "$(tail -n 2 "$out")"
c_done
