#!/bin/bash
# The live-migration API (memlens/migrate.h) as a program outside the tree
# uses it: a small C program built against the public headers only (no
# lib/ header on its include path) and linked with libmemlens.so through
# its export map migrates a process on this machine to a directory, once,
# with ml_migration_open() / ml_migration_run() and the result's accessors.
# The restored process checks its own memory; the program's own counts are
# checked against it (one stop-and-copy round here: no soft-dirty).
set -u
. "$(dirname "$0")/../lib.bash"
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
WORKLOADS=${WORKLOADS:-$PWD/$BUILD/workloads}
tmp=$(mktemp -d /tmp/memlens-migrate-api.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
t_at_exit cleanup

cat >"$tmp/mig.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <memlens/migrate.h>

static int rounds_seen;

static void on_round(const struct ml_migrate_round *r, void *arg)
{
	(void)arg;
	rounds_seen++;
	printf("round %d %s pages %lld bytes %llu\n", r->k, r->pre_dump ? "pre-dump" : "dump",
	       (long long)r->pages, (unsigned long long)r->bytes);
}

static void on_event(const struct ml_mig_event *ev, void *arg)
{
	(void)arg;
	fprintf(stderr, "event: %s\n", ev->msg);
}

int main(int argc, char **argv)
{
	ML_RESULT(ml_criu_caps, caps);
	struct ml_err err = { 0 };
	struct ml_migration *m;
	const struct ml_migrate_result *x;
	const struct ml_migrate_round *last;
	int r;

	if (argc != 5)
		return 2;
	if (ml_criu_probe(argv[1], &caps, &err)) {
		fprintf(stderr, "probe: %s\n", err.msg);
		return 1;
	}
	ML_OPTS(ml_migrate_opts, o, .pid = atoi(argv[2]), .to = argv[3], .work = argv[4],
		.caps = &caps, .max_rounds = 0, .timeout_s = 120, .on_round = on_round,
		.on_event = on_event);
	if (ml_migration_open(&m, &o, &err)) {
		fprintf(stderr, "open: %s\n", err.msg);
		return 1;
	}
	x = ml_migration_result(m);
	printf("plan precopy %d exclude %d\n", x->precopy, x->exclude);
	if (ml_migration_check_postcopy(m)) {
		fprintf(stderr, "check: %s\n", x->error);
		return 1;
	}
	r = ml_migration_run(m);
	if (r) {
		fprintf(stderr, "run: %d %s\n", r, x->error);
		ml_migration_close(m);
		return 1;
	}
	last = ml_migration_round(m, x->nr - 1);
	printf("restored %d rounds %d seen %d total %llu last %s pages %lld stored %llu "
	       "images %llu nprocs %zu of %zu proc0 %d %s beyond %s\n",
	       (int)x->restored, x->nr, rounds_seen, (unsigned long long)x->total,
	       last && !last->pre_dump ? "dump" : "?", last ? (long long)last->pages : -1,
	       last ? (unsigned long long)last->stored : 0,
	       last ? (unsigned long long)last->images : 0, x->nprocs, x->nprocs_total,
	       x->nprocs ? (int)ml_migration_proc(m, 0)->pid : -1,
	       x->nprocs ? ml_migration_proc(m, 0)->comm : "-",
	       ml_migration_round(m, x->nr) || ml_migration_proc(m, x->nprocs) ? "some" : "none");
	ml_migration_close(m);
	return 0;
}
C

if [ ! -f "$BUILD/libmemlens.so" ]; then
	notok migrate_api_build "$BUILD/libmemlens.so is missing (make $BUILD/libmemlens.so)"
	exit 0
fi
# the public headers alone: include/ on the path (as /usr/include would be), lib/ not
mkdir -p "$tmp/lib"
ln -s "$PWD/$BUILD/libmemlens.so" "$tmp/lib/libmemlens.so.1"
if ! ${CC:-cc} -std=gnu11 -Wall -Wextra -Werror -I"$PWD/include" -o "$tmp/mig" "$tmp/mig.c" \
	-L"$PWD/$BUILD" -lmemlens >"$tmp/cc.log" 2>&1; then
	notok migrate_api_build "$(head -n 5 "$tmp/cc.log")"
	exit 0
fi
ok migrate_api_build
# what it needs from the library, all exported (libmemlens.map)
undef=$(nm -D --undefined-only "$tmp/mig" | awk '$2 ~ /^ml_/ { print $2 }' | sed 's/@.*//' | sort -u | xargs)
[[ "$undef" == *ml_migration_open*ml_migration_run* ]] && ok "migrate_api_uses_exports ($undef)" ||
	notok migrate_api_uses_exports "$undef"

CRIU=$(scripts/ensure-criu.sh 2>"$tmp/ensure.err")
if [ -z "$CRIU" ]; then
	skip migrate_api_run "no CRIU: $(tail -n1 "$tmp/ensure.err")"
	exit 0
fi
setsid "$WORKLOADS/migwork" -H 4 -I 4 -C 4 -t 2 </dev/null >"$tmp/w.out" 2>&1 &
P=$!
pids+=("$P")
wait_for_line "$tmp/w.out" ready 10 || { notok migrate_api_run "migwork: $(cat "$tmp/w.out")"; exit 0; }
mkdir "$tmp/src"
LD_LIBRARY_PATH=$tmp/lib "$tmp/mig" "$CRIU" "$P" "$tmp/dest" "$tmp/src" >"$tmp/mig.out" 2>"$tmp/mig.err"
rc=$?
out=$(cat "$tmp/mig.out" "$tmp/mig.err")
line=$(grep '^restored ' "$tmp/mig.out")
bad=
[ $rc -eq 0 ] || bad="exit $rc"
# restored in place (a directory on this machine: the same PID), one
# stop-and-copy round (no soft-dirty here) that the callback saw too; its
# pages are migwork's 4 + 4 + 4 MiB and a few more, all stored there
read -r _ new _ nr _ seen _ total _ kind _ pages _ stored _ images _ np _ nt _ p0 comm _ beyond <<<"$line"
[ "${new:-}" = "$P" ] || bad+=" restored as ${new:-?}, not $P"
[ "${nr:-}" = 1 ] && [ "${seen:-}" = 1 ] && [ "${kind:-}" = dump ] || bad+=" rounds: $line"
[ "${pages:-0}" -ge 3072 ] 2>/dev/null && [ "$pages" -le $((3072 + 1024)) ] || bad+=" pages: ${pages:-?}"
[ "${stored:-0}" -ge $((${pages:-0} * 4096)) ] 2>/dev/null && [ $((stored + images)) -eq "${total:-0}" ] ||
	bad+=" bytes: $line"
[ "${np:-}" = 1 ] && [ "${nt:-}" = 1 ] && [ "${p0:-}" = "$P" ] && [ "${comm:-}" = migwork ] ||
	bad+=" processes: $line"
[ "${beyond:-}" = none ] || bad+=" an accessor past the end: $line"
if [ "${new:-}" = "$P" ]; then
	kill -TERM "$P"
	wait_gone "$P" 30 || bad+=" the restored target did not finish"
	grep -q "migwork: correct" "$tmp/w.out" || bad+=" restored memory: $(tail -n 1 "$tmp/w.out")"
fi
[ -z "$bad" ] && ok migrate_api_run || notok migrate_api_run "$bad" "$out"
