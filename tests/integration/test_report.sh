#!/bin/bash
# memlens report end to end: usage and bad input (file:line, exit 2), a report
# of real `memlens writes`/`snapshot`/`migrate-model` runs plus the fixtures in
# tests/report/, and a 10 000-interval input, each rendered by a real browser
# (Debian's headless chromium): a non-blank screenshot and the expected SVG
# elements in the DOM it parsed.
set -u
. "$(dirname "$0")/../lib.bash"
M=${MEMLENS:?} W=${WORKLOADS:?}
cd "$(dirname "$0")/../.."
F=tests/report
tmp=$(mktemp -d); t_at_exit 'kill $(jobs -p) 2>/dev/null; rm -rf "$tmp"'
run() { "$@" >"$tmp/out" 2>"$tmp/err"; echo $? >"$tmp/rc"; }
rc() { cat "$tmp/rc"; }
count() { grep -o "$1" "$2" | wc -l; }	# pattern, file

CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
# The flags keep chromium off the network and away from the user's profile;
# its log (the page's console: script errors, refused content) goes to
# $tmp/chromium.err.
browse() {	# html, what (--screenshot=PNG | --dump-dom), window height
	local prof
	prof=$(mktemp -d "$tmp/profile.XXXXXX")
	timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic \
		--no-first-run --disable-background-networking --disable-component-update \
		--disable-sync --hide-scrollbars --user-data-dir="$prof" --window-size=1100,"$3" \
		--enable-logging=stderr --v=0 "$2" "file://$(realpath "$1")" 2>"$tmp/chromium.err"
	rm -rf "$prof"
}
pngstat() { python3 "$F/pngstat.py" "$1"; }	# -> WIDTH HEIGHT COLOURS INK

# --- usage and bad input ---------------------------------------------------
run "$M" report --help
check help '[ "$(rc)" = 0 ] && grep -q "usage: memlens report" "$tmp/out"'
run "$M" report
check no_input_is_usage_error '[ "$(rc)" = 2 ] && grep -q "at least one JSON Lines file" "$tmp/err"'
run "$M" report --max-points 3 "$F/faults.jsonl"
check bad_max_points '[ "$(rc)" = 2 ] && grep -q "max-points" "$tmp/err"'
run "$M" report "$F/bad-empty.jsonl" -o "$tmp/x.html"
check empty_file '[ "$(rc)" = 2 ] && grep -q "bad-empty.jsonl:1: empty" "$tmp/err"' "$(cat "$tmp/err")"
run "$M" report "$F/faults.jsonl" "$F/bad-unknown-type.jsonl" -o "$tmp/x.html"
check unknown_type '[ "$(rc)" = 2 ] && grep -q "bad-unknown-type.jsonl:2: unknown type \"histogram\"" "$tmp/err"' \
	"$(cat "$tmp/err")"
run "$M" report --skip-unknown "$F/bad-unknown-type.jsonl" -o "$tmp/skip.html"
check skip_unknown '[ "$(rc)" = 0 ] && grep -q "1 lines of other types skipped" "$tmp/skip.html"' "$(cat "$tmp/err")"
run "$M" report "$F/bad-truncated.jsonl" -o "$tmp/x.html"
check truncated_line_exit_2 '[ "$(rc)" = 2 ]'
printf 'memwrite pid 1 writes 0x1-0x2 (64 MiB)\n{"type":"faults"}\n' >"$tmp/mixed.jsonl"
run "$M" report "$tmp/mixed.jsonl" -o "$tmp/x.html"
check program_output_mixed_in '[ "$(rc)" = 2 ] && grep -q "mixed.jsonl:1: not a JSON object .*mixed in" "$tmp/err"' \
	"$(cat "$tmp/err")"
run "$M" report "$F/bad-truncated.jsonl" -o "$tmp/x.html"
check truncated_line '[ "$(rc)" = 2 ] && grep -q "bad-truncated.jsonl:2: .*truncated" "$tmp/err"' \
	"$(cat "$tmp/err")"
