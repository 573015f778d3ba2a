#!/bin/bash
# make install / make uninstall into a scratch DESTDIR, as a packager runs
# them: install builds only what it installs (no tests, no sanitizer
# builds); the layout is exactly the expected one (multiarch libdir, public
# headers only, memlens-agent in libexec/memlens, man8, the bash
# completion, pkg-config files); the installed memlens runs (--version,
# --help, check, and `memlens agent` finds the installed memlens-agent); a
# C program builds against the installed library with pkg-config and the
# installed memlens.pc, and one using the OOM tracer with the installed
# libmemlens-trace.a and memlens-trace.pc (pkg-config --static); uninstall
# leaves nothing behind.
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
M=${MEMLENS:-$PWD/$BUILD/memlens}
. tests/lib.bash
t_tmpdir install-test
mk() { make --no-print-directory BUILD="$BUILD" "$@"; }

# 1. what install would build in a fresh tree: memlens, memlens-agent, the
# libraries, man pages; never a test, a sanitizer build, a workload, a bench
mk -n install BUILD="$tmp/fresh" DESTDIR="$tmp/none" >"$tmp/plan" 2>&1
extra=$(grep -E -- '-o [^ ]*/(tests|asan|asan-bin|fuzz|workloads|bench)/' "$tmp/plan" | head -n 3)
if grep -qE -- "-o $tmp/fresh/memlens( |$)" "$tmp/plan" && [ -z "$extra" ]; then
	ok install_builds_only_what_it_installs
else
	notok install_builds_only_what_it_installs "${extra:-no link of memlens in: $(head -c 300 "$tmp/plan")}"
fi

# 2. install (what is not built yet is built now, in $BUILD)
dest=$tmp/dest
prefix=/usr/local
if ! mk -s install DESTDIR="$dest" PREFIX="$prefix" >"$tmp/install.log" 2>&1; then
	notok make_install "$(tail -n 5 "$tmp/install.log")"
	exit 1
fi
ok make_install

ma=$(${CC:-cc} -print-multiarch 2>/dev/null)
libdir=$prefix/lib${ma:+/$ma}
agent=
[ -x "$BUILD/memlens-agent" ] && agent=yes
{
	echo "$prefix/bin/memlens 755"
	[ -n "$agent" ] && echo "$prefix/libexec/memlens/memlens-agent 755"
	echo "$libdir/libmemlens.a 644"
	echo "$libdir/libmemlens-report.a 644"
	echo "$libdir/libmemlens-trace.a 644"
	echo "$libdir/libmemlens.so.1 755"
	echo "$libdir/libmemlens.so 777"
	echo "$libdir/pkgconfig/memlens.pc 644"
	echo "$libdir/pkgconfig/memlens-report.pc 644"
	echo "$libdir/pkgconfig/memlens-trace.pc 644"
	# the sampler leaks preloads, built with the tracers
	[ -f "$BUILD/libmemlens-sample.so" ] && echo "$libdir/memlens/libmemlens-sample.so 644"
	for h in include/memlens/*.h; do echo "$prefix/$h 644"; done
	for p in doc/man/*.8.rst; do p=${p#doc/man/}; echo "$prefix/share/man/man8/${p%.rst} 644"; done
	echo "$prefix/share/bash-completion/completions/memlens 644"
	echo "$prefix/share/memlens/agent.proto 644"
	for p in criu/patches/*.patch; do echo "$prefix/share/memlens/criu-patches/${p##*/} 644"; done
} | sort >"$tmp/want"
(cd "$dest" && find . ! -type d -printf '/%P %m\n') | sort >"$tmp/got"
if diff "$tmp/want" "$tmp/got" >"$tmp/layout.diff" &&
	[ "$(readlink "$dest$libdir/libmemlens.so")" = libmemlens.so.1 ] &&
	readelf -d "$dest$libdir/libmemlens.so.1" | grep -q 'SONAME.*\[libmemlens.so.1\]'; then
	ok "install_layout ($(wc -l <"$tmp/got") files, libdir $libdir)"
else
	notok install_layout "$(grep '^[<>]' "$tmp/layout.diff" | head -n 6 | tr '\n' ' ')"
fi

# 3. the installed binary
im=$dest$prefix/bin/memlens
v=$("$im" --version 2>&1)
[ "$v" = "$("$M" --version 2>&1)" ] && [ -n "$v" ] && ok "installed_version ($(echo "$v" | head -n 1))" ||
	notok installed_version "installed: $v; built: $("$M" --version 2>&1)"
"$im" --help >"$tmp/help" 2>&1 && grep -q '^  writes ' "$tmp/help" && ok installed_help ||
	notok installed_help "$(head -n 3 "$tmp/help")"
"$im" check --no-criu --json >"$tmp/check.json" 2>&1
rc=$?
"$M" check --no-criu --json >"$tmp/check-built.json" 2>&1
rc_built=$?
if [ $rc = $rc_built ] && /usr/bin/python3 -c 'import json,sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
assert a["type"] == "check" and a["core_ok"] == b["core_ok"]
assert [f["name"] for f in a["features"]] == [f["name"] for f in b["features"]]' "$tmp/check.json" "$tmp/check-built.json"; then
	ok "installed_check (exit $rc, as the built one)"
