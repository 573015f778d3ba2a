#!/bin/bash
# memlens leaks --stacks dwarf: call stacks unwound in user space from a
# copy of the registers and the top of the stack, with the DWARF call frame
# information of the ELF files, where the kernel's frame-pointer walk stops
# (code built without frame pointers, as distributions build theirs).
. "$(dirname "$0")/bpf_common.bash"

K=500
# leakdeep's known chain, innermost first (each function's own frame)
CHAIN="['leaf', 'deep9', 'deep8', 'deep7', 'deep6', 'deep5', 'deep4', 'deep3', 'deep2', 'deep1', 'main']"

# the functions of the first stack's frames, inlined ones left out
FUNCS="[f.get('function') for f in d['by_stack'][0]['frames'] if not f['inlined']]"

have_dwarf() {
	"$MEMLENS" leaks --help | grep -q -- '--stacks fp|dwarf' &&
		! "$MEMLENS" leaks --stacks dwarf -- true 2>&1 | grep -q 'built without'
}

test_chain() {
	local n=leaks_dwarf_unwinds_the_whole_chain out=$T_TMP/dwarf.json fp=$T_TMP/fp.json
	"$MEMLENS" leaks --json --stacks dwarf -- "$WORKLOADS/leakdeep" $K >"$out" 2>"$T_TMP/dwarf.err"
	echo "# $n: $(json "$out" "($FUNCS, d['stack_depth'], d['unwind'])")"
	# every block, one stack, the known chain in order from leaf to main,
	# unwound to the outermost frame (libc's start, _start) every time
	if [ "$(json "$out" "(d['stacks_mode'], d['outstanding'], len(d['by_stack']), d['by_stack'][0]['count'], $FUNCS[:11], d['stacks_lost'], d['unwind']['stacks'], d['unwind']['complete'], d['unwind']['not_unwound_fully'], d['stack_depth']['max'] >= 12)")" = "('dwarf', $K, 1, $K, $CHAIN, 0, $K, $K, 0, True)" ]; then
		ok $n
	else
		notok $n "$(cat "$out" "$T_TMP/dwarf.err")"
	fi
	n=leaks_fp_stops_without_frame_pointers
	"$MEMLENS" leaks --json -- "$WORKLOADS/leakdeep" $K >"$fp" 2>"$T_TMP/fp.err"
	echo "# $n: $(json "$fp" "($FUNCS, d['stack_depth'])")"
	# the kernel's walk finds the allocating function, then no frame
	# pointer: neither deep1 nor main, and fewer frames than dwarf's
	if [ "$(json "$fp" "(d['stacks_mode'], d['by_stack'][0]['count'], $FUNCS[0], 'deep1' in $FUNCS, 'main' in $FUNCS, 'unwind' in d)")" = "('fp', $K, 'leaf', False, False, False)" ] &&
	   [ "$(json "$fp" "d['stack_depth']['max']")" -lt "$(json "$out" "d['stack_depth']['max']")" ]; then
		ok $n
	else
		notok $n "$(cat "$fp" "$T_TMP/fp.err")"
	fi
}

test_text() {
	local n=leaks_dwarf_text out=$T_TMP/dwarf.txt
	"$MEMLENS" leaks --stacks dwarf --stack-size 4096 -- "$WORKLOADS/leakdeep" 20 >"$out" 2>&1
	# the mode and depth line, then the chain in order
	if grep -q 'call stacks: unwound with DWARF call frame information (--stacks dwarf); 1' "$out" &&
	   [ "$(grep -oE '^    (leaf|deep[0-9]|main)\+' "$out" | tr -d ' +' | tr '\n' ' ')" = "leaf deep9 deep8 deep7 deep6 deep5 deep4 deep3 deep2 deep1 main " ]; then
		ok $n
	else
		notok $n "$(cat "$out")"
	fi
}

# a distribution's binary (no frame pointers): dwarf finds deeper stacks
test_debian_binary() {
	local n=leaks_dwarf_deeper_on_a_distribution_binary m sql=$T_TMP/t.sql cmd
	if [ -x /usr/bin/sqlite3 ]; then
		cat >"$sql" <<'SQL'
.output /dev/null
create table t(a integer primary key, b text);
with recursive c(x) as (select 1 union all select x + 1 from c where x < 300) insert into t select x, printf('row %d', x) from c;
create index ti on t(b);
select count(*) from t where b like 'row 1%';
SQL
		cmd=(/usr/bin/sqlite3 "$T_TMP/db.sqlite")
	elif [ -x /usr/bin/python3 ]; then
		printf 'import json\nx = [json.dumps({"k": i}) for i in range(300)]\n' >"$sql"
		cmd=(/usr/bin/python3 "$sql")
	else
		skip $n "neither /usr/bin/sqlite3 nor /usr/bin/python3 is installed"; return
	fi
	for m in fp dwarf; do
		rm -f "$T_TMP/db.sqlite"
		"$MEMLENS" leaks --json -T 0 --stacks $m -- "${cmd[@]}" <"$sql" >"$T_TMP/deb-$m.json" 2>"$T_TMP/deb-$m.err"
	done
	echo "# $n: ${cmd[0]}: fp $(json "$T_TMP/deb-fp.json" "d['stack_depth']") dwarf $(json "$T_TMP/deb-dwarf.json" "(d['stack_depth'], d['unwind'])")"
	if [ "$(json "$T_TMP/deb-dwarf.json" "d['stack_depth']['max'] > $(json "$T_TMP/deb-fp.json" "d['stack_depth']['max']") and d['stack_depth']['mean'] > $(json "$T_TMP/deb-fp.json" "d['stack_depth']['mean']")")" = True ]; then
		ok $n
	else
		notok $n "$(cat "$T_TMP"/deb-*)"
	fi
}

test_usage() {
	local n=leaks_dwarf_usage_errors
	if expect $n "--stack-size alone" bash -c "! \"$MEMLENS\" leaks --stack-size 4096 -- true 2>&1 | grep -q 'add --stacks dwarf' && false || true" &&
	   expect $n "--stack-size alone exits 2" bash -c "\"$MEMLENS\" leaks --stack-size 4096 -- true 2>/dev/null; [ \$? = 2 ]" &&
	   expect $n "a size not a multiple of 8" bash -c "\"$MEMLENS\" leaks --stacks dwarf --stack-size 1001 -- true 2>&1 | grep -q 'multiple of 8'" &&
	   expect $n "too large" bash -c "\"$MEMLENS\" leaks --stacks dwarf --stack-size 64K -- true 2>&1 | grep -q 'from 512 to 32768'" &&
	   expect $n "with --no-stacks" bash -c "\"$MEMLENS\" leaks --stacks dwarf --no-stacks -- true 2>&1 | grep -q 'drop --no-stacks'" &&
	   expect $n "an unknown mode" bash -c "! \"$MEMLENS\" leaks --stacks lbr -- true 2>/dev/null"; then
		ok $n
	else
		notok $n
	fi
	n=leaks_dwarf_in_help
	"$MEMLENS" leaks --help | grep -q -- '--stack-size BYTES' && ok $n || notok $n
}

test_usage
if have_dwarf; then
	test_chain
	test_text
	test_debian_binary
else
	for n in leaks_dwarf_unwinds_the_whole_chain leaks_fp_stops_without_frame_pointers leaks_dwarf_text leaks_dwarf_deeper_on_a_distribution_binary; do
		skip $n "this memlens was built without libdw (--stacks dwarf says how to get it)"
	done
fi
t_done
