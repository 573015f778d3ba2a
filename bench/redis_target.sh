#!/bin/bash
# A redis-server (Debian's package) holding KEYS keys of 1000 B, whose own
# child rewrites HOT of them without pause: a server's data in one
# allocator heap, a writer running until the freeze, and the writer's
# connection (a unix socket) inside the process tree, so that CRIU dumps
# both of its ends.
#   bench/redis_target.sh DIR [KEYS [HOT]]   (defaults 250000 and 20000)
# The script's process becomes the redis-server (exec); its child fills the
# keys (redis-benchmark SET key:N, N random below KEYS: every key once or
# more), prints "redis target ready: N keys", then becomes the writer (SET
# key:N, N random below HOT). Keys are numbered in random order, so the hot
# ones are spread through the heap. DIR gets redis.sock.
set -u
dir=$1 keys=${2:-250000} hot=${3:-20000}
sock=$dir/redis.sock
mkdir -p "$dir"
(
	for _ in $(seq 1200); do [ -S "$sock" ] && break; sleep 0.1; done
	redis-benchmark -s "$sock" -t set -r "$keys" -n $((keys * 4)) -d 1000 -P 32 -q >/dev/null 2>&1
	redis-benchmark -s "$sock" -t set -r "$hot" -n $((hot * 4)) -d 1000 -P 32 -q >/dev/null 2>&1
	echo "redis target ready: $(redis-cli -s "$sock" DBSIZE) keys"
	exec redis-benchmark -s "$sock" -t set -r "$hot" -n 2000000000 -d 1000 -c 1 -q >/dev/null 2>&1
) &
exec redis-server --port 0 --unixsocket "$sock" --unixsocketperm 700 --save '' --appendonly no \
	--dir "$dir" --daemonize no --loglevel warning
