#!/bin/bash
# Live migration measured side by side, by `memlens migrate`: no exclusion
# (none), hot memory left out page by page by the CRIU with memlens's patches
# (page, scripts/ensure-criu.sh) and as whole VMAs by the CRIU fork with the
# exclude options (vma, scripts/ensure-criu-exclude.sh, where its source is
# there), on migwork (64 MiB rewritten continuously, 192 MiB written once and
# idle, 32 MiB hot first and cold after 12 s), heap (migwork -S: 64 MiB hot
# inside one 256 MiB VMA, the shape of a server's allocator heap), redis
# (Debian's redis-server, 250,000 keys of 1000 B, its own child rewriting
# 20,000 of them until the freeze: bench/redis_target.sh), memwrite, matmul
# and memalloc;
# next to each, what `memlens migrate-model` predicts from a `memlens writes
# --record` trace of the same workload taken in the same run (a separate
# instance on the same timeline: the trace's profiler and the migration's
# cannot watch one process at once), its rounds at the times the migration
# made them (--round-at), its bandwidth and the fixed parts of its downtime
# fitted from what it measured (migrate-model --calibrate: the final dump's
# and the restore's); next to that, the downtime the model predicts fitted
# from the workload's none migration made with the same CRIU (none-fork for
# vma) and, for post-copy, from another workload's migration in the same
# mode (XFIT_FROM). Needs soft-dirty (pre-dump): run it in
# the 6.12 guest: CASES=migrate-bench tests/kernels/run.sh 6.12 (the guest
# cases 9N-migrate-bench-WORKLOAD.sh, one workload each).
#   bench/migrate.sh [WORKLOAD...]   (default: all six)
# MODEL_ONLY=1 migrates nothing: it runs the model again on a run's trace
# and migrations ($OUTDIR/migrate-WORKLOAD.trace, or .trace.xz, and
# migrate-WORKLOAD-MODE.json,
# kept by the run) and rewrites the rows, the data checks as the run found
# them: for a model that changed since (any machine, no soft-dirty needed).
# MODES picks the modes (default: none none-fork vma page page-cool
# page-postcopy postcopy-only; none-fork: no exclusion with the CRIU fork,
# the peer its vma mode is measured and fitted against; postcopy-only:
# --postcopy -m 0, no pre-dump round: the tree restored at once, all its
# memory following;
# commas also separate them, for the guest's kernel command line:
# GUEST_APPEND=MODES=none,page-postcopy);
# REDIS_KEYS and REDIS_HOT size redis (default 250000 and 20000).
# One JSON line per mode into $OUTDIR/migrate-WORKLOAD.jsonl (default
# build/bench; each workload's file is rewritten by its run);
# bench/migrate_table.py makes the table of doc/internals/measurements.md from them.
set -u
cd "$(dirname "$0")/.." || exit 1
BUILD=${BUILD:-build}
MEMLENS=${MEMLENS:-$PWD/$BUILD/memlens}
WORKLOADS=${WORKLOADS:-$PWD/$BUILD/workloads}
OUTDIR=${OUTDIR:-$PWD/$BUILD/bench}
PY=/usr/bin/python3
# the profiling interval: a VMA is hot when a third of it is written in each
# of 3 intervals; under TCG every first write to a page after a scan is a
# slow fault: at 500 ms the 64 MiB buffers never turned hot (one small VMA
# was all the bench left out), 2 s gives the writers time to cover them
MODES=${MODES:-none none-fork vma page page-cool page-postcopy postcopy-only}
ROUNDS=${ROUNDS:-4} THRESHOLD=${THRESHOLD:-8} ROUND_S=${ROUND_S:-2} INTERVAL=${INTERVAL:-2000}
TRACE_S=${TRACE_S:-150} WARM_S=2 failed=
tmp=$(mktemp -d /tmp/memlens-bench-migrate.XXXXXX)
pids=()
trap 'for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; rm -rf "$tmp"' EXIT

