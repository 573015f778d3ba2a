#!/bin/bash
# scripts/app-image.sh: an application image for the sidecar Pod's tests,
# Debian's redis-server on a root filesystem made from Debian's archive,
# imported into podman as localhost/memlens-app-redis:bookworm (or $IMAGE).
# No registry is contacted (doc/containers.md).
#
#   1. the key: the candidate versions apt gives for redis-server and what
#      it depends on (redis-tools and its libraries), this machine's apt
#      sources and the mmdebstrap options, hashed;
#   2. when the image of that name already carries that key (its label
#      memlens.app.rootfs), nothing more is done: a rerun takes a second;
#   3. else the root filesystem: mmdebstrap --variant=essential plus
#      redis-server (apt adds its dependencies), without man pages, info,
#      locales or documentation other than the copyright files, cached as
#      .cache/image/app-redis-KEY.tar; then `podman import` with CMD bash.
# Prints the image's name on its last line. Root, mmdebstrap and podman.
set -euo pipefail
cd "$(dirname "$0")/.."
IMAGE=${IMAGE:-localhost/memlens-app-redis:bookworm}
cache=${MEMLENS_IMAGE_CACHE:-$PWD/.cache/image}
suite=bookworm
pkgs=(redis-server)
t0=$SECONDS
say() { echo "app-image: $* ($((SECONDS - t0)) s)" >&2; }
die() { echo "app-image: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "building the image needs root (mmdebstrap, podman)"
for tool in mmdebstrap podman apt-cache; do
	command -v "$tool" >/dev/null ||
		die "$tool is missing: install the packages of scripts/packages/optional/image.txt"
done

# 1. the key: the versions apt would install, the sources, the options
sources=()
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
	[ -f "$f" ] && grep -qE '^[[:space:]]*(deb|Types:)' "$f" && sources+=("$f")
done
[ ${#sources[@]} -gt 0 ] || die "no apt sources in /etc/apt: mmdebstrap needs this machine's Debian mirror"
deps=$(apt-cache depends --no-recommends --no-suggests --no-enhances --no-breaks \
	--no-replaces --no-conflicts "${pkgs[@]}" redis-tools 2>/dev/null |
	sed -n 's/^ *\(Pre\)\{0,1\}Depends: \([a-z0-9][a-z0-9.+-]*\)$/\2/p' | sort -u)
versions=$(apt-cache policy "${pkgs[@]}" $deps 2>/dev/null |
	awk '/^[^ ]/ { p = $1 } /Candidate:/ { print p, $2 }')
# (without apt's lists here mmdebstrap still fetches its own, but the key
# then cannot follow the archive: say so)
grep -q '^redis-server: [0-9]' <<<"$versions" ||
	say "apt knows no redis-server version here (no apt-get update?): the image is reused until it does"
opts=(--variant=essential --format=tar --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr
	"--include=$(IFS=,; echo "${pkgs[*]}")"
	"--dpkgopt=path-exclude=/usr/share/man/*" "--dpkgopt=path-exclude=/usr/share/info/*"
	"--dpkgopt=path-exclude=/usr/share/locale/*" "--dpkgopt=path-exclude=/usr/share/doc/*"
	"--dpkgopt=path-include=/usr/share/doc/*/copyright")
key=$({ printf '%s\n' "$suite" "${opts[@]}" "$versions"; cat "${sources[@]}"; } | sha256sum | cut -c1-16)

# 2. the image already made from that
if [ "$(podman image inspect --format '{{index .Labels "memlens.app.rootfs"}}' "$IMAGE" 2>/dev/null)" = "$key" ]; then
	say "$IMAGE is up to date ($(sed -n 's/^redis-server: //p' <<<"$versions"), key $key)"
	echo "$IMAGE"
	exit 0
fi

# 3. the root filesystem, then the image
rootfs=$cache/app-redis-$key.tar
mkdir -p "$cache"
if [ -s "$rootfs" ]; then
	say "root filesystem: cached $rootfs"
else
	say "root filesystem: mmdebstrap $suite (essential + ${pkgs[*]}) from ${sources[*]}, once (minutes)"
	mmdebstrap --quiet "${opts[@]}" "$suite" "$rootfs.tmp" "${sources[@]}" >"$cache/app-redis.log" 2>&1 ||
		{ tail -n 20 "$cache/app-redis.log" >&2; rm -f "$rootfs.tmp"; die "mmdebstrap failed; see $cache/app-redis.log"; }
	mv "$rootfs.tmp" "$rootfs"
	ls -t "$cache"/app-redis-*.tar | tail -n +3 | while read -r f; do rm -f "$f"; done
fi
say "podman import $IMAGE"
old=$(podman image inspect --format '{{.Id}}' "$IMAGE" 2>/dev/null || true)
podman import \
	--change 'CMD ["bash"]' \
	--change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
	--change 'WORKDIR /' \
	--change "LABEL org.opencontainers.image.description=redis-server on Debian $suite (memlens's tests)" \
	--change "LABEL memlens.app.rootfs=$key" \
	"$rootfs" "$IMAGE" >"$cache/app-redis-import.log" 2>&1 ||
	{ cat "$cache/app-redis-import.log" >&2; die "podman import failed"; }
[ -n "$old" ] && [ "$old" != "$(podman image inspect --format '{{.Id}}' "$IMAGE")" ] &&
	podman rmi "$old" >/dev/null 2>&1 || true
say "$IMAGE: $(podman image inspect --format '{{.Size}}' "$IMAGE" | awk '{ printf "%.1f MB", $1 / 1e6 }'), $(sed -n 's/^redis-server: //p' <<<"$versions")"
echo "$IMAGE"