else
	notok installed_check "exit $rc (built: $rc_built): $(head -c 300 "$tmp/check.json")"
fi

# memlens agent runs the memlens-agent of the installed tree (libexec/memlens)
if [ -z "$agent" ]; then
	skip installed_agent "memlens-agent is not built (the packages of scripts/packages/agent.txt are missing)"
elif [ -e "$prefix/libexec/memlens/memlens-agent" ]; then
	skip installed_agent "a memlens-agent is installed in $prefix/libexec/memlens on this machine: cannot tell which one runs"
else
	"$im" agent --help >"$tmp/agent.out" 2>&1
	rc=$?
	mv "$dest$prefix/libexec/memlens/memlens-agent" "$tmp/agent.moved"
	"$im" agent --help >"$tmp/agent-missing.out" 2>&1
	rc_missing=$?
	mv "$tmp/agent.moved" "$dest$prefix/libexec/memlens/memlens-agent"
	if [ $rc = 0 ] && grep -q CRIUAgent "$tmp/agent.out" && [ $rc_missing = 5 ] &&
		grep -q "libexec/memlens" "$tmp/agent-missing.out"; then
		ok installed_agent_found_in_libexec
	else
		notok installed_agent_found_in_libexec "with it: exit $rc $(head -c 120 "$tmp/agent.out"); without: exit $rc_missing $(head -c 200 "$tmp/agent-missing.out")"
	fi
fi

# the installed man pages, found by man through MANPATH
if command -v man >/dev/null; then
	MANPATH=$dest$prefix/share/man MANWIDTH=80 man memlens-writes 2>&1 | col -b | grep -q 'memlens writes' &&
		ok installed_man_page || notok installed_man_page "man memlens-writes with MANPATH=$dest$prefix/share/man"
else
	skip installed_man_page "no man command (man-db)"
fi

# 4. a program built against the installed library with pkg-config
cat >"$tmp/prog.c" <<'C'
/* counts the lines of a file with libmemlens's bounded line reader */
#include <memlens/err.h>
#include <memlens/lines.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	struct ml_err err = { 0 };
	struct ml_lines l;
	const char *line;
	size_t len;
	long n = 0;
	int rc;
	FILE *f = argc > 1 ? fopen(argv[1], "r") : NULL;

	if (!f)
		return 2;
	ml_lines_init(&l, f, argv[1], 1 << 20);
	while ((rc = ml_lines_next(&l, &line, &len, &err)) > 0)
		n++;
	ml_lines_free(&l);
	fclose(f);
	if (rc < 0) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	printf("%ld\n", n);
	return 0;
}
C
export PKG_CONFIG_PATH=$dest$libdir/pkgconfig PKG_CONFIG_SYSROOT_DIR=$dest PKG_CONFIG_LIBDIR=$dest$libdir/pkgconfig
if ! command -v pkg-config >/dev/null; then
	skip pkg_config_build "no pkg-config (scripts/packages/base.txt)"
else
	flags=$(pkg-config --cflags --libs memlens 2>"$tmp/pc.err")
	pv=$(pkg-config --modversion memlens 2>/dev/null)
	rflags=$(pkg-config --libs memlens-report 2>/dev/null)
	seq 1 1234 >"$tmp/lines.txt"
	if [ -z "$flags" ]; then
		notok pkg_config_build "pkg-config memlens: $(cat "$tmp/pc.err")"
	elif ! (cd "$tmp" && ${CC:-cc} -std=gnu11 -Wall -Werror -o prog prog.c $flags) >"$tmp/cc.log" 2>&1; then
		notok pkg_config_build "cc prog.c $flags: $(head -n 5 "$tmp/cc.log")"
	elif ! readelf -d "$tmp/prog" | grep -q 'NEEDED.*\[libmemlens.so.1\]'; then
		notok pkg_config_build "prog is not linked with libmemlens.so.1: $(readelf -d "$tmp/prog" | grep NEEDED)"
	elif [ "$(LD_LIBRARY_PATH=$dest$libdir "$tmp/prog" "$tmp/lines.txt")" != 1234 ]; then
		notok pkg_config_build "the program counted $(LD_LIBRARY_PATH=$dest$libdir "$tmp/prog" "$tmp/lines.txt" 2>&1) lines, not 1234"
	else
		ok "pkg_config_build (shared: $flags)"
	fi
	# the same program on the static library: pkg-config --static, libmemlens.a
	sflags=$(pkg-config --static --cflags --libs memlens 2>/dev/null | sed 's/-lmemlens\b/-l:libmemlens.a/')
	if (cd "$tmp" && ${CC:-cc} -std=gnu11 -Wall -Werror -o prog-static prog.c $sflags) >"$tmp/cc.log" 2>&1 &&
		! readelf -d "$tmp/prog-static" | grep -q 'NEEDED.*libmemlens' &&
		[ "$("$tmp/prog-static" "$tmp/lines.txt")" = 1234 ]; then
		ok "pkg_config_build_static ($sflags)"
	else
		notok pkg_config_build_static "cc prog.c $sflags: $(head -n 5 "$tmp/cc.log")"
	fi
	# memlens --version's first line is "memlens VERSION ..."
	# every installed header compiles on its own, with only the installed ones
	bad=
	for h in "$dest$prefix"/include/memlens/*.h; do
		printf '#include <memlens/%s>\n' "${h##*/}" |
			${CC:-cc} -std=gnu11 -Wall -Werror $(pkg-config --cflags memlens) -fsyntax-only -x c - \
			>"$tmp/hdr.log" 2>&1 || bad="$bad ${h##*/}: $(head -n 1 "$tmp/hdr.log");"
	done
	[ -z "$bad" ] && ok installed_headers_self_contained || notok installed_headers_self_contained "$bad"
	[ -n "$pv" ] && [ "$pv" = "$(echo "$v" | awk 'NR == 1 { print $2 }')" ] && ok pkg_config_version ||
		notok pkg_config_version "memlens.pc: $pv; memlens --version: $v"
	# the report library: a faults line into the model, on the shared libmemlens
	cat >"$tmp/rep.c" <<'C'