# the migration measured, from the --json output of migrate the run kept
# the page modes: memlens's CRIU with memlens's defaults (page), with pages
# hot once written and hot to the end (page-cool: a server's keys
# rewritten at random are written now and then, not in every interval;
# redis's hot pages are written in about one 2 s interval of three;
# `migrate-model --sweep` on its trace picks these), and that with
# post-copy (page-postcopy, whose pre-dumps all leave the hot pages out);
# the same -c/--cool go to the model
declare -A MODE_ARGS=([page-cool]="-c 1 --cool 1000" [page-postcopy]="--postcopy -c 1 --cool 1000" [postcopy-only]="--postcopy")
# the pre-dump rounds of each mode (default $ROUNDS)
declare -A MODE_ROUNDS=([postcopy-only]=0)
declare -A MODEL_ARGS=([page-cool]="-c 1 --cool 1000" [page-postcopy]="-c 1 --cool 1000 --keep-hot-out")
# post-copy modes are also fitted from another workload's migration in the
# same mode (the first of these whose JSON is there; default heap)
declare -A XFIT_FROM=([heap]="redis migwork")

# model_row W MODE VERIFIED [KERNEL]: the row of W's migration in MODE (its
# kept JSON), the model beside it; VERIFIED: true, false or null; KERNEL: the
# one it ran on (default: this one)
model_row() {
	local w=$1 mode=$2 verified=$3 mj=$OUTDIR/migrate-$1-$2.json ri n peer=none xf= o
	# the peer a mode is fitted from besides itself: the none migration made
	# with the same CRIU binary (the fork's for vma)
	[ $mode = vma ] && peer=none-fork
	local nj=$OUTDIR/migrate-$w-$peer.json
	# post-copy: also fitted from another workload's migration of the same mode
	if [ "$mode" = page-postcopy ] || [ "$mode" = postcopy-only ]; then
		for o in ${XFIT_FROM[$w]:-heap}; do
			[ -f "$OUTDIR/migrate-$o-$mode.json" ] && xf=$OUTDIR/migrate-$o-$mode.json && break
		done
	fi
	# the model's rounds when the migration made them (ms since it started
	# profiling, as the trace's since its profiler started: the hot pages
	# the migration found before its first round are hot in the model then
	# too), none before the end of the trace's first interval (its VMAs
	# known), each at the nearest end of an interval
	"$PY" - "$mj" "${TRACE:-$OUTDIR/migrate-$w.trace}" >"$tmp/$w-$mode.params" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
starts = [x["start_ms"] for x in j["rounds"]]
gaps = [b - a for a, b in zip(starts, starts[1:])]
ri = (sum(gaps) / len(gaps) / 1000.0) if gaps else 1.0
import re
ends = [int(m.group(1)) for m in (re.search(r'"type": *"interval".*?"t_ms": *([0-9]+)', l)
                                  for l in open(sys.argv[2])) if m]
t0 = ends[0] if ends else 1000
# each round at the end of the trace's interval nearest to it, a later one
# than the round before's: the trace knows the writes per interval only, so
# two rounds within one interval would have the second see none of them
at, k = [], -1
for s in starts:
    x = max(s, t0)
    later = [i for i in range(k + 1, len(ends))]
    if later:
        k = min(later, key=lambda i: abs(ends[i] - x))
        x = ends[k]
    at.append(x)
at = ",".join("%.3f" % (x / 1000.0) for x in at)
print("%.3f %d %s" % (max(ri, 0.001), max(len(j["rounds"]) - 1, 0), at))
EOF
	read -r ri n at <"$tmp/$w-$mode.params"	# no /dev/fd for <(...) in a bare guest
	# fitted from this migration, from the workload's none migration with
	# the same CRIU, and (post-copy) from another workload's
	# the pre-dumps the migration planned: the last of them sends the hot
	# memory (unless --keep-hot-out), one that ended pre-copy sooner did not
	local mrounds=
	[ "${MODE_ROUNDS[$mode]:-$ROUNDS}" -gt 0 ] && mrounds="-m ${MODE_ROUNDS[$mode]:-$ROUNDS}"
	for cal in own none xfit; do
		local c=$mj
		[ $cal = none ] && c=$nj
		[ $cal = xfit ] && c=$xf
		rm -f "$tmp/$w-$mode.model-$cal"
		[ -n "$c" ] && [ -f "$c" ] || continue
		"$MEMLENS" migrate-model "${TRACE:-$OUTDIR/migrate-$w.trace}" --calibrate "$c" --round-at "$at" \
			${MODEL_ARGS[$mode]:-} $mrounds --json \
			>"$tmp/$w-$mode.model-$cal" 2>"$tmp/$w-$mode.merr" ||
			echo "# $w $mode: migrate-model --calibrate $cal: $(tail -n 1 "$tmp/$w-$mode.merr")" >&2
	done
	"$PY" - "$w" "$mode" "$mj" "$tmp/$w-$mode.model-own" "$tmp/$w-$mode.model-none" "$ri" \
		"$INTERVAL" "$verified" "${4:-$(uname -r)}" "$tmp/$w-$mode.model-xfit" "$peer" \
		"$(basename "${xf:-none}" .json)" "$at" "${MODE_ARGS[$mode]:-}" <<'EOF'
import json, sys
w, mode, mj, mm, mn, ri = sys.argv[1:7]
kver = sys.argv[9]
mx, peer, xfrom = sys.argv[10:13]
verified = json.loads(sys.argv[8])
m = json.load(open(mj))
want = {"none": "none", "none-fork": "none", "postcopy-only": "none",
        "vma": "hot-vma"}.get(mode, "hot-range")
pc = bool(m.get("postcopy"))
def load(path):
    try:
        model = json.load(open(path))
        return model, {p["name"]: p for p in model["policies"]}
    except (OSError, ValueError):
        return {}, {}
model, pol = load(mm)
model_n, pol_n = load(mn)
model_x, pol_x = load(mx)
p, pn, px = pol.get(want), pol_n.get(want), pol_x.get(want)
def err(pred, meas):
    return None if pred is None or not meas else (pred - meas) / meas
# post-copy: frozen for the fixed parts only; the last page when the final
# round has gone after them
dkey = "postcopy_downtime_ms" if pc else "downtime_ms"
row = {
    "workload": w, "mode": mode, "kernel": kver, "criu": m["criu"]["version"],
    "granularity": m.get("granularity"), "data_verified": verified,
    "rounds": len(m["rounds"]), "round_bytes": [r["bytes"] for r in m["rounds"]],
    "round_duration_ms": [r["duration_ms"] for r in m["rounds"]],
    "round_pages_scanned": [r.get("pages_scanned") for r in m["rounds"]],
    "round_pages_skipped_parent": [r.get("pages_skipped_parent") for r in m["rounds"]],
    "round_start_ms": [r["start_ms"] for r in m["rounds"]],
    "round_hot_bytes": [r["hot_bytes"] for r in m["rounds"]],
    "interval_ms": int(sys.argv[7]),
    "total_bytes": m["total_bytes"], "final_bytes": m["rounds"][-1]["bytes"],
    "downtime_ms": m["downtime_ms"], "final_dump_ms": m["final_dump_ms"],
    "restore_ms": m["restore_ms"], "postcopy": bool(m.get("postcopy")),
    # post-copy: what went after the restore, when its last page arrived
    # (ms after the freeze) and the faults the restored tree waited on
    "lazy_bytes": m.get("lazy", {}).get("bytes"),
    "last_page_ms": m.get("lazy", {}).get("last_page_ms"),
    "lazy_faults": m.get("lazy", {}).get("faults_served"),
    "lazy_fault_wait_avg_us": m.get("lazy", {}).get("fault_wait_avg_us"),
    "lazy_fault_wait_max_us": m.get("lazy", {}).get("fault_wait_max_us"),
    "excluded": [r["excluded_ranges"] for r in m["rounds"]],
    "bandwidth_mbps": model.get("bandwidth_mbps"), "round_interval_s": float(ri),
    "model_round_at_s": [float(x) for x in sys.argv[13].split(",")],
    "model_policy": want,
    # the mode's own options to migrate (and the model's -c/--cool)
    "args": " ".join(a for a in sys.argv[14].split() if a != "--postcopy"),
    "model_total_bytes": p["total_bytes"] if p else None,
    "model_final_bytes": p["final_round_bytes"] if p else None,
    # the parts fitted from this migration
    "model_dump_fixed_s": model.get("dump_fixed_s"),
    "model_restore_fixed_s": model.get("restore_fixed_s"),
    "model_restore_bandwidth_mbps": model.get("restore_bandwidth_mbps"),
    "model_downtime_ms": p[dkey] if p else None,
    "model_dump_ms": p["dump_ms"] if p and not pc else None,
    "model_restore_ms": p["restore_ms"] if p and not pc else None,
    "model_last_page_ms": p["postcopy_last_page_ms"] if p and pc else None,
    # post-copy: what the model has arrive after the restore (the whole
    # tree's memory), at what bandwidth, and the faults' waits it adds
    "model_lazy_bytes": p.get("lazy_bytes") if p and pc else None,
    "model_lazy_bandwidth_mbps": model.get("lazy_bandwidth_mbps") if pc else None,
    "model_lazy_faults": model.get("lazy_faults") if pc else None,
    "model_lazy_fault_ms": model.get("lazy_fault_ms") if pc else None,
    # fitted from the workload's none migration instead
    "model_downtime_none_fit_ms": pn[dkey] if pn else None,
    "model_fit_peer": peer,
    "model_memory": model.get("memory"),
    "model_last_page_none_fit_ms": pn["postcopy_last_page_ms"] if pn and pc else None,
    # post-copy: fitted from another workload's migration in the same mode
    "model_xfit_from": xfrom[len("migrate-"):] if px and xfrom.startswith("migrate-") else None,
    "model_downtime_xfit_ms": px[dkey] if px else None,
    "model_last_page_xfit_ms": px["postcopy_last_page_ms"] if px and pc else None,
    "model_hot_range_total_bytes": pol["hot-range"]["total_bytes"] if "hot-range" in pol else None,
    "model_hot_range_final_bytes": pol["hot-range"]["final_round_bytes"] if "hot-range" in pol else None,
}
row["model_error_total"] = err(row["model_total_bytes"], row["total_bytes"])
row["model_error_final"] = err(row["model_final_bytes"], row["final_bytes"])
row["model_error_downtime"] = err(row["model_downtime_ms"], row["downtime_ms"])
row["model_error_downtime_none_fit"] = err(row["model_downtime_none_fit_ms"], row["downtime_ms"])
row["model_error_last_page"] = err(row["model_last_page_ms"], row["last_page_ms"])
row["model_error_last_page_none_fit"] = err(row["model_last_page_none_fit_ms"], row["last_page_ms"])
row["model_error_downtime_xfit"] = err(row["model_downtime_xfit_ms"], row["downtime_ms"])
row["model_error_last_page_xfit"] = err(row["model_last_page_xfit_ms"], row["last_page_ms"])
print(json.dumps(row))
EOF
}

