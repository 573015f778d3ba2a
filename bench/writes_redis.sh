#!/bin/bash
# make bench BENCH=writes_redis: what write tracking costs a real server.
# Debian's redis-server holding KEYS keys of 1000 B; redis-benchmark SETs
# N random ones of them (10 clients), untracked, under `memlens writes -i
# INTERVAL` (exact), under `memlens writes -i INTERVAL --sample 1/K`
# (sampled) and, with MODES="untracked exact sampled bounded" (as
# bench/writes_overhead.sh runs it), `--max-overhead PCT` (bounded), in
# turn, REPS times (the modes interleaved so that they share the load of
# the machine, their order rotated each time), after one untracked run
# not counted. Each run has a fresh server, loaded the same way; the
# tracked ones start once memlens has reported its first interval (the
# whole heap write-protected). Prints, per mode, the median SET throughput
# and p99 latency, and their ratios against the untracked runs of the same
# run, and what memlens said the sampled and bounded runs cost.
set -u
M=${MEMLENS:?}
command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null || {
	echo "skip: redis-server and redis-benchmark are not installed (apt-get install redis-server redis-tools)"
	exit 0
}
T=$(mktemp -d "${TMPDIR:-/tmp}/writes_redis.XXXXXX")
srv=
trap '[ -n "$srv" ] && kill -9 $srv 2>/dev/null; rm -rf "$T"' EXIT

keys=${KEYS:-100000} n=${N:-200000} iv=${INTERVAL:-1000} k=${K:-10} reps=${REPS:-3}
pct=${PCT:-2}
read -r -a modes <<<"${MODES:-untracked exact sampled}"
sock=$T/redis.sock

start_server() {
	rm -f "$sock"
	redis-server --port 0 --unixsocket "$sock" --unixsocketperm 700 --save '' \
		--appendonly no --dir "$T" --daemonize no --loglevel warning >"$T/srv.log" 2>&1 &
	srv=$!
	for _ in $(seq 600); do [ -S "$sock" ] && break; sleep 0.05; done
	redis-benchmark -s "$sock" -t set -r "$keys" -n $((keys * 4)) -d 1000 -P 32 -q >/dev/null 2>&1
}

stop_server() {
	kill -9 "$srv" 2>/dev/null
	wait "$srv" 2>/dev/null
	srv=
}

# one run: MODE (untracked, exact, sampled) -> "rps p99" on stdout
run() {
	local mode=$1 ml= extra=()
	start_server
	if [ "$mode" != untracked ]; then
		[ "$mode" = sampled ] && extra=(--sample "1/$k")
		[ "$mode" = bounded ] && extra=(--max-overhead "$pct")
		: >"$T/w.json"
		"$M" writes -p "$srv" -i "$iv" "${extra[@]}" -q --json -o "$T/w.json" 2>"$T/w.err" &
		ml=$!
		for _ in $(seq 1200); do
			grep -q '"type": *"interval"' "$T/w.json" 2>/dev/null && break
			kill -0 $ml 2>/dev/null || break
			sleep 0.05
		done
		if ! grep -q '"type": *"interval"' "$T/w.json"; then
			echo "memlens writes did not start: $(tail -n 2 "$T/w.err")" >&2
			kill -9 $ml 2>/dev/null
			stop_server
			return 1
		fi
	fi
	# the server's CPU time (every thread's, ns) around the benchmark: its cost
	# per SET, which the machine's load moves less than its throughput
	local c0 c1
	c0=$(cat /proc/"$srv"/task/*/schedstat | awk '{ s += $1 } END { print s }')
	redis-benchmark -s "$sock" -t set -r "$keys" -n "$n" -d 1000 -c 10 --csv 2>/dev/null |
		awk -F'"' '$2 == "SET" { printf "%s %s ", $4, $14 }'
	c1=$(cat /proc/"$srv"/task/*/schedstat | awk '{ s += $1 } END { print s }')
	echo "$c0 $c1 $n" | awk '{ printf "%.2f\n", ($2 - $1) / $3 / 1000 }'
	if [ -n "$ml" ]; then
		kill -INT $ml
		wait $ml
		# the sampled runs' own estimate of what they cost, and the fraction they ended at
		python3 -c '
import json, sys
s = [json.loads(l).get("sampling") for l in open(sys.argv[1])
     if l.strip() and json.loads(l).get("type") == "interval"]
s = [x for x in s if x]
print("%.2f%% (1/%d)" % (sum(x["overhead_pct"] for x in s) / len(s), s[-1]["k"]) if s else "-",
      file=open(sys.argv[2], "a"))' "$T/w.json" "$T/oh.$mode"
	fi
	# the server survived tracking: it still answers
	redis-cli -s "$sock" PING | grep -q PONG || echo "redis did not answer after $mode" >&2
	stop_server
}

echo "redis-server $keys keys x 1000 B; redis-benchmark SET -n $n -c 10, ${modes[*]}"
echo "(writes -i $iv; sampled: --sample 1/$k; bounded: --max-overhead $pct), $reps runs each, interleaved:"
# a first server's run is slower (cold caches, page cache): one untracked, not counted
run untracked >/dev/null || true
for r in $(seq "$reps"); do
	# the order rotated each time: no mode always runs after the same one
	for i in "${!modes[@]}"; do
		mode=${modes[$(((i + r - 1) % ${#modes[@]}))]}
		out=$(run $mode) || continue
		echo "$out" >>"$T/r.$mode"
		echo "    run $r $mode: $out (SET/s, p99 ms, server CPU us per SET)"
	done
done
python3 - "$T" "${modes[@]}" <<'PY'
import os, statistics, sys
t = sys.argv[1]
def med(mode, col):
    f = os.path.join(t, "r." + mode)
    if not os.path.exists(f):
        return None
    v = [float(l.split()[col]) for l in open(f) if l.strip()]
    return statistics.median(v) if v else None
u_rps, u_p99, u_cpu = med("untracked", 0), med("untracked", 1), med("untracked", 2)
print("    %-10s %10s %8s %10s %10s %8s %10s" % ("mode", "SET/s", "p99 ms", "us CPU/SET",
      "SET/s x u", "p99 x u", "CPU/SET x u"))
for mode in sys.argv[2:]:
    rps, p99, cpu = med(mode, 0), med(mode, 1), med(mode, 2)
    if rps is None or not u_rps:
        print("    %-10s no result" % mode)
        continue
    print("    %-10s %10.0f %8.3f %10.2f %10.2f %8.2f %10.2f" % (mode, rps, p99, cpu,
          rps / u_rps, p99 / u_p99, cpu / u_cpu))
for mode in ("sampled", "bounded"):
    oh = os.path.join(t, "oh." + mode)
    if os.path.exists(oh):
        print("    the %s runs said they cost (of a CPU, the fraction they ended at): %s"
              % (mode, ", ".join(l.strip() for l in open(oh))))
print("    medians of the runs; x u: against the untracked runs of this same run; CPU/SET:")
print("    the server's CPU time (all its threads) during the benchmark over the SETs")
PY
