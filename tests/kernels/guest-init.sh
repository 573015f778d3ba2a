#!/bin/bash
# PID 1 of a matrix guest (tests/kernels/run.sh boots the kernel with
# init=<this file>, root = this machine's / over virtiofs). It sets up the
# mounts a normal system has, runs the guest suite, writes its output to
# $memlens_out (a path on the shared root, read by run.sh on the host) and
# powers the guest off. The kernel hands memlens_* boot parameters to init as
# environment variables.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
# what udev makes on a booted system: bash's <(...) reads /dev/fd/N (without
# it, `cmd < <(...)` reads nothing and a test runs on empty input)
ln -sfn /proc/self/fd /dev/fd
ln -sf /proc/self/fd/0 /dev/stdin
ln -sf /proc/self/fd/1 /dev/stdout
ln -sf /proc/self/fd/2 /dev/stderr
# /tmp and /run of the guest's own: the host's stay untouched. A checkout
# that lives under one of them (a CI clone in /tmp) is bound back into the
# guest's own, with the folder that holds it (../shared beside the checkout)
for d in /tmp /run; do
	repo=${memlens_repo:-}
	keep=
	case "$repo" in "$d"/*/*) keep=$(dirname "$repo") ;; "$d"/*) keep=$repo ;; esac
	if [ -n "$keep" ]; then
		mkdir -p "/dev/host$d"
		mount --bind "$d" "/dev/host$d"
	fi
	if [ "$d" = /tmp ]; then
		mount -t tmpfs -o mode=1777 tmpfs /tmp
	else
		mount -t tmpfs -o mode=755 tmpfs /run
	fi
	if [ -n "$keep" ]; then
		mkdir -p "$keep"
		mount --bind "/dev/host$keep" "$keep"
	fi
done
mount -t cgroup2 cgroup2 /sys/fs/cgroup
mount -t bpf bpf /sys/fs/bpf
mount -t debugfs debugfs /sys/kernel/debug
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null ||
	mount -t tracefs tracefs /sys/kernel/debug/tracing
# the guest kernel's modules are in the kernel's cache directory: point
# modprobe there, both ours (MODPROBE_OPTIONS) and the kernel's own module
# requests (a wrapper on the guest's /run); the host's /lib/modules is
# not touched
if [ -n "${memlens_modules:-}" ] && [ -d "$memlens_modules" ]; then
	export MODPROBE_OPTIONS="-d ${memlens_modules%/lib/modules}"
	printf '#!/bin/sh\nexec /sbin/modprobe -d %s "$@"\n' "${memlens_modules%/lib/modules}" >/run/modprobe
	chmod +x /run/modprobe
	echo /run/modprobe >/proc/sys/kernel/modprobe
	# CRIU finds a process's sockets through the socket diagnostics, which
	# Debian builds as modules and nothing here loads by itself: without
	# them CRIU dumps no server ("Sockets (family 2 proto 6) are not
	# collected"). Built into a kernel, modprobe finds them there.
	for m in inet_diag tcp_diag udp_diag raw_diag unix_diag netlink_diag af_packet_diag; do
		modprobe -q "$m" 2>/dev/null ||
			echo "guest: no $m in $(uname -r)'s modules: CRIU cannot dump such sockets here" >/dev/console
	done
fi
ip link set lo up 2>/dev/null || ifconfig lo up 2>/dev/null
hostname memlens-guest 2>/dev/null
dmesg -n 1 2>/dev/null	# the console is for the suite's output

out=${memlens_out:?no memlens_out= boot parameter}
echo "guest: $(uname -r) up in $(cut -d' ' -f1 /proc/uptime) s" >/dev/console
# the output goes to the console too: when the guest hangs, the host's
# timeout kills it and reports the console's last lines
cd "${memlens_repo:?no memlens_repo= boot parameter}" || exit 1
timeout --kill-after=10 "${memlens_timeout:-1800}" \
	bash tests/kernels/guest-suite.sh </dev/null 2>&1 | tee "$out.tmp" >/dev/console
echo "guest-suite-exit ${PIPESTATUS[0]}" >>"$out.tmp"
mv "$out.tmp" "$out"
sync
echo "guest: done in $(cut -d' ' -f1 /proc/uptime) s" >/dev/console
echo o >/proc/sysrq-trigger
sleep 60
