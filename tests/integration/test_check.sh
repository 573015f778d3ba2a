#!/bin/bash
# memlens check: every probe's answer cross-checked against the command or
# tool that uses the feature (CRIU's own check, a forced fentry tracer run,
# snapshot --pages without root), the exit status, and the usage errors.
set -u
. "$(dirname "$0")/../lib.bash"
cd "$(dirname "$0")/../.." || exit 1
M=${MEMLENS:-$PWD/build/memlens} W=${WORKLOADS:-$PWD/build/workloads}
PY=/usr/bin/python3
tmp=$(mktemp -d /tmp/memlens-check-test.XXXXXX)
t_at_exit 'rm -rf "$tmp"'

# state NAME [FILE]: the state of feature NAME in the JSON
state() {
	"$PY" -c 'import json,sys
j = json.load(open(sys.argv[1]))
print(next((f["state"] for f in j["features"] if f["name"] == sys.argv[2]), "absent"))' "${2:-$tmp/c.json}" "$1"
}

CRIU=$(scripts/ensure-criu.sh 2>/dev/null)
[ -n "$CRIU" ] && export MEMLENS_CRIU=$CRIU

"$M" check --json >"$tmp/c.json" 2>"$tmp/c.err"
rc=$?
if [ $rc != 0 ] || ! "$PY" -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["type"] == "check" and j["core_ok"] and len(j["features"]) >= 15; assert all(f.get("fix") for f in j["features"] if f["state"] == "missing")' "$tmp/c.json"; then
	notok json_shape "exit $rc: $(cat "$tmp/c.json" "$tmp/c.err")"
else
	ok json_shape
fi

# the core of writes/snapshot: present here, as every other test shows
bad=
for f in pagemap_scan uffd_wp_async ptrace pidfd_getfd btf tp_btf ringbuf uprobe; do
	[ "$(state $f)" = ok ] || bad="$bad $f=$(state $f)"
done
[ -z "$bad" ] && ok core_features_present || notok core_features_present "$bad"

# soft-dirty: the same answer as CRIU's own check of the kernel
if [ -z "$CRIU" ]; then
	skip soft_dirty_agrees_with_criu "no CRIU"
else
	if "$CRIU" check --feature mem_dirty_track >/dev/null 2>&1; then want=ok; else want=missing; fi
	[ "$(state soft_dirty)" = $want ] && [ "$(state criu_pre_dump)" = $want ] &&
		[ "$(state criu)" = ok ] && ok soft_dirty_agrees_with_criu ||
		notok soft_dirty_agrees_with_criu "criu says $want; check says soft_dirty $(state soft_dirty), criu_pre_dump $(state criu_pre_dump), criu $(state criu)"
fi

# fentry: the same answer as the faults tracer forced into fentry mode
"$M" faults --mode fentry -d 0.1 >/dev/null 2>"$tmp/f.err"
case $? in 0) want=ok ;; 5) want=missing ;; *) want=unknown ;; esac
[ "$(state fentry)" = $want ] && ok fentry_agrees_with_faults ||
	notok fentry_agrees_with_faults "faults --mode fentry: $want ($(cat "$tmp/f.err")); check: $(state fentry)"

# kmalloc_cache: the same answer as how slab counts kmalloc()
"$M" slab --json -d 0.2 >"$tmp/s.json" 2>"$tmp/s.err"
case "$("$PY" -c 'import json,sys; print(json.loads(open(sys.argv[1]).read().splitlines()[-1])["kmalloc"])' "$tmp/s.json" 2>/dev/null)" in
cache) want=ok ;; size) want=missing ;; *) want=unknown ;; esac
[ "$(state kmalloc_cache)" = $want ] && ok kmalloc_cache_agrees_with_slab ||
	notok kmalloc_cache_agrees_with_slab "slab: $want ($(cat "$tmp/s.json" "$tmp/s.err")); check: $(state kmalloc_cache)"

