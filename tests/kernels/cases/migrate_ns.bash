# Sourced by 85-migrate.sh, 86-migrate.sh and 78-migrate.sh, WHICH=fork|upstream|page: memlens
# migrate with pre-copy (needs soft-dirty: the 6.12 guest), between two
# network namespaces joined by a veth pair; the restored target checks its
# own memory.
. tests/kernels/cases/criu_lib.bash

ns_a=mlcaseA$$ ns_b=mlcaseB$$
t_at_exit 'ip netns del $ns_a 2>/dev/null; ip netns del $ns_b 2>/dev/null'
# migrate_ns NAME CRIU
migrate_ns() {
	local name=$1 criu=$2 out=$tmp/$1.out j=$tmp/$1.json bad= rp rc p new
	local in_a=(nsenter --net=/run/netns/"$ns_a") in_b=(nsenter --net=/run/netns/"$ns_b")
	"${in_b[@]}" "$MEMLENS" migrate --receive --listen 10.213.0.2:7411 --criu "$criu" \
		-D "$tmp/$name-dest" >"$tmp/$name-recv.out" 2>&1 &
	rp=$!
	pids+=("$rp")
	wait_for_line "$tmp/$name-recv.out" receiving 10
	# with the fork, whose pre-dumps leave the hot regions out, paced (-P):
	# every hot region written whole in each profiling interval, so that all
	# 13 are hot by round 1 however little CPU a loaded machine gives it
	start "$out" "${in_a[@]}" "$WORKLOADS/migwork" -H 12 -k 12 -I 32 -C 4 -t 2 \
		$([ "$name" != upstream ] && echo -P) ||
		{ notok "migrate_$name" "migwork did not start"; return; }
	p=$P
	# leaving memory out: all three pre-dumps (no stop threshold); the
	# fork keeps the hot memory out of the last one too (--keep-hot-out),
	# the patched CRIU's last one sends it (the default)
	local more=(--stop-threshold 1)
	[ "$name" = page ] && more=(--stop-threshold 0)
	[ "$name" = fork ] && more=(--stop-threshold 0 --keep-hot-out)
	"${in_a[@]}" "$MEMLENS" migrate -p "$p" --to 10.213.0.2:7411 --criu "$criu" \
		--max-rounds 3 "${more[@]}" --round-interval 2 -i 300 -D "$tmp/$name-src" --json \
		>"$j" 2>"$tmp/$name.err"
	rc=$?
	wait "$rp"
	[ $rc -eq 0 ] || { notok "migrate_$name" "exit $rc: $(tail -n 3 "$tmp/$name.err") / $(tail -n 3 "$tmp/$name-recv.out")"; return; }
	local common=('j["precopy"] and len(j["rounds"]) >= 2 and j["rounds"][-1]["kind"] == "dump"'
		'all(r["stored_bytes"] + r["images_bytes"] == r["bytes"] for r in j["rounds"])'
		'j["rounds"][-1]["pages"] <= 4096 + 2048')
	if [ "$name" != upstream ]; then
		# round 1 leaves out the hot 12 + 4 MiB: idle 32 MiB = 8192 pages and a
		# little; the fork as whole VMAs, the patched CRIU page by page
		local lim='"whole VMAs" in j["limits"] and j["granularity"] == "vma"'
		# the third pre-dump: the hot 16 MiB (4096 pages) left out again,
		# or sent, the final dump then carrying what was written after it
		local last='j["rounds"][2]["excluded_ranges"] >= 13 and j["rounds"][2]["pages"] < 4096'
		if [ "$name" = page ]; then
			lim='"page by page" in j["limits"] and j["granularity"] == "page"'
			last='j["rounds"][2]["excluded_ranges"] == 0 and j["rounds"][2]["pages"] >= 4096 and "the last pre-dump" in j["rounds"][2]["note"]'
		fi
		jcheck "migrate $name" "$j" "${common[@]}" \
			'j["exclusion"] and j["rounds"][0]["excluded_ranges"] >= 13' \
			'8192 <= j["rounds"][0]["pages"] <= 8192 + 512' "$lim" \
			'len(j["rounds"]) == 4 and j["rounds"][2]["kind"] == "pre-dump"' "$last"
	else
		jcheck "migrate $name" "$j" "${common[@]}" \
			'not j["exclusion"] and "cannot leave memory out" in j["rounds"][0]["note"]'
	fi
	bad+=$JBAD
	"$PY" -c 'import json,sys; j=json.load(open(sys.argv[1])); [print("# %s %d: %d pages, %d ms, %s" % (r["kind"], r["round"], r["pages"], r["duration_ms"], r["note"][:100])) for r in j["rounds"]]; print("# total %d bytes, downtime %d ms" % (j["total_bytes"], j["downtime_ms"]))' "$j"
	new=$(sed -n 's/.*"restored_pid":\([0-9]*\).*/\1/p' "$j")
	pids+=("$new")
	[ "$(ip netns identify "$new")" = "$ns_b" ] || bad+=" restored pid $new not in $ns_b"
	kill -TERM "$new"
	wait_gone "$new" 120 || bad+=" the restored target did not finish"
	grep -q "migwork: correct" "$out" || bad+=" restored memory: $(tail -n 1 "$out")"
	[ -z "$bad" ] && ok "migrate_$name" || notok "migrate_$name" "$bad"
}

if ! netns_up "$ns_a" "$ns_b" 10.213.0.1 10.213.0.2 2>"$tmp/ns.err"; then
	skip migrate "cannot set up two network namespaces: $(cat "$tmp/ns.err")"
	return 0 2>/dev/null || exit 0
fi
for_criu migrate migrate_ns "this kernel has no soft-dirty tracking (pre-copy needs it)"
