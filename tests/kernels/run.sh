#!/bin/bash
# The kernel matrix: boots each Debian kernel under QEMU (TCG: nested KVM does
# not work on the machines this runs on) with this machine's / as the guest's
# root filesystem, shared read-write through virtiofsd, and runs the guest
# suite (tests/kernels/guest-suite.sh) there against the binaries built here.
#
#   tests/kernels/run.sh [--plain] [VERSION...]
#                              (default: $KERNELS, else 6.1 6.12 7.2 7.3)
#
# Prints every guest test line prefixed with "[kernel V]", per kernel
# "[kernel V] N passed, N failed, N skipped (T s)", and the totals last.
# A kernel that cannot be fetched or booted is one skip with the reason; a
# guest that hangs is killed after GUEST_TIMEOUT seconds and is one failure,
# shown with the last lines of its console.
# --plain (for tests/run.sh): the lines as "ok - CASE/TEST" with no prefix.
# CASES=PATTERN runs only the guest cases whose file name contains PATTERN;
# CASE_TIMEOUT=SEC is each case's time limit in the guest (default 600).
# OPTIN=pod runs the opt-in sidecar Pod case (97-agent-pod-migrate.sh).
# OPTIN=server also runs the opt-in real-server cases (9N-server-*.sh but
# 96-server-redis-tcp, which always runs) in a full run (make
# test-kernels sets it).
# QEMU_CPU=MODEL is the guest's CPU (default max; e.g. max,fred=off) and
# GUEST_APPEND=ARGS adds to its kernel command line: for experiments.
# Outputs: $BUILD/kernels/V/{results.txt,console.log} (tests/kernels/table.sh
# reads the results).
set -u
cd "$(dirname "$0")/../.."
export PATH=$PATH:/usr/sbin:/sbin
BUILD=${BUILD:-build}
REPO=$PWD
GUEST_TIMEOUT=${GUEST_TIMEOUT:-2400}
VIRTIOFSD=${VIRTIOFSD:-/usr/lib/qemu/virtiofsd}
PLAIN=
[ "${1:-}" = --plain ] && PLAIN=1 && shift
read -r -a versions <<<"${*:-${KERNELS:-6.1 6.12 7.2 7.3}}"
pass=0 fail=0 skip=0

say() {
	if [ -n "$PLAIN" ]; then
		echo "$*"
	else
		echo "[kernel $ver] $*"
	fi
}

# initramfs DIR KVER OUT: a busybox initramfs that loads the modules the
# virtiofs root needs (where the kernel has them as modules, as Debian 12's
# 6.1 does), mounts it and hands over to the init= program
make_initramfs() {
	local kdir=$1 kver=$2 out=$3 root m
	root=$(mktemp -d /tmp/memlens-initramfs.XXXXXX)
	mkdir -p "$root"/{bin,dev,proc,sys,newroot,modules}
	cp /bin/busybox "$root/bin/busybox" || { rm -rf "$root"; return 1; }
	# virtiofs and its transport (virtio_pci is a module too in 6.1)
	for m in $(for w in virtio_pci virtiofs; do
		modprobe -d "$kdir" -S "$kver" --show-depends $w 2>/dev/null; done |
		awk '$1 == "insmod" && !seen[$2]++ {print $2}'); do
		case $m in
		*.xz) xz -dc "$m" >"$root/modules/$(basename "${m%.xz}")" ;;
		*.zst) zstd -qdc "$m" >"$root/modules/$(basename "${m%.zst}")" ;;
		*) cp "$m" "$root/modules/" ;;
		esac
		basename "${m%.*z*}" | sed 's/\.ko$//' >>"$root/modules/order"
	done
	cat >"$root/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t devtmpfs devtmpfs /dev
for m in $(/bin/busybox cat /modules/order 2>/dev/null); do
	/bin/busybox insmod /modules/$m.ko || echo "initramfs: insmod $m failed"