# uprobe_multi: the same answer as the links leaks attaches
"$M" leaks --json -- /bin/true >"$tmp/l.json" 2>"$tmp/l.err"
case "$("$PY" -c 'import json,sys; print(json.loads(open(sys.argv[1]).read().splitlines()[-1])["mode"])' "$tmp/l.json" 2>/dev/null)" in
uprobe_multi) want=ok ;; uprobe) want=missing ;; *) want=unknown ;; esac
[ "$(state uprobe_multi)" = $want ] && ok uprobe_multi_agrees_with_leaks ||
	notok uprobe_multi_agrees_with_leaks "leaks: $want ($(cat "$tmp/l.json" "$tmp/l.err")); check: $(state uprobe_multi)"

# uprobe_session: the same answer as the mode leaks --sample --sampler uprobe takes (a session
# where the kernel has them, else the uprobe_multi links, else single uprobes)
"$M" leaks --json --sample 512K --sampler uprobe -- /bin/true >"$tmp/ls.json" 2>"$tmp/ls.err"
case "$("$PY" -c 'import json,sys; print(json.loads(open(sys.argv[1]).read().splitlines()[-1])["mode"])' "$tmp/ls.json" 2>/dev/null)" in
uprobe_session) want=ok ;; uprobe_multi | uprobe) want=missing ;; *) want=unknown ;; esac
[ "$(state uprobe_session)" = $want ] && ok uprobe_session_agrees_with_leaks_sample ||
	notok uprobe_session_agrees_with_leaks_sample "leaks --sample: $want ($(cat "$tmp/ls.json" "$tmp/ls.err")); check: $(state uprobe_session)"
# and a sampled run falls back exactly as far as the kernel makes it
want=$([ "$(state uprobe_session)" = ok ] && echo uprobe_session ||
	{ [ "$(state uprobe_multi)" = ok ] && echo uprobe_multi || echo uprobe; })
got=$("$PY" -c 'import json,sys; print(json.loads(open(sys.argv[1]).read().splitlines()[-1])["mode"])' "$tmp/ls.json" 2>/dev/null)
[ "$got" = "$want" ] && ok leaks_sample_mode_follows_the_kernel ||
	notok leaks_sample_mode_follows_the_kernel "leaks --sample took $got, the kernel's features say $want"

# preemption: what debugfs's sched/preempt says, read in a mount namespace
# of its own with debugfs mounted (the host's mounts are untouched)
in_debugfs() { unshare -m sh -c 'mount -t debugfs none /sys/kernel/debug 2>/dev/null; exec "$@"' sh "$@"; }
in_debugfs cat /sys/kernel/debug/sched/preempt >"$tmp/pre.txt" 2>"$tmp/pre.err"
mode=$(preempt_mode "$tmp/pre.txt")
in_debugfs "$M" check --json >"$tmp/pre.json" 2>/dev/null
got=$("$PY" -c 'import json,sys; print(next((f["state"] + " " + f["detail"] for f in json.load(open(sys.argv[1]))["features"] if f["name"] == "preemption"), "absent"))' "$tmp/pre.json" 2>/dev/null)
if [ -z "$mode" ]; then
	# then memlens says why it cannot tell, unless the boot or the build does
	case "$got" in
	"info not known (debugfs's sched/preempt: "* | "info "*" (preempt= at boot): "* | "info "*" (the kernel's build): "*)
		skip preemption_as_sched_preempt_says "sched/preempt cannot be read here ($(cat "$tmp/pre.err")); check says: $got" ;;
	*) notok preemption_as_sched_preempt_says "sched/preempt unreadable; check says: $got" ;;
	esac
else
	want="info $(preemption_says "$mode")"
	[ "${got#"$want"}" != "$got" ] && ok preemption_as_sched_preempt_says ||
		notok preemption_as_sched_preempt_says "sched/preempt: $mode; check: $got"
fi

# the human table names every missing feature with its fix
"$M" check >"$tmp/c.txt" 2>&1
missing=$("$PY" -c 'import json,sys; print(" ".join(f["name"] for f in json.load(open(sys.argv[1]))["features"] if f["state"] == "missing"))' "$tmp/c.json")
bad=
for f in $missing; do grep -q "^  MISSING  $f " "$tmp/c.txt" || bad="$bad $f"; done
[ -z "$bad" ] && [ "$(grep -c '^ *fix: ' "$tmp/c.txt")" = "$(echo $missing | wc -w)" ] &&
	grep -q "can run here" "$tmp/c.txt" && ok human_table || notok human_table "not listed:$bad; $(cat "$tmp/c.txt")"

