#!/bin/bash
# fetch.sh VERSION: puts Debian's kernel VERSION (6.1, 6.12, 7.2, ...) into
# $KCACHE/VERSION/ (default .cache/kernels) and prints that directory.
# fetch.sh headers: linux-libc-dev from bookworm-backports (the kernel's
# userspace headers, >= 6.7), into $KCACHE/headers/ (the library's link test).
# fetch.sh qemu: the same for QEMU 10 from bookworm-backports, into
# $KCACHE/qemu/ (Debian 12's QEMU 7.2 corrupts EFLAGS after a TCG-emulated
# cmpxchg16b: every 6.x guest dies of a double fault in SLUB's fast path).
# The image package is fetched with `apt-get download` through a temporary
# sources list for the Debian suite that carries it, on the mirror the
# system's apt sources already use; the system's apt state is not touched
# and nothing is installed (dpkg-deb -x only). Idempotent: a kernel already
# there is not fetched again. On failure: exit 1 and the reason on stderr.
set -euo pipefail
export PATH=$PATH:/usr/sbin:/sbin
cd "$(dirname "$0")/../.."
ver=${1:?usage: fetch.sh VERSION (e.g. 6.12)}
KCACHE=${KCACHE:-$PWD/.cache/kernels}
dest=$KCACHE/$ver
if [ -f "$dest/.complete" ]; then
	echo "$dest"
	exit 0
fi

# one fetch at a time: they share the apt state and the download directory
mkdir -p "$KCACHE"
exec 9>"$KCACHE/.lock"
flock 9
if [ -f "$dest/.complete" ]; then
	echo "$dest"
	exit 0
fi

# which suite carries which kernel, and the image package's name pattern
# (the -cloud-amd64 flavour where it is a real kernel: it boots fastest;
# in sid and experimental that name is a meta package)
pkgs=
case $ver in
qemu) suite=bookworm-backports pat="^qemu-system-x86$" prefix=qemu-system-x86
	pkgs="qemu-system-x86 qemu-system-common qemu-system-data seabios" ;;
headers) suite=bookworm-backports pat="^linux-libc-dev$" prefix=linux-libc-dev pkgs=linux-libc-dev ;;
6.1) suite=bookworm pat="^linux-image-6\.1\.0-[0-9]+-cloud-amd64$" ;;
6.12) suite=bookworm-backports pat="^linux-image-6\.12\.[0-9.+~a-z-]*-cloud-amd64$" ;;
7.*) suite="sid experimental" pat="^linux-image-${ver//./\\.}[.0-9+~a-z-]*-cloud-amd64$" ;;
*)
	echo "fetch.sh: no Debian suite known for kernel $ver (known: 6.1, 6.12, 7.x)" >&2
	exit 1
	;;
esac

# the mirror the system's apt already uses
mirror=$(grep -rhoE '^(URIs:|deb) *https?://[^ ]+/debian/?( |$)' /etc/apt/sources.list \
	/etc/apt/sources.list.d/ 2>/dev/null | grep -oE 'https?://[^ ]+' | head -n 1) || true
if [ -z "$mirror" ]; then
	echo "fetch.sh: no Debian mirror in the system's apt sources (/etc/apt/sources.list*)" >&2
	exit 1
fi

apt_dir=$KCACHE/.apt
mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$KCACHE/.deb"
: >"$apt_dir/sources.list"
for s in $suite; do
	echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror $s main" \
		>>"$apt_dir/sources.list"
done
APT=(-o Dir::Etc::sourcelist="$apt_dir/sources.list" -o Dir::Etc::sourceparts=-
	-o Dir::State::Lists="$apt_dir/lists" -o Dir::Cache="$apt_dir/cache"
	-o Debug::NoLocking=1 -o APT::Get::List-Cleanup=0)
if ! apt-get "${APT[@]}" update -qq >"$apt_dir/update.log" 2>&1; then
	echo "fetch.sh: apt-get update of $suite from $mirror failed: $(tail -n 3 "$apt_dir/update.log" | tr '\n' ' ')" >&2
	exit 1
fi
# the newest package of that name (the versions sort by their ABI number)
pkg=$(apt-cache "${APT[@]}" pkgnames "${prefix:-linux-image-}" 2>/dev/null | grep -E "$pat" |
	grep -v -- '-dbg$\|-unsigned$' | sort -V | tail -n 1) || true