done
# the virtio device is probed asynchronously
for i in 1 2 3 4 5 6 7 8 9 10; do
	/bin/busybox mount -t virtiofs rootfs /newroot 2>/dev/null && break
	/bin/busybox sleep 1
done
/bin/busybox grep -q ' /newroot ' /proc/mounts || {
	echo "initramfs: cannot mount the virtiofs root"; /bin/busybox poweroff -f; }
/bin/busybox umount /proc
/bin/busybox umount /dev
exec /bin/busybox switch_root /newroot "$memlens_init"
INIT
	chmod +x "$root/init"
	(cd "$root" && find . | cpio -o -H newc --quiet) | gzip -1 >"$out"
	local rc=$?
	rm -rf "$root"
	return $rc
}

run_kernel() {
	local kdir kver vmlinuz config work t0=$SECONDS sock vpid append initrd=() rc
	work=$REPO/$BUILD/kernels/$ver
	rm -rf "$work"
	mkdir -p "$work"
	if ! kdir=$(timeout 900 tests/kernels/fetch.sh "$ver" 2>"$work/fetch.err"); then
		say "skip - kernel_$ver: cannot fetch it: $(tail -n 1 "$work/fetch.err")"
		echo "skip - kernel_$ver: cannot fetch it: $(tail -n 1 "$work/fetch.err")" >"$work/results.txt"
		skip=$((skip + 1))
		say "0 passed, 0 failed, 1 skipped ($((SECONDS - t0)) s)"
		return
	fi
	vmlinuz=$(ls "$kdir"/boot/vmlinuz-* | head -n 1)
	kver=${vmlinuz##*/vmlinuz-}
	config=$kdir/boot/config-$kver
	say "# $(cat "$kdir/.package")"
	append="console=ttyS0 rootfstype=virtiofs root=rootfs rw quiet panic=-1"
	append+=" memlens_out=$work/results.txt memlens_repo=$REPO memlens_kernel=$ver"
	append+=" memlens_modules=$kdir/lib/modules memlens_config=$config memlens_timeout=$((GUEST_TIMEOUT - 60))"
	[ -n "${GUEST_APPEND:-}" ] && append+=" $GUEST_APPEND"
	[ -n "${CASES:-}" ] && append+=" memlens_cases=$CASES"
	[ -n "${CASE_TIMEOUT:-}" ] && append+=" memlens_case_timeout=$CASE_TIMEOUT"
	[ -n "${OPTIN:-}" ] && append+=" memlens_optin=$OPTIN"
	if grep -Eq '^CONFIG_(VIRTIO_FS|FUSE_FS)=m' "$config"; then
		if ! make_initramfs "$kdir" "$kver" "$work/initramfs.gz" 2>"$work/initramfs.err"; then
			say "skip - kernel_$ver: cannot build its initramfs: $(tail -n 1 "$work/initramfs.err")"
			skip=$((skip + 1))
			return
		fi
		initrd=(-initrd "$work/initramfs.gz")
		append+=" memlens_init=$REPO/tests/kernels/guest-init.sh"
	else
		append+=" init=$REPO/tests/kernels/guest-init.sh"
	fi
	# cache=always: the guest runs only what was built before it booted, and
	# its writes go through to the host; with cache=none every exec costs
	# the guest ~0.5 s of FUSE lookups under TCG
	sock=$(mktemp -u /tmp/memlens-virtiofs.XXXXXX.sock)
	"$VIRTIOFSD" --socket-path="$sock" -o source=/ -o cache=always -o sandbox=chroot \
		>"$work/virtiofsd.log" 2>&1 &
	vpid=$!
	for _ in $(seq 1 100); do [ -S "$sock" ] && break; sleep 0.1; done
	if [ ! -S "$sock" ]; then
		say "skip - kernel_$ver: virtiofsd did not start: $(tail -n 2 "$work/virtiofsd.log" | tr '\n' ' ')"
		kill "$vpid" 2>/dev/null
		skip=$((skip + 1))
		return
	fi
	timeout --kill-after=10 "$GUEST_TIMEOUT" "$QEMU" "${QEMU_ARGS[@]}" -accel tcg,thread=multi -cpu "${QEMU_CPU:-max}" -smp 2 -m 4G \
		-object memory-backend-memfd,id=mem,size=4G,share=on -numa node,memdev=mem \
		-chardev socket,id=c0,path="$sock" \
		-device vhost-user-fs-pci,queue-size=1024,chardev=c0,tag=rootfs \
		-kernel "$vmlinuz" "${initrd[@]}" -append "$append" \
		-nographic -no-reboot -serial file:"$work/console.log" -monitor none \
		</dev/null >"$work/qemu.log" 2>&1
	rc=$?
	kill "$vpid" 2>/dev/null
	wait "$vpid" 2>/dev/null
	rm -f "$sock"
	local p f s
	if [ -f "$work/results.txt" ] && grep -q '^guest-suite-exit ' "$work/results.txt"; then
		if [ -n "$PLAIN" ]; then
			grep -E '^\[.*\] (ok|not ok|skip) - |^\[.*\] #' "$work/results.txt" |
				sed -E 's/^\[([^]]*)\] (ok|not ok|skip) - /\2 - \1\//; s/^\[([^]]*)\] #/# [\1]/'
		else
			grep -E '^\[.*\] (ok|not ok|skip) - |^\[.*\] #|^\[.*\] [0-9]+ passed' "$work/results.txt" |
				sed "s|^|[kernel $ver] |"
		fi
		p=$(grep -cE '^\[[^]]*\] ok - ' "$work/results.txt")
		f=$(grep -cE '^\[[^]]*\] not ok - ' "$work/results.txt")
		s=$(grep -cE '^\[[^]]*\] skip - ' "$work/results.txt")
		if [ "$p$f$s" = 000 ]; then
			say "not ok - kernel_$ver: the guest suite ran no test"
			tail -n 20 "$work/results.txt" | sed "s|^|[kernel $ver] #   |"
			f=1
		fi
	else
		if [ $rc = 124 ] || [ $rc = 137 ]; then
			say "not ok - kernel_$ver: the guest did not finish in $GUEST_TIMEOUT s and was killed"
		else
			say "not ok - kernel_$ver: the guest stopped without results (qemu exit $rc: $(tail -n 2 "$work/qemu.log" | tr '\n' ' '))"
		fi
		tail -n 30 "$work/console.log" | sed "s|^|[kernel $ver] #   console: |"
		p=0 f=1 s=0
	fi
	pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + s))
	say "$p passed, $f failed, $s skipped ($((SECONDS - t0)) s)"
	echo "wall_s $((SECONDS - t0))" >>"$work/results.txt"
}

