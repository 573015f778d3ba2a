#!/bin/bash
# No silent loss on output: every output path of every command, written to
# /dev/full and to a small tmpfs that is full (or nearly full, so the file
# is cut short), must exit 1 with "memlens CMD: writing FILE: <reason>"
# and never report the run as complete.
set -u
. "$(dirname "$0")/../lib.bash"
M=${MEMLENS:?} W=${WORKLOADS:?}
tmp=$(mktemp -d)
mnt=$tmp/mnt
cleanup() {
	kill $(jobs -p) 2>/dev/null
	mountpoint -q "$mnt" && umount "$mnt"
	rm -rf "$tmp"
}
t_at_exit cleanup
ENOSPC="No space left on device"

# expect NAME CMD-NAME FILE-IN-MESSAGE -- COMMAND...: exit 1 and the message
expect() {
	local name=$1 cmd=$2 file=$3 rc
	shift 4
	timeout 60 "$@" 2>"$tmp/err" >"$tmp/out.$name"
	rc=$?
	if [ "$rc" = 1 ] && grep -qF "memlens $cmd: writing $file: $ENOSPC" "$tmp/err"; then
		ok "$name"
	else
		notok "$name" "rc=$rc (want 1)" "$(head -5 "$tmp/err")"
	fi
}
# the same, with stdout to /dev/full
expect_stdout() {
	local name=$1 cmd=$2 rc
	shift 3
	timeout 60 "$@" 2>"$tmp/err" >/dev/full
	rc=$?
	if [ "$rc" = 1 ] && grep -qF "memlens $cmd: writing standard output: $ENOSPC" "$tmp/err"; then
		ok "$name"
	else
		notok "$name" "rc=$rc (want 1)" "$(head -5 "$tmp/err")"
	fi
}

"$W/sleeper" nanosleep 600000 >"$tmp/sleeper.out" 2>&1 &
spid=$!
wait_for_line "$tmp/sleeper.out" ready 10

# --- /dev/full -------------------------------------------------------------
expect_stdout snapshot_json_stdout snapshot -- "$M" snapshot -p $spid -i 10 -n 5 --json
expect_stdout snapshot_human_stdout snapshot -- "$M" snapshot -p $spid -i 10 -n 5
expect_stdout snapshot_single_stdout snapshot -- "$M" snapshot -p $spid
expect_stdout snapshot_csv_stdout snapshot -- "$M" snapshot -p $spid --csv -n 2 -i 10
expect snapshot_o_json snapshot /dev/full -- "$M" snapshot -p $spid -i 10 -n 5 -o /dev/full
expect snapshot_o_csv snapshot /dev/full -- "$M" snapshot -p $spid -i 10 -n 5 --csv -o /dev/full
# -o FILE: everything goes to FILE, nothing to (a full) stdout
timeout 60 "$M" snapshot -p $spid -i 10 -n 3 -o "$tmp/s.txt" >/dev/full 2>"$tmp/err"
rc=$?
[ "$rc" = 0 ] && grep -q "3 cycles" "$tmp/s.txt" && ok snapshot_o_not_stdout ||
	notok snapshot_o_not_stdout "rc=$rc (want 0)" "$(head -3 "$tmp/err")"
# spawn mode: the command is stopped and reaped, the exit status is 1
expect snapshot_spawn_o snapshot /dev/full -- "$M" snapshot -i 10 -o /dev/full -- "$W/sleeper" nanosleep 30000

expect_stdout writes_json_stdout writes -- "$M" writes -i 100 -d 1 --json -- "$W/memwrite" -m 4
expect_stdout writes_human_stdout writes -- "$M" writes -i 100 -d 1 -- "$W/memwrite" -m 4
expect writes_o writes /dev/full -- "$M" writes -i 100 -d 1 -o /dev/full -- "$W/memwrite" -m 4
expect writes_o_json writes /dev/full -- "$M" writes -i 100 -d 1 --json -o /dev/full -- "$W/memwrite" -m 4
expect writes_record writes /dev/full -- "$M" writes -i 100 -d 1 -q --record /dev/full -- "$W/memwrite" -m 4
# the target of -- CMD is stopped when the output fails (it would run for
# ever: memlens waiting for it would end only by expect's time limit)
expect writes_record_stops_early writes /dev/full -- "$M" writes -i 100 -q --record /dev/full -- "$W/memwrite" -m 3
left=$(pgrep -xf "$W/memwrite -m 3")
[ -z "$left" ] && ok writes_record_stopped_the_command ||
	{ notok writes_record_stopped_the_command "the command still runs: pid $left"; kill $left; }

