#!/bin/bash
# memlens migrate --container on this machine: a podman (runc) container
# running redis, found by its podman name, by its ID through runc alone
# (podman off PATH), and by its cgroup directory; migrated to a directory
# (stop-and-copy: this kernel has no soft-dirty; the pre-copy rounds run in
# the 6.12 guest, tests/kernels/cases/96-migrate-container.sh), redis's
# DEBUG DIGEST the same before and after. Unknown and stopped containers
# are refused. The container's root is a directory with /usr and /etc bound
# read-only from this machine. The same through the agent's Migrate with the
# container named in the request (a real gRPC client), its bytes and
# downtime beside the command's. Then the same container run by crun
# (podman --runtime; on a host with hybrid cgroups through a wrapper that
# unmounts /sys/fs/cgroup/unified in crun's own mount namespace, since crun
# refuses them): found by its podman name and by its ID through crun
# alone, migrated, its bytes and downtime beside runc's. Skipped where
# podman, runc or redis is missing (the crun cases where crun is). A
# container sharing another's PID namespace is refused before CRIU runs.
set -u
. "$(dirname "$0")/../lib.bash"
cd "$(dirname "$0")/../.." || exit 1
MEMLENS=${MEMLENS:-$PWD/build/memlens}
PY=/usr/bin/python3
T=migrate_container

for p in podman runc redis-server redis-cli; do
	command -v $p >/dev/null || { skip $T "no $p here (scripts/packages/optional/image.txt, servers.txt)"; exit 0; }
done
[ "$(id -u)" -eq 0 ] || { skip $T "CRIU needs root"; exit 0; }
t_tmpdir migrate-container
CRIU=$(scripts/ensure-criu.sh 2>"$tmp/ensure.err")
[ -n "$CRIU" ] || { skip $T "no working CRIU: $(tail -n 1 "$tmp/ensure.err")"; exit 0; }
export CONTAINERS_CONF=${CONTAINERS_CONF:-$PWD/deploy/podman/containers.conf}
R=$tmp/rootfs
mkdir -p "$R"/{usr,etc,tmp,proc,dev,sys,run,var}
for l in bin lib lib64 sbin; do ln -s usr/$l "$R/$l"; done
ctr=mlctr$$ sock=$R/tmp/redis.sock
restored=
t_at_exit 'podman rm -f -t 0 $ctr >/dev/null 2>&1; [ -n "$restored" ] && kill -KILL $restored 2>/dev/null'
rcli() { timeout 30 redis-cli -s "$sock" "$@"; }
jget() { "$PY" -c 'import json,sys; j=json.loads(open(sys.argv[1]).read()); print(eval(sys.argv[2]))' "$1" "$2"; }

start_redis() {	# [RUNTIME]
	rm -f "$sock"
	podman rm -f -t 0 $ctr >/dev/null 2>&1
	podman run -d --name $ctr ${1:+--runtime "$1"} -v /usr:/usr:ro -v /etc:/etc:ro --network none --rootfs "$R" \
		redis-server --port 0 --unixsocket /tmp/redis.sock --save '' --enable-debug-command yes \
		--dir /tmp >"$tmp/run.out" 2>&1 && t_wait 30 test -S "$sock" && t_wait 30 rcli ping >/dev/null
}
if ! start_redis; then
	notok $T "podman run: $(tail -n 3 "$tmp/run.out")"
	exit 0
fi
init=$(podman inspect $ctr --format '{{.State.Pid}}')
id=$(podman inspect $ctr --format '{{.Id}}')