if [ -z "$pkg" ]; then
	echo "fetch.sh: $suite on $mirror has no package matching $pat" >&2
	exit 1
fi
# Since 7.x the image package only depends on linux-binary-* (the kernel)
# and linux-modules-* (its modules): fetch those
if [ -z "$pkgs" ]; then
	pkgs=$pkg
	deps=$(apt-cache "${APT[@]}" show "$pkg" 2>/dev/null | sed -n 's/^Depends: //p' | head -n 1 |
		tr ',' '\n' | grep -oE 'linux-(binary|modules|base)-[^ ]+' | sort -u | tr '\n' ' ') || true
	[ -n "$deps" ] && pkgs="$pkg $deps"
fi
rm -rf "$KCACHE/.deb" && mkdir -p "$KCACHE/.deb"
if ! (cd "$KCACHE/.deb" && apt-get "${APT[@]}" download -qq $pkgs >"$apt_dir/download.log" 2>&1); then
	echo "fetch.sh: apt-get download $pkgs failed: $(tail -n 3 "$apt_dir/download.log" | tr '\n' ' ')" >&2
	exit 1
fi
rm -rf "$dest.tmp"
mkdir -p "$dest.tmp"
for deb in "$KCACHE"/.deb/*.deb; do
	dpkg-deb -x "$deb" "$dest.tmp"
done
deb=$(ls "$KCACHE"/.deb/"${pkg}"_*.deb | head -n 1)
# the kernel: /boot/vmlinuz-* (up to 6.x), or /usr/lib/linux/... and
# /boot in the 7.x split packages; put it in boot/ either way
if ! ls "$dest.tmp"/boot/vmlinuz-* >/dev/null 2>&1; then
	k=$(find "$dest.tmp" -name 'vmlinuz*' -type f | head -n 1)
	c=$(find "$dest.tmp" -name 'config-*' -type f | head -n 1)
	if [ -n "$k" ]; then
		mkdir -p "$dest.tmp/boot"
		kv=$(basename "$(dirname "$k")")
		mv "$k" "$dest.tmp/boot/vmlinuz-$kv"
		[ -n "$c" ] && mv "$c" "$dest.tmp/boot/config-$kv"
	fi
fi
# modules under lib/modules (usr-merged packages ship usr/lib/modules)
if [ ! -d "$dest.tmp/lib/modules" ] && [ -d "$dest.tmp/usr/lib/modules" ]; then
	mkdir -p "$dest.tmp/lib"
	mv "$dest.tmp/usr/lib/modules" "$dest.tmp/lib/modules"
fi
if [ "$ver" = qemu ] || [ "$ver" = headers ]; then
	[ "$ver" = headers ] || "$dest.tmp/usr/bin/qemu-system-x86_64" --version >/dev/null || {
		echo "fetch.sh: the fetched QEMU does not run here" >&2; exit 1; }
	echo "$pkg $(dpkg-deb -f "$deb" Version)" >"$dest.tmp/.package"
	rm -rf "$KCACHE/.deb" "$dest" && mv "$dest.tmp" "$dest" && touch "$dest/.complete"
	echo "$dest"
	exit 0
fi
vmlinuz=$(ls "$dest.tmp"/boot/vmlinuz-* 2>/dev/null | head -n 1)
if [ -z "$vmlinuz" ]; then
	echo "fetch.sh: $deb has no /boot/vmlinuz-*" >&2
	exit 1
fi
kver=${vmlinuz##*/vmlinuz-}
if [ ! -f "$dest.tmp/boot/config-$kver" ] && [ -f "$dest.tmp/lib/modules/$kver/config" ]; then
	cp "$dest.tmp/lib/modules/$kver/config" "$dest.tmp/boot/config-$kver"
fi
# modules.dep: the package leaves it to its postinst; the guest modprobes
depmod -b "$dest.tmp" "$kver"
echo "$pkg $(dpkg-deb -f "$deb" Version)" >"$dest.tmp/.package"
rm -rf "$KCACHE/.deb" "$dest"
mv "$dest.tmp" "$dest"
touch "$dest/.complete"
echo "$dest"
