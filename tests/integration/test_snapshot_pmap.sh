#!/bin/bash
# memlens snapshot against pmap (procps): on a real python3 process, the
# table's per-VMA RSS, PSS, DIRTY and the JSON's smaps numbers equal what
# `pmap -X` (Rss, Pss, Pss_Dirty) and `pmap -x` (Dirty) print for the same
# VMA, exactly: both read the kernel's /proc/PID/smaps counters, and RSS is
# also memlens's own page count (PAGEMAP_SCAN), which the kernel's Rss must
# equal. Where they may legitimately differ, the test reads again instead
# of allowing any difference: PSS of shared pages moves when another
# process maps or unmaps the same file between the two reads (pmap and
# memlens are two reads), and so does anything the target itself changes;
# the pmap output is taken before and after memlens and must be the same.
# The one difference by design: the PSS of a file that memlens or pmap map
# themselves (libc, libz, ...) counts the reading tool's own mapping of
# its pages, so each tool sees a smaller share than the other: for those
# VMAs PSS is checked to be within [0, Rss] (kB, rounded down), and exact for
# all the others.
# hugetlb pages would differ by design (memlens counts them resident, the
# kernel's Rss does not): this target has none.
# Also: the name column shows the whole name (no "~"; a long one wraps),
# and IN-MEM% is not shown without swap.
set -u
. "$(dirname "$0")/../lib.bash"
M=${MEMLENS:?}
t_tmpdir pmap
PY=$(readlink -f /usr/bin/python3 2>/dev/null || true)
if [ ! -x "$PY" ] || ! command -v pmap >/dev/null; then
	skip snapshot_pmap "needs /usr/bin/python3 and pmap (procps)"
	exit 0
fi
# a python3 with shared libraries, heap, a written 24 MiB buffer and a
# mapped file it only read: shared clean, private dirty and clean pages
"$PY" -c '
import json, ssl, mmap, sys, time
b = bytearray(24 << 20)
f = open(sys.executable, "rb")
m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
m[0:1 << 20]
print("ready", flush=True)
time.sleep(600)' >"$tmp/py.out" &
pid=$!
t_at_exit "kill $pid 2>/dev/null"
wait_for_line "$tmp/py.out" ready 30

# the files the two readers map (their PSS share of those is theirs): their
# shared objects, and what glibc maps at run time in a process that uses
# the locale or iconv (the locale files, gconv-modules.cache)
observers=$({ ldd "$M"; ldd "$(command -v pmap)"; } 2>/dev/null |
	awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^\//) print $i }' | xargs -r readlink -f |
	xargs -rn1 basename | sort -u | tr '\n' ' ')
observers="$observers gconv-modules.cache locale-archive $(ls /usr/lib/locale/*/ 2>/dev/null | grep '^LC_' | sort -u | tr '\n' ' ')"
compare() {	# -> 0 when every VMA agrees; the differences in $tmp/diff
	pmap -X "$pid" >"$tmp/X1" && pmap -x "$pid" >"$tmp/x1" || return 2
	COLUMNS=300 "$M" snapshot -p "$pid" >"$tmp/table" 2>"$tmp/table.err" || return 2
	"$M" snapshot -p "$pid" --json --pss >"$tmp/snap.json" 2>>"$tmp/table.err" || return 2
	pmap -X "$pid" >"$tmp/X2" && pmap -x "$pid" >"$tmp/x2" || return 2
	python3 - "$tmp" "$observers" <<'PY' >"$tmp/diff" 2>"$tmp/diff.err"
import json, sys
t = sys.argv[1]
def pmap(path, key):
    rows = {}
    lines = open(path).read().splitlines()
    h = next(k for k, l in enumerate(lines) if l.split()[:1] == ["Address"])
    head = lines[h].split()
    for l in lines[h + 1:]:
        f = l.split()
        if len(f) < len(head) - 1 or not f[0] or not all(c in "0123456789abcdef" for c in f[0]):
            continue
        rows[int(f[0], 16)] = dict(zip(head, f))
    return rows
observers = set(sys.argv[2].split())
X = pmap(f"{t}/X2", "X")
x = pmap(f"{t}/x2", "x")
# did anything move while memlens read? (the PSS of a file every process
# maps, libc, moves with every process started anywhere: not compared)
def stable(a, b):
    def key(rows):
        return {k: {f: v for f, v in r.items()
                    if not (r.get("Mapping", "") in observers and f in ("Pss", "Pss_Dirty"))}
                for k, r in rows.items()}
    return key(a) == key(b)
if not stable(pmap(f"{t}/X1", "X"), X) or pmap(f"{t}/x1", "x") != x:
    sys.exit(1)
# the text table: columns by their header
lines = open(f"{t}/table").read().splitlines()
i = next(k for k, l in enumerate(lines) if l.startswith("ADDRESS"))
head = lines[i].split()
unit = lines[i - 1]
assert "KiB" in unit, unit
table = {}
for l in lines[i + 1:]:
    if not l.strip():
        break
    f = l.split()
    table[int(f[0], 16)] = dict(zip(head, f[:len(head) - 1]), MAPPING=" ".join(f[len(head) - 1:]))
snap = [r for r in map(json.loads, open(f"{t}/snap.json")) if r["type"] == "snapshot"][-1]
js = {int(r["start_addr"], 16): r for r in snap["regions"]}
bad = []
shared = 0
for a, p in X.items():
    if a not in table or a not in js:
        bad.append(f"{a:x}: in pmap, not in memlens")
        continue
    want = [int(p["Rss"]), int(p["Pss"]), int(x[a]["Dirty"])]
    got_t = [int(table[a]["RSS"]), int(table[a]["PSS"]), int(table[a]["DIRTY"])]
    sm = js[a]["smaps"]
    got_j = [sm["rss_kb"], sm["pss_kb"], sm["dirty_kb"]]
    if p.get("Mapping", "") in observers:
        shared += 1
        for g in (got_t, got_j):
            if not 0 <= g[1] <= g[0]:
                bad.append(f"{a:x}: PSS {g[1]} not within [0, Rss {g[0]}]")
        want[1] = got_t[1] = got_j[1] = None
    if got_t != want or got_j != want or sm["pss_dirty_kb"] != int(p["Pss_Dirty"]):
        bad.append(f"{a:x} {p.get('Mapping', '')}: pmap Rss/Pss/Dirty {want} Pss_Dirty {p['Pss_Dirty']}, "
                   f"table {got_t}, json {got_j} {sm['pss_dirty_kb']}")
    # memlens's own count (PAGEMAP_SCAN) against the kernel's Rss
    if js[a]["resident_pages"] * 4 != int(p["Rss"]):
        bad.append(f"{a:x}: resident_pages {js[a]['resident_pages']} x 4 != Rss {p['Rss']}")
    # the name: whole, or a path's tail; never cut with "~"
    name, m = table[a]["MAPPING"], p.get("Mapping", "")
    if "~" in name or not (name.endswith(m) or m.endswith(name)):
        bad.append(f"{a:x}: name {name!r} for {m!r}")
if len(X) != len(js):
    bad.append(f"{len(X)} VMAs in pmap, {len(js)} in memlens")
print("\n".join(bad))
print(f"# {len(X)} VMAs compared, PSS exact in {len(X) - shared}", file=sys.stderr)
sys.exit(3 if bad else 0)
PY
}
tries=0
while :; do
	compare
	rc=$?
	tries=$((tries + 1))
	# 1: something moved between the reads: read again (bounded)
	[ $rc = 1 ] && [ $tries -lt 20 ] || break