#include <memlens/report.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
	const char *t = "{\"type\":\"faults\",\"mode\":\"tracepoint\",\"rows\":[],"
			"\"minor_hist_us\":[1],\"major_hist_us\":[]}";
	struct ml_err err = { 0 };
	struct ml_report r;
	int rc;

	ml_report_init(&r);
	rc = ml_report_load_line(&r, "line", 1, t, strlen(t), &err);
	ml_report_free(&r);
	printf("%d%s\n", rc, err.msg);
	return 0;
}
C
	if (cd "$tmp" && ${CC:-cc} -std=gnu11 -Wall -Werror -o rep rep.c $(pkg-config --cflags memlens-report) $rflags) \
		>"$tmp/cc.log" 2>&1 && [ "$(LD_LIBRARY_PATH=$dest$libdir "$tmp/rep")" = 0 ]; then
		ok "pkg_config_report ($rflags)"
	else
		notok pkg_config_report "cc rep.c $rflags: $(head -n 5 "$tmp/cc.log") $(LD_LIBRARY_PATH=$dest$libdir "$tmp/rep" 2>&1)"
	fi
	# the tracer library, static only: a program using the OOM tracer,
	# linked with what pkg-config --static says (libbpf and the rest from
	# the system's .pc files, hence its search path after the installed
	# one), on the installed archives only: no libmemlens.so
	cat >"$tmp/oom.c" <<'C'
/* options without their size: refused before anything is loaded (no root needed) */
#include <errno.h>
#include <memlens/trace_oom.h>
#include <stdio.h>

int main(void)
{
	struct ml_oom_tracer_opts o = { 0 };
	struct ml_oom_tracer *t = NULL;
	struct ml_err err = { 0 };
	int rc = ml_oom_tracer_open(&t, &o, &err);

	ml_oom_tracer_close(t);
	printf("%d %s\n", rc, err.msg);
	return rc == -EINVAL ? 0 : 1;
}
C
	tflags=$(PKG_CONFIG_LIBDIR=$PKG_CONFIG_LIBDIR:$(pkg-config --variable pc_path pkg-config 2>/dev/null) \
		pkg-config --static --cflags --libs memlens-trace 2>"$tmp/pc.err" | sed -E 's/-lmemlens( |$)/-l:libmemlens.a\1/')
	if [ -z "$tflags" ]; then
		notok pkg_config_trace_static "pkg-config --static memlens-trace: $(cat "$tmp/pc.err")"
	elif ! (cd "$tmp" && ${CC:-cc} -std=gnu11 -Wall -Werror -o oom oom.c $tflags) >"$tmp/cc.log" 2>&1; then
		notok pkg_config_trace_static "cc oom.c $tflags: $(head -n 5 "$tmp/cc.log")"
	elif readelf -d "$tmp/oom" | grep -q 'NEEDED.*libmemlens'; then
		notok pkg_config_trace_static "oom is linked with $(readelf -d "$tmp/oom" | grep 'NEEDED.*libmemlens')"
	elif ! out=$("$tmp/oom" 2>&1) || [[ "$out" != "-22 "*ml_oom_tracer_opts* ]]; then # -EINVAL
		notok pkg_config_trace_static "the program said: $out"
	else
		ok "pkg_config_trace_static ($tflags)"
	fi
fi
unset PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR PKG_CONFIG_LIBDIR

# 5. uninstall leaves nothing behind
if mk -s uninstall DESTDIR="$dest" PREFIX="$prefix" >"$tmp/uninstall.log" 2>&1; then
	left=$(cd "$dest" 2>/dev/null && find . -mindepth 1 | head -n 5)
	[ -z "$left" ] && ok uninstall_leaves_nothing || notok uninstall_leaves_nothing "left in DESTDIR: $left"
else
	notok uninstall_leaves_nothing "make uninstall failed: $(tail -n 3 "$tmp/uninstall.log")"
fi
