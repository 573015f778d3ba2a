#!/bin/bash
# CRIU's stats-dump image: libmemlens's decoder (protobuf-c, generated from
# CRIU's images/stats.proto) against CRIU's own crit, run from the CRIU
# source tree scripts/ensure-criu.sh built (with Debian's python3-protobuf).
#  - the checked-in image (tests/data/criu): crit still prints the checked-in
#    JSON that tests/unit/test_criu_stats.c compares libmemlens with;
#  - a fresh dump of a workload (memlens checkpoint, real CRIU): every field
#    libmemlens decodes equals crit's, and memlens checkpoint --json reports
#    crit's pages_written, pages_scanned and pages_skipped_parent;
#  - a program linking libmemlens.a with pkg-config's protobuf-c flags, as
#    a user of the library would; bad images get an error, not output.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib.bash
BUILD=${BUILD:-build}
MEMLENS=${MEMLENS:-$PWD/$BUILD/memlens}
WORKLOADS=${WORKLOADS:-$PWD/$BUILD/workloads}
PY=/usr/bin/python3
tmp=$(mktemp -d /tmp/memlens-criu-stats.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
t_at_exit cleanup

# crit from CRIU's source tree, made runnable in $tmp/crit the way CRIU's
# lib/pycriu Makefiles make it: Python modules from images/*.proto, magic.py
# from criu/include/magic.h. Sets CRIT_MISSING when it cannot be.
CRIT_MISSING=
src=$(ls -d .cache/criu/src/criu-*/ 2>/dev/null | tail -n 1)
src=${src%/}
if [ -z "$src" ] || [ ! -d "$src/crit/crit" ] || [ ! -d "$src/lib/pycriu" ]; then
	CRIT_MISSING="no CRIU source tree with crit under .cache/criu/src (scripts/ensure-criu.sh builds CRIU from one)"
elif ! command -v protoc >/dev/null; then
	CRIT_MISSING="no protoc for crit's Python modules (apt-get install protobuf-compiler)"
elif ! "$PY" -c 'import google.protobuf' 2>/dev/null; then
	CRIT_MISSING="Debian's python3 has no protobuf module (apt-get install python3-protobuf)"
else
	c=$tmp/crit
	mkdir -p "$c"
	cp -r "$src/lib/pycriu" "$c/pycriu" && cp -r "$src/crit/crit" "$c/crit" &&
		protos=$(ls "$src"/images/*.proto | grep -v '/rpc\.proto$') &&
		protoc -I"$src/images" -I/usr/include --python_out="$c/pycriu/images" $protos &&
		protoc -I"$src/images" --python_out="$c/pycriu" "$src/images/rpc.proto" &&
		"$PY" "$src/scripts/magic-gen.py" "$src/criu/include/magic.h" \
			"$c/pycriu/images/magic.py" >/dev/null ||
		CRIT_MISSING="crit's modules could not be generated from $src"
	if [ -z "$CRIT_MISSING" ]; then
		{
			echo "# generated for the test"
			for p in $protos; do
				m=$(basename "$p" .proto)
				m=${m//-/_}_pb2
				[ "$m" = opts_pb2 ] || echo "from .$m import *"
			done
		} >"$c/pycriu/images/pb.py"
		echo "__version__ = '${src##*/criu-}'" >"$c/pycriu/version.py"
		cp "$c/pycriu/version.py" "$c/crit/version.py"
		(cd "$c" && PYTHONPATH=. "$PY" -m crit --help) >/dev/null 2>"$tmp/crit.err" ||
			CRIT_MISSING="crit does not run: $(tail -n 1 "$tmp/crit.err")"
	fi
fi
crit_decode() {	# crit_decode IMAGE: crit's JSON on stdout
	local img
	img=$(realpath "$1")
	(cd "$tmp/crit" && PYTHONPATH=. "$PY" -m crit decode -i "$img")
}

# the decoder as a program using libmemlens: crit's "dump" object, the
# fields the image has, under stats.proto's names
cat >"$tmp/decode.c" <<'EOF'
#include <stdio.h>
#include "memlens/criu.h"
int main(int argc, char **argv)
{
	static const char *const names[] = { "freezing_time", "frozen_time", "memdump_time",
		"memwrite_time", "pages_scanned", "pages_skipped_parent", "pages_written",
		"irmap_resolve", "pages_lazy", "page_pipes", "page_pipe_bufs", "shpages_scanned",
		"shpages_skipped_parent", "shpages_written", "pages_excluded" };
	struct ml_criu_dump_stats s;
	struct ml_err err = { 0 };
	const int64_t *f = &s.freezing_time;
	const char *sep = "";

	if (argc != 2 || ml_criu_stats_read(argv[1], &s, &err)) {
		fprintf(stderr, "decode: %s\n", argc == 2 ? err.msg : "usage: decode DIR");
		return 1;
	}
	printf("{");
	for (int i = 0; i < 15; i++, sep = ", ")
		if (f[i] >= 0)
			printf("%s\"%s\": %lld", sep, names[i], (long long)f[i]);
	printf("}\n");
	return 0;
}
EOF
PBC_LIBS=$(pkg-config --libs libprotobuf-c 2>"$tmp/pc.err")
if ! cc -std=gnu11 -Wall -Werror -Iinclude -o "$tmp/decode" "$tmp/decode.c" "$BUILD/libmemlens.a" \
	$PBC_LIBS -lpthread -lm 2>"$tmp/cc.err"; then
	notok links_with_pkg_config_protobuf_c "$(head -n 5 "$tmp/cc.err" "$tmp/pc.err")"
	exit 1
fi
ok "links_with_pkg_config_protobuf_c ($PBC_LIBS)"

# same_dump MEMLENS_JSON CRIT_JSON: prints "same" or the difference
same_dump() {
	"$PY" - "$1" "$2" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
c = json.load(open(sys.argv[2]))
ents = c.get('entries', [])
d = ents[0].get('dump') if len(ents) == 1 and c.get('magic') == 'STATS' else None
if d is None:
    print('crit printed no single STATS entry with a dump:', c)
elif m != d:
    print('memlens', m, '!= crit', d)
else:
    print('same')
PY
}

test_checked_in() {
	local n=crit_prints_the_checked_in_json
	if [ -n "$CRIT_MISSING" ]; then
		skip $n "$CRIT_MISSING"
	elif ! crit_decode tests/data/criu/stats-dump >"$tmp/ci.crit" 2>"$tmp/ci.err"; then
		notok $n "crit decode failed: $(cat "$tmp/ci.err")"
	elif [ "$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1])) == json.load(open(sys.argv[2])))' \
		"$tmp/ci.crit" tests/data/criu/stats-dump.crit.json)" = True ]; then
		ok $n
	else
		notok $n "crit: $(cat "$tmp/ci.crit"); checked in: $(cat tests/data/criu/stats-dump.crit.json)"
	fi
	n=memlens_decodes_the_checked_in_image_as_crit
	mkdir -p "$tmp/ci"
	cp tests/data/criu/stats-dump "$tmp/ci/"
	if ! "$tmp/decode" "$tmp/ci" >"$tmp/ci.memlens" 2>"$tmp/ci.derr"; then
		notok $n "$(cat "$tmp/ci.derr")"
	else
		res=$(same_dump "$tmp/ci.memlens" tests/data/criu/stats-dump.crit.json)
		[ "$res" = same ] && ok $n || notok $n "$res"
	fi
}

test_fresh_dump() {
	local n=fresh_dump_memlens_equals_crit criu d=$tmp/dump P res
	criu=$(scripts/ensure-criu.sh 2>"$tmp/ensure.err")
	if [ -z "$criu" ]; then
		skip $n "no working CRIU: $(tail -n 1 "$tmp/ensure.err")"
		skip checkpoint_json_pages_as_crit "no working CRIU"
		return
	fi
	if [ -n "$CRIT_MISSING" ]; then
		skip $n "$CRIT_MISSING"
		skip checkpoint_json_pages_as_crit "$CRIT_MISSING"
		return
	fi
	# -P: written once, then still (a dump must find all 8 MiB written)
	setsid "$WORKLOADS/memwrite" -m 8 -P </dev/null >"$tmp/mw.out" 2>&1 &
	P=$!
	pids+=("$P")
	wait_for_line "$tmp/mw.out" 'first pass written' 60
	if ! MEMLENS_CRIU=$criu "$MEMLENS" checkpoint -p "$P" -D "$d" -R -d 0 --json \
		>"$tmp/cp.json" 2>"$tmp/cp.err"; then
		notok $n "memlens checkpoint failed: $(cat "$tmp/cp.err" "$tmp/cp.json")"
		return
	fi
	kill "$P"
	if ! crit_decode "$d/stats-dump" >"$tmp/fresh.crit" 2>"$tmp/fresh.err"; then
		notok $n "crit decode failed: $(cat "$tmp/fresh.err")"
		return
	fi
	echo "# crit: $(cat "$tmp/fresh.crit")"
	if ! "$tmp/decode" "$d" >"$tmp/fresh.memlens" 2>"$tmp/fresh.derr"; then
		notok $n "$(cat "$tmp/fresh.derr")"
	else
		res=$(same_dump "$tmp/fresh.memlens" "$tmp/fresh.crit")
		[ "$res" = same ] && ok $n || notok $n "$res"
	fi
	n=checkpoint_json_pages_as_crit
	res=$("$PY" - "$tmp/cp.json" "$tmp/fresh.crit" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
d = json.load(open(sys.argv[2]))['entries'][0]['dump']
k = ('pages_written', 'pages_scanned', 'pages_skipped_parent')
got, want = [j[x] for x in k], [d[x] for x in k]
# 8 MiB of the workload's buffer: 2048 pages at least
print('same' if got == want and want[0] >= 2048 else 'memlens %s, crit %s' % (got, want))
PY
)
	[ "$res" = same ] && ok $n || notok $n "$res"
}

test_bad_images() {
	local n=bad_images_refused_with_a_message d=$tmp/bad bad=
	mkdir -p "$d"
	head -c 30 tests/data/criu/stats-dump >"$d/stats-dump"	# truncated
	"$tmp/decode" "$d" >"$tmp/b1.out" 2>"$tmp/b1.err" && bad="truncated image decoded"
	[ -s "$tmp/b1.out" ] && bad="$bad; output for a truncated image"
	grep -q "^decode: $d/stats-dump is not a CRIU stats image" "$tmp/b1.err" ||
		bad="$bad; message: $(cat "$tmp/b1.err")"
	[ "$(wc -l <"$tmp/b1.err")" = 1 ] || bad="$bad; the library printed: $(cat "$tmp/b1.err")"
	printf 'not an image at all' >"$d/stats-dump"
	"$tmp/decode" "$d" >/dev/null 2>"$tmp/b2.err" && bad="$bad; text decoded"
	rm -f "$d/stats-dump"
	"$tmp/decode" "$d" >/dev/null 2>"$tmp/b3.err" && bad="$bad; a missing image decoded"
	grep -q "cannot open CRIU's $d/stats-dump" "$tmp/b3.err" || bad="$bad; $(cat "$tmp/b3.err")"
	[ -z "$bad" ] && ok $n || notok $n "$bad"
}

test_checked_in
test_fresh_dump
test_bad_images
t_done
