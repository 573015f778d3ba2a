#!/bin/bash
# Builds, once, the CRIU that has the hot-memory exclude options
# (--exclude-range, --exclude-file, --no-parent-range) from the source
# tarball kept beside the project (../shared/criu-exclude/), into
# .cache/criu-exclude/bin/criu, and prints its path.
#
# That tarball exists only on the project's build machines: elsewhere the
# script says so and exits 2 (tests then skip with that reason); give such
# a CRIU with --criu PATH / MEMLENS_CRIU instead, or point
# MEMLENS_CRIU_EXCLUDE_SRC at the tarball.
#
# Quiet: prints only the path (stdout); errors go to stderr, the build log
# to .cache/criu-exclude/build.log. Exit 1 when the build fails.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
cache=$root/.cache/criu-exclude
# ../shared beside the project; in a git worktree, beside its main checkout
tarball=${MEMLENS_CRIU_EXCLUDE_SRC:-}
if [ -z "$tarball" ]; then
	tarball=$root/../shared/criu-exclude/criu-exclude-src.tar.xz
	common=$(git -C "$root" rev-parse --path-format=absolute --git-common-dir 2>/dev/null || true)
	if [ ! -f "$tarball" ] && [ -n "$common" ]; then
		main=$(dirname "$common")
		[ -f "$main/../shared/criu-exclude/criu-exclude-src.tar.xz" ] &&
			tarball=$main/../shared/criu-exclude/criu-exclude-src.tar.xz
	fi
fi

accepts_all() {	# $1: criu binary; it takes the three exclude options
	[ -x "$1" ] || return 1
	timeout 60 "$1" --exclude-range=1000:2000 --exclude-file=/dev/null \
		--no-parent-range=1000:2000 --version >/dev/null 2>&1
}

if [ ! -f "$tarball" ]; then
	echo "ensure-criu-exclude: no $tarball (the CRIU fork's source is kept only on the project's build machines); give a CRIU with the exclude options via --criu PATH / MEMLENS_CRIU" >&2
	exit 2
fi
stamp=$(sha256sum "$tarball" | cut -c1-16)
if accepts_all "$cache/bin/criu" && [ "$(cat "$cache/bin/.source" 2>/dev/null)" = "$stamp" ]; then
	echo "$cache/bin/criu"; exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "ensure-criu-exclude: building the CRIU fork needs root (apt-get for its build packages)" >&2
	exit 1
fi
mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9
if accepts_all "$cache/bin/criu" && [ "$(cat "$cache/bin/.source" 2>/dev/null)" = "$stamp" ]; then
	echo "$cache/bin/criu"; exit 0
fi
log=$cache/build.log
: >"$log"
echo "ensure-criu-exclude: building the CRIU fork from $tarball, once (a few minutes; log: $log)" >&2
scripts/install-deps.sh >>"$log" 2>&1 || { echo "ensure-criu-exclude: installing the build packages failed; see $log" >&2; exit 1; }

rm -rf "$cache/src"
mkdir -p "$cache/src"
tar -C "$cache/src" -xf "$tarball" >>"$log" 2>&1
top=$(find "$cache/src" -mindepth 1 -maxdepth 1 -type d | head -n1)
# curl older than 8.2 (Debian 12's 7.88) has no CURLINFO_CONN_ID, used in one log line
cflags=
if ! grep -rqs CURLINFO_CONN_ID /usr/include/*/curl/curl.h /usr/include/curl/curl.h; then
	cflags='-DCURLINFO_CONN_ID=CURLINFO_OFF_T+64'
fi
if ! make -C "$top" -j"$(nproc)" criu USERCFLAGS="$cflags" >>"$log" 2>&1; then
	echo "ensure-criu-exclude: building the CRIU fork failed; see $log" >&2
	exit 1
fi
mkdir -p "$cache/bin"
install -m 0755 "$top/criu/criu" "$cache/bin/criu.new"
mv "$cache/bin/criu.new" "$cache/bin/criu"
echo "$stamp" >"$cache/bin/.source"
rm -rf "$cache/src"
if ! accepts_all "$cache/bin/criu"; then
	echo "ensure-criu-exclude: the CRIU built into $cache/bin/criu does not accept the exclude options; see $log" >&2
	exit 1
fi
echo "$cache/bin/criu"
