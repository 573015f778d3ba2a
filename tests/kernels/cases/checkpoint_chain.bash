# Sourced by 60-checkpoint.sh (the CRIU fork with the exclude options) and
# 61-checkpoint.sh (upstream CRIU 4.1.1), WHICH=fork|upstream.
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
	local name=$1 criu=$2 d=$tmp/$1 out=$tmp/$1.out fork=false t bad= j
	mkdir -p "$d"
	[ "$name" = fork ] && fork=true
	if ! start "$out" "$WORKLOADS/migwork" -H $MIB_HOT -k 12 -I $MIB_IDLE -C $MIB_HC -W $MIB_CH -t 2; then
		notok "chain_$name" "migwork did not start: $(cat "$out")"
		return
	fi
	local p=$P ck=("$MEMLENS" checkpoint --criu "$criu" -p "$P" -R -i 300 --json)
	# round 1: 12 hot mappings + the hot-then-cold region: 13 ranges
	"${ck[@]}" --pre-dump -s 3 -D "$d/1" >"$d/1.json" 2>"$d/1.err" ||
		{ notok "chain_$name" "round 1: $(tail -n 3 "$d/1.err")"; return; }
	j=$d/1.json
	if $fork; then
		[ "$(jget "$j" 'j["exclusion"]["exclude_ranges"] >= 13 and j["exclusion"]["exclude_file_used"]')" = True ] ||
			bad="round 1 excluded: $(jget "$j" 'j["exclusion"]')"
		# idle 32 + cold 4 MiB = 9216 pages, plus libc, stack...
		[ "$(jget "$j" '9216 <= j["pages_written"] <= 9216 + 512')" = True ] ||
			bad+=" round 1 pages $(jget "$j" 'j["pages_written"]')"
	else
		[ "$(jget "$j" 'j["exclusion"]["skipped"] and "--exclude" not in j["command"]')" = True ] ||
			bad="round 1: $(jget "$j" 'j["exclusion"]')"
		[ "$(jget "$j" 'j["pages_written"] >= 13312')" = True ] ||
			bad+=" round 1 pages $(jget "$j" 'j["pages_written"]')"
	fi
	kill -USR2 "$p"
	sleep 1
	# round 2: the hot-then-cold region is cold now, the other one hot
	"${ck[@]}" --pre-dump -s 3 --parent "$d/1" -D "$d/2" >"$d/2.json" 2>"$d/2.err" ||
		{ notok "chain_$name" "round 2: $(tail -n 3 "$d/2.err")"; return; }
	j=$d/2.json
	if $fork; then
		[ "$(jget "$j" 'j["exclusion"]["no_parent_ranges"] >= 1 and "--no-parent-range" in j["command"]')" = True ] ||
			bad+=" round 2: $(jget "$j" 'j["exclusion"]')"
		# the cold region in full (1024 pages) without its parent
		[ "$(jget "$j" 'j["pages_written"] >= 1024')" = True ] ||
			bad+=" round 2 pages $(jget "$j" 'j["pages_written"]')"
	fi
	# round 3: exclusion off
	"${ck[@]}" --pre-dump -s 1 --no-exclude --parent "$d/2" -D "$d/3" >"$d/3.json" 2>"$d/3.err" ||
		{ notok "chain_$name" "round 3: $(tail -n 3 "$d/3.err")"; return; }
	j=$d/3.json
	[ "$(jget "$j" '"--exclude-" not in j["command"]')" = True ] || bad+=" round 3 excluded"
	if $fork; then
		[ "$(jget "$j" 'j["exclusion"]["no_parent_ranges"] >= 13 and "exclusion off" in j["exclusion"]["note"]')" = True ] ||
			bad+=" round 3: $(jget "$j" 'j["exclusion"]')"
	fi
	# the final dump: incremental
	"$MEMLENS" checkpoint --criu "$criu" -p "$p" -s 0 --parent "$d/3" -D "$d/4" --json \
		>"$d/4.json" 2>"$d/4.err" ||
		{ notok "chain_$name" "final dump: $(tail -n 3 "$d/4.err")"; return; }
	j=$d/4.json
	[ "$(jget "$j" '"--track-mem" in j["command"] and "--prev-images-dir=../3" in j["command"]')" = True ] ||
		bad+=" final: $(jget "$j" 'j["command"]')"
	# hot 12 + 4 MiB = 4096 pages, not all 52 MiB (13312)
	[ "$(jget "$j" '0 < j["pages_written"] <= 4096 + 2048')" = True ] ||
		bad+=" final dump pages $(jget "$j" 'j["pages_written"]')"
	for t in 1 2 3 4; do
		echo "# $name round $t: $(jget "$d/$t.json" '"pages %d, %s" % (j["pages_written"], j["exclusion"]["note"][:150])')"
	done
	wait "$p" 2>/dev/null
	"$MEMLENS" restore --criu "$criu" -D "$d/4" --json >"$d/r.json" 2>"$d/r.err" ||
		{ notok "chain_$name" "restore: $(tail -n 3 "$d/r.err")"; return; }
	local np
	np=$(jget "$d/r.json" 'j["pid"]')
	pids+=("$np")
	kill -TERM "$np"
	wait_gone "$np" 120 || bad+=" restored target did not finish"
	grep -q "migwork: correct" "$out" || bad+=" restored memory: $(tail -n 1 "$out")"
	[ -z "$bad" ] && ok "chain_$name" || notok "chain_$name" "$bad"
}

for_criu chain chain "this kernel has no soft-dirty tracking (pre-dump needs it)"
