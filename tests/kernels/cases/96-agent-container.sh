#!/bin/bash
# case-timeout: 1200
# The agent's Migrate of a podman (runc) container, named in the request
# (its container field, a real gRPC client: tests/agent/migrate_client.py),
# beside `memlens migrate --container` of an identical container in the
# same run, both from one network namespace to a `memlens migrate
# --receive` in another, with pre-copy and the hot pages left out (CRIU
# 4.1.1 with memlens's patches). Each container runs redis and a writer
# (redis-benchmark), both children of the container's sh, as in
# 96-migrate-container.sh: the writer is stopped after the second
# pre-dump, redis's DEBUG DIGEST taken, and compared with the restored
# redis's; the restored writer must write again. The agent has no target
# of its own (--comm of a process that never runs): the request's
# container is what it migrates. Pre-dumps need soft-dirty (the 6.12 guest).
set -u
cd "$(dirname "$0")/../../.." || exit 1
. tests/kernels/cases/needs_write_tracking.bash agent
. tests/kernels/cases/criu_lib.bash
T=agent_migrate_container

for p in podman runc redis-server redis-cli redis-benchmark; do
	command -v $p >/dev/null || { skip $T "no $p here (scripts/packages/optional/image.txt, servers.txt)"; exit 0; }
done
"$PY" -c 'import grpc, grpc_tools' 2>/dev/null || { skip $T "no python3-grpcio / grpc_tools here"; exit 0; }
criu=
for c in "${CRIUS[@]}"; do [ "${c%%=*}" = page ] && criu=${c#*=}; done
[ -n "$criu" ] || { skip $T "no CRIU with memlens's patches here (scripts/ensure-criu.sh)"; exit 0; }
has_soft_dirty "$criu" || { skip $T "this kernel has no soft-dirty tracking (pre-copy needs it)"; exit 0; }
dumps_inet_sockets "$criu" || { skip $T "$SOCK_WHY"; exit 0; }

# runc (and podman's checks) run the CRIU on PATH: the patched one
export PATH=$(dirname "$criu"):$PATH CONTAINERS_CONF=$PWD/deploy/podman/containers.conf
S=$tmp/store
mkdir -p "$S"
printf '[storage]\ndriver = "vfs"\ngraphroot = "%s/root"\nrunroot = "%s/run"\n' "$S" "$S" >"$S/storage.conf"
export CONTAINERS_STORAGE_CONF=$S/storage.conf
P=(podman --runtime runc)
ns_a=mlagcA$$ ns_b=mlagcB$$ c_cli=mlagcC$$ c_agent=mlagcG$$
t_at_exit '"${P[@]}" rm -f -t 0 $c_cli $c_agent >/dev/null 2>&1; ip netns del $ns_a 2>/dev/null; ip netns del $ns_b 2>/dev/null'
deploy/podman/seccomp-userfaultfd.py "$S/seccomp.json" >"$tmp/seccomp.out" 2>&1 ||
	{ notok $T "seccomp profile: $(tail -n 2 "$tmp/seccomp.out")"; exit 0; }
if ! netns_up "$ns_a" "$ns_b" 10.222.0.1 10.222.0.2 2>"$tmp/ns.err"; then
	skip $T "cannot set up two network namespaces: $(cat "$tmp/ns.err")"
	exit 0
fi
in_a=(nsenter --net=/run/netns/"$ns_a") in_b=(nsenter --net=/run/netns/"$ns_b")

# start_ctr NAME: a container with its own root (the host's /usr and /etc
# bound read-only), redis with 100000 cold keys and its writer; sets R
# (its root), SOCK (redis's socket) and INIT
start_ctr() {
	local name=$1 l
	R=$tmp/rootfs-$name SOCK=$tmp/rootfs-$name/tmp/redis.sock
	mkdir -p "$R"/{usr,etc,tmp,proc,dev,sys,run,var}
	for l in bin lib lib64 sbin; do ln -s usr/$l "$R/$l"; done
	"${P[@]}" run -d --name "$name" --security-opt seccomp="$S/seccomp.json" -v /usr:/usr:ro -v /etc:/etc:ro --network none --rootfs "$R" \
		sh -c 'redis-server --port 0 --unixsocket /tmp/redis.sock --save "" --appendonly no \
			--enable-debug-command yes --dir /tmp >/tmp/redis.log 2>&1 &
		while [ ! -e /tmp/go ]; do sleep 0.2; done
		redis-benchmark -s /tmp/redis.sock -t set -r 2000 -d 1024 -n 1000000000 -c 1 -q \
			>/dev/null 2>&1 &
		wait' >"$tmp/run-$name.out" 2>&1 || { echo "podman run: $(tail -n 3 "$tmp/run-$name.out")"; return 1; }
	t_wait 60 test -S "$SOCK" && t_wait 30 rcli ping >/dev/null ||
		{ echo "redis did not start: $(tail -n 3 "$R/tmp/redis.log" 2>/dev/null)"; return 1; }
	rcli DEBUG POPULATE 100000 key 256 >/dev/null
	touch "$R/tmp/go"
	INIT=$("${P[@]}" inspect "$name" --format '{{.State.Pid}}')
	t_wait 30 writer "$INIT" >/dev/null || { echo "the writer did not start"; return 1; }
	echo "# container $name: init $INIT, redis $(pgrep -P "$INIT" -x redis-server), writer $(writer "$INIT" | head -n 1)"
}
rcli() { timeout 60 redis-cli -s "$SOCK" "$@"; }
writer() { pgrep -P "$1" -x redis-benchmark; }
cmds() { rcli INFO stats | sed -n 's/^total_commands_processed:\([0-9]*\).*/\1/p' | tr -d '\r'; }

# migrate HOW NAME PORT: HOW cli or agent; the reply (JSON) in $tmp/HOW.json;
# checks the data and the restored container; sets BYTES and DOWN
migrate() {
	local how=$1 name=$2 port=$3 src mp rp rc d1 d2 new w c0 nd j=$tmp/$1.json bad=
	"${in_b[@]}" "$MEMLENS" migrate --receive --listen 10.222.0.2:$port --criu "$criu" \
		-D "$tmp/dest-$how" >"$tmp/recv-$how.out" 2>&1 &
	rp=$!
	pids+=("$rp")
	wait_for_line "$tmp/recv-$how.out" receiving 10
	# the same parameters both ways: 5 pre-dumps 2 s apart (the writer
	# stopped after the second), profiling every 300 ms
	if [ "$how" = cli ]; then
		src=$tmp/src-cli
		"${in_a[@]}" "$MEMLENS" migrate --container "$name" --to 10.222.0.2:$port --criu "$criu" \
			--max-rounds 5 --stop-threshold 0.001 --round-interval 2 -i 300 -D "$src" --json \
			>"$j" 2>"$tmp/$how.err" &
	else
		src=$tmp/agent-images/src
		"$PY" tests/agent/migrate_client.py "$tmp/agent.sock" container="$name" \
			destination=10.222.0.2:$port images_dir=src max_rounds=5 threshold_mib=0.001 \
			round_seconds=2 interval_ms=300 timeout_ms=300000 >"$j" 2>"$tmp/$how.err" &
	fi
	mp=$!
	t_wait 300 eval '[ -e "$src/2/stats-dump" ] || ! kill -0 $mp 2>/dev/null'
	[ -e "$src/2/stats-dump" ] || bad+=" no second pre-dump: $(tail -n 2 "$tmp/$how.err") $(cat "$j")"
	d1=$(stop_writer "$INIT") || bad+=" cannot stop the writer / take the digest"
	# the rounds begun by then: the final dump must come after them (the
	# digest's connection closed before it froze redis)
	nd=$(find "$src" -mindepth 1 -maxdepth 1 -name '[0-9]*' | wc -l)
	wait $mp
	rc=$?
	wait "$rp"
	[ $rc -eq 0 ] || { notok ${T}_$how "exit $rc: $(tail -n 3 "$tmp/$how.err") / $(tail -n 3 "$tmp/recv-$how.out") / $(cat "$j")"; return 1; }
	if [ "$how" = cli ]; then
		jcheck "$how" "$j" 'j["container"]["init_pid"] == j["pid"] and j["container"]["runtime"] == "podman/runc"'
	else
		jcheck "$how" "$j" 'j["pid"] > 0 and j["container_runtime"] == "podman/runc"' \
			'j["container_name"] == "'"$name"'" and len(j["container_id"]) == 64' \
			'j["container_rootfs"].endswith("/rootfs-'"$name"'")'
	fi
	bad+=$JBAD
	jcheck "$how" "$j" 'j["precopy"] and j["exclusion"] and j["rounds"][-1]["kind"] == "dump"' \
		'len(j["rounds"]) > '"$nd" \
		'any(r["excluded_ranges"] > 0 for r in j["rounds"][:-1])' \
		'j["total_bytes"] == sum(r["bytes"] for r in j["rounds"])'
	bad+=$JBAD
	"$PY" -c 'import json,sys; j=json.load(open(sys.argv[1])); [print("# %s %s %d: %d pages, %d bytes, %d ms, hot %d ranges, %d left out" % (sys.argv[2], r["kind"], r["round"], r["pages"], r["bytes"], r["duration_ms"], r["hot_ranges"], r["excluded_ranges"])) for r in j["rounds"]]; print("# %s: total %d bytes, downtime %d ms (final dump %d ms, restore %d ms)" % (sys.argv[2], j["total_bytes"], j["downtime_ms"], j["final_dump_ms"], j["restore_ms"]))' "$j" "$how"
	new=$(jget "$j" 'j["restored_pid"]')
	pids+=("$new")
	# (its network namespace is the container's own, restored with it)
	d2=$(rcli DEBUG DIGEST)
	echo "# $how: digest before the final dump $d1, after the restore $d2"
	[ -n "$d1" ] && [ "$d1" = "$d2" ] || bad+=" digest $d1 before, $d2 after the restore"
	w=$(writer "$new" | head -n 1)
	[ -n "$w" ] && [ "$(pgrep -P "$new" -x redis-server)" ] || bad+=" the restored init $new lacks redis or the writer"
	kill -CONT "$w" 2>/dev/null
	c0=$(cmds)
	t_wait 60 eval '[ "$(cmds)" -gt "$((c0 + 100))" ]' || bad+=" the restored writer does not write"
	BYTES=$(jget "$j" 'j["total_bytes"]') DOWN=$(jget "$j" 'j["downtime_ms"]')
	kill -KILL "$new" 2>/dev/null
	[ -z "$bad" ] && ok ${T}_$how || notok ${T}_$how "$bad"
}
# stop_writer INIT: stop the writer, print redis's digest, and wait until
# redis has closed the digest's connection: a dump that froze redis before
# that would find a unix socket whose peer (redis-cli, outside the
# container) it cannot dump ("Unix socket N not found"), as happened on a
# loaded machine
socks() { find /proc/"$1"/fd -lname 'socket:*' 2>/dev/null | wc -l; }
stop_writer() {
	local w r n0
	w=$(writer "$1" | head -n 1)
	r=$(pgrep -P "$1" -x redis-server)
	n0=$(socks "$r")
	kill -STOP "$w" && wait_for_state "$w" '^T' 30 && rcli DEBUG DIGEST &&
		t_wait 30 eval '[ "$(socks "$r")" -le "$n0" ]'
}

# ---- memlens migrate --container
if start_ctr "$c_cli" >"$tmp/ctr.out" 2>&1; then
	cat "$tmp/ctr.out"
	migrate cli "$c_cli" 7421 && cli_bytes=$BYTES cli_down=$DOWN
else
	notok ${T}_cli "$(cat "$tmp/ctr.out")"
fi

# ---- the agent's Migrate with container = the name
"${in_a[@]}" "$MEMLENS" agent --socket "$tmp/agent.sock" --comm memlens-none --criu "$criu" \
	--images-root "$tmp/agent-images" --criu-timeout 300 2>"$tmp/agent.err" &
pids+=("$!")
t_wait 60 test -S "$tmp/agent.sock" || { notok $T "the agent did not start: $(tail -n 3 "$tmp/agent.err")"; exit 0; }
# an unknown container: NOT_FOUND, what to do said
"$PY" tests/agent/migrate_client.py "$tmp/agent.sock" container=mlagc-none$$ destination=10.222.0.2:7499 \
	images_dir=none >"$tmp/none.json" 2>&1
jcheck unknown "$tmp/none.json" 'j["code"] == "NOT_FOUND" and "no container" in j["error"] and "podman ps" in j["error"]'
[ -z "$JBAD" ] && ok ${T}_unknown || notok ${T}_unknown "$JBAD $(cat "$tmp/none.json")"
if start_ctr "$c_agent" >"$tmp/ctr.out" 2>&1; then
	cat "$tmp/ctr.out"
	migrate agent "$c_agent" 7422 && agent_bytes=$BYTES agent_down=$DOWN
else
	notok ${T}_agent "$(cat "$tmp/ctr.out")"
fi
if [ -n "${cli_bytes:-}" ] && [ -n "${agent_bytes:-}" ]; then
	echo "# same run, same container set-up: agent Migrate $agent_bytes bytes, downtime $agent_down ms; memlens migrate --container $cli_bytes bytes, downtime $cli_down ms; agent/CLI: bytes $(awk -v a="$agent_bytes" -v c="$cli_bytes" 'BEGIN {printf "%.2f", a / c}'), downtime $(awk -v a="$agent_down" -v c="$cli_down" 'BEGIN {printf "%.2f", a / c}')"
fi
exit 0