# lookups: each resolves to the same init; --to nowhere, so nothing is dumped
lookup() {	# NAME LABEL RUNTIME [env...]
	local arg=$1 label=$2 rt=$3 rc bad=
	shift 3
	env "$@" "$MEMLENS" migrate --container "$arg" --to 127.0.0.1:1 --criu "$CRIU" --json \
		>"$tmp/$label.json" 2>"$tmp/$label.err"
	rc=$?
	[ $rc -eq 1 ] && grep -q "cannot reach the destination" "$tmp/$label.err" || bad="exit $rc: $(tail -n 2 "$tmp/$label.err")"
	[ "$(jget "$tmp/$label.json" 'j["container"]["init_pid"], j["pid"], j["container"]["runtime"], j["container"]["rootfs"]')" = "($init, $init, '$rt', '$R')" ] ||
		bad+=" $(jget "$tmp/$label.json" 'j.get("container")')"
	[ -d /proc/$init ] || bad+=" the container stopped"
	[ -z "$bad" ] && ok ${T}_lookup_$label || notok ${T}_lookup_$label "$bad"
}
lookup $ctr podman_name podman/runc
# without podman on PATH: runc's own state, by ID
mkdir -p "$tmp/bin"
ln -s "$(command -v runc)" "$tmp/bin/runc"
lookup "$id" runc_id runc PATH="$tmp/bin"
cg=$(awk -F: '$1 == "0" {print $3}' /proc/$init/cgroup)
cgdir=
for d in /sys/fs/cgroup$cg /sys/fs/cgroup/unified$cg /sys/fs/cgroup/pids$cg; do
	[ -e "$d/cgroup.procs" ] && cgdir=$d && break
done
if [ -n "$cgdir" ]; then
	lookup "$cgdir" cgroup cgroup
else
	skip ${T}_lookup_cgroup "the container's cgroup ($cg) is not under /sys/fs/cgroup here"
fi

"$MEMLENS" migrate --container nosuch$$ --to "$tmp/x" --criu "$CRIU" 2>"$tmp/nosuch.err"
rc=$?
[ $rc -eq 3 ] && grep -q "no container 'nosuch$$'" "$tmp/nosuch.err" && ok ${T}_unknown ||
	notok ${T}_unknown "exit $rc: $(cat "$tmp/nosuch.err")"
"$MEMLENS" migrate --container $ctr -p 1 --to "$tmp/x" 2>"$tmp/both.err"
rc=$?
[ $rc -eq 2 ] && grep -q "not both" "$tmp/both.err" && ok ${T}_pid_and_container ||
	notok ${T}_pid_and_container "exit $rc: $(cat "$tmp/both.err")"

# the migration itself: data through the dump and the restore
bad=
rcli DEBUG POPULATE 20000 key 128 >/dev/null
d1=$(rcli DEBUG DIGEST)
"$MEMLENS" migrate --container $ctr --to "$tmp/dest" -D "$tmp/src" --criu "$CRIU" --json \
	>"$tmp/mig.json" 2>"$tmp/mig.err"
rc=$?
if [ $rc -ne 0 ]; then
	notok $T "exit $rc: $(tail -n 3 "$tmp/mig.err") $(grep -h Error "$tmp"/src/*/dump.log "$tmp"/dest/*/restore.log 2>/dev/null | head -n 3)"
else
	restored=$(jget "$tmp/mig.json" 'j["restored_pid"]')
	d2=$(rcli DEBUG DIGEST)
	echo "# $(jget "$tmp/mig.json" '"%d bytes, downtime %d ms, restored as pid %d" % (j["total_bytes"], j["downtime_ms"], j["restored_pid"])')"
	[ -n "$d1" ] && [ "$d1" = "$d2" ] || bad+=" digest $d1 before, $d2 after"
	[ "$(cat /proc/$restored/comm 2>/dev/null)" = redis-server ] || bad+=" pid $restored is not redis"
	[ -d /proc/$init ] && bad+=" the source's init $init still runs"
	grep -q -- "--root=$R" "$tmp/dest/1/memlens-restore-opts.txt" || bad+=" no --root in the restore's record"
	grep -q -- "--external=mnt\[\]" "$tmp/src/1/dump.log" 2>/dev/null ||
		grep -q "autodetected external mount" "$tmp/src/1/dump.log" || bad+=" the mounts were not external"
	[ -z "$bad" ] && ok $T || notok $T "$bad"
fi

# the same through the agent's Migrate, the container named in the request
# (a real gRPC client); the agent has no target of its own
A=agent_migrate_container
agent_sock=$tmp/agent.sock
agent() { "$PY" tests/agent/migrate_client.py "$agent_sock" "$@"; }
if ! "$PY" -c 'import grpc, grpc_tools' 2>/dev/null || ! [ -x "$(dirname "$MEMLENS")/memlens-agent" ]; then
	skip $A "no memlens-agent or python3-grpcio here"
