# Sourced by 81-checkpoint.sh (the CRIU fork with the exclude options),
# 82-checkpoint.sh (upstream CRIU 4.1.1) and 78-checkpoint.sh (CRIU 4.1.1
# with memlens's patches: the same expectations as the fork, page by page),
# WHICH=fork|upstream|page.
# Pre-dump chains through `memlens checkpoint`: round 1 excludes 13
# hot ranges (12 hot mappings and a region that is hot first), then that
# region turns cold and a cold one hot, round 2 excludes again (the cold
# one goes with --no-parent-range), round 3 has exclusion off (everything
# round 2 left out goes with --no-parent-range), then an incremental final
# dump (--track-mem), a restore, and the target checks its own memory.
# Needs soft-dirty (the 6.12 guest); memlens refuses pre-dump without it.
. tests/kernels/cases/criu_lib.bash

MIB_HOT=12 MIB_IDLE=32 MIB_HC=4 MIB_CH=4

# chain NAME CRIU
chain() {
	local name=$1 criu=$2 d=$tmp/$1 out=$tmp/$1.out fork=false bad= np n2 gone
	mkdir -p "$d"
	[ "$name" != upstream ] && fork=true	# a CRIU that leaves memory out
	if ! start "$out" "$WORKLOADS/migwork" -H $MIB_HOT -k 12 -I $MIB_IDLE -C $MIB_HC -W $MIB_CH -t 2; then
		notok "chain_$name" "migwork did not start: $(cat "$out")"
		return
	fi
	local p=$P ck=("$MEMLENS" checkpoint --criu "$criu" -p "$P" -R -i 500 --json)
	# round 1: 12 hot mappings + the hot-then-cold region: 13 ranges
	"${ck[@]}" --pre-dump -d 5 -D "$d/1" >"$d/1.json" 2>"$d/1.err" ||
		{ notok "chain_$name" "round 1: $(tail -n 3 "$d/1.err")"; return; }
	if $fork; then
		# what was hot (how much, on a slow machine, depends on its speed) is
		# left out: all but those VMAs (52 MiB = 13312 pages, plus libc,
		# stack...), at least the idle 32 + cold 4 MiB = 9216 pages; more
		# than 10 ranges go in a file
		jcheck "$name round 1" "$d/1.json" 'j["exclusion"]["exclude_ranges"] == len(j["hot_ranges"]) >= 1' \
			'j["exclusion"]["exclude_file_used"] == (len(j["hot_ranges"]) > 10)' \
			'9216 <= j["pages_written"] <= 13312 + 512 - sum(int(e, 16) - int(s, 16) for s, e in j["hot_ranges"]) // 4096'
	else
		jcheck "$name round 1" "$d/1.json" 'j["exclusion"]["skipped"]' \
			'"--exclude" not in j["command"]' 'j["pages_written"] >= 13312'
	fi
	bad+=$JBAD
	kill -USR2 "$p"
	sleep 1	# the thing tested: the workload writes its newly hot region for a while
	# round 2: the hot-then-cold region is cold now, the other one hot
	"${ck[@]}" --pre-dump -d 5 --parent "$d/1" -D "$d/2" >"$d/2.json" 2>"$d/2.err" ||
		{ notok "chain_$name" "$bad round 2: $(tail -n 3 "$d/2.err")"; return; }
	if $fork; then
		# what round 1 left out and is not hot now goes in full without its parent
		# (some range round 1 left out is not hot now: at least one no-parent range)
		gone=$("$PY" -c 'import json,sys
h1 = json.load(open(sys.argv[1]))["hot_ranges"]
h2 = [(int(s, 16), int(e, 16)) for s, e in json.load(open(sys.argv[2]))["hot_ranges"]]
print(int(any(not any(s2 <= int(s, 16) and int(e, 16) <= e2 for s2, e2 in h2) for s, e in h1)))' "$d/1.json" "$d/2.json")
		jcheck "$name round 2" "$d/2.json" '"--prev-images-dir=../1" in j["command"]' \
			"(j[\"exclusion\"][\"no_parent_ranges\"] >= 1) == ($gone == 1)" \
			'(j["exclusion"]["no_parent_ranges"] >= 1) == ("--no-parent-range" in j["command"])'
	else
		jcheck "$name round 2" "$d/2.json" '"--prev-images-dir=../1" in j["command"]'
	fi
	bad+=$JBAD
	# round 3: exclusion off
	"${ck[@]}" --pre-dump -d 1 --no-exclude --parent "$d/2" -D "$d/3" >"$d/3.json" 2>"$d/3.err" ||
		{ notok "chain_$name" "$bad round 3: $(tail -n 3 "$d/3.err")"; return; }
	if $fork; then
		# everything round 2 left out goes without the parent, exactly
		n2=$(sed -n 's/.*"exclude_ranges":\([0-9]*\).*/\1/p' "$d/2.json")
		jcheck "$name round 3" "$d/3.json" '"--exclude-" not in j["command"]' \
			"j[\"exclusion\"][\"no_parent_ranges\"] == $n2 >= 1" '"exclusion off" in j["exclusion"]["note"]'
	else
		jcheck "$name round 3" "$d/3.json" '"--exclude-" not in j["command"]'
	fi
	bad+=$JBAD
	# the final dump: incremental; hot 12 + 4 MiB = 4096 pages, not all 52 MiB (13312)
	"$MEMLENS" checkpoint --criu "$criu" -p "$p" -d 0 --parent "$d/3" -D "$d/4" --json \
		>"$d/4.json" 2>"$d/4.err" ||
		{ notok "chain_$name" "$bad final dump: $(tail -n 3 "$d/4.err")"; return; }
	jcheck "$name final dump" "$d/4.json" '"--track-mem" in j["command"]' \
		'"--prev-images-dir=../3" in j["command"]' '0 < j["pages_written"] <= 4096 + 2048'
	bad+=$JBAD
	wait "$p" 2>/dev/null
	"$MEMLENS" restore --criu "$criu" -D "$d/4" --json >"$d/r.json" 2>"$d/r.err" ||
		{ notok "chain_$name" "$bad restore: $(tail -n 3 "$d/r.err")"; return; }
	np=$(sed -n 's/.*"pid":\([0-9]*\).*/\1/p' "$d/r.json")
	pids+=("$np")
	kill -TERM "$np"
	wait_gone "$np" 120 || bad+=" restored target did not finish"
	grep -q "migwork: correct" "$out" || bad+=" restored memory: $(tail -n 1 "$out")"
	echo "# $name: restored pid $np: $(tail -n 1 "$out")"
	[ -z "$bad" ] && ok "chain_$name" || notok "chain_$name" "$bad"
}

for_criu chain chain "this kernel has no soft-dirty tracking (pre-dump needs it)"
