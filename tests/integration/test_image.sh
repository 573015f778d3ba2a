#!/bin/bash
# make image: builds localhost/memlens:VERSION (the first time the root
# filesystem takes minutes: mmdebstrap from Debian's archive; then it is
# cached in .cache/image), and podman runs it with runc: memlens --version
# as the built memlens says it; every library of memlens, memlens-agent and
# CRIU found in the image; memlens check in a default container (no
# CRIU privileges: CRIU's check fails and says so) and in a privileged one
# (every feature as on the host, the image's patched CRIU at page
# granularity); the labels. Skipped where podman or mmdebstrap is missing.
set -u
. "$(dirname "$0")/../lib.bash"
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
M=${MEMLENS:-$PWD/$BUILD/memlens}
PY=/usr/bin/python3
VERSION=$(sed -n 's/^VERSION *:= *//p' Makefile)
IMAGE=localhost/memlens:$VERSION

for tool in podman mmdebstrap runc; do
	if ! command -v "$tool" >/dev/null; then
		skip image "$tool is not installed (scripts/packages/optional/image.txt; make image and make test install it)"
		exit 0
	fi
done
if [ "$(id -u)" -ne 0 ]; then
	skip image "building and running the image needs root"
	exit 0
fi
t_tmpdir image-test
# runc refuses podman's default ulimits above this host's hard limits
export CONTAINERS_CONF=${CONTAINERS_CONF:-$PWD/deploy/podman/containers.conf}
run() { podman run --runtime runc --rm "$@"; }

t0=$SECONDS
if ! make --no-print-directory image BUILD="$BUILD" >"$tmp/make.log" 2>&1; then
	notok make_image "$(tail -n 8 "$tmp/make.log")"
	exit 1
fi
# what it built this time (the root filesystem only the first time)
grep -E 'root filesystem(:| built)|podman import|up to date' "$tmp/make.log" |
	sed 's/^/# /'
ok "make_image ($((SECONDS - t0)) s)"

v=$(run "$IMAGE" memlens --version 2>&1)
want=$("$M" --version 2>&1)
if [ "$(echo "$v" | head -n 2)" = "$(echo "$want" | head -n 2)" ] &&
	[ "$(echo "$v" | head -n 1)" = "memlens $VERSION" ]; then
	ok "image_version ($(echo "$v" | head -n 1), $(echo "$v" | sed -n 2p))"
else
	notok image_version "in the image: $v" "built: $want"
fi

# every NEEDED library of the three binaries is in the image
run "$IMAGE" sh -c 'ldd /usr/bin/memlens /usr/libexec/memlens/memlens-agent /usr/sbin/criu' \
	>"$tmp/ldd" 2>&1
if grep -q 'not found' "$tmp/ldd" || ! grep -q 'libgrpc' "$tmp/ldd"; then
	notok image_libraries "$(grep -E 'not found|rror' "$tmp/ldd" | head -n 5)"
else
	ok "image_libraries ($(grep -c '=>' "$tmp/ldd") resolved)"
fi

# a default container: podman's capabilities, no CRIU privileges
run "$IMAGE" memlens check --json >"$tmp/default.json" 2>"$tmp/default.err"
rc=$?
if "$PY" - "$tmp/default.json" <<'EOF'; then
import json, sys
j = json.load(open(sys.argv[1]))
f = {x["name"]: x for x in j["features"]}
assert j["type"] == "check", j
assert f["pagemap_scan"]["state"] == "ok", f["pagemap_scan"]
assert "a container" in f["pid_namespace"]["detail"], f["pid_namespace"]
assert f["criu"]["state"] == "missing" and "/usr/sbin/criu" in f["criu"]["detail"], f["criu"]
EOF
	ok "image_check_default (exit $rc: PID namespace of the container, CRIU without privileges refused)"
else
	notok image_check_default "exit $rc: $(head -c 600 "$tmp/default.json") $(head -c 300 "$tmp/default.err")"
fi

# privileged: every feature as memlens check on the host says, and the
# image's CRIU with memlens's patches
run --privileged "$IMAGE" memlens check --json >"$tmp/priv.json" 2>"$tmp/priv.err"
rc=$?
MEMLENS_CRIU=$(scripts/ensure-criu.sh 2>/dev/null) "$M" check --json >"$tmp/host.json" 2>/dev/null
rc_host=$?
patched=$(podman image inspect --format '{{index .Labels "memlens.criu"}}' "$IMAGE")
if "$PY" - "$tmp/priv.json" "$tmp/host.json" "$patched" <<'EOF'; then
import json, sys
c, h = (json.load(open(p)) for p in sys.argv[1:3])
cs = {x["name"]: x["state"] for x in c["features"]}
hs = {x["name"]: x["state"] for x in h["features"]}
diff = {n: (cs.get(n), hs[n]) for n in hs if cs.get(n) != hs[n]}
assert not diff, "container vs host: %s" % diff
crit = {x["name"]: x for x in c["features"]}
assert "/usr/sbin/criu" in crit["criu"]["detail"], crit["criu"]
if "with memlens's patches" in sys.argv[3]:
    assert crit["criu_exclude"]["detail"].startswith("page granularity"), crit["criu_exclude"]
EOF
	[ $rc = $rc_host ] && ok "image_check_privileged (exit $rc, every feature as on the host; CRIU $patched)" ||
		notok image_check_privileged "exit $rc in the container, $rc_host on the host"
else
	notok image_check_privileged "$(head -c 300 "$tmp/priv.err")"
fi

labels=$(podman image inspect --format \
	'{{index .Labels "org.opencontainers.image.version"}} {{json .Config.Cmd}}' "$IMAGE")
check image_labels '[ "$labels" = "$VERSION [\"memlens\",\"check\"]" ]' "labels and CMD: $labels"

# the numbers of the report: sizes, the packages, what is in it
sed 's/^/# /' "$BUILD/image/summary.txt"
echo "# packages: $(paste -sd' ' "$BUILD/image/packages.txt")"
t_done