# QEMU 10 (fetched like the kernels): Debian 12's 7.2 crashes 6.x guests
if [ -z "${QEMU:-}" ]; then
	if qdir=$(timeout 900 tests/kernels/fetch.sh qemu 2>"/tmp/memlens-qemu-fetch.$$"); then
		QEMU=$qdir/usr/bin/qemu-system-x86_64
		QEMU_ARGS=(-L "$qdir/usr/share/qemu" -L "$qdir/usr/share/seabios")
		export QEMU_MODULE_DIR=$qdir/usr/lib/x86_64-linux-gnu/qemu
	else
		why=$(tail -n 1 "/tmp/memlens-qemu-fetch.$$")
		rm -f "/tmp/memlens-qemu-fetch.$$"
		for ver in "${versions[@]}"; do
			say "skip - kernel_$ver: no QEMU to boot it in: $why"
			say "0 passed, 0 failed, 1 skipped (0 s)"
		done
		echo "kernels ${versions[*]}: 0 passed, 0 failed, ${#versions[@]} skipped"
		exit 0
	fi
	rm -f "/tmp/memlens-qemu-fetch.$$"
fi
[ -n "${QEMU_ARGS+x}" ] || QEMU_ARGS=()

for ver in "${versions[@]}"; do
	run_kernel
done
echo "kernels ${versions[*]}: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