# a real trace for migrate-model and report
"$M" writes -i 100 -d 1.5 -q --record "$tmp/rec.jsonl" -- "$W/memwrite" -m 4 >/dev/null 2>&1
if [ -s "$tmp/rec.jsonl" ]; then
	expect_stdout migrate_model_human migrate-model -- "$M" migrate-model "$tmp/rec.jsonl" -b 100 -r 0.2
	expect_stdout migrate_model_json migrate-model -- "$M" migrate-model "$tmp/rec.jsonl" -b 100 -r 0.2 --json
	expect report_o report /dev/full -- "$M" report "$tmp/rec.jsonl" -o /dev/full
	expect_stdout report_o_stdout report -- "$M" report "$tmp/rec.jsonl" -o -
	expect_stdout report_message_stdout report -- "$M" report "$tmp/rec.jsonl" -o "$tmp/r.html"
else
	notok writes_record_for_migrate_model "no trace was recorded"
fi
expect_stdout check_human check -- "$M" check
expect_stdout check_json check -- "$M" check --json
expect_stdout help --help -- "$M" --help
expect_stdout command_help writes -- "$M" writes --help

# the eBPF tracers' -o and stdout (root, BTF)
if "$M" faults -d 0.1 >/dev/null 2>&1; then
	expect faults_o faults /dev/full -- "$M" faults -d 0.3 -o /dev/full
	expect_stdout faults_stdout faults -- "$M" faults -d 0.3 --json
	expect slab_o slab /dev/full -- "$M" slab -d 0.3 -o /dev/full
	expect oom_o oom /dev/full -- "$M" oom -d 0.3 -o /dev/full
	expect leaks_o leaks /dev/full -- "$M" leaks -o /dev/full -- "$W/sleeper" nanosleep 300
	expect faults_spawn_o faults /dev/full -- "$M" faults -o /dev/full -- /bin/true
else
	echo "skip - tracers_output: memlens faults cannot run here (needs root and BTF)"
fi

# --- a small tmpfs, full or nearly full ---------------------------------------
mkdir -p "$mnt"
if ! mount -t tmpfs -o size=64k tmpfs "$mnt" 2>"$tmp/err"; then
	echo "skip - full_tmpfs: cannot mount a tmpfs here: $(cat "$tmp/err")"
	exit 0
fi
fill() {	# leave $1 KiB free
	rm -f "$mnt"/*
	dd if=/dev/zero of="$mnt/fill" bs=1k count=$((64 - $1)) status=none 2>/dev/null
}
fill 0
expect tmpfs_full_snapshot snapshot "$mnt/s.json" -- "$M" snapshot -p $spid -i 10 -n 3 -o "$mnt/s.json"
expect tmpfs_full_writes_record writes "$mnt/r.jsonl" -- "$M" writes -i 100 -d 1 -q --record "$mnt/r.jsonl" -- "$W/memwrite" -m 4
expect tmpfs_full_writes_o writes "$mnt/w.out" -- "$M" writes -i 100 -d 1 -o "$mnt/w.out" -- "$W/memwrite" -m 4
# nearly full: the first records fit, the rest do not
fill 8
expect tmpfs_cut_snapshot snapshot "$mnt/s.json" -- "$M" snapshot -p $spid -i 10 -n 20 --json -o "$mnt/s.json"
if grep -q '"type":"summary"' "$mnt/s.json" 2>/dev/null || grep -q "cycles;" "$tmp/out.tmpfs_cut_snapshot"; then
	notok tmpfs_cut_snapshot_not_complete "a cut file got its summary"
else
	ok tmpfs_cut_snapshot_not_complete
fi
fill 8
expect tmpfs_cut_writes writes "$mnt/r.jsonl" -- "$M" writes -i 50 -d 2 -q --record "$mnt/r.jsonl" -- "$W/memwrite" -m 16
if [ -s "$tmp/rec.jsonl" ]; then
	fill 4
	expect tmpfs_report report "$mnt/r.html" -- "$M" report "$tmp/rec.jsonl" -o "$mnt/r.html"
	if ls "$mnt" | grep -q 'r.html'; then
		notok tmpfs_report_leaves_nothing "$(ls "$mnt")"
	else
		ok tmpfs_report_leaves_nothing
	fi
	grep -q "wrote" "$tmp/out.tmpfs_report" && notok tmpfs_report_not_announced "said it wrote the page" ||
		ok tmpfs_report_not_announced
fi
if "$M" faults -d 0.1 >/dev/null 2>&1; then
	fill 0
	expect tmpfs_faults_o faults "$mnt/f.txt" -- "$M" faults -d 0.3 -o "$mnt/f.txt"
fi
fill 64
# room enough: the same commands succeed
"$M" snapshot -p $spid -i 10 -n 3 --json -o "$mnt/s.json" >/dev/null 2>"$tmp/err"
rc=$?
[ $rc = 0 ] && [ "$(grep -c '"type":"snapshot"' "$mnt/s.json")" = 3 ] && ok tmpfs_room_snapshot ||
	notok tmpfs_room_snapshot "rc=$rc $(cat "$tmp/err")"
