#!/bin/bash
# case-timeout: 1800
# memlens migrate --container of a podman (runc) container running redis and
# a writer (redis-benchmark, both children of the container's sh), from one
# network namespace to another, with pre-copy and the hot pages left out
# (CRIU 4.1.1 with memlens's patches), beside podman's own chain on the same
# container: `podman container checkpoint --pre-checkpoint`, then
# `--with-previous`, then `podman container restore`. Both times the writer
# is stopped after pre-copy, redis's DEBUG DIGEST taken, and compared with
# the restored redis's. Pre-dumps need soft-dirty (the 6.12 guest).
# podman stores its containers under a tmpfs (vfs driver; the root
# filesystem is shared by virtiofs) and the container's root is a directory
# with the host's /usr and /etc bound read-only; its seccomp profile is
# podman's with userfaultfd() allowed (deploy/podman/seccomp-userfaultfd.py).
set -u
cd "$(dirname "$0")/../../.." || exit 1
. tests/kernels/cases/needs_write_tracking.bash migrate
. tests/kernels/cases/criu_lib.bash
WHICH=page
T=migrate_container

for p in podman runc redis-server redis-cli redis-benchmark; do
	command -v $p >/dev/null || { skip $T "no $p here (scripts/packages/optional/image.txt, servers.txt)"; exit 0; }