else
	"$MEMLENS" agent --socket "$agent_sock" --comm memlens-none --criu "$CRIU" \
		--images-root "$tmp/agent-images" 2>"$tmp/agent.err" &
	agent_pid=$!
	t_at_exit 'kill $agent_pid 2>/dev/null'
	t_wait 30 test -S "$agent_sock" || notok $A "the agent did not start: $(tail -n 3 "$tmp/agent.err")"
	agent container=nosuch$$ images_dir=src destination_dir=dest >"$tmp/a-nosuch.json"
	[ "$(jget "$tmp/a-nosuch.json" 'j["code"] == "NOT_FOUND" and "no container '"'nosuch$$'"'" in j["error"] and "podman ps" in j["error"]')" = True ] &&
		ok ${A}_unknown || notok ${A}_unknown "$(cat "$tmp/a-nosuch.json")"
	[ -n "$restored" ] && kill -KILL $restored 2>/dev/null
	restored=
	bad=
	if ! start_redis; then
		notok $A "podman run: $(tail -n 3 "$tmp/run.out")"
	else
		init=$(podman inspect $ctr --format '{{.State.Pid}}')
		rcli DEBUG POPULATE 20000 key 128 >/dev/null
		d1=$(rcli DEBUG DIGEST)
		agent container=$ctr images_dir=src destination_dir=dest >"$tmp/a-mig.json"
		rc=$?
		if [ $rc -ne 0 ]; then
			notok $A "$(cat "$tmp/a-mig.json") $(grep -h Error "$tmp"/agent-images/src/*/dump.log "$tmp"/agent-images/dest/*/restore.log 2>/dev/null | head -n 3)"
		else
			restored=$(jget "$tmp/a-mig.json" 'j["restored_pid"]')
			d2=$(rcli DEBUG DIGEST)
			echo "# agent: $(jget "$tmp/a-mig.json" '"%d bytes, downtime %d ms, restored as pid %d" % (j["total_bytes"], j["downtime_ms"], j["restored_pid"])')"
			echo "# same run, agent/CLI: bytes $(jget "$tmp/a-mig.json" '"%.2f" % (j["total_bytes"] / '"$(jget "$tmp/mig.json" 'j["total_bytes"]')"')'), downtime $(jget "$tmp/a-mig.json" '"%.2f" % (j["downtime_ms"] / '"$(jget "$tmp/mig.json" 'max(j["downtime_ms"], 1)')"')')"
			[ -n "$d1" ] && [ "$d1" = "$d2" ] || bad+=" digest $d1 before, $d2 after"
			[ "$(cat /proc/$restored/comm 2>/dev/null)" = redis-server ] || bad+=" pid $restored is not redis"
			[ -d /proc/$init ] && bad+=" the source's init $init still runs"
			[ "$(jget "$tmp/a-mig.json" 'j["pid"], j["container_name"], j["container_runtime"], j["container_rootfs"], len(j["container_id"])')" = "($init, '$ctr', 'podman/runc', '$R', 64)" ] ||
				bad+=" reply: $(cat "$tmp/a-mig.json")"
			grep -q -- "--root=$R" "$tmp/agent-images/dest/1/memlens-restore-opts.txt" || bad+=" no --root in the restore's record"
			[ -z "$bad" ] && ok $A || notok $A "$bad"
		fi
	fi
	# by its cgroup directory (relative to /sys/fs/cgroup, as a client gives it)
	[ -n "$restored" ] && kill -KILL $restored 2>/dev/null
	restored=
	bad=
	if [ -z "$cgdir" ]; then
		skip ${A}_cgroup "the container's cgroup is not under /sys/fs/cgroup here"
	elif ! start_redis; then
		notok ${A}_cgroup "podman run: $(tail -n 3 "$tmp/run.out")"
	else
		init=$(podman inspect $ctr --format '{{.State.Pid}}')
		cg=$(awk -F: '$1 == "0" {print $3}' /proc/$init/cgroup)
		rel=${cgdir#/sys/fs/cgroup/}
		rel=${rel%%/*}$cg
		[ "$rel" = "${rel#/}" ] || rel=${rel#/}
		rcli DEBUG POPULATE 2000 key 128 >/dev/null
		d1=$(rcli DEBUG DIGEST)
		agent container="$rel" images_dir=src3 destination_dir=dest3 >"$tmp/a-cg.json"
		rc=$?
		if [ $rc -ne 0 ]; then
			notok ${A}_cgroup "container=$rel: $(cat "$tmp/a-cg.json")"
		else
			restored=$(jget "$tmp/a-cg.json" 'j["restored_pid"]')
			[ "$(rcli DEBUG DIGEST)" = "$d1" ] || bad+=" digest"
			[ "$(jget "$tmp/a-cg.json" 'j["pid"], j["container_runtime"], j["container_rootfs"]')" = "($init, 'cgroup', '$R')" ] ||
				bad+=" reply: $(cat "$tmp/a-cg.json")"
			[ -z "$bad" ] && ok ${A}_cgroup || notok ${A}_cgroup "container=$rel:$bad"
		fi
	fi
fi

# crun: the same container run by crun (podman --runtime), found by its
# podman name and by its ID through crun alone, then migrated. crun refuses
# a host with hybrid cgroups (a cgroup2 hierarchy at /sys/fs/cgroup/unified
# beside the v1 controllers): there it runs through a wrapper that unmounts
# that hierarchy in a mount namespace of its own, where crun sees cgroup v1
C=migrate_container_crun
[ -n "$restored" ] && kill -KILL $restored 2>/dev/null
restored=
crun_rt=$(command -v crun)
if [ -z "$crun_rt" ]; then
	skip $C "no crun here (scripts/packages/optional/image.txt)"
else
	podman rm -f -t 0 $ctr >/dev/null 2>&1
	if ! podman run --rm --runtime "$crun_rt" -v /usr:/usr:ro --network none --rootfs "$R" true \
		>"$tmp/crun-probe.out" 2>&1 && grep -q "hybrid mode" "$tmp/crun-probe.out"; then
		mkdir -p "$tmp/crunw"
		printf '#!/bin/sh\nexec unshare -m sh -c %s "%s" "$@"\n' \
			"'umount /sys/fs/cgroup/unified 2>/dev/null; exec \"\$0\" \"\$@\"'" "$crun_rt" \
			>"$tmp/crunw/crun"
		chmod +x "$tmp/crunw/crun"
		crun_rt=$tmp/crunw/crun
		echo "# crun refuses this host's hybrid cgroups: run through $crun_rt, which unmounts /sys/fs/cgroup/unified"
	fi
	if ! start_redis "$crun_rt"; then
		skip $C "crun cannot run the container here: $(tail -n 2 "$tmp/run.out") $(tail -n 2 "$tmp/crun-probe.out")"
	else
		init=$(podman inspect $ctr --format '{{.State.Pid}}')
		id=$(podman inspect $ctr --format '{{.Id}}')
		lookup $ctr crun_podman_name podman/crun
		mkdir -p "$tmp/crunbin"
		ln -sf "$(command -v crun)" "$tmp/crunbin/crun"
		lookup "$id" crun_id crun PATH="$tmp/crunbin"
		bad=
		rcli DEBUG POPULATE 20000 key 128 >/dev/null
		d1=$(rcli DEBUG DIGEST)
		"$MEMLENS" migrate --container $ctr --to "$tmp/crun-dest" -D "$tmp/crun-src" --criu "$CRIU" \
			--json >"$tmp/crun-mig.json" 2>"$tmp/crun-mig.err"
		rc=$?
		if [ $rc -ne 0 ]; then
			notok $C "exit $rc: $(tail -n 3 "$tmp/crun-mig.err") $(grep -h Error "$tmp"/crun-src/*/dump.log "$tmp"/crun-dest/*/restore.log 2>/dev/null | head -n 3)"
		else
			restored=$(jget "$tmp/crun-mig.json" 'j["restored_pid"]')
			d2=$(rcli DEBUG DIGEST)
			echo "# crun: $(jget "$tmp/crun-mig.json" '"%d bytes, downtime %d ms, restored as pid %d" % (j["total_bytes"], j["downtime_ms"], j["restored_pid"])')"
			[ -s "$tmp/mig.json" ] &&
				echo "# same run, crun/runc: bytes $(jget "$tmp/crun-mig.json" '"%.3f" % (j["total_bytes"] / '"$(jget "$tmp/mig.json" 'j["total_bytes"]')"')'), downtime $(jget "$tmp/crun-mig.json" '"%.2f" % (j["downtime_ms"] / '"$(jget "$tmp/mig.json" 'max(j["downtime_ms"], 1)')"')')"
			[ -n "$d1" ] && [ "$d1" = "$d2" ] || bad+=" digest $d1 before, $d2 after"
			[ "$(cat /proc/$restored/comm 2>/dev/null)" = redis-server ] || bad+=" pid $restored is not redis"
			[ -d /proc/$init ] && bad+=" the source's init $init still runs"
			[ "$(jget "$tmp/crun-mig.json" 'j["container"]["runtime"]')" = podman/crun ] ||
				bad+=" runtime $(jget "$tmp/crun-mig.json" 'j["container"]')"
			grep -q -- "--root=$R" "$tmp/crun-dest/1/memlens-restore-opts.txt" || bad+=" no --root in the restore's record"
			[ -z "$bad" ] && ok $C || notok $C "$bad"
		fi
	fi
	[ -n "$restored" ] && kill -KILL $restored 2>/dev/null
	restored=
fi

# a container sharing another's PID namespace (podman run --pid
# container:X, as in a Pod with shareProcessNamespace): refused before
# CRIU runs, by the command and by the agent
S=migrate_container_shared_pidns
podman rm -f -t 0 ${ctr}b >/dev/null 2>&1
t_at_exit 'podman rm -f -t 0 ${ctr}b >/dev/null 2>&1'
if ! start_redis || ! podman run -d --name ${ctr}b --pid container:$ctr -v /usr:/usr:ro --network none \
	--rootfs "$R" sleep 600 >"$tmp/run2.out" 2>&1; then
	notok $S "podman run: $(tail -n 3 "$tmp/run.out" "$tmp/run2.out")"
else
	"$MEMLENS" migrate --container ${ctr}b --to "$tmp/z" -D "$tmp/zs" --criu "$CRIU" 2>"$tmp/shared.err"
	rc=$?
	[ $rc -eq 1 ] && grep -q "shares its PID namespace" "$tmp/shared.err" && [ ! -e "$tmp/zs/1" ] &&
		[ "$(podman inspect --format '{{.State.Running}}' ${ctr}b)" = true ] && ok $S ||
		notok $S "exit $rc: $(cat "$tmp/shared.err")"
	if [ -S "$agent_sock" ]; then
		agent container=${ctr}b images_dir=src4 destination_dir=dest4 >"$tmp/a-shared.json"
		[ "$(jget "$tmp/a-shared.json" 'j["code"] == "FAILED_PRECONDITION" and "shares its PID namespace" in j["error"]')" = True ] &&
			[ ! -e "$tmp/agent-images/src4/1" ] && ok agent_$S ||
			notok agent_$S "$(cat "$tmp/a-shared.json")"
	fi
fi
podman rm -f -t 0 ${ctr}b >/dev/null 2>&1

# a stopped container: refused, nothing run
podman rm -f -t 0 $ctr >/dev/null 2>&1
podman create --name $ctr -v /usr:/usr:ro --network none --rootfs "$R" sleep 1 >/dev/null 2>&1
"$MEMLENS" migrate --container $ctr --to "$tmp/y" --criu "$CRIU" 2>"$tmp/stopped.err"
rc=$?
[ $rc -eq 3 ] && grep -q "not running" "$tmp/stopped.err" && ok ${T}_stopped ||
	notok ${T}_stopped "exit $rc: $(cat "$tmp/stopped.err")"
if [ -S "$agent_sock" ]; then
	agent container=$ctr images_dir=src2 destination_dir=dest2 >"$tmp/a-stopped.json"
	[ "$(jget "$tmp/a-stopped.json" 'j["code"] == "FAILED_PRECONDITION" and "not running" in j["error"] and "start it first" in j["error"]')" = True ] &&
		[ ! -e "$tmp/agent-images/src2" ] && ok ${A}_stopped || notok ${A}_stopped "$(cat "$tmp/a-stopped.json")"
fi
t_done
