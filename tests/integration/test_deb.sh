#!/bin/bash
# LICENSES/ holds the text of every license an SPDX line names. make deb:
# the memlens and memlens-agent packages (debian/), built with
# dpkg-buildpackage from a copy of the tree the first time and whenever a
# file changed (minutes; else reused), lintian without errors; debian/control's
# Build-Depends all in the package lists the build installs; then both
# installed with dpkg in a clean Debian root filesystem (the one make image
# caches: Debian's essential set and the libraries memlens's binaries
# need, without memlens), which podman runs: memlens --version,
# memlens agent --help (it finds memlens-agent), memlens check (no CRIU
# there: it says where the patches for page granularity are); purged, the
# packages leave nothing behind. Skipped where the tools are missing.
set -u
. "$(dirname "$0")/../lib.bash"
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
PY=/usr/bin/python3
VERSION=$(sed -n 's/^VERSION *:= *//p' Makefile)
IMAGE=localhost/memlens:$VERSION

# debian/control's Build-Depends: each in a list make deps installs
missing=
for p in $(sed -n '/^Build-Depends:/,/^[A-Z]/p' debian/control | sed 's/^Build-Depends://; /^[A-Z]/d' |
	tr ',' '\n' | sed 's/(.*)//; s/[[:space:]]//g' | grep -v '^debhelper-compat$' | grep .); do
	cat scripts/packages/*.txt | grep -qx "$p" || missing="$missing $p"
done
check build_depends_in_package_lists '[ -z "$missing" ]' "not in scripts/packages/*.txt:$missing"

# every license an SPDX-License-Identifier line names has its text in
# LICENSES/ (a file of that name, or one whose Valid-License-Identifier is it)
nolicense=
for id in $(git grep -h -o 'SPDX-License-Identifier: [^*]*' 2>/dev/null | sed 's/.*: //' |
	tr ' ()' '\n\n\n' | grep -xE '[A-Za-z0-9.+-]+' | grep -vxE 'OR|AND|WITH' | sort -u); do
	[ -f "LICENSES/$id" ] || grep -qx "Valid-License-Identifier: $id" LICENSES/* 2>/dev/null ||
		nolicense="$nolicense $id"
done
check licenses_for_every_spdx_id '[ -z "$nolicense" ] && [ -f LICENSE ]' "no text in LICENSES/ for:$nolicense"

for tool in dpkg-buildpackage dh lintian podman mmdebstrap; do
	if ! command -v "$tool" >/dev/null; then
		skip deb "$tool is not installed (scripts/packages/optional/deb.txt and image.txt; make test installs them)"
		exit 0
	fi
done
if [ "$(id -u)" -ne 0 ]; then
	skip deb "installing the packages into a root filesystem and running it needs root"
	exit 0
fi
t_tmpdir deb-test
export CONTAINERS_CONF=${CONTAINERS_CONF:-$PWD/deploy/podman/containers.conf}

t0=$SECONDS
if ! make --no-print-directory deb BUILD="$BUILD" >"$tmp/deb.log" 2>&1; then
	notok make_deb "$(tail -n 8 "$tmp/deb.log")"
	exit 1
fi
sed 's/^/# /' "$tmp/deb.log" | grep -E 'deb: (built|up to date|lintian|build/)'
ok "make_deb ($((SECONDS - t0)) s)"
check lintian_no_errors 'grep -q "^deb: lintian: 0 errors" "$tmp/deb.log"' "$(grep lintian "$tmp/deb.log")"
debs=("$BUILD/deb/memlens_${VERSION}_amd64.deb" "$BUILD/deb/memlens-agent_${VERSION}_amd64.deb")
check deb_contents 'dpkg-deb -c "${debs[0]}" | grep -q " ./usr/bin/memlens$" &&
	dpkg-deb -c "${debs[1]}" | grep -q " ./usr/libexec/memlens/memlens-agent$" &&
	dpkg-deb -c "${debs[0]}" | grep -q "/usr/share/memlens/criu-patches/0001-" &&
	dpkg-deb -c "${debs[0]}" | grep -q " ./usr/lib/[^/]*/memlens/libmemlens-sample.so$" &&
	dpkg-deb -f "${debs[0]}" Suggests | grep -q "criu"' \
	"$(dpkg-deb -c "${debs[0]}" | head -n 5)"

