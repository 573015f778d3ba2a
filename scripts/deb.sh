#!/bin/bash
# make deb: the memlens and memlens-agent packages, built by
# dpkg-buildpackage -us -uc -b (debian/) from a copy of the tree in
# $BUILD/deb/src (the files git knows, committed or not, but the tests,
# benchmarks, workloads and the documentation other than the man pages,
# which the packages do not use), so that the build leaves the tree as it
# was; the .deb files land in $BUILD/deb. lintian checks them: its tags go
# to $BUILD/deb/lintian.txt, and an error fails make deb. A second run with
# the same files is skipped (key: a hash of the copy).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
VERSION=${VERSION:?VERSION is set by make deb}
out=$PWD/$BUILD/deb
t0=$SECONDS
say() { echo "deb: $* ($((SECONDS - t0)) s)"; }
die() { echo "deb: $*" >&2; exit 1; }
for tool in dpkg-buildpackage dh lintian git; do
	command -v "$tool" >/dev/null ||
		die "$tool is missing: install the packages of scripts/packages/optional/deb.txt (make deb does)"
done
changelog=$(dpkg-parsechangelog -l debian/changelog -S Version)
[ "$changelog" = "$VERSION" ] ||
	die "debian/changelog says $changelog, the Makefile $VERSION: add a changelog entry (dch -v $VERSION)"

src=$out/src/memlens-$VERSION
mkdir -p "$out"
files() {
	git ls-files -z --cached --others --exclude-standard |
		while IFS= read -r -d '' f; do
			case $f in tests/* | bench/* | workloads/* | .ci/*) continue ;; doc/man/*) ;; doc/*) continue ;; esac
			[ -e "$f" ] && printf '%s\0' "$f"
		done
}
key=$(files | xargs -0 -r sha256sum | sha256sum | cut -c1-16)
debs=("$out/memlens_${VERSION}_amd64.deb" "$out/memlens-agent_${VERSION}_amd64.deb")
if [ "$(cat "$out/key" 2>/dev/null)" = "$key" ] && [ -s "${debs[0]}" ] && [ -s "${debs[1]}" ]; then
	say "up to date: ${debs[*]#$PWD/}"
else
	rm -rf "$out/src" "$out"/*.deb "$out"/*.buildinfo "$out"/*.changes "$out/key" "$out/lintian.key"
	mkdir -p "$src"
	files | tar --null -T - -cf - | tar -C "$src" -xf -
	say "dpkg-buildpackage -us -uc -b in $BUILD/deb/src (log: $BUILD/deb/build.log)"
	(cd "$src" && dpkg-buildpackage -us -uc -b -j"$(nproc)") >"$out/build.log" 2>&1 ||
		{ tail -n 25 "$out/build.log" >&2; die "dpkg-buildpackage failed; see $out/build.log"; }
	# dpkg-buildpackage writes beside the source tree
	mv "$out"/src/*.deb "$out"/src/*.buildinfo "$out"/src/*.changes "$out"/
	echo "$key" >"$out/key"
	say "built: $(cd "$out" && ls -s --block-size=K *.deb | paste -sd' ')"
fi

if [ "$(cat "$out/lintian.key" 2>/dev/null)" = "$key" ] && [ -f "$out/lintian.txt" ]; then
	say "lintian: these packages were checked before ($BUILD/deb/lintian.txt)"
else
	say "lintian (tags: $BUILD/deb/lintian.txt)"
	lintian --tag-display-limit 0 "${debs[@]}" >"$out/lintian.txt" 2>&1 || true
	echo "$key" >"$out/lintian.key"
fi
errors=$(grep -c '^E: ' "$out/lintian.txt" || true)
warnings=$(grep -c '^W: ' "$out/lintian.txt" || true)
echo "deb: lintian: $errors errors, $warnings warnings$( [ "$warnings" -eq 0 ] || printf ': %s' \
	"$(sed -n 's/^W: [^ ]* \([^ ]*\).*/\1/p' "$out/lintian.txt" | sort | uniq -c | awk '{ printf "%s%s (%s)", s, $2, $1; s = ", " }')")"
[ "$errors" -eq 0 ] || { grep '^E: ' "$out/lintian.txt" >&2; die "lintian found errors"; }
for d in "${debs[@]}"; do
	echo "deb: ${d#$PWD/}: $(stat -c %s "$d") bytes, installed $(dpkg-deb -f "$d" Installed-Size) KiB"
done
say "done"
