#!/bin/bash
# What `memlens writes --tree` finds beyond the target alone, in the same
# run (the target's own row against the tree's totals): forktree (a root
# and 3 children writing 1 MiB of private memory each and the same 512 KiB
# of one shared mapping, paced against the profiler) and, when Debian's
# postgresql is installed, PostgreSQL in an IPC namespace of its own under
# a 4-client pgbench. Prints a Markdown table. Needs root and a build.
#   bench/writes_tree.sh [SECONDS]
set -u
cd "$(dirname "$0")/.." || exit 1
M=${MEMLENS:-build/memlens} W=${WORKLOADS:-build/workloads}
SECS=${1:-10}
tmp=$(mktemp -d /tmp/memlens-bench-tree.XXXXXX)
chmod 755 "$tmp"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -INT "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT

# row NAME FILE ROOT: one table row from a --tree JSON Lines run
row() {
	python3 - "$@" <<'PY'
import json, sys
name, path, root = sys.argv[1], sys.argv[2], int(sys.argv[3])
iv = [j for j in map(json.loads, open(path)) if j["type"] == "interval"][1:]
tree = sum(j["dirty"]["dirty_bytes"] for j in iv)
mine = sum(p["dirty_pages"] * 4096 for j in iv for p in j["processes"] if p["pid"] == root)
once = sum(j["shared_dirty_pages"] for j in iv) * 4096
each = sum(p["shared_dirty_pages"] for j in iv for p in j["processes"]) * 4096
last = iv[-1]
hot_tree = last["hot_ranges"]["hot_bytes"]
hot_root = [p["hot_bytes"] for p in last["processes"] if p["pid"] == root][0]
procs = max(len(j["processes"]) for j in iv)
mib = lambda b: "%.1f" % (b / 1048576) if b >= 1048576 else "%.2f" % (b / 1048576)
x = lambda a, b: "%.1f×" % (a / b) if b else "the target: none"
print("| %s | %d | %d | %s | %s (%s) | %s | %s (%s) | %s | %s |" % (
    name, procs, len(iv), mib(mine), mib(tree), x(tree, mine), mib(hot_root), mib(hot_tree),
    x(hot_tree, hot_root), mib(each), mib(once)))
PY
}

echo "| target | processes | intervals | written MiB, target alone | written MiB, tree (×) | hot MiB at the end, target alone | hot MiB, tree (×) | shared MiB written, summed per process | shared MiB written, each page once |"
echo "|---|---|---|---|---|---|---|---|---|"

"$W/forktree" -c 3 -p 256 -s 128 -P >"$tmp/ft" 2>&1 &
ft=$!
pids+=($ft)
until grep -q "first pass written" "$tmp/ft"; do sleep 0.1; done
"$M" writes -p $ft --tree -d "$SECS" --json -o "$tmp/ft.jsonl" 2>"$tmp/ft.err" &&
	row "forktree (root + 3 children)" "$tmp/ft.jsonl" $ft

bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)
if [ -n "$bin" ] && id postgres >/dev/null 2>&1 && command -v pgbench >/dev/null; then
	mkdir "$tmp/pg" && chown postgres "$tmp/pg"
	runuser -u postgres -- "$bin/initdb" -D "$tmp/pg/data" >"$tmp/initdb.log" 2>&1
	unshare --ipc --fork runuser -u postgres -- "$bin/postgres" -D "$tmp/pg/data" \
		-k "$tmp/pg" -c listen_addresses= -p 54399 -c shared_buffers=64MB >"$tmp/pg.log" 2>&1 &
	until [ "$(sed -n 8p "$tmp/pg/data/postmaster.pid" 2>/dev/null | tr -d ' ')" = ready ]; do
		sleep 0.2
	done
	pm=$(head -n1 "$tmp/pg/data/postmaster.pid")
	pids+=($pm)
	runuser -u postgres -- pgbench -h "$tmp/pg" -p 54399 -i -s 1 postgres >/dev/null 2>&1
	runuser -u postgres -- pgbench -h "$tmp/pg" -p 54399 -c 4 -T $((SECS + 30)) postgres \
		>"$tmp/bench.log" 2>&1 &
	pids+=($!)
	sleep 2 # the clients connect
	"$M" writes -p $pm --tree -d "$SECS" --json -o "$tmp/pg.jsonl" 2>"$tmp/pg.err" &&
		row "PostgreSQL $(basename "$(dirname "$bin")") under pgbench -c 4" "$tmp/pg.jsonl" $pm
fi