done
cat "$tmp/diff.err"
check snapshot_table_equals_pmap '[ $rc = 0 ]' "after $tries reads" "$(head -20 "$tmp/diff")" \
	"$(cat "$tmp/table.err")"
check snapshot_table_has_pss_uss_dirty 'grep -q "^ADDRESS .* RSS .*PSS .*USS .*DIRTY " "$tmp/table"' \
	"$(grep ^ADDRESS "$tmp/table")"
if [ "$(wc -l </proc/swaps)" -le 1 ]; then
	check snapshot_no_in_mem_without_swap '! grep -q "IN-MEM%" "$tmp/table" &&
		grep -q "no swap configured" "$tmp/table"' "$(grep -A2 "by region" "$tmp/table")"
else
	check snapshot_in_mem_with_swap 'grep -q "IN-MEM%" "$tmp/table"'
fi
# at 80 columns: the table fits, and a name too long for its column goes
# onto a line of its own (never cut): put back together, every VMA's name is
# the one pmap prints
COLUMNS=80 "$M" snapshot -p "$pid" >"$tmp/t80"
pmap -X "$pid" >"$tmp/X80"
names80() {
	python3 - "$tmp/t80" "$tmp/X80" <<'PY'
import sys
lines = open(sys.argv[1]).read().splitlines()
i = next(k for k, l in enumerate(lines) if l.startswith("ADDRESS"))
col = lines[i].index("MAPPING")
names, bad = {}, []
for l in lines[i + 1:]:
    if not l.strip() or l.startswith("("):
        break
    if not l.startswith(" "):
        addr = int(l.split()[0], 16)
        names[addr] = l[col:].strip() if len(l) > col else ""
    else:
        # a name too long for its column: whole on a line of its own, which
        # starts with a space (before the column when it must)
        names[addr] += l.strip()
# pmap -X prints a column per smaps field this kernel has (ProtectionKey
# where the CPU has protection keys), then Mapping: count them in its header
xl = open(sys.argv[2]).read().splitlines()
ncols = len(xl[1].split())
for l in xl[2:]:
    f = l.split()
    if len(f) < ncols - 1 or not all(c in "0123456789abcdef" for c in f[0]):
        continue
    want = f[-1] if len(f) >= ncols else ""
    if names.get(int(f[0], 16)) != want:
        bad.append(f"{f[0]}: {names.get(int(f[0], 16))!r}, pmap {want!r}")
wide = max(len(l) for l in lines)
if wide > 80:
    bad.append(f"a line of {wide} columns")
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
}
names80 >"$tmp/n80"
rc=$?
check snapshot_names_wrap_not_cut '[ $rc = 0 ] && ! grep -q "~$" "$tmp/t80"' "$(cat "$tmp/n80")"
t_done