check bad_input_writes_nothing '[ ! -e "$tmp/x.html" ] && [ -z "$(ls "$tmp" | grep "x.html")" ]'
run "$M" report "$tmp/nonexistent.jsonl" -o "$tmp/x.html"
check missing_file '[ "$(rc)" = 2 ] && grep -q "cannot read .*nonexistent.jsonl" "$tmp/err"'
run "$M" report "$F/faults.jsonl" -o "$tmp/no/such/dir/r.html"
check unwritable_output '[ "$(rc)" = 1 ] && grep -q "writing .*: " "$tmp/err"' "$(cat "$tmp/err")"
# bounded input: a line longer than the limit (64 MiB) is refused at that
# line, exit 2, in bounded memory (peak RSS well under twice the limit);
# so are a directory and binary data, for report and migrate-model alike
for cmd in "report -o $tmp/x.html" "migrate-model -b 100 -r 1"; do
	cn=${cmd%% *}
	if [ -x /usr/bin/time ]; then
		run /usr/bin/time -f 'maxrss_kb %M' "$M" $cmd /dev/zero
		rss=$(awk '/^maxrss_kb/{print $2}' "$tmp/err")
	else
		run "$M" $cmd /dev/zero
		rss=0
		echo "skip - ${cn}_dev_zero_memory: /usr/bin/time (package time) is not installed"
	fi
	check "${cn}_dev_zero" '[ "$(rc)" = 2 ] && grep -q "^memlens $cn: /dev/zero:1: line longer than 67108864 bytes" "$tmp/err"' \
		"$(cat "$tmp/err")"
	# the sanitizer build's shadow memory and allocator double the peak
	limit=$((160 * 1024))
	[ -n "${ASAN_OPTIONS:-}" ] && limit=$((400 * 1024))
	check "${cn}_dev_zero_bounded_memory" '[ "${rss:-0}" -lt $limit ]' "peak RSS ${rss} kB (limit $limit kB)"
	run "$M" $cmd - </dev/zero
	check "${cn}_stdin_dev_zero" '[ "$(rc)" = 2 ] && grep -q "(stdin):1: line longer than" "$tmp/err"' "$(cat "$tmp/err")"
	run "$M" $cmd "$tmp"
	check "${cn}_directory" '[ "$(rc)" = 2 ] && grep -q "$tmp: is a directory; give a JSON Lines file" "$tmp/err"' \
		"$(cat "$tmp/err")"
	run "$M" $cmd "$M"
	check "${cn}_binary" '[ "$(rc)" = 2 ] && grep -q "$M:1: " "$tmp/err"' "$(cat "$tmp/err")"
	# a long line after good ones: the message names its line
	{ head -1 "$F/migrate.jsonl"; head -c 70000000 /dev/zero | tr '\0' ' '; echo; } >"$tmp/long.jsonl"
	run "$M" $cmd "$tmp/long.jsonl"
	check "${cn}_long_line_numbered" '[ "$(rc)" = 2 ] && grep -q "long.jsonl:2: line longer than 67108864 bytes" "$tmp/err"' \
		"$(cat "$tmp/err")"
	rm -f "$tmp/long.jsonl"
done
check bad_input_leaves_no_page '[ ! -e "$tmp/x.html" ]'

run "$M" report - -o - <"$F/migrate.jsonl"
check stdin_to_stdout '[ "$(rc)" = 0 ] && grep -q "<svg .*class=\"migrate\"" "$tmp/out" && grep -q "(stdin)" "$tmp/out"'

# --- real input: the built tool on the memwrite workload --------------------
# -p: in `-- CMD` mode the program's own output would share stdout with the JSON;
# paced (-P): its 8 MiB written once per interval, however loaded the machine
"$W/memwrite" -P -m 8 -s 120 >"$tmp/memwrite.out" &
mw=$!
wait_for_line "$tmp/memwrite.out" writes 10
"$M" writes -p $mw -d 2.5 -i 200 --json --record "$tmp/trace.jsonl" \
	>"$tmp/writes.jsonl" 2>"$tmp/writes.err"
kill $mw 2>/dev/null; wait $mw 2>/dev/null
check real_writes_run '[ "$(grep -c "\"type\":\"interval\"" "$tmp/writes.jsonl")" -ge 5 ]' \
	"$(cat "$tmp/writes.err")"
# --json and --record of the same run: one section, with the page-range view
inputs=("$tmp/writes.jsonl" "$tmp/trace.jsonl" "$F/snapshot.jsonl" "$F/faults.jsonl" "$F/migrate.jsonl")
if "$M" snapshot --help >/dev/null 2>&1; then
	"$W/memwrite" -s 120 >"$tmp/memwrite2.out" &
	mw=$!
	wait_for_line "$tmp/memwrite2.out" writes 10
	"$M" snapshot -p $mw -i 100 -n 10 --json --writes >"$tmp/snap.jsonl" 2>"$tmp/snap.err"
	kill $mw 2>/dev/null; wait $mw 2>/dev/null
	if grep -q '"type":"snapshot"' "$tmp/snap.jsonl"; then
		inputs+=("$tmp/snap.jsonl")
	else
		notok real_snapshot_run "$(cat "$tmp/snap.err")"
	fi
