#!/bin/bash
# The layer rules of lib/README.md (scripts/check-layers.py): the tree keeps
# them; and in a copy of the tree (never the tree itself), each kind of
# break planted fails the check, which names the file, the line and the rule.
set -u
. "$(dirname "$0")/../lib.bash"
cd "$(dirname "$0")/../.." || exit 1
CHECK=scripts/check-layers.py
t_tmpdir layers

out=$("$CHECK" 2>&1)
rc=$?
check tree_keeps_layers '[ "$rc" -eq 0 ]' "$out"
check tree_counted '[[ "$out" =~ ([1-9][0-9]*)\ includes\ of\ [1-9][0-9]*\ files\ checked,\ 0\ against ]]' "$out"

# a copy of what the check reads: the sources, the public headers, the
# tables; made once, each plant works on a hard-linked copy of it (a planted
# file is replaced, never written through the link)
mkdir "$tmp/base"
find lib include common src agent report trace -name '*.[ch]' -exec cp --parents -t "$tmp/base" {} +
cp lib/README.md "$tmp/base/lib/"
copy() {
	rm -rf "$tmp/t"
	cp -al "$tmp/base" "$tmp/t"
}

# plant NAME FILE LINE EXPECT...: add LINE at the top of FILE (in the copy);
# the check must fail, and say FILE:1 and each EXPECT (a fixed string)
plant() {
	local name=$1 file=$2 line=$3 got rc e miss=()
	shift 3
	copy
	{ echo "$line"; cat "$tmp/t/$file"; } >"$tmp/t/$file.new" && mv "$tmp/t/$file.new" "$tmp/t/$file"
	got=$("$CHECK" --root "$tmp/t" 2>&1)
	rc=$?
	for e in "$file:1: " "$@"; do
		grep -qF -- "$e" <<<"$got" || miss+=("$e")
	done
	if [ "$rc" -eq 1 ] && [ ${#miss[@]} -eq 0 ]; then
		ok "$name"
	else
		notok "$name" "exit status $rc (want 1); not said: ${miss[*]:-}" "$got"
	fi
}

# the base reaching up (the break lib/common/features.c once had)
plant up_in_lib lib/common/err.c '#include "../scan/pagescan.h"' \
	'includes lib/scan/pagescan.h' 'lib/common/ may include only the folders above it'
# a folder using a public header of a folder below it
plant up_public_header lib/scan/maps.c '#include "memlens/snapshot.h"' \
	'includes include/memlens/snapshot.h' 'lib/scan/ may include only the folders above it'
# a public header including one of a folder below its own
plant up_in_header include/memlens/maps.h '#include "memlens/profiler.h"' \
	'lib/scan/ may include only the folders above it' 'not lib/writes/'
# the library including what the binaries link (found through -Icommon)
plant lib_includes_common lib/format/jsonw.c '#include "opts.h"' \
	'includes common/opts.h' 'lib/ may include'
# across: one binary's folder including the other's
plant across_binaries agent/target.c '#include "../src/table.h"' \
	'includes src/table.h' 'agent/ may include lib/ common/, not src/'
# code both binaries link including the command's
plant common_includes_src common/suggest.c '#include "../src/output.h"' \
	'includes src/output.h' 'common/ may include lib/, not src/'
# the tracer library using a folder of lib/ its row does not name
plant trace_lib_folder trace/oom.c '#include "memlens/profiler.h"' \
	'includes include/memlens/profiler.h' 'not lib/writes/'
# the library including the tracers'
plant lib_includes_trace lib/common/err.c '#include "../../trace/bpfutil.h"' \
	'includes trace/bpfutil.h' 'lib/ may include only itself, not trace/'
# a binary reaching into the library's private headers (the migration's once)
plant private_lib_header src/cmd_migrate.c '#include "../lib/migrate/migrate_run.h"' \
	'includes lib/migrate/migrate_run.h' 'src/ reaches the library through its public headers'
plant private_lib_header_agent agent/rpc_migrate.c '#include "../lib/migrate/migrate_wire.h"' \
	'includes lib/migrate/migrate_wire.h' 'agent/ reaches the library through its public headers'
# a weak symbol: a dependency no include shows
plant weak_symbol common/opts.c 'void mlt_trace_probe_features(void *l) __attribute__((weak));' \
	'a weak symbol'

# a public header or a lib folder the tables do not name
copy
echo '#define X 1' >"$tmp/t/include/memlens/unnamed.h"
mkdir "$tmp/t/lib/newpart" && echo 'int x;' >"$tmp/t/lib/newpart/x.c"
got=$("$CHECK" --root "$tmp/t" 2>&1)
rc=$?
check unnamed_header_and_folder '[ "$rc" -eq 1 ] &&
	grep -qF "include/memlens/unnamed.h: a public header named in no row" <<<"$got" &&
	grep -qF "lib/newpart/: a folder with no row" <<<"$got"' "$got"

# the same copy, unchanged, passes: the failures above are the planted lines'
copy
got=$("$CHECK" --root "$tmp/t" 2>&1)
check copy_passes '[ $? -eq 0 ]' "$got"
t_done
