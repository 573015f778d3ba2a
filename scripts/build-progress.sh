#!/bin/bash
# build-progress.sh NAME LOG [TOTAL]: reads a build's output (kbuild style,
# "  CC       criu/foo.o", as CRIU's make prints it) on stdin, appends it to
# LOG, and says on stderr how it is going: a line when it starts a part of
# the tree it had not reached yet (compel, images, criu/pie, ...), and
# one every 30 s, with the minutes so far and the files done of about
# TOTAL. For builds that take minutes: never silence.
set -u
name=$1 log=$2 total=${3:-}
n=0 t0=$SECONDS last=$SECONDS
declare -A seen=()

say() {	# the part reached
	local el=$((SECONDS - t0))
	printf '%s, %d:%02d: %d%s files done, now %s\n' "$name" $((el / 60)) $((el % 60)) "$n" \
		"${total:+ of about $total}" "$1" >&2
	last=$SECONDS
}

while IFS= read -r line; do
	printf '%s\n' "$line" >>"$log"
	# "  CC       criu/pie/parasite.o": a verb in capitals, then the file
	[[ $line =~ ^\ \ [A-Z]+\ +([^ ]+) ]] || continue
	n=$((n + 1))
	file=${BASH_REMATCH[1]}
	part=${file%%/*}
	rest=${file#*/}
	# criu/ is most of the tree: its subfolders are parts of their own
	[ "$part" = criu ] && [[ $rest == */* ]] && part=criu/${rest%%/*}
	[ "$part" = "$file" ] && part="the top folder"
	if [ -z "${seen[$part]:-}" ]; then
		seen[$part]=1
		say "$part"
	elif ((SECONDS - last >= 30)); then
		say "$part"
	fi
done
el=$((SECONDS - t0))
printf '%s, %d:%02d: %d files, done\n' "$name" $((el / 60)) $((el % 60)) "$n" >&2
