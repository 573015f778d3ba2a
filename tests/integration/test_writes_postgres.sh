#!/bin/bash
# memlens writes --tree on PostgreSQL (Debian's postgresql package), started
# in an IPC namespace of its own as a container would start it, under a
# pgbench load: the postmaster itself writes next to nothing; its backends
# write the shared buffers (a "/dev/zero (deleted)" shared mapping) and
# their own memory. --tree must see the backends, their writes into the
# shared buffers, and more than the postmaster alone in the same run. The
# numbers (tree vs postmaster, same run) are printed as comments. No timing
# is asserted: the test waits for states.
set -u
. "$(dirname "$0")/../lib.bash"
M=${MEMLENS:?}
PY=${PYTHON:-python3}

bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)
if [ -z "$bin" ] || [ ! -x "$bin/postgres" ] || ! command -v pgbench >/dev/null ||
	! id postgres >/dev/null 2>&1 || ! command -v unshare >/dev/null; then
	skip writes_tree_postgres "PostgreSQL is not installed (Debian's postgresql package)"
	exit 0
fi
t_tmpdir writes_pg
chmod 755 "$tmp"
mkdir "$tmp/pg" && chown postgres "$tmp/pg"
as_pg() { runuser -u postgres -- "$@"; }
if ! as_pg "$bin/initdb" -D "$tmp/pg/data" >"$tmp/initdb.log" 2>&1; then
	notok postgres_started "initdb failed: $(tail -n 3 "$tmp/initdb.log")"
	exit 1
fi
port=$((54000 + $$ % 900))
unshare --ipc --fork runuser -u postgres -- "$bin/postgres" -D "$tmp/pg/data" -k "$tmp/pg" \
	-c listen_addresses= -p $port -c shared_buffers=64MB >"$tmp/pg.log" 2>&1 &
t_bg $!
pm_ready() { [ "$(sed -n 8p "$tmp/pg/data/postmaster.pid" 2>/dev/null | tr -d ' ')" = ready ]; }
if ! t_wait 60 pm_ready; then
	notok postgres_started "$(tail -n 5 "$tmp/pg.log")"
	exit 1
fi
pm=$(head -n1 "$tmp/pg/data/postmaster.pid")
t_at_exit "kill -INT $pm 2>/dev/null"
if ! as_pg pgbench -h "$tmp/pg" -p $port -i -s 1 postgres >"$tmp/init.log" 2>&1; then
	notok postgres_started "pgbench -i failed: $(tail -n 3 "$tmp/init.log")"
	exit 1
fi
ok postgres_started
# four clients, until the test ends
as_pg pgbench -h "$tmp/pg" -p $port -c 4 -T 600 postgres >"$tmp/bench.log" 2>&1 &
bench=$!
t_bg $bench

"$M" writes -p $pm --tree -i 500 --json -o "$tmp/w.jsonl" 2>"$tmp/w.err" &
wr=$!
t_bg $wr

# seen: an interval in which four backends wrote the shared buffers
seen() {
	$PY - "$tmp/w.jsonl" $pm <<'PY'
import json, sys
pm = int(sys.argv[2])
n = 0
for l in open(sys.argv[1]):
    try:
        j = json.loads(l)
    except ValueError:
        break
    if j.get("type") != "interval":
        continue
    wrote = {r["pid"] for r in j["regions"] if r["pid"] != pm and r.get("shared") and
             r.get("path") == "/dev/zero (deleted)" and r["dirty_pages"] > 0}
    if len(wrote) >= 4:
        n += 1
sys.exit(0 if n >= 3 else 1)
PY
}
if t_wait 120 seen; then
	ok backends_write_shared_buffers
else
	notok backends_write_shared_buffers "$(tail -n 1 "$tmp/w.jsonl" | cut -c1-1200)" \
		"$(cat "$tmp/w.err")" "$(tail -n 3 "$tmp/bench.log")"
fi
kill -INT $wr
wait $wr
check writes_exit_ok '[ $? = 0 ]' "$(cat "$tmp/w.err")"

# the tree against the postmaster's own row, in the same run
$PY - "$tmp/w.jsonl" $pm >"$tmp/py" 2>&1 <<'PY'
import json, sys
pm = int(sys.argv[2])
iv = [j for j in map(json.loads, open(sys.argv[1])) if j["type"] == "interval"]
tree = sum(j["dirty"]["dirty_bytes"] for j in iv)
root = sum(r["dirty_pages"] * 4096 for j in iv for r in j["processes"] if r["pid"] == pm)
hot_tree = iv[-1]["hot_ranges"]["hot_bytes"]
hot_root = [r["hot_bytes"] for r in iv[-1]["processes"] if r["pid"] == pm][0]
shared = sum(j["shared_dirty_pages"] * 4096 for j in iv)
procs = max(len(j["processes"]) for j in iv)
print("# %d intervals, up to %d processes: written %d KiB by the tree (%d KiB of it shared "
      "memory, each page once), %d KiB by the postmaster alone (%.0fx); hot at the end: "
      "%d KiB in the tree, %d KiB in the postmaster" %
      (len(iv), procs, tree >> 10, shared >> 10, root >> 10, tree / max(root, 4096),
       hot_tree >> 10, hot_root >> 10))
good = tree > root and shared > 0 and procs >= 5
print(("ok - " if good else "not ok - ") + "tree_sees_more_than_postmaster")
PY
cat "$tmp/py"
t_done