fi
if "$M" migrate-model --help >/dev/null 2>&1; then
	"$M" migrate-model "$tmp/trace.jsonl" -b 100 -r 0.5 --json >"$tmp/mm.jsonl" 2>"$tmp/mm.err"
	if grep -q '"type":"migrate_model"' "$tmp/mm.jsonl"; then
		inputs+=("$tmp/mm.jsonl")
	else
		notok real_migrate_model_run "$(cat "$tmp/mm.err")"
	fi
fi
if "$M" faults --help >/dev/null 2>&1 &&
	timeout 20 "$M" faults --json -d 1 >"$tmp/faults.jsonl" 2>"$tmp/faults.err" &&
	grep -q '"type":"faults"' "$tmp/faults.jsonl"; then
	inputs+=("$tmp/faults.jsonl")
fi
echo "# report inputs: ${inputs[*]}"
run "$M" report "${inputs[@]}" --title "memlens report test" -o "$tmp/small.html"
check small_report_written '[ "$(rc)" = 0 ] && grep -q "wrote .*small.html" "$tmp/out"' "$(cat "$tmp/err")"
check small_report_has_no_script '! grep -qi -e "<script" -e "src=" -e "href=" "$tmp/small.html"'
check real_writes_show_hot_vma '[ "$(count "class=\"hot\"" "$tmp/small.html")" -ge 1 ]'
# rows named by the mapped file: memwrite's own data segment
check real_writes_rows_named 'grep -q "data memwrite</text>" "$tmp/small.html"' \
	"$(grep -o "class=\"vma[^<]*<title>[^<]*</title>[^<]*" "$tmp/small.html" | head -12)"
# nothing that points at documents a reader does not have
check small_report_no_internal_references '! grep -Eq "seed|Fig\.|§|issue [0-9]|DESIGN" "$tmp/small.html"'
nsnap=1; [[ " ${inputs[*]} " == *"/snap.jsonl "* ]] && nsnap=2
nmm=1; [[ " ${inputs[*]} " == *"/mm.jsonl "* ]] && nmm=2

# --- large input: 10 000 intervals ----------------------------------------
python3 "$F/gen_large.py" 10000 >"$tmp/large.jsonl"
run "$M" report "$tmp/large.jsonl" -o "$tmp/large.html"
size=$(stat -c %s "$tmp/large.html" 2>/dev/null || echo 0)
check large_report_small_file '[ "$(rc)" = 0 ] && [ "$size" -gt 0 ] && [ "$size" -lt 300000 ]' \
	"size $size bytes" "$(cat "$tmp/err")"

# --- in a real browser ------------------------------------------------------
if [ -z "$CHROMIUM" ]; then
	for t in small_png small_no_console_errors small_dom small_headlines large_png large_dom \
		blank_png_detected console_errors_detected; do
		echo "skip - browser_$t: chromium is not installed (scripts/install-deps.sh installs it)"
	done
	exit 0
fi
browse "$tmp/small.html" --screenshot="$tmp/small.png" 2400
read -r w h colours ink <<<"$(pngstat "$tmp/small.png" 2>&1)"
check browser_small_png '[ "${w:-0}" = 1100 ] && [ "${colours:-0}" -ge 40 ] && awk "BEGIN{exit !(${ink:-0} > 0.05)}"' \
	"png: $w $h colours=$colours ink=$ink" "$(tail -3 "$tmp/chromium.err")"
browse "$tmp/small.html" --dump-dom 1000 >"$tmp/small.dom"
check browser_small_no_console_errors '[ -s "$tmp/small.dom" ] && ! grep -q ":CONSOLE" "$tmp/chromium.err"' \
	"$(grep ":CONSOLE" "$tmp/chromium.err" | head -5)"