done
criu=
for c in "${CRIUS[@]}"; do [ "${c%%=*}" = page ] && criu=${c#*=}; done
[ -n "$criu" ] || { skip $T "no CRIU with memlens's patches here (scripts/ensure-criu.sh)"; exit 0; }
has_soft_dirty "$criu" || { skip $T "this kernel has no soft-dirty tracking (pre-copy needs it)"; exit 0; }
dumps_inet_sockets "$criu" || { skip $T "$SOCK_WHY"; exit 0; }

# runc (and podman's checks) run the CRIU on PATH: the patched one
export PATH=$(dirname "$criu"):$PATH CONTAINERS_CONF=$PWD/deploy/podman/containers.conf
# podman's storage in the case's tmpfs, for memlens's podman too
S=$tmp/store R=$tmp/rootfs
mkdir -p "$S" "$R"/{usr,etc,tmp,proc,dev,sys,run,var}
printf '[storage]\ndriver = "vfs"\ngraphroot = "%s/root"\nrunroot = "%s/run"\n' "$S" "$S" >"$S/storage.conf"
export CONTAINERS_STORAGE_CONF=$S/storage.conf
P=(podman --runtime runc)
for l in bin lib lib64 sbin; do ln -s usr/$l "$R/$l"; done
ns_a=mlctrA$$ ns_b=mlctrB$$ ctr=mlctr$$
t_at_exit '"${P[@]}" rm -f -t 0 $ctr >/dev/null 2>&1; ip netns del $ns_a 2>/dev/null; ip netns del $ns_b 2>/dev/null'
sock=$R/tmp/redis.sock
rcli() { timeout 60 redis-cli -s "$sock" "$@"; }

# imgs DIR...: the bytes of the images under the DIRs, counted as memlens
# counts what it sends: every regular file but CRIU's logs and pidfiles,
# each file once (by inode: a file linked from two rounds is one file;
# a round's "parent" symlink is not followed)
imgs() {
	find "$@" -type f ! -name '*.log' ! -name '*.pid' -printf '%D:%i %s\n' 2>/dev/null |
		sort -u -k1,1 | awk '{s += $2} END {print s + 0}'
}
# ns_comms INIT: "PID COMM" of each process in INIT's pid namespace, PID
# as the namespace numbers it (as CRIU names its pagemaps); one python, as
# a fork per process is slow under TCG
ns_comms() {
	"$PY" - "$1" <<'PYEOF'
import glob, os, re, sys
try:
    ns = os.readlink("/proc/%s/ns/pid" % sys.argv[1])
except OSError:
    sys.exit(0)
for p in glob.glob("/proc/[0-9]*"):
    try:
        if os.readlink(p + "/ns/pid") != ns:
            continue
        t = open(p + "/status").read()
    except OSError:
        continue
    print(re.search(r"^NSpid:.*?(\d+)\s*$", t, re.M).group(1),
          re.search(r"^Name:\s*(.*)$", t, re.M).group(1))
PYEOF
}
# per_proc LABEL DIR...: per image directory, the pages each process's
# pagemap holds there (sent in that round) and those it leaves to the
# parent; the processes named by $tmp/comms (ns_comms)
per_proc() {
	"$PY" - "$tmp/comms" "$@" <<'PYEOF'
import glob, os, re, struct, sys
comms, label, dirs = sys.argv[1], sys.argv[2], sys.argv[3:]
comm = {}
for line in open(comms):
    w = line.split(None, 1)
    if len(w) == 2 and w[0].isdigit():
        comm[int(w[0])] = w[1].strip()
def varint(b, i):
    v = s = 0
    while True:
        c = b[i]; i += 1
        v |= (c & 0x7f) << s; s += 7
        if c < 0x80:
            return v, i
def fields(b):
    i, f = 0, {}
    while i < len(b):
        k, i = varint(b, i)
        if k & 7 == 0:
            v, i = varint(b, i)
        elif k & 7 == 2:
            n, i = varint(b, i); v = b[i:i + n]; i += n
        elif k & 7 == 1:
            v = struct.unpack_from("<Q", b, i)[0]; i += 8
        else:
            v = struct.unpack_from("<I", b, i)[0]; i += 4
        f[k >> 3] = v
    return f
for d in dirs:
    out = []
    for pm in sorted(glob.glob(os.path.join(d, "pagemap-*.img"))):
        b = open(pm, "rb").read()
        i = 4 if struct.unpack_from("<I", b, 0)[0] not in (0x54564319, 0x55105940) else 8
        sent = parent = 0
        first = True
        while i + 4 <= len(b):
            n = struct.unpack_from("<I", b, i)[0]; i += 4
            f = fields(b[i:i + n]); i += n
            if first:
                first = False
                continue
            pages = f.get(2, 0)
            if f.get(3, 0) or f.get(4, 0) & 1:
                parent += pages
            else:
                sent += pages
        m = re.search(r"pagemap-(shmem-)?(\d+)\.img$", pm)
        if not m:
            continue
        who = ("shmem %s" % m.group(2) if m.group(1)
               else "%s %s" % (m.group(2), comm.get(int(m.group(2)), "?")))
        out.append("%s %d sent, %d parent" % (who, sent, parent))
    print("# %s %s: %s" % (label, os.path.basename(d.rstrip("/")), "; ".join(out) or "no pagemaps"))
PYEOF
}

# podman's seccomp profile refuses userfaultfd(), which the write profiler
# injects: the container runs with podman's profile plus that one call
deploy/podman/seccomp-userfaultfd.py "$S/seccomp.json" >"$tmp/seccomp.out" 2>&1 ||
	{ notok $T "seccomp profile: $(tail -n 2 "$tmp/seccomp.out")"; exit 0; }
# redis and its writer; the writer starts once /tmp/go exists (after the
# cold data is in) and sets 2000 keys of 1 KiB over and over
"${P[@]}" run -d --name $ctr --security-opt seccomp="$S/seccomp.json" -v /usr:/usr:ro -v /etc:/etc:ro --network none --rootfs "$R" \
	sh -c 'redis-server --port 0 --unixsocket /tmp/redis.sock --save "" --appendonly no \
		--enable-debug-command yes --dir /tmp >/tmp/redis.log 2>&1 &
	while [ ! -e /tmp/go ]; do sleep 0.2; done
	redis-benchmark -s /tmp/redis.sock -t set -r 2000 -d 1024 -n 1000000000 -c 1 -q \
		>/dev/null 2>&1 &
	wait' >"$tmp/run.out" 2>&1 ||
	{ notok $T "podman run: $(tail -n 3 "$tmp/run.out")"; exit 0; }
t_wait 60 test -S "$sock" && t_wait 30 rcli ping >/dev/null ||
	{ notok $T "redis did not start: $(cat "$R/tmp/redis.log" 2>/dev/null | tail -n 3)"; exit 0; }
# the cold data: 100000 keys of 256 bytes
rcli DEBUG POPULATE 100000 key 256 >/dev/null
touch "$R/tmp/go"
init=$("${P[@]}" inspect $ctr --format '{{.State.Pid}}')
writer() { pgrep -P "$1" -x redis-benchmark; }
t_wait 30 writer "$init" >/dev/null || { notok $T "the writer did not start"; exit 0; }
echo "# container $ctr: init $init, redis $(pgrep -P "$init" -x redis-server), writer $(writer "$init" | head -n 1)"
ns_comms "$init" >"$tmp/comms"
echo "# in the container: $(grep -v ' sleep$' "$tmp/comms" | tr '\n' ' ')"

# stop_writer INIT: the writer stopped, then redis's digest (it has no other client)
stop_writer() {
	local w
	w=$(writer "$1" | head -n 1)
	kill -STOP "$w" && wait_for_state "$w" '^T' 30 && rcli DEBUG DIGEST
}
# keys written since INFO's count C0
cmds() { rcli INFO stats | sed -n 's/^total_commands_processed:\([0-9]*\).*/\1/p' | tr -d '\r'; }

# ---- podman's own chain: pre-checkpoint, checkpoint --with-previous, restore
bad=
udata=$("${P[@]}" inspect $ctr --format '{{.StaticDir}}')
sleep 4	# the writer's keys written a few times over (no assertion rests on it)
t0=$(date +%s%N)
"${P[@]}" container checkpoint --pre-checkpoint $ctr >"$tmp/pre.out" 2>&1 ||
	bad+=" pre-checkpoint: $(tail -n 2 "$tmp/pre.out")"
t1=$(date +%s%N)
pi_pre0=$(imgs "$udata/pre-checkpoint")
sleep 2
d1=$(stop_writer "$init") || bad+=" cannot stop the writer / take the digest"
t2=$(date +%s%N)
"${P[@]}" container checkpoint --with-previous $ctr >"$tmp/ckpt.out" 2>&1 ||
	bad+=" checkpoint --with-previous: $(tail -n 2 "$tmp/ckpt.out")"
t3=$(date +%s%N)
pi_pre=$(imgs "$udata/pre-checkpoint") pi_fin=$(imgs "$udata/checkpoint")
podman_bytes=$(imgs "$udata/pre-checkpoint" "$udata/checkpoint")
[ "$pi_pre" = "$pi_pre0" ] || echo "# podman: the pre-checkpoint's images were $pi_pre0 bytes after it, $pi_pre after the checkpoint"
per_proc podman "$udata/pre-checkpoint" "$udata/checkpoint"
"${P[@]}" container restore $ctr >"$tmp/restore.out" 2>&1 ||
	bad+=" restore: $(tail -n 2 "$tmp/restore.out")"
t4=$(date +%s%N)
d2=$(rcli DEBUG DIGEST)
echo "# podman: pre-checkpoint $(( (t1 - t0) / 1000000 )) ms, $pi_pre bytes of images; checkpoint --with-previous $(( (t3 - t2) / 1000000 )) ms, $pi_fin bytes of images; restore $(( (t4 - t3) / 1000000 )) ms"
echo "# podman: digest before the final checkpoint $d1, after the restore $d2"
[ -n "$d1" ] && [ "$d1" = "$d2" ] || bad+=" podman: digest $d1 before, $d2 after the restore"
init=$("${P[@]}" inspect $ctr --format '{{.State.Pid}}')
w=$(writer "$init" | head -n 1)
kill -CONT "$w" 2>/dev/null
c0=$(cmds)
t_wait 60 eval '[ "$(cmds)" -gt "$((c0 + 100))" ]' || bad+=" podman: the restored writer does not write"
[ -z "$bad" ] && ok ${T}_podman_chain || notok ${T}_podman_chain "$bad"
podman_down=$(( (t4 - t2) / 1000000 ))

# ---- memlens migrate --container, from ns A to ns B, on the same container
bad=
if ! netns_up "$ns_a" "$ns_b" 10.215.0.1 10.215.0.2 2>"$tmp/ns.err"; then
	skip $T "cannot set up two network namespaces: $(cat "$tmp/ns.err")"
	exit 0
fi
in_a=(nsenter --net=/run/netns/"$ns_a") in_b=(nsenter --net=/run/netns/"$ns_b")
"${in_b[@]}" "$MEMLENS" migrate --receive --listen 10.215.0.2:7415 --criu "$criu" \
	-D "$tmp/dest" >"$tmp/recv.out" 2>&1 &
rp=$!
pids+=("$rp")
wait_for_line "$tmp/recv.out" receiving 10
"${in_a[@]}" "$MEMLENS" migrate --container $ctr --to 10.215.0.2:7415 --criu "$criu" \
	--max-rounds 12 --stop-threshold 0 --round-interval 15 -i 300 -D "$tmp/src" --json \
	>"$tmp/mig.json" 2>"$tmp/mig.err" &
mp=$!
# two pre-dumps done: stop the writer, take the digest, end pre-copy
# (or memlens has ended: then its error below). All of it between two
# rounds (--round-interval 15): a SIGSTOP that lands while CRIU infects the
# writer fails the pre-dump (compel's remote_mprotect), and a pre-dump with
# the writer stopped leaves it out (CRIU's pre-dump skips stopped tasks),
# so that the final dump finds no parent for it and sends it in full
t_wait 300 eval '[ -e "$tmp/src/2/stats-dump" ] || ! kill -0 $mp 2>/dev/null'
[ -e "$tmp/src/2/stats-dump" ] || bad+=" no second pre-dump: $(tail -n 2 "$tmp/mig.err")"
tw=$(date +%s%N)
d1=$(stop_writer "$init") || bad+=" cannot stop the writer / take the digest"
kill -USR1 $mp
tu=$(date +%s%N)
echo "# memlens: pre-dump 2 seen, the writer stopped, the digest taken and SIGUSR1 sent in $(( (tu - tw) / 1000000 )) ms"
wait $mp
rc=$?
wait "$rp"
[ $rc -eq 0 ] || { notok $T "exit $rc: $(tail -n 3 "$tmp/mig.err") / $(tail -n 3 "$tmp/recv.out") / $(cat "$tmp/mig.json")"; exit 0; }
jcheck "migrate container" "$tmp/mig.json" 'j["precopy"] and j["exclusion"] and j["rounds"][-1]["kind"] == "dump"' \
	'len(j["rounds"]) >= 3 and j["container"]["init_pid"] == j["pid"]' \
	'j["container"]["runtime"] == "podman/runc" and j["container"]["rootfs"].endswith("/rootfs")' \
	'any(r["excluded_ranges"] > 0 for r in j["rounds"][1:-1])'
bad+=$JBAD
"$PY" -c 'import json,sys; j=json.load(open(sys.argv[1])); [print("# %s %d: at %d ms, %d pages, %d bytes, %d ms, hot %d ranges / %d bytes, %d left out" % (r["kind"], r["round"], r["start_ms"], r["pages"], r["bytes"], r["duration_ms"], r["hot_ranges"], r["hot_bytes"], r["excluded_ranges"])) for r in j["rounds"]]; print("# memlens: total %d bytes, downtime %d ms (final dump %d ms, restore %d ms)" % (j["total_bytes"], j["downtime_ms"], j["final_dump_ms"], j["restore_ms"]))' "$tmp/mig.json"
[ "$(jget "$tmp/mig.json" 'len(j["rounds"])' 2>/dev/null)" = 3 ] ||
	echo "# memlens: pre-dumps after the second ran with the writer stopped (CRIU skips it there): the final dump sends it in full"
new=$(jget "$tmp/mig.json" 'j["restored_pid"]')
pids+=("$new")
d2=$(rcli DEBUG DIGEST)
echo "# memlens: digest before the final dump $d1, after the restore $d2"
[ -n "$d1" ] && [ "$d1" = "$d2" ] || bad+=" digest $d1 before, $d2 after the restore"
w=$(writer "$new" | head -n 1)
[ -n "$w" ] && [ "$(pgrep -P "$new" -x redis-server)" ] || bad+=" the restored init $new lacks redis or the writer"
kill -CONT "$w" 2>/dev/null
c0=$(cmds)
t_wait 60 eval '[ "$(cmds)" -gt "$((c0 + 100))" ]' || bad+=" the restored writer does not write"
mem_sent=$(jget "$tmp/mig.json" 'j["total_bytes"]') mem_down=$(jget "$tmp/mig.json" 'j["downtime_ms"]')
# the images at the destination, counted as podman's are
mem_bytes=$(imgs "$tmp/dest")
per_proc memlens $(ls "$tmp/dest" | grep -xE '[0-9]+' | sort -n | sed "s|^|$tmp/dest/|")
# which pagemaps the page server found no parent for (sent in full)
for d in $(ls "$tmp/dest" | grep -xE '[0-9]+' | sort -n); do
	np=$(awk '/Opening [0-9]+\/[0-9]+/ { o = $0; sub(/.*Opening /, "", o) }
		/No parent image found/ { printf "%s ", o }' "$tmp/dest/$d"/page-server*.log 2>/dev/null)
	[ -z "$np" ] || echo "# memlens round $d: the page server had no parent for (type/id) $np"
done
echo "# memlens: $mem_bytes bytes of images at the destination ($mem_sent bytes sent by its own count)"
awk -v mb="$mem_bytes" -v md="$mem_down" -v pb="$podman_bytes" -v pd="$podman_down" 'BEGIN {
	printf "# same container, same run: podman chain %.1f MB, downtime %.1f s (checkpoint --with-previous + restore; no transfer); memlens %.1f MB, downtime %.1f s; memlens/podman: bytes %.2fx, downtime %.2fx\n",
		pb / 1e6, pd / 1e3, mb / 1e6, md / 1e3, pb ? mb / pb : 0, pd ? md / pd : 0 }'
kill -KILL "$new" 2>/dev/null
[ -z "$bad" ] && ok $T || notok $T "$bad"
exit 0
