#!/bin/bash
# libmemlens.so's explicit export list (scripts/check-exports.py): the
# tree's map, public headers, built library and doc/library.md agree, the
# static archives define no global without their prefix (ml_ for their
# public API only, or their own private one), and the public headers name
# no tag, macro, enum constant or typedef without ml_/ML_; and in a copy
# of what the check reads (never the tree itself), each kind of
# disagreement planted fails it, naming the symbol.
set -u
. "$(dirname "$0")/../lib.bash"
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
CHECK=scripts/check-exports.py
SO=$BUILD/libmemlens.so
t_tmpdir exports

if [ ! -f "$SO" ]; then
	notok exports "$SO is missing (make $SO)"
	t_done
	exit
fi
out=$("$CHECK" --so "$SO" 2>&1)
rc=$?
check tree_agrees '[ "$rc" -eq 0 ] && [[ "$out" =~ \ ([1-9][0-9]+)\ symbols\ of ]]' "$out"
check archives_prefixed '[[ "$out" =~ the\ ([1-9][0-9]+)\ globals\ of\ 3\ archives ]]' "$out"
n=$(nm -D --defined-only "$SO" | awk 'NF == 3 && $3 ~ /^ml_/' | wc -l)
listed=$(grep -cE '^[[:space:]]+ml_[a-z0-9_]+;' lib/libmemlens.map)
check map_lists_each_export '[ "$n" -eq "$listed" ] && ! grep -q "ml_\*" lib/libmemlens.map' \
	"$n exported, $listed listed"

