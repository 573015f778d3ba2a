#!/bin/bash
# libmemlens as a library others link: every global symbol carries the ml_
# prefix or its archive's private one (mli_ in libmemlens.a, mlr_ in
# libmemlens-report.a, mlt_ in libmemlens-trace.a); the public headers
# define no kernel UAPI of their own, so they compile beside
# linux-libc-dev's newer headers (>= 6.7, where <linux/fs.h> has
# PAGEMAP_SCAN's struct page_region) in either include order and beside
# libcriu's <criu.h>; and a program that has libcriu's criu_dump() and
# criu_restore() (and names memlens once used: vma_find, svg_open) links
# against libmemlens.a and runs.
set -u
. "$(dirname "$0")/../lib.bash"
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
tmp=$(mktemp -d /tmp/memlens-lib-test.XXXXXX)
t_at_exit 'rm -rf "$tmp"'

for a in libmemlens.a libmemlens-report.a libmemlens-trace.a; do
	if [ ! -f "$BUILD/$a" ]; then
		notok "prefix_$a" "$BUILD/$a is missing (make all)"
		continue
	fi
	case $a in
	libmemlens.a) re='^mli?_' what='ml_ or mli_' ;;
	libmemlens-report.a) re='^mlr?_' what='ml_ or mlr_' ;;
	*) re='^mlt?_' what='ml_ or mlt_' ;;
	esac
	bad=$(nm -g --defined-only "$BUILD/$a" | awk 'NF == 3 { print $3 }' | grep -vE "$re" | sort -u)
	n=$(nm -g --defined-only "$BUILD/$a" | awk 'NF == 3' | wc -l)
	if [ -z "$bad" ] && [ "$n" -gt 0 ]; then
		ok "prefix_$a ($n global symbols, all $what)"
	else
		notok "prefix_$a" "globals without the $what prefix: $(echo $bad | cut -c1-400)"
	fi
done

headers=$(cd include && ls memlens/*.h)
{
	for h in $headers; do echo "#include \"$h\""; done
} >"$tmp/all.h"

# the public headers beside the kernel's own newer UAPI headers
kh=$(tests/kernels/fetch.sh headers 2>"$tmp/fetch.err")
if [ -z "$kh" ] || ! grep -q 'struct page_region {' "$kh/usr/include/linux/fs.h" 2>/dev/null; then
	skip uapi_newer_headers "no linux-libc-dev >= 6.7 to compile against: $(tail -n 1 "$tmp/fetch.err")"
else
	ver=$(cut -d' ' -f2 "$kh/.package")
	for order in before after; do
		{
			[ $order = before ] && echo '#include <linux/fs.h>' && echo '#include <linux/userfaultfd.h>'
			echo '#include "all.h"'
			[ $order = after ] && echo '#include <linux/fs.h>' && echo '#include <linux/userfaultfd.h>'
			echo 'int main(void) { struct page_region r = { 0 }; return (int)r.categories; }'
		} >"$tmp/uapi_$order.c"
		if cc -std=gnu11 -D_GNU_SOURCE -Wall -Werror -isystem "$kh/usr/include" -Iinclude \
			-I"$tmp" -c "$tmp/uapi_$order.c" -o "$tmp/uapi_$order.o" 2>"$tmp/uapi_$order.err"; then
			ok "uapi_newer_headers_$order (linux-libc-dev $ver)"
		else
			notok "uapi_newer_headers_$order" "$(head -n 5 "$tmp/uapi_$order.err")"
		fi
	done
fi

# libcriu's header and its symbols beside libmemlens
# (an installed libcriu-dev, else the header in the CRIU source tree built
# for the tests, with the version.h and rpc.pb-c.h it includes)
criu_inc=
criu_h=$(ls .cache/criu/src/criu-*/lib/c/criu.h 2>/dev/null | tail -n 1)
if [ -n "$criu_h" ]; then
	top=${criu_h%/lib/c/criu.h}
	criu_inc="-I$top/criu/include -I$top/images"
	[ -f "$top/images/rpc.pb-c.h" ] || criu_h=
fi
[ -f /usr/include/criu/criu.h ] && criu_h=/usr/include/criu/criu.h criu_inc=-I/usr/include/criu
cat >"$tmp/prog.c" <<'EOF'
#include <stdio.h>
#include <unistd.h>
#include "all.h"
#ifdef HAVE_LIBCRIU_H
#include "criu.h"
#else
int criu_dump(void);
int criu_restore(void);
#endif
/* libcriu's entry points and names memlens once exported */
int criu_dump(void) { return 7; }
int criu_restore(void) { return 8; }
int vma_find(void) { return 1; }
int svg_open(void) { return 2; }
int main(void)
{
	struct ml_vma_set vs;
	struct ml_err err = { 0 };
	ml_vma_set_init(&vs);
	if (ml_maps_read(getpid(), &vs, &err) < 0 || vs.n == 0) {
		fprintf(stderr, "maps: %s\n", err.msg);
		return 1;
	}
	struct ml_rangeset rs;
	ml_rangeset_init(&rs);
	ml_rangeset_add(&rs, 0x1000, 0x3000);
	char opt[64];
	struct ml_criu_caps caps = { 0 };
	ml_criu_caps_options(&caps, opt, sizeof(opt));
	printf("vmas %zu bytes %llu crius %d %d %d %d\n", vs.n,
	       (unsigned long long)ml_rangeset_bytes(&rs), criu_dump(), criu_restore(),
	       vma_find(), svg_open());
	ml_rangeset_free(&rs);
	ml_vma_set_free(&vs);
	return 0;
}
EOF
def=
if [ -n "$criu_h" ]; then
	cp "$criu_h" "$tmp/criu.h"
	def=-DHAVE_LIBCRIU_H
	what="with libcriu's criu.h"
