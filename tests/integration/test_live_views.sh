#!/bin/bash
# The live views as a person sees them: each runs in a real terminal (tmux)
# of 80x24 and of 200x50, and the screen (tmux capture-pane) must say what
# it leaves out: writes names how many VMAs it lists of how many and how
# many rows did not fit; snapshot's cut table says how many rows are
# hidden; slab's header lines end on the screen (wrapped, not cut); leaks
# shows its top stacks, a frame or two each, besides the sizes; writes --tree
# shows the tree's processes above the regions.
. "$(dirname "$0")/bpf_common.bash"
M=$MEMLENS W=$WORKLOADS
if ! command -v tmux >/dev/null; then
	skip live_views "tmux is not installed (scripts/packages/base.txt)"
	t_done
	exit
fi
TM=(tmux -L "memlens-live-$$" -f /dev/null)
t_at_exit "${TM[*]} kill-server 2>/dev/null"

# a target with 300 VMAs of which 150 are written every pass
"$W/stress_vmas" -r "$T_TMP/sv.result" -t 600 300 >"$T_TMP/sv.out" 2>&1 &
SV=$!
T_BG+=($SV)
many_vmas() { [ "$(wc -l <"/proc/$SV/maps" 2>/dev/null)" -ge 300 ]; }
t_wait 30 many_vmas

# view NAME COLS ROWS REGEX CMD...: run CMD in a COLSxROWS terminal until the
# screen matches REGEX (twice: a redraw); the screen is left in $T_TMP/NAME.screen
view() {
	local name=$1 cols=$2 rows=$3 re=$4
	shift 4
	"${TM[@]}" new-session -d -s "$name" -x "$cols" -y "$rows" "$*; sleep 600"
	shown() {
		"${TM[@]}" capture-pane -p -t "$name" >"$T_TMP/$name.screen" 2>/dev/null &&
			grep -qE "$re" "$T_TMP/$name.screen"
	}
	t_wait 60 shown
	"${TM[@]}" send-keys -t "$name" q
	"${TM[@]}" kill-session -t "$name" 2>/dev/null
}
# fits NAME COLS ROWS: no screen line wider than COLS, the screen at most ROWS
fits() {
	awk -v c="$2" 'length($0) > c { bad = 1 } END { exit bad }' "$T_TMP/$1.screen" &&
		[ "$(wc -l <"$T_TMP/$1.screen")" -le "$3" ]
}

for size in 80x24 200x50; do
	c=${size%x*} r=${size#*x}
	view "writes$size" "$c" "$r" 'more rows? of [0-9]+' "$M" writes -p $SV -i 300
	check "writes_${size}_says_what_it_hides" \
		'grep -qE "the [0-9]+ of [0-9]+ VMAs written or hot" "$T_TMP/writes$size.screen" && grep -qE "\.\.\. [0-9]+ more rows? of [0-9]+" "$T_TMP/writes$size.screen" && fits "writes$size" $c $r' \
		"$(cat "$T_TMP/writes$size.screen")"
	view "snap$size" "$c" "$r" 'more rows? of [0-9]+' "$M" snapshot -p $SV -i 200
	check "snapshot_${size}_says_what_it_hides" \
		'grep -qE "\.\.\. [0-9]+ more rows? of [0-9]+" "$T_TMP/snap$size.screen" && fits "snap$size" $c $r' \
		"$(cat "$T_TMP/snap$size.screen")"
done

# a process tree: its processes' rows on the screen, then its regions, within the screen
"$W/forktree" -c 3 -p 64 -s 32 >"$T_TMP/ft.out" 2>&1 &
FT=$!
T_BG+=($FT)
ft_ready() { [ "$(grep -c '^forktree: pid ' "$T_TMP/ft.out" 2>/dev/null)" -ge 4 ]; }
t_wait 30 ft_ready
view "tree80x24" 80 24 'ADDRESS' "$M" writes -p $FT --tree -i 300
check tree_80x24_process_rows \
	'grep -q "^  processes (written" "$T_TMP/tree80x24.screen" && [ "$(grep -cE "^ +[0-9]+ +[0-9]+ forktree " "$T_TMP/tree80x24.screen")" -ge 2 ] && grep -q "^  tree: 4 processes" "$T_TMP/tree80x24.screen" && fits tree80x24 80 24' \
	"$(cat "$T_TMP/tree80x24.screen")"
kill -INT $FT

if [ "$(id -u)" != 0 ] || [ ! -r /sys/kernel/btf/vmlinux ]; then
	skip live_views_tracers "needs root and kernel BTF (/sys/kernel/btf/vmlinux)"
	t_done
	exit
fi
mkfifo "$T_TMP/fifo"
sleep 600 >"$T_TMP/fifo" &
T_BG+=($!)
for size in 80x24 200x50; do
	c=${size%x*} r=${size#*x}
	# the interval line ends with the number of caches: on the screen whole
	view "slab$size" "$c" "$r" 'in [0-9]+ caches' "$M" slab -i 300
	check "slab_${size}_header_whole" \
		'grep -qE "this interval: " "$T_TMP/slab$size.screen" && grep -qE "in [0-9]+ caches$" "$T_TMP/slab$size.screen" && fits "slab$size" $c $r' \
		"$(cat "$T_TMP/slab$size.screen")"
	# leaky -w 300: 300 blocks outstanding from main, then it waits on the fifo
	view "leaks$size" "$c" "$r" '^ +[0-9]+ +[0-9.]+[KMG]?i?B?: .*main' \
		"$M" leaks -i 300 -- sh -c "'exec $W/leaky -w 300 <$T_TMP/fifo'"
	check "leaks_${size}_top_stacks" \
		'grep -q "^top stacks" "$T_TMP/leaks$size.screen" && grep -q "^ *SIZE " "$T_TMP/leaks$size.screen" && fits "leaks$size" $c $r' \
		"$(cat "$T_TMP/leaks$size.screen")"
done
t_done