if [ -n "${MODEL_ONLY:-}" ]; then
	for w in ${*:-migwork heap redis memwrite matmul memalloc}; do
		OUT=$OUTDIR/migrate-$w.jsonl
		TRACE=$OUTDIR/migrate-$w.trace
		if [ ! -f "$TRACE" ] && [ -f "$TRACE.xz" ]; then
			xz -dc "$TRACE.xz" >"$tmp/$w.trace" && TRACE=$tmp/$w.trace
		fi
		[ -f "$OUT" ] && [ -f "$TRACE" ] || { echo "# $w: no run in $OUTDIR"; continue; }
		cp "$OUT" "$tmp/$w.rows"
		: >"$OUT"
		for mode in ${MODES//,/ }; do
			[ -f "$OUTDIR/migrate-$w-$mode.json" ] || continue
			# the data check and the kernel of the run
			"$PY" -c 'import json,sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["mode"] == sys.argv[2]:
        print(json.dumps(r.get("data_verified")), r["kernel"])
        break
else:
    print("null")' "$tmp/$w.rows" "$mode" >"$tmp/$w-$mode.run"
			read -r v k <"$tmp/$w-$mode.run"
			model_row "$w" "$mode" "$v" $k >>"$OUT"
			echo "# $w $mode: $(tail -n 1 "$OUT")"
		done
	done
	exit 0
fi

criu=$(scripts/ensure-criu.sh 2>"$tmp/criu.err") ||
	{ echo "skip - migrate_bench: $(tail -n 1 "$tmp/criu.err")"; exit 0; }
"$criu" --help 2>/dev/null | grep -q -- '--exclude-range \[PID:\]' ||
	echo "# $criu is not built with memlens's patches: the page mode leaves nothing out"
# the fork (VMA granularity): optional
vma_criu=$(scripts/ensure-criu-exclude.sh 2>"$tmp/criu-vma.err") ||
	{ vma_criu=; echo "# no vma mode: $(tail -n 1 "$tmp/criu-vma.err")"; }
if ! "$criu" check --feature mem_dirty_track >/dev/null 2>&1; then
	echo "skip - migrate_bench: this kernel has no soft-dirty tracking (pre-dump needs it)"
	exit 0
fi
mkdir -p "$OUTDIR"

declare -A CMD=(
	[migwork]="$WORKLOADS/migwork -H 64 -I 192 -C 32 -t 1 -T 12"
	[heap]="$WORKLOADS/migwork -S -H 64 -I 192 -C 0 -t 1"
	[redis]="bash bench/redis_target.sh @DIR@ ${REDIS_KEYS:-250000} ${REDIS_HOT:-20000}"
	[memwrite]="$WORKLOADS/memwrite -m 64"
	[matmul]="$WORKLOADS/matmul -n 512"
	[memalloc]="$WORKLOADS/memalloc -m 32 -p 3000"
)


# what each workload prints once its memory is set up (migwork writes all of
# it first: seconds under TCG; a pre-dump before that would see the rest as
# new pages in the next round)
declare -A READY=([migwork]=ready [heap]=ready [redis]="redis target ready" [memwrite]=writes
	[matmul]="matmul pid" [memalloc]=allocates)

# Every workload runs in a PID namespace of its own (as in a container), in
# every mode alike: --postcopy to this machine needs it (the restored tree
# waits for its pages under its own PIDs, which must not be the source's),
# and the modes are then compared on the same footing.
start() { # WORKLOAD OUT CMD...: sets P (the workload, PID 1 of its namespace); returns once it is ready, and WARM_S more
	local w=$1 out=$2 u
	shift 2
	set -- "${@//@DIR@/$out.d}"	# redis: its own directory (socket)
	# the workload's output to OUT, unshare's own elsewhere: unshare says
	# something when its child is killed, and a file that grew after the
	# dump fails the restore ("has bad size")
	unshare --pid --fork setsid bash -c 'o=$1; shift; exec "$@" </dev/null >"$o" 2>&1' _ "$out" "$@" \
		</dev/null >>"$tmp/unshare.log" 2>&1 &
	u=$!
	pids+=("$u")
	P=
	for _ in $(seq 100); do
		P=$(cat /proc/"$u"/task/*/children 2>/dev/null | awk '{print $1; exit}')
		[ -n "$P" ] && break
		sleep 0.1
	done
	[ -n "$P" ] || { echo "# $w: no workload under unshare $u"; P=$u; }
	pids+=("$P")
	for _ in $(seq 1200); do grep -q "${READY[$w]}" "$out" 2>/dev/null && break; sleep 0.1; done
	grep -q "${READY[$w]}" "$out" || echo "# $w: not ready after 120 s: $(tail -n 1 "$out")"
	sleep "$WARM_S"
}

for w in ${*:-migwork heap redis memwrite matmul memalloc}; do
	OUT=$OUTDIR/migrate-$w.jsonl
	: >"$OUT"
	# the trace, on an instance of its own
	start "$w" "$tmp/$w-trace.out" ${CMD[$w]}
	"$MEMLENS" writes -p "$P" -i "$INTERVAL" -d "$TRACE_S" -q --record "$tmp/$w.trace" \
		>/dev/null 2>"$tmp/$w-trace.err" || echo "# $w: writes --record: $(tail -n 1 "$tmp/$w-trace.err")"
	kill -9 "$P" 2>/dev/null	# PID 1 of its namespace: the whole tree goes
	wait 2>/dev/null
	cp "$tmp/$w.trace" "$OUTDIR/migrate-$w.trace" 2>/dev/null	# for migrate-model later
	for mode in ${MODES//,/ }; do
		extra=(${MODE_ARGS[$mode]:-})
		c=$criu
		case $mode in none | none-fork | postcopy-only) extra+=(--no-exclude) ;; esac
		if [ $mode = vma ] || [ $mode = none-fork ]; then
			[ -n "$vma_criu" ] || continue
			c=$vma_criu
		fi
		start "$w" "$tmp/$w-$mode.out" ${CMD[$w]}
		p=$P
		"$MEMLENS" migrate -p "$p" --to "$tmp/$w-$mode-dest" -D "$tmp/$w-$mode-src" --criu "$c" \
			--max-rounds "${MODE_ROUNDS[$mode]:-$ROUNDS}" --stop-threshold "$THRESHOLD" --round-interval "$ROUND_S" \
			-i "$INTERVAL" "${extra[@]}" --json >"$tmp/$w-$mode.json" 2>"$tmp/$w-$mode.err"
		rc=$?
		[ $rc -ne 0 ] && kill -9 "$p" 2>/dev/null
		wait 2>/dev/null
		np=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1])).get("restored_pid", 0))' \
			"$tmp/$w-$mode.json" 2>/dev/null)
		verified=null
		if [ -n "$np" ] && [ "$np" != 0 ]; then
			# redis: every key there (as many as when it was ready, or the
			# writer's few more), each 1000 B, read through the restored socket
			if [ "$w" = redis ]; then
				verified=false
				sock=$tmp/$w-$mode.out.d/redis.sock
				n0=$(sed -n 's/^redis target ready: \([0-9]*\) keys/\1/p' "$tmp/$w-$mode.out")
				n1=$(redis-cli -s "$sock" DBSIZE 2>/dev/null)
				ns=$(redis-cli -s "$sock" --scan 2>/dev/null | wc -l)
				bad=$(redis-cli -s "$sock" --scan 2>/dev/null | head -n 100 |
					while read -r k; do redis-cli -s "$sock" STRLEN "$k"; done | grep -vcx 1000)
				echo "# redis $mode: $n0 keys when ready, $n1 after the restore ($ns scanned, $bad of 100 sampled not 1000 B)"
				# the writer, running on, may still create a few of its keys:
				# counts only grow
				[ -n "$n1" ] && [ "$n1" -ge "${n0:-1}" ] && [ "$ns" -ge "${n0:-1}" ] && [ "$bad" = 0 ] &&
					verified=true
				[ $verified = false ] && failed+=" $w/$mode(data)"
			fi
			# migwork checks its own memory on SIGTERM: correct, or WRONG
			if [[ ${CMD[$w]} == *migwork* ]]; then
				kill -TERM "$np" 2>/dev/null
				for _ in $(seq 600); do grep -qE 'migwork: (correct|WRONG)' "$tmp/$w-$mode.out" && break; sleep 0.1; done
				grep -q 'migwork: correct' "$tmp/$w-$mode.out" && verified=true || verified=false
				[ $verified = false ] && failed+=" $w/$mode(data)"
			fi
			kill -9 "$np" 2>/dev/null
		fi
		if [ $rc -ne 0 ]; then
			echo "# $w $mode: migrate failed (exit $rc): $(tail -n 2 "$tmp/$w-$mode.err")" \
				"$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1])).get("error", ""))' \
					"$tmp/$w-$mode.json" 2>/dev/null)"
			for f in "$tmp/$w-$mode"-src/*/*.log "$tmp/$w-$mode"-dest/*/*.log; do
				[ -f "$f" ] && grep -E "Error|FAILED" "$f" | tail -n 3 | sed "s|^|# ${f#$tmp/}: |"
			done
			failed+=" $w/$mode"
			rm -rf "$tmp/$w-$mode-src" "$tmp/$w-$mode-dest"
			continue
		fi
		# kept: migrate-model --calibrate fits its fixed parts from it, and
		# the model can be run again on the trace later
		cp "$tmp/$w-$mode.json" "$OUTDIR/migrate-$w-$mode.json"
		# the model, with what this migration measured
		model_row "$w" "$mode" "$verified" >>"$OUT"
		echo "# $w $mode: $(tail -n 1 "$OUT")"
		# a mode's images go once measured: all of them at once do not
		# fit a small /tmp (redis: ~0.5 GB a mode)
		rm -rf "$tmp/$w-$mode-src" "$tmp/$w-$mode-dest"
	done
done
if [ -n "$failed" ]; then
	echo "not ok - migrate_bench_${*:-all}: these migrations failed:$failed"
else
	echo "ok - migrate_bench_${*:-all}"
fi
