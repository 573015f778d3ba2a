#!/bin/bash
# Makes sure a working CRIU (>= 4.1) is available and prints its path.
#
#   1. $MEMLENS_CRIU, when set and `criu check` passes;
#   2. the CRIU built earlier into .cache/criu/bin/criu, when it was built
#      from the patches now in criu/patches/ (reused);
#   3. otherwise builds CRIU 4.1.1 from Debian's trixie source tarball
#      (apt-get source --download-only, with a private apt configuration so
#      the system's sources are left alone): unmodified into
#      .cache/criu/bin/criu-upstream, then with the project's patch series
#      (criu/patches/*.patch, applied in order) into .cache/criu/bin/criu;
#   4. when that cannot be done, the system's `criu`, when `criu check`
#      passes (it leaves no pages out; memlens says so).
#
# Prints the path (stdout). A build says each step on stderr as it starts,
# and while CRIU compiles a line per part of its tree and one every 30 s
# (scripts/build-progress.sh): it takes 2-15 minutes on two CPUs (idle or
# loaded), never in silence. Errors go to stderr, the build's output to
# .cache/criu/build.log. Exit 1 when no CRIU could be found or built.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
cache=$root/.cache/criu
version=4.1.1

works() {	# $1: criu binary; fast `criu check` with a time limit
	[ -x "$1" ] || return 1
	timeout 60 "$1" check >/dev/null 2>&1
}

if [ -n "${MEMLENS_CRIU:-}" ] && works "$MEMLENS_CRIU"; then
	echo "$MEMLENS_CRIU"; exit 0
fi
# the patch series the cached build must have been made from
patches=("$root"/criu/patches/*.patch)
[ -e "${patches[0]}" ] || patches=()
want=$(cat "${patches[@]}" /dev/null | sha256sum | cut -c1-16)
built() { [ -x "$cache/bin/criu" ] && [ "$(cat "$cache/bin/criu.patches" 2>/dev/null)" = "$want" ] &&
	works "$cache/bin/criu"; }
system_criu() {	# the fallback when nothing can be built here
	local sys
	sys=$(command -v criu || true)
	if [ -n "$sys" ] && works "$sys"; then
		echo "ensure-criu: using the system's $sys (without the project's patches: no pages are left out of pre-dumps)" >&2
		echo "$sys"; exit 0
	fi
}
if built; then
	echo "$cache/bin/criu"; exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	system_criu
	echo "ensure-criu: no working CRIU; building one needs root (apt-get). Run as root or set MEMLENS_CRIU." >&2
	exit 1
fi

mkdir -p "$cache"
log=$cache/build.log
: >"$log"
# one builder at a time (two make test runs may race)
exec 9>"$cache/.lock"
flock 9
if built; then
	echo "$cache/bin/criu"; exit 0
fi

t0=$SECONDS
step() { echo "ensure-criu: $* ($((SECONDS - t0)) s so far)" >&2; }
echo "ensure-criu: building CRIU $version from Debian's source, unmodified and with the project's" \
	"${#patches[@]} patches, once: it takes 2-15 minutes on 2 CPUs (log: $log)" >&2
step "installing the build dependencies (scripts/install-deps.sh)"
scripts/install-deps.sh >>"$log" 2>&1 || { echo "ensure-criu: installing the build dependencies failed; see $log" >&2; system_criu; exit 1; }

src=$cache/src
mkdir -p "$src"
tarball=$(ls "$src"/criu_"$version".orig.tar.* 2>/dev/null | head -n1 || true)
if [ -z "$tarball" ]; then
	step "downloading criu_$version.orig.tar.* from Debian trixie"
	# A private apt configuration with a trixie deb-src entry on the mirror
	# the system already uses.
	apt_dir=$cache/apt
	mkdir -p "$apt_dir/lists/partial" "$apt_dir/archives/partial"
	uri=$(grep -rhoE '^URIs:[[:space:]]*[^[:space:]]+' /etc/apt/sources.list.d/*.sources 2>/dev/null |
		awk '{print $2}' | grep -m1 'debian$' || true)
	[ -n "$uri" ] || uri=$(grep -hoE '^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?[^[:space:]]+' \
		/etc/apt/sources.list 2>/dev/null | awk '{print $NF}' | grep -m1 'debian/*$' || true)
	[ -n "$uri" ] || uri=http://deb.debian.org/debian
	echo "deb-src $uri trixie main" >"$apt_dir/sources.list"
	aptopts=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
		-o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache::Archives=$apt_dir/archives"
		-o "APT::Get::List-Cleanup=0")
	apt-get "${aptopts[@]}" update >>"$log" 2>&1 || true
	# the .dsc may fail to verify; the .orig tarball is what we need
	(cd "$src" && apt-get "${aptopts[@]}" source --download-only "criu=$version-*" >>"$log" 2>&1 ||
		apt-get "${aptopts[@]}" source --download-only criu >>"$log" 2>&1) || true
	tarball=$(ls "$src"/criu_"$version".orig.tar.* 2>/dev/null | head -n1 || true)
	if [ -z "$tarball" ]; then
		echo "ensure-criu: could not download criu_$version.orig.tar.* from Debian trixie ($uri); see $log" >&2
		system_criu
		exit 1
	fi
fi
rm -rf "$src/criu-$version"
tar -C "$src" -xf "$tarball" >>"$log" 2>&1
step "[1/2] compiling CRIU $version, unmodified, with make -j$(nproc) (about 770 files)"
if ! make -C "$src/criu-$version" -j"$(nproc)" criu 2>&1 |
	scripts/build-progress.sh "ensure-criu: [1/2] compiling" "$log" 770; then
	echo "ensure-criu: building CRIU $version failed; see $log" >&2
	system_criu
	exit 1
fi
mkdir -p "$cache/bin"
install -m 0755 "$src/criu-$version/criu/criu" "$cache/bin/criu-upstream"
step "[2/2] compiling it again with criu/patches/ (what the patches change)"
for p in "${patches[@]}"; do
	if ! patch -d "$src/criu-$version" -p1 --forward --batch <"$p" >>"$log" 2>&1; then
		echo "ensure-criu: the patch $(basename "$p") does not apply to CRIU $version; see $log" >&2
		exit 1
	fi
done
if ! make -C "$src/criu-$version" -j"$(nproc)" criu 2>&1 |
	scripts/build-progress.sh "ensure-criu: [2/2] compiling" "$log"; then
	echo "ensure-criu: building CRIU $version with the project's patches failed; see $log" >&2
	exit 1
fi
install -m 0755 "$src/criu-$version/criu/criu" "$cache/bin/criu.new"
mv "$cache/bin/criu.new" "$cache/bin/criu"
echo "$want" >"$cache/bin/criu.patches"
if ! works "$cache/bin/criu"; then
	echo "ensure-criu: the CRIU $version built into $cache/bin/criu fails \`criu check\`; see $log" >&2
	exit 1
fi
echo "ensure-criu: CRIU $version built in $((SECONDS - t0)) s" >&2
echo "$cache/bin/criu"
