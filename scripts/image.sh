#!/bin/bash
# make image: an OCI image of memlens, memlens-agent and the patched CRIU,
# on a root filesystem made from Debian's archive, imported into podman as
# localhost/memlens:VERSION. No registry is contacted (doc/containers.md).
#
#   1. builds memlens and memlens-agent for /usr (BUILD_CRIU empty, so the
#      installed memlens runs nothing of the build tree) into $BUILD/image
#      and installs them with `make install-bin install-doc DESTDIR=`;
#      adds the CRIU scripts/ensure-criu.sh gives (the one built with
#      criu/patches/) as /usr/sbin/criu;
#   2. the runtime library packages: each NEEDED entry of those three
#      binaries, resolved to its file by ldconfig and to its package by
#      dpkg -S (apt adds what those packages depend on);
#   3. the root filesystem: mmdebstrap --variant=essential plus those
#      packages, from the apt sources of this machine (bookworm), cached in
#      .cache/image/rootfs-KEY.tar, KEY a hash of the package list, the
#      sources and the options: a second `make image` reuses it;
#   4. appends memlens's files to a copy of it and runs `podman import`,
#      with CMD, PATH and labels; skipped when the image of that name already
#      holds the same content (label memlens.content).
# Writes $BUILD/image/packages.txt (the list), contents.txt (every path of
# the image) and summary.txt (sizes), and says each step with its time.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
VERSION=${VERSION:?VERSION is set by make image}
IMAGE=${IMAGE:-localhost/memlens:$VERSION}
out=$PWD/$BUILD/image
cache=${MEMLENS_IMAGE_CACHE:-$PWD/.cache/image}
suite=bookworm
t0=$SECONDS
say() { echo "image: $* ($((SECONDS - t0)) s)"; }
die() { echo "image: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "building the image needs root (mmdebstrap, podman): run sudo make image"
for tool in mmdebstrap podman readelf ldconfig dpkg; do
	command -v "$tool" >/dev/null ||
		die "$tool is missing: install the packages of scripts/packages/optional/image.txt (make image does)"
done

# 1. memlens, memlens-agent, CRIU into a staging tree
stage=$out/stage
rm -rf "$stage"
mkdir -p "$stage"
say "building memlens for /usr into $BUILD/image/build (make install-bin install-doc)"
make --no-print-directory -j"$(nproc)" BUILD="$BUILD/image/build" BUILD_CRIU= PREFIX=/usr \
	DESTDIR="$stage" install-bin install-doc >"$out/make.log" 2>&1 ||
	{ tail -n 20 "$out/make.log" >&2; die "building memlens failed; see $out/make.log"; }
[ -x "$stage/usr/libexec/memlens/memlens-agent" ] ||
	die "memlens-agent was not built: install the packages of scripts/packages/agent.txt"
# man pages are left out of the image, as Debian's are (no man in it)
rm -rf "$stage/usr/share/man"

say "the CRIU to ship (scripts/ensure-criu.sh)"
criu=$(scripts/ensure-criu.sh) || die "no working CRIU (scripts/ensure-criu.sh failed)"
install -D -m 0755 "$criu" "$stage/usr/sbin/criu"
if "$criu" --help 2>&1 | grep -q -- '--exclude-range'; then
	criu_kind="$("$criu" --version | sed -n 's/^Version: *//p') with memlens's patches"
else
	criu_kind="$("$criu" --version | sed -n 's/^Version: *//p') without memlens's patches"
fi
doc=$stage/usr/share/doc/memlens
install -d "$doc" "$stage/usr/share/doc/criu"
install -m 0644 LICENSE "$doc/copyright"
cp -r LICENSES "$doc/LICENSES"
criu_src=$(dirname "$(dirname "$criu")")/src
if ls "$criu_src"/criu-*/COPYING >/dev/null 2>&1; then
	install -m 0644 "$(ls "$criu_src"/criu-*/COPYING | head -n 1)" "$stage/usr/share/doc/criu/COPYING"
else
	install -m 0644 LICENSES/GPL-2.0 "$stage/usr/share/doc/criu/COPYING"
fi
cat >"$stage/usr/share/doc/criu/README.memlens" <<EOF
/usr/sbin/criu is CRIU $criu_kind (GPL-2.0, see COPYING).
Its source: Debian's criu source package (criu_*.orig.tar.*, trixie) and,
applied in order, the patches in /usr/share/memlens/criu-patches/ (the
criu/patches/ folder of memlens's source, built by scripts/ensure-criu.sh).
EOF

# 2. the runtime library packages, from the binaries' NEEDED entries
say "the runtime library packages (NEEDED entries, dpkg -S)"
bins=("$stage/usr/bin/memlens" "$stage/usr/libexec/memlens/memlens-agent" "$stage/usr/sbin/criu")
ldconfig -p >"$out/ldconfig.txt"
files=()
for soname in $(for b in "${bins[@]}"; do
	readelf -d "$b" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p'
done | sort -u); do
	file=$(awk -v s="$soname" '$1 == s && /x86-64/ && !f { print $NF; f = 1 }' "$out/ldconfig.txt")
	[ -n "$file" ] || die "no file for the library $soname (ldconfig -p)"
	files+=("$file")
done
# dpkg knows a library by the path its package ships it at: /lib or /usr/lib
# (merged /usr), either way; one dpkg -S for all of them
cands=()
for f in "${files[@]}"; do
	r=$(readlink -f "$f")
	cands+=("$f" "$r" "/usr${r#/usr}" "${r#/usr}")
done
# (dpkg -S reads every package's file list: its answer is kept until the
# libraries or the installed packages change)
owners_key=$({ printf '%s\n' "${cands[@]}"; stat -c %Y /var/lib/dpkg/status; } | sha256sum | cut -c1-16)
if [ "$(cat "$out/owners.key" 2>/dev/null)" != "$owners_key" ]; then
	dpkg -S "${cands[@]}" >"$out/owners.txt" 2>/dev/null || true
	echo "$owners_key" >"$out/owners.key"
fi
pkgs=()
for f in "${files[@]}"; do
	r=$(readlink -f "$f")
	pkg=$(awk -v a="$f" -v b="$r" -v c="/usr${r#/usr}" -v d="${r#/usr}" -F': ' \
		'($2 == a || $2 == b || $2 == c || $2 == d) && !f { sub(/:.*/, "", $1); print $1; f = 1 }' \
		"$out/owners.txt")
	[ -n "$pkg" ] || die "no Debian package owns $f: install it from Debian's archive"
	pkgs+=("$pkg")
done
printf '%s\n' "${pkgs[@]}" | sort -u >"$out/packages.txt"
say "$(wc -l <"$out/packages.txt") packages: $(paste -sd' ' "$out/packages.txt")"

# 3. the root filesystem, cached by what makes it
sources=()
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
	[ -f "$f" ] && grep -qE '^[[:space:]]*(deb|Types:)' "$f" && sources+=("$f")
done
[ ${#sources[@]} -gt 0 ] || die "no apt sources in /etc/apt: mmdebstrap needs this machine's Debian mirror"
opts=(--variant=essential --format=tar --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr
	"--include=$(paste -sd, "$out/packages.txt")"
	"--dpkgopt=path-exclude=/usr/share/man/*" "--dpkgopt=path-exclude=/usr/share/info/*"
	"--dpkgopt=path-exclude=/usr/share/locale/*" "--dpkgopt=path-exclude=/usr/share/doc/*"
	"--dpkgopt=path-include=/usr/share/doc/*/copyright")
key=$({ printf '%s\n' "$suite" "${opts[@]}"; cat "${sources[@]}"; } | sha256sum | cut -c1-16)
rootfs=$cache/rootfs-$key.tar
mkdir -p "$cache"
if [ -s "$rootfs" ]; then
	say "root filesystem: cached $rootfs"
else
	say "root filesystem: mmdebstrap $suite (essential + the packages above) from ${sources[*]}, once (minutes)"
	# sources as mmdebstrap arguments: deb822 files (.sources) are read as they are
	mmdebstrap --quiet "${opts[@]}" "$suite" "$rootfs.tmp" "${sources[@]}" >"$out/mmdebstrap.log" 2>&1 ||
		{ tail -n 20 "$out/mmdebstrap.log" >&2; rm -f "$rootfs.tmp"; die "mmdebstrap failed; see $out/mmdebstrap.log"; }
	mv "$rootfs.tmp" "$rootfs"
	# keep the newest few
	ls -t "$cache"/rootfs-*.tar | tail -n +4 | while read -r f; do rm -f "$f" "$f.dirs"; done
	say "root filesystem built: $rootfs ($(($(stat -c %s "$rootfs") / 1048576)) MiB)"
fi

# 4. the image: the root filesystem plus memlens's files, imported
tar=$out/memlens-$VERSION.tar
cp "$rootfs" "$tar.tmp"
# directories the root filesystem has keep Debian's entries: only files,
# links and the directories it lacks are appended
[ -s "$rootfs.dirs" ] || tar -tf "$rootfs" | sed -n 's|/$||p' | LC_ALL=C sort >"$rootfs.dirs"
(cd "$stage" && find . -mindepth 1 -type d | LC_ALL=C sort | LC_ALL=C comm -23 - "$rootfs.dirs"
	find . ! -type d) | LC_ALL=C sort >"$out/stage.list"
tar -C "$stage" --append -f "$tar.tmp" --owner=0 --group=0 --numeric-owner --no-recursion \
	--mtime=@0 -T "$out/stage.list"
mv "$tar.tmp" "$tar"
content=$({ echo "$key"; tar -C "$stage" -cf - --owner=0 --group=0 --numeric-owner --no-recursion \
	--mtime=@0 -T "$out/stage.list" | sha256sum; } | sha256sum | cut -c1-16)
old=$(podman image inspect --format '{{index .Labels "memlens.content"}} {{.Id}}' "$IMAGE" 2>/dev/null || true)
if [ "${old%% *}" = "$content" ]; then
	say "$IMAGE is up to date (content $content)"
else
	rev=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
	say "podman import $IMAGE"
	podman import \
		--change 'CMD ["memlens", "check"]' \
		--change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
		--change 'WORKDIR /' \
		--change "LABEL org.opencontainers.image.title=memlens" \
		--change "LABEL org.opencontainers.image.description=memlens, memlens-agent and CRIU on Debian $suite" \
		--change "LABEL org.opencontainers.image.version=$VERSION" \
		--change "LABEL org.opencontainers.image.revision=$rev" \
		--change "LABEL org.opencontainers.image.licenses=MIT AND (GPL-2.0-only OR MIT) AND GPL-2.0-only" \
		--change "LABEL memlens.criu=$criu_kind" \
		--change "LABEL memlens.rootfs=$key" \
		--change "LABEL memlens.content=$content" \
		"$tar" "$IMAGE" >"$out/import.log" 2>&1 || { cat "$out/import.log" >&2; die "podman import failed"; }
	# the image this name held before, unless a container still uses it
	old_id=${old#* }
	[ -n "$old" ] && [ "$old_id" != "$(podman image inspect --format '{{.Id}}' "$IMAGE")" ] &&
		podman rmi "$old_id" >/dev/null 2>&1 || true
fi

tar -tvf "$tar" | awk '{ $4 = ""; $5 = ""; print }' | LC_ALL=C sort -k4 >"$out/contents.txt"
size=$(podman image inspect --format '{{.Size}}' "$IMAGE")
rootfs_size=$(stat -c %s "$rootfs")
stage_size=$(du -sb "$stage" | cut -f1)
mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }
{
	echo "image $IMAGE: $(mib "$size") ($size bytes)"
	echo "root filesystem: $(mib "$rootfs_size") ($(wc -l <"$out/packages.txt") library packages on $suite's essential set; $rootfs)"
	echo "memlens's files: $(mib "$stage_size") ($(grep -c . "$out/stage.list") paths)"
	echo "CRIU: $criu_kind"
	echo "contents: $BUILD/image/contents.txt ($(wc -l <"$out/contents.txt") entries)"
} >"$out/summary.txt"
sed 's/^/image: /' "$out/summary.txt"
say "done"