# without root: kpageflags and eBPF are missing, and snapshot --pages agrees
if command -v setpriv >/dev/null; then
	setpriv --reuid=65534 --regid=65534 --clear-groups "$M" check --json --no-criu >"$tmp/u.json" 2>/dev/null
	rc=$?
	setpriv --reuid=65534 --regid=65534 --clear-groups "$M" snapshot --pages -n 1 -- /bin/true >/dev/null 2>"$tmp/u.err"
	src=$?
	if [ $rc = 0 ] && [ "$(state kpageflags "$tmp/u.json")" = missing ] && [ $src = 4 ] &&
	   [ "$(state bpf "$tmp/u.json")" = missing ] && [ "$(state criu "$tmp/u.json")" = absent ]; then
		ok not_root
	else
		notok not_root "exit $rc, kpageflags $(state kpageflags "$tmp/u.json"), snapshot --pages exit $src, bpf $(state bpf "$tmp/u.json")"
	fi
else
	skip not_root "no setpriv"
fi

# in a PID namespace of its own it says so
if unshare --pid --fork --mount-proc true 2>/dev/null; then
	unshare --pid --fork --mount-proc "$M" check --json --no-criu >"$tmp/ns.json" 2>/dev/null
	# and outside it, what this test itself runs in
	if [ "$(stat -Lc %i /proc/self/ns/pid)" = 4026531836 ]; then
		here='"detail":"the initial PID namespace'
	else
		here="\"detail\":\"PID namespace $(stat -Lc %i /proc/self/ns/pid) (a container or pod)"
	fi
	grep -q '"detail":"PID namespace [0-9]* (a container or pod)' "$tmp/ns.json" &&
		grep -qF "$here" "$tmp/c.json" && ok pid_namespace ||
		notok pid_namespace "$(cat "$tmp/ns.json")"
else
	skip pid_namespace "unshare --pid is not allowed here"
fi

# usage
"$M" check --bogus >/dev/null 2>&1; r1=$?
"$M" check extra >/dev/null 2>&1; r2=$?
"$M" check --help | grep -q -- "--no-criu"; r3=$?
[ $r1 = 2 ] && [ $r2 = 2 ] && [ $r3 = 0 ] && ok usage || notok usage "exit $r1 $r2 $r3"

t_done

# The human text says all that --json says, wrapped at spaces, never cut
# inside a word nor short of its end, at 80 columns and at 50; the CRIU
# probe's message given a long --criu path (longer than 200 bytes) too.
long=/nonexistent/$(printf 'criu-build-%02d/' $(seq 1 12))criu
for cols in 80 50; do
	COLUMNS=$cols "$M" check --criu "$long" >"$tmp/h$cols.txt" 2>&1
	"$M" check --criu "$long" --json >"$tmp/h.json" 2>/dev/null
	if "$PY" - "$tmp/h.json" "$tmp/h$cols.txt" "$long" <<'PYEOF'; then
import json, sys
j = json.load(open(sys.argv[1]))
text = " ".join(open(sys.argv[2]).read().split())
bad = []
for f in j["features"]:
    for key, pre in (("detail", ""), ("used_by", "used by: "), ("fix", "fix: ")):
        v = f.get(key)
        if key == "used_by" and f["state"] == "info":
            continue  # the text leaves it out of info lines
        if v and pre + " ".join(v.split()) not in text:
            bad.append(f"{f['name']}.{key}: {v}")
crit = next(f for f in j["features"] if f["name"] == "criu")
if sys.argv[3] not in crit["detail"] or not crit["detail"].rstrip().endswith("MEMLENS_CRIU"):
    bad.append("criu detail cut: " + crit["detail"])
print("\n".join("#   " + b for b in bad))
sys.exit(1 if bad else 0)
PYEOF
		ok "advice_whole_at_$cols"
	else
		notok "advice_whole_at_$cols" "$(head -c 600 "$tmp/h$cols.txt")"
	fi
done