else
	what="libcriu's criu.h not at hand (no CRIU source built here): its prototypes declared"
fi
if cc -std=gnu11 -D_GNU_SOURCE -Wall -Werror -Iinclude -I"$tmp" $def $criu_inc -o "$tmp/prog" "$tmp/prog.c" \
	"$BUILD/libmemlens.a" -lpthread -lm $(pkg-config --libs jansson) 2>"$tmp/prog.err"; then
	out=$("$tmp/prog" 2>&1)
	if [[ "$out" == "vmas "*" bytes 8192 crius 7 8 1 2" ]]; then
		ok "links_beside_libcriu ($what)"
	else
		notok links_beside_libcriu "the program printed: $out"
	fi
else
	notok links_beside_libcriu "$(head -n 8 "$tmp/prog.err")"
fi

# the library runs no CRIU it was not given: a `criu` planted beside a
# program that links it (where an old build looked, ../.cache/criu/bin/)
# is never chosen; with no --criu path and nothing on PATH it says so
mkdir -p "$tmp/app/bin" "$tmp/app/.cache/criu/bin"
printf '#!/bin/sh\ntouch %s/planted-ran\n' "$tmp" >"$tmp/app/.cache/criu/bin/criu"
chmod +x "$tmp/app/.cache/criu/bin/criu"
cat >"$tmp/loc.c" <<'EOF2'
#include <errno.h>
#include <stdio.h>
#include "memlens/criu.h"
int main(void)
{
	char p[4096];
	struct ml_err err = { 0 };
	int r = ml_criu_locate(NULL, NULL, p, sizeof(p), &err);
	printf("%d %s\n", r, r ? err.msg : p);
	return 0;
}
EOF2
if cc -std=gnu11 -D_GNU_SOURCE -Iinclude -o "$tmp/app/bin/loc" "$tmp/loc.c" "$BUILD/libmemlens.a" \
	-lpthread -lm $(pkg-config --libs jansson) 2>"$tmp/loc.err"; then
	out=$(PATH=$tmp/empty "$tmp/app/bin/loc")
	if [[ "$out" == "-2 no CRIU found"* ]] && [ ! -e "$tmp/planted-ran" ] &&
		! grep -q '\.cache/criu' "$BUILD/libmemlens.a"; then
		ok "criu_not_guessed"
	else
		notok criu_not_guessed "ml_criu_locate said: $out"
	fi
else
	notok criu_not_guessed "$(head -n 5 "$tmp/loc.err")"
fi

# libmemlens.so exports the ml_ interface only, version-tagged, and the
# same program runs against it
so=$BUILD/libmemlens.so
if [ ! -f "$so" ]; then
	notok shared_exports "$so is missing (make all builds it)"
else
	bad=$(nm -D --defined-only "$so" | awk 'NF == 3 && $3 != "MEMLENS_1" { print $3 }' | grep -v '^ml_')
	n=$(nm -D --defined-only "$so" | awk 'NF == 3' | grep -c ' ml_')
	tagged=$(objdump -T "$so" | grep -c 'MEMLENS_1 *ml_')
	if [ -z "$bad" ] && [ "$n" -gt 100 ] && [ "$tagged" -eq "$n" ]; then
		ok "shared_exports ($n ml_ functions, all MEMLENS_1)"
	else
		notok shared_exports "not ml_: $(echo $bad | cut -c1-300); $n exported, $tagged tagged"
	fi
	mkdir -p "$tmp/so"
	cp "$so" "$tmp/so/libmemlens.so.1" && ln -s libmemlens.so.1 "$tmp/so/libmemlens.so"
	if cc -std=gnu11 -D_GNU_SOURCE -Wall -Werror -Iinclude -I"$tmp" $def $criu_inc -o "$tmp/prog_so" \
		"$tmp/prog.c" -L"$tmp/so" -lmemlens 2>"$tmp/prog_so.err"; then
		out=$(LD_LIBRARY_PATH=$tmp/so "$tmp/prog_so" 2>&1)
		if [[ "$out" == "vmas "*" bytes 8192 crius 7 8 1 2" ]] &&
			LD_LIBRARY_PATH=$tmp/so ldd "$tmp/prog_so" | grep -q "$tmp/so/libmemlens.so.1"; then
			ok "shared_links_beside_libcriu"
		else
			notok shared_links_beside_libcriu "the program printed: $out"
		fi
	else
		notok shared_links_beside_libcriu "$(head -n 8 "$tmp/prog_so.err")"
	fi
fi

# every public header's declarations are exported by libmemlens.so (a new
# header without the visibility pragma would be hidden there)
missing=
for h in include/memlens/*.h; do
	grep -q 'visibility push(default)' "$h" || missing="$missing ${h#include/}"
done
if [ -z "$missing" ]; then
	ok "public_headers_exported"
else
	notok public_headers_exported "no '#pragma GCC visibility push(default)' in:$missing"
fi