mkdir -p "$tmp/base/lib" "$tmp/base/doc" "$tmp/base/include"
cp lib/libmemlens.map lib/README.md "$tmp/base/lib/"
cp doc/library.md "$tmp/base/doc/"
cp -r include/memlens "$tmp/base/include/"
copy() {
	rm -rf "$tmp/t"
	cp -r "$tmp/base" "$tmp/t"
}
# planted NAME EXPECT...: the check of the copy fails and says each EXPECT
planted() {
	local name=$1 got rc e miss=()
	shift
	got=$("$CHECK" --root "$tmp/t" --so "$SO" ${ar_args[@]+"${ar_args[@]}"} 2>&1)
	rc=$?
	for e in "$@"; do
		grep -qF -- "$e" <<<"$got" || miss+=("$e")
	done
	if [ "$rc" -eq 1 ] && [ ${#miss[@]} -eq 0 ]; then
		ok "$name"
	else
		notok "$name" "exit status $rc (want 1); not said: ${miss[*]:-}" "$got"
	fi
}

# an exported function left out of the map: the library would hide it
copy
sed -i '/^\t\tml_rangeset_add;$/d' "$tmp/t/lib/libmemlens.map"
planted map_lacks_export \
	'ml_rangeset_add is declared in memlens/rangeset.h but not listed' \
	'exports ml_rangeset_add, which lib/libmemlens.map does not list'
# the map listing what is neither declared nor exported
copy
sed -i 's/^\t\tml_rangeset_add;$/&\n\t\tml_rangeset_helper;/' "$tmp/t/lib/libmemlens.map"
planted map_lists_unexported \
	'ml_rangeset_helper is listed but no public header' \
	'lists ml_rangeset_helper, which' 'does not export' \
	"lists ml_rangeset_helper, which $BUILD/libmemlens.a does not define"
# a wildcard instead of names
copy
sed -i 's/^\t\tml_rangeset_add;$/\t\tml_*;/' "$tmp/t/lib/libmemlens.map"
planted map_wildcard '"ml_*" is not one symbol name'
# a public header declaring a function the map does not list (a static
# inline one and a function pointer are no exports)
copy
{
	echo 'int ml_rangeset_new_thing(int x);'
	echo 'static inline int ml_rangeset_inline(void) { return ml_rangeset_new_thing(1); }'
	echo 'typedef int (*ml_rangeset_fn)(void);'
} >>"$tmp/t/include/memlens/rangeset.h"
planted header_not_in_map 'ml_rangeset_new_thing is declared in memlens/rangeset.h'
got=$("$CHECK" --root "$tmp/t" --so "$SO" 2>&1)
check inline_and_pointer_not_exports '! grep -qE "ml_rangeset_(inline|fn)" <<<"$got"' "$got"
# a new public header, not yet in lib/README.md's tables, is read too
copy
printf '#pragma GCC visibility push(default)\nvoid ml_newpart_fn(void);\n' \
	>"$tmp/t/include/memlens/newpart.h"
planted new_header_read 'ml_newpart_fn is declared in memlens/newpart.h but not listed'
# doc/library.md's list gone stale, then rewritten by --write
copy
sed -i 's/`ml_rangeset_add()`, //' "$tmp/t/doc/library.md"
planted doc_stale 'doc/library.md: the list of exported functions is not the one'
"$CHECK" --root "$tmp/t" --so "$SO" --write >/dev/null 2>&1
got=$("$CHECK" --root "$tmp/t" --so "$SO" 2>&1)
check doc_rewritten '[ $? -eq 0 ] && cmp -s "$tmp/t/doc/library.md" doc/library.md' "$got"

# a public header defining a tag without ml_ (at file scope, nested in
# another struct, an enum), or declaring an opaque one: each is a name in
# the caller's namespace; a macro's body and a comment are none
copy
{
	echo 'struct range_extra { int x; };'
	echo 'struct ml_rangeset_outer { struct inner_rec { int y; } in; };'
	echo 'enum rangeset_mode { RANGESET_MODE_A };'
	echo 'struct rangeset_handle;'
	echo '/* struct commented { int z; }; */'
	echo '#define ML_RANGESET_T(T) struct T { int w; }'
} >>"$tmp/t/include/memlens/rangeset.h"
planted tag_unprefixed \
	'memlens/rangeset.h defines struct range_extra, whose tag is not ml_*' \
	'memlens/rangeset.h defines struct inner_rec, whose tag is not ml_*' \
	'memlens/rangeset.h defines enum rangeset_mode, whose tag is not ml_*' \
	'memlens/rangeset.h declares struct rangeset_handle, whose tag is not ml_*'
got=$("$CHECK" --root "$tmp/t" --so "$SO" 2>&1)
check tag_comment_and_macro_not_tags \
	'! grep -qE "ml_rangeset_outer|commented|struct T\b" <<<"$got" && [ "$(grep -c "whose tag" <<<"$got")" -eq 4 ]' \
	"$got"

# a public header defining a macro or an enum constant without ML_, or a
# typedef without ml_: each is a name in the caller's namespace; the
# include guard, a fallback for an old system header ("#ifndef X" then
# "#define X": the kernel's name), a comment and an ML_ name are none
copy
{
	echo '#define RANGESET_MAX 16'
	echo '#define rangeset_first(s) ((s)->r[0])'
	echo 'enum ml_rangeset_kind { RANGESET_KIND_A, ML_RANGESET_KIND_B = (1 << 2) };'
	echo 'enum { RANGESET_ANON = 1 };'
	echo 'typedef int (*rangeset_cb)(void *arg);'
	echo '#ifndef MAP_FIXED_NOREPLACE'
	echo '#define MAP_FIXED_NOREPLACE 0x100000'
	echo '#endif'
	echo '/* #define COMMENTED 1 */'
	echo '#define ML_RANGESET_OK 1'
	echo '#define ml_rangeset_first(s) ((s)->r[0])'
} >>"$tmp/t/include/memlens/rangeset.h"
planted macro_enum_unprefixed \
	'memlens/rangeset.h defines the macro RANGESET_MAX, which is not ML_*' \
	'memlens/rangeset.h defines the macro rangeset_first, which is not ML_*' \
	'memlens/rangeset.h defines the enum constant RANGESET_KIND_A, which is not ML_*' \
	'memlens/rangeset.h defines the enum constant RANGESET_ANON, which is not ML_*' \
	'memlens/rangeset.h defines the typedef rangeset_cb, which is not ml_*'
got=$("$CHECK" --root "$tmp/t" --so "$SO" 2>&1)
not_names='(macro|constant|typedef) (MEMLENS_RANGESET_H|MAP_FIXED_NOREPLACE|COMMENTED|ML_RANGESET|ml_rangeset_first)'
check macro_guard_and_fallback_not_names \
	'! grep -qE "$not_names" <<<"$got" && [ "$(grep -cE "which is not (ML|ml)_\*" <<<"$got")" -eq 5 ]' \
	"$got"

# The archives: a copy of archive $1 (libmemlens-trace.a, ...) with one
# more object, $2 (C source), and the check told to read it instead of the
# built one (and the other two built ones)
ar_args=()
plant_archive() {
	local a
	mkdir -p "$tmp/ar"
	rm -f "$tmp/ar/"*.a
	cp "$BUILD/$1" "$tmp/ar/"
	printf '%s\n' "$2" >"$tmp/ar/extra.c"
	cc -c -o "$tmp/ar/extra.o" "$tmp/ar/extra.c" && ar rcs "$tmp/ar/$1" "$tmp/ar/extra.o"
	ar_args=()
	for a in libmemlens.a libmemlens-report.a libmemlens-trace.a; do
		if [ "$a" = "$1" ]; then
			ar_args+=(--archive "$tmp/ar/$a")
		else
			ar_args+=(--archive "$BUILD/$a")
		fi
	done
}
if [ -f "$BUILD/libmemlens-trace.a" ] && [ -f "$BUILD/libmemlens.a" ] &&
	[ -f "$BUILD/libmemlens-report.a" ] && command -v cc >/dev/null; then
	# a helper without the prefix: a program linking the archive could not
	# name its own function so
	copy
	plant_archive libmemlens-trace.a 'int stack_helper(int x) { return x + 1; }'
	planted archive_unprefixed \
		'libmemlens-trace.a (extra.o) defines the global stack_helper, which is not ml_* or mlt_*'
	# an ml_ function no public header declares: public in name only
	copy
	plant_archive libmemlens-trace.a 'int ml_leaks_secret(int x) { return x + 1; }'
	planted archive_ml_undeclared \
		'defines ml_leaks_secret, which no public header of trace/ declares (a private name is mlt_*)'
	# the private prefix, and a static, are what the tracer library may define
	copy
	plant_archive libmemlens-trace.a \
		'static int one(void) { return 1; } int mlt_helper(int x) { return x + one(); }'
	got=$("$CHECK" --root "$tmp/t" --so "$SO" "${ar_args[@]}" 2>&1)
	check archive_private_prefix_passes '[ $? -eq 0 ]' "$got"
	# but not in libmemlens.a, whose private prefix is mli_
	plant_archive libmemlens.a \
		'static int one(void) { return 1; } int mlt_helper(int x) { return x + one(); }'
	planted archive_lib_ml_only \
		'libmemlens.a (extra.o) defines the global mlt_helper, which is not ml_* or mli_*'
	# an ml_ function of libmemlens.a the map does not list: private, but
	# named as the public API is
	copy
	plant_archive libmemlens.a 'int ml_rangeset_secret(int x) { return x + 1; }'
	planted archive_lib_ml_unlisted \
		'libmemlens.a (extra.o) defines ml_rangeset_secret, which lib/libmemlens.map does not list (a private name is mli_*)'
	# libmemlens.a's private prefix, and a static, pass
	copy
	plant_archive libmemlens.a \
		'static int one(void) { return 1; } int mli_helper(int x) { return x + one(); }'
	got=$("$CHECK" --root "$tmp/t" --so "$SO" "${ar_args[@]}" 2>&1)
	check archive_lib_private_prefix_passes '[ $? -eq 0 ]' "$got"
	# the report library: an ml_ function report.h does not declare fails,
	# its private mlr_ passes
	copy
	plant_archive libmemlens-report.a 'int ml_report_secret(int x) { return x + 1; }'
	planted archive_report_ml_undeclared \
		'libmemlens-report.a (extra.o) defines ml_report_secret, which no public header of report/ declares (a private name is mlr_*)'
	copy
	plant_archive libmemlens-report.a \
		'static int one(void) { return 1; } int mlr_helper(int x) { return x + one(); }'
	got=$("$CHECK" --root "$tmp/t" --so "$SO" "${ar_args[@]}" 2>&1)
	check archive_report_private_prefix_passes '[ $? -eq 0 ]' "$got"
	plant_archive libmemlens-report.a 'int mli_helper(int x) { return x + 1; }'
	planted archive_report_other_private \
		'libmemlens-report.a (extra.o) defines the global mli_helper, which is not ml_* or mlr_*'
	# a public header of the tracers, or report.h, declaring what the archive lacks
	copy
	ar_args=()
	echo 'int ml_leaks_tracer_new_thing(void);' >>"$tmp/t/include/memlens/trace_leaks.h"
	planted archive_lacks_declared \
		'memlens/trace_leaks.h declares ml_leaks_tracer_new_thing, which' 'libmemlens-trace.a does not define'
	copy
	echo 'int ml_report_new_thing(void);' >>"$tmp/t/include/memlens/report.h"
	planted report_lacks_declared \
		'memlens/report.h declares ml_report_new_thing, which' 'libmemlens-report.a does not define'
else
	notok archives "an archive or cc is missing (make all)"
fi
ar_args=()

# the same copy, unchanged, passes: the failures above are the planted ones
copy
got=$("$CHECK" --root "$tmp/t" --so "$SO" 2>&1)
check copy_passes '[ $? -eq 0 ]' "$got"
t_done
