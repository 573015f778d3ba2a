#!/bin/bash
# The project's CRIU patches (criu/patches/): pre-dump leaves pages out,
# page by page and per process, and the next (pre-)dump sends in full what
# its parent left out. In the style of CRIU's zdtm: a target that checks its
# own pages after the restore (workloads/pagecheck), a tree of two processes
# with the same VMA at the same address and different ranges each, and
# ranges that turn hot->cold and cold->hot between rounds.
#
#   round 1 (pre-dump)  parent leaves out pages [0,100), child [300,400)
#   step 1              parent rewrites [0,50), child [300,400)
#   round 2 (pre-dump)  parent leaves out [150,250), child [300,400):
#                       the parent's [50,100) is clean but absent from
#                       round 1, so it must be sent in full now
#   step 2              parent rewrites [150,200), child [600,610)
#   round 3 (dump)      complete: [150,250) and [300,400) in full
#   restore             both processes check every page
# Counts are exact: each round's log says how many pages it left out and how
# many its parent had left out.
. tests/kernels/cases/lib.bash
n=criu_pages_left_out_restored_intact
pre_dump_or_skip $n
if ! "$MEMLENS_CRIU" --exclude-range=1:1000:2000 --version >/dev/null 2>&1; then
	skip $n "the CRIU in use ($MEMLENS_CRIU) has no per-process --exclude-range: not built with the project's patches"
	exit 0
fi
CRIU=$MEMLENS_CRIU
D=$C_TMP/img
mkdir -p $D/1 $D/2 $D/3
out=$C_TMP/pc.out
crun() {	# LOG ARGS...: criu with a time limit (a hung dump is a failure)
	local log=$1
	shift
	timeout --kill-after=5 300 "$CRIU" "$@" -o "$log" -v4 >/dev/null 2>&1
}
step() {	# NAME RC LOG: one line per stage; a failed stage ends the case
	if [ "$2" = 0 ]; then
		ok "$1"
	else
		notok "$1" "exit $2" "$(grep -E 'Error|error|Missing' "$3" | tail -n 5)"
		exit 1
	fi
}
setsid "$WORKLOADS/pagecheck" -n 1024 -s 0:50 -s 150:50 -c 300:100 -c 600:10 </dev/null >"$out" 2>&1 &
pc=$!
C_BG+=("$pc")
lines() { [ "$(grep -cE -- "$1" "$out" 2>/dev/null)" = "$2" ]; }	# PATTERN N: N lines now
t_wait 120 lines ' map ' 2 ||
	{ notok $n "pagecheck did not start: $(cat "$out")"; exit 1; }
child=$(awk -v p=$pc '$3 == "map" && $2 != p {print $2}' "$out")
base=$(awk -v p=$pc '$2 == p && $3 == "map" {print $4}' "$out")
base=$((base))
r() {	# PID FIRST END: the range of pages [FIRST, END) of PID, for --exclude-range
	printf '%d:%x:%x' "$1" $((base + $2 * 4096)) $((base + $3 * 4096))
}
# sum of a per-VMA count in a CRIU log: "... N excluded" lines, per process
excluded() { awk -v pid="$2" '/Dumping pages \(type/ {cur = ($NF == pid ")" || $NF == pid)} cur && / excluded$/ {s += $(NF - 1)} END {print s + 0}' "$1"; }
parent_left() { awk -v pid="$2" '/Dumping pages \(type/ {cur = ($NF == pid ")" || $NF == pid)} cur && /The parent left out/ {s += $(NF - 9)} END {print s + 0}' "$1"; }
steps_done() { lines " step $1 done" 2; }

crun $D/1/pre.log pre-dump -t $pc -D $D/1 --track-mem --exclude-range "$(r $pc 0 100)" \
	--exclude-range "$(r "$child" 300 400)"
step criu_pages_pre_dump_leaves_pages_out $? $D/1/pre.log
e1p=$(excluded $D/1/pre.log $pc) e1c=$(excluded $D/1/pre.log "$child")
[ "$e1p" = 100 ] && [ "$e1c" = 100 ] && [ -s $D/1/pagemap-excl-$pc.img ] && [ -s $D/1/pagemap-excl-$child.img ] &&
	ok criu_pages_round1_left_out_exactly_per_process ||
	notok criu_pages_round1_left_out_exactly_per_process "left out: parent $e1p, child $e1c pages (expected 100 each), images: $(ls $D/1 | grep excl | tr '\n' ' ')"

kill -USR1 $pc
t_wait 120 steps_done 1 || { notok $n "step 1 not done: $(cat "$out")"; exit 1; }

crun $D/2/pre.log pre-dump -t $pc -D $D/2 --track-mem --prev-images-dir ../1 \
	--exclude-range "$(r $pc 150 250)" --exclude-range "$(r "$child" 300 400)"
step criu_pages_pre_dump_after_parent_left_pages_out $? $D/2/pre.log
e2p=$(excluded $D/2/pre.log $pc) e2c=$(excluded $D/2/pre.log "$child")
p2p=$(parent_left $D/2/pre.log $pc) p2c=$(parent_left $D/2/pre.log "$child")
[ "$e2p" = 100 ] && [ "$e2c" = 100 ] && [ "$p2p" = 100 ] && [ "$p2c" = 100 ] &&
	ok criu_pages_round2_hot_to_cold_and_cold_to_hot ||
	notok criu_pages_round2_hot_to_cold_and_cold_to_hot "left out: parent $e2p, child $e2c (expected 100 each); the parent round had left out: $p2p, $p2c (expected 100 each)"

kill -USR1 $pc
t_wait 120 steps_done 2 || { notok $n "step 2 not done: $(cat "$out")"; exit 1; }

crun $D/3/dump.log dump -t $pc -D $D/3 --track-mem --prev-images-dir ../2 \
	--exclude-range "$(r $pc 0 1024)"
step criu_pages_dump_after_pre_dumps_left_pages_out $? $D/3/dump.log
e3=$(($(excluded $D/3/dump.log $pc) + $(excluded $D/3/dump.log "$child")))
[ "$e3" = 0 ] && ! ls $D/3 | grep -q pagemap-excl &&
	ok criu_pages_dump_is_complete ||
	notok criu_pages_dump_is_complete "the dump left out $e3 pages (a dump must ignore --exclude-range)"
grep -q 'Missing .* in parent pagemap' $D/*/*.log &&
	notok criu_pages_no_missing_parent_pages "$(grep -h 'Missing' $D/*/*.log | head -n 3)" ||
	ok criu_pages_no_missing_parent_pages

crun $D/3/restore.log restore -D $D/3 -d --pidfile $C_TMP/rpid
step criu_pages_restore $? $D/3/restore.log
rp=$(cat $C_TMP/rpid 2>/dev/null)
C_BG+=("$rp")
kill -USR2 "$rp"
t_wait 120 lines ' (correct|WRONG)' 2
echo "# $(grep -E ' (correct|WRONG)' "$out" | tr '\n' ' ')"
[ "$(grep -c ' correct ' "$out")" = 2 ] && ok $n || notok $n "$(grep -E 'WRONG|correct' "$out")"
kill -TERM "$rp" 2>/dev/null
c_done
