#!/bin/bash
# Installs, from Debian's archive, every package memlens needs to build,
# test, benchmark and demo. Idempotent and quiet: installs only what is
# missing. Package lists: scripts/packages/*.txt (one package per line),
# and for each NAME given, the opt-in list scripts/packages/optional/NAME.txt
# (`make image` adds image, `make deb` deb, `make test` both).
set -euo pipefail
cd "$(dirname "$0")/.."

lists=(scripts/packages/*.txt)
for name in "$@"; do
	f=scripts/packages/optional/$name.txt
	if [ ! -f "$f" ]; then
		echo "install-deps: no package list $f (there are: $(cd scripts/packages/optional && ls *.txt | sed 's/\.txt$//' | paste -sd' '))" >&2
		exit 2
	fi
	lists+=("$f")
done
wanted=()
for f in "${lists[@]}"; do
	while read -r pkg _; do
		case "$pkg" in ''|'#'*) continue ;; esac
		wanted+=("$pkg")
	done < "$f"
done
# one dpkg-query for all of them (one per package takes half a minute)
installed=$(dpkg-query -W -f='${Package} ${Status}\n' "${wanted[@]}" 2>/dev/null |
	awk '/ install ok installed$/ { print $1 }' | sort -u || true)
missing=()
for pkg in $(printf '%s\n' "${wanted[@]}" | sort -u); do
	grep -qxF "$pkg" <<<"$installed" || missing+=("$pkg")
done

if [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: these Debian packages are missing: ${missing[*]}" >&2
	echo "install-deps: run as root (sudo make test / sudo make demo) or install them with: sudo apt-get install ${missing[*]}" >&2
	exit 1
fi
echo "install-deps: installing ${#missing[@]} package(s): ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
stamp=/var/lib/apt/periodic/memlens-update-stamp
if [ ! -f "$stamp" ] || [ -n "$(find "$stamp" -mmin +360 2>/dev/null)" ]; then
	apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null
	mkdir -p "$(dirname "$stamp")" && touch "$stamp"
fi
if ! apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/tmp/memlens-apt.log 2>&1; then
	# the package lists may be stale: refresh once and retry
	apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null
	apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/tmp/memlens-apt.log 2>&1 || {
		echo "install-deps: apt-get install failed; see /tmp/memlens-apt.log" >&2
		tail -n 20 /tmp/memlens-apt.log >&2
		exit 1
	}
fi