# the clean root filesystem: make image's, cached
t1=$SECONDS
if ! make --no-print-directory image BUILD="$BUILD" >"$tmp/image.log" 2>&1; then
	notok root_filesystem "make image: $(tail -n 5 "$tmp/image.log")"
	exit 1
fi
key=$(podman image inspect --format '{{index .Labels "memlens.rootfs"}}' "$IMAGE")
rootfs=${MEMLENS_IMAGE_CACHE:-$PWD/.cache/image}/rootfs-$key.tar
root=$tmp/root
mkdir -p "$root"
if [ -z "$key" ] || ! tar -C "$root" -xf "$rootfs"; then
	notok root_filesystem "no root filesystem $rootfs"
	exit 1
fi
grep -E 'root filesystem(:| built)' "$tmp/image.log" | sed 's/^/# /'
ok "root_filesystem ($(basename "$rootfs"), $((SECONDS - t1)) s)"

cp "${debs[@]}" "$root/tmp/"
if chroot "$root" dpkg -i "/tmp/${debs[0]##*/}" "/tmp/${debs[1]##*/}" >"$tmp/dpkg.log" 2>&1; then
	ok "dpkg_install (every Depends met by the packages of the binaries' NEEDED entries)"
else
	notok dpkg_install "$(tail -n 6 "$tmp/dpkg.log")"
	exit 1
fi

run() { podman run --runtime runc --rm --rootfs "$root" "$@"; }
v=$(run memlens --version 2>&1 | head -n 1)
check installed_version '[ "$v" = "memlens $VERSION" ]' "memlens --version: $v"
# the sampler leaks --sample preloads: where the installed memlens looks,
# and a program runs with it (no BPF here: leaks itself stops later)
v=$(run memlens leaks --sample 4096 -- /bin/true 2>&1)
check installed_sampler_found '! echo "$v" | grep -q "is neither beside memlens"' "$v"
v=$(run sh -c 'LD_PRELOAD=$(ls /usr/lib/*/memlens/libmemlens-sample.so) MEMLENS_SAMPLE_BYTES=4096 memlens --version' 2>&1 | head -n 1)
check installed_sampler_loads '[ "$v" = "memlens $VERSION" ]' "memlens --version with the sampler preloaded: $v"
run memlens agent --help >"$tmp/agent.help" 2>&1
rc=$?
check installed_agent '[ $rc = 0 ] && grep -q "^usage: memlens agent" "$tmp/agent.help"' \
	"exit $rc: $(head -n 3 "$tmp/agent.help")"

run memlens check --json >"$tmp/check.json" 2>"$tmp/check.err"
rc=$?
if "$PY" - "$tmp/check.json" <<'EOF'; then
import json, sys
j = json.load(open(sys.argv[1]))
f = {x["name"]: x for x in j["features"]}
assert j["type"] == "check", j
assert f["pagemap_scan"]["state"] == "ok", f["pagemap_scan"]
c = f["criu"]
assert c["state"] == "missing" and "/usr/share/memlens/criu-patches" in c["fix"], c
EOF
	ok "installed_check (exit $rc; no CRIU: the fix names /usr/share/memlens/criu-patches)"
else
	notok installed_check "exit $rc: $(head -c 600 "$tmp/check.json") $(head -c 300 "$tmp/check.err")"
fi

chroot "$root" dpkg --purge memlens-agent memlens >"$tmp/purge.log" 2>&1
left=$(cd "$root" && ls -d usr/bin/memlens usr/libexec/memlens usr/share/memlens usr/share/doc/memlens* \
	usr/share/man/man8/memlens* 2>/dev/null)
check dpkg_purge '[ -z "$left" ]' "left behind: $left" "$(tail -n 3 "$tmp/purge.log")"
for d in "${debs[@]}"; do
	echo "# ${d##*/}: $(stat -c %s "$d") bytes, installed $(dpkg-deb -f "$d" Installed-Size) KiB"
done
t_done