# a headline at the top of every section, computed from its data: the
# fixture's migration model (69992448 of 251658240 bytes, 526.3 of 475.1 ms)
# and the real memwrite run (hot VMAs at its last interval, of those seen)
want_w=$(python3 - "$tmp/writes.jsonl" <<'PY'
import json, sys
iv = [l for l in map(json.loads, open(sys.argv[1])) if l["type"] == "interval"]
seen = {(r["start_addr"], r["end_addr"]) for l in iv for r in l["regions"]}
hot = sum(r["hot"] for r in iv[-1]["regions"])
print(f"{hot} hot VMA{'' if hot == 1 else 's'} of {len(seen)}" if hot else f"no hot VMA among {len(seen)}")
PY
)
sections=$(count "<section " "$tmp/small.dom")
check browser_small_headlines '[ "$sections" -ge 4 ] &&
	[ "$(count "<p class=\"headline\">" "$tmp/small.dom")" = "$sections" ] &&
	grep -q "class=\"headline\">hot-VMA exclusion: 0.28× the bytes, 1.1× the downtime; hot-range exclusion: 0.15× the bytes, 0.55× the downtime</p>" "$tmp/small.dom" &&
	grep -q "class=\"headline\">$want_w[ ;]" "$tmp/small.dom" &&
	grep -q "class=\"headline\">50 MiB resident at the end, also the peak: anon 48 MiB (97%)" "$tmp/small.dom"' \
	"sections=$sections, writes: want \"$want_w\"" "$(grep -o "<p class=\"headline\">[^<]*" "$tmp/small.dom")"
check browser_small_dom '[ "$(count "<svg [^>]*class=\"heatmap\"" "$tmp/small.dom")" = 1 ] &&
	[ "$(count "<svg [^>]*class=\"rate\"" "$tmp/small.dom")" = 1 ] &&
	[ "$(count "<svg [^>]*class=\"ranges\"" "$tmp/small.dom")" -ge 1 ] &&
	[ "$(count "<svg [^>]*class=\"stacked\"" "$tmp/small.dom")" = "$nsnap" ] &&
	[ "$(count "<svg [^>]*class=\"kinds\"" "$tmp/small.dom")" = "$nsnap" ] &&
	[ "$(count "<svg [^>]*class=\"hist\"" "$tmp/small.dom")" -ge 2 ] &&
	[ "$(count "<svg [^>]*class=\"migrate\"" "$tmp/small.dom")" = "$nmm" ] &&
	[ "$(count "<rect class=\"cell\"" "$tmp/small.dom")" -ge 5 ] &&
	[ "$(count "<polygon class=\"area\"" "$tmp/small.dom")" -ge 5 ] &&
	grep -q "<title>memlens report test</title>" "$tmp/small.dom"' \
	"dom: $(wc -c <"$tmp/small.dom") bytes"
browse "$tmp/large.html" --screenshot="$tmp/large.png" 1000
read -r w h colours ink <<<"$(pngstat "$tmp/large.png" 2>&1)"
check browser_large_png '[ "${w:-0}" = 1100 ] && [ "${colours:-0}" -ge 40 ] && awk "BEGIN{exit !(${ink:-0} > 0.05)}"' \
	"png: $w $h colours=$colours ink=$ink"
browse "$tmp/large.html" --dump-dom 1000 >"$tmp/large.dom"
cells=$(count "<rect class=\"cell\"" "$tmp/large.dom")
check browser_large_dom '[ "$(count "<svg [^>]*class=\"heatmap\"" "$tmp/large.dom")" = 1 ] &&
	[ "$cells" -ge 12 ] && [ "$cells" -le $((12 * 360)) ] &&
	[ "$(count "<rect class=\"hot\"" "$tmp/large.dom")" -ge 10 ] &&
	grep -q "<polyline class=\"rate\"" "$tmp/large.dom" && grep -q "10000 intervals" "$tmp/large.dom"' \
	"cells=$cells"
# the console check must see a script error when there is one
printf '<!DOCTYPE html><html><body><p>x</p><script>no_such_function();</script></body></html>\n' \
	>"$tmp/jserr.html"
browse "$tmp/jserr.html" --dump-dom 600 >"$tmp/jserr.dom"
check browser_console_errors_detected 'grep -q ":CONSOLE.*Uncaught ReferenceError" "$tmp/chromium.err"' \
	"$(tail -5 "$tmp/chromium.err")"
# the PNG check must tell a blank page from a report
printf '<!DOCTYPE html><html><body></body></html>\n' >"$tmp/blank.html"
browse "$tmp/blank.html" --screenshot="$tmp/blank.png" 600
read -r w h colours ink <<<"$(pngstat "$tmp/blank.png" 2>&1)"
check browser_blank_png_detected '[ "${w:-0}" = 1100 ] && [ "${colours:-99}" -lt 40 ] && awk "BEGIN{exit !(${ink:-1} <= 0.05)}"' \
	"png: $w $h colours=$colours ink=$ink"
