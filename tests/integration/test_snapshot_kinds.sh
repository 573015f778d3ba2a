#!/bin/bash
# memlens snapshot's region kinds on a real program: python3 holding a
# bytearray(256 MiB), allocated before _ctypes is loaded, so that mmap
# puts the library right below the buffer and the buffer's VMA directly
# follows the library's data, as it does for any big allocation. The VMA
# holding the buffer (an anonymous one in /proc/PID/maps) must be anon, not
# lib-data; every anonymous VMA called bss or lib-data must lie within
# the .bss its file's ELF program headers give (read here with Python's
# struct, independently of memlens); and the per-kind table must add up
# to smaps_rollup's Rss.
set -u
. "$(dirname "$0")/../lib.bash"
M=${MEMLENS:?}
PY=/usr/bin/python3
tmp=$(mktemp -d)
tpid=
cleanup() {
	[ -n "$tpid" ] && kill "$tpid" 2>/dev/null
	rm -rf "$tmp"
}
t_at_exit cleanup

if [ ! -x "$PY" ]; then
	skip snapshot_kinds_python_bytearray "no $PY"
	t_done
	exit
fi
cat >"$tmp/hold.py" <<'EOF'
import mmap, sys, time
buf = bytearray(256 << 20)
import ctypes
anon = mmap.mmap(-1, 64 << 20, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
anon[:] = b"\1" * (64 << 20)
def addr(x):
    return ctypes.addressof((ctypes.c_char * len(x)).from_buffer(x))
print("ready %x %x" % (addr(buf), addr(anon)), flush=True)
sys.stdin.read()
EOF
mkfifo "$tmp/in"
"$PY" "$tmp/hold.py" <"$tmp/in" >"$tmp/t.out" &
tpid=$!
exec 7>"$tmp/in"
if ! wait_for_line "$tmp/t.out" ready 60; then
	notok snapshot_kinds_python_bytearray "python3 did not get ready"
	t_done
	exit
fi
read -r _ buf anon <"$tmp/t.out"
"$M" snapshot -p "$tpid" --json >"$tmp/s.json" 2>"$tmp/e"
rc=$?
"$PY" - "$tmp/s.json" "$tpid" "$buf" "$anon" <<'PYEOF' >"$tmp/py.out" 2>&1
import json, struct, sys
snap = json.loads(open(sys.argv[1]).readline())
pid, buf, anon = int(sys.argv[2]), int(sys.argv[3], 16), int(sys.argv[4], 16)
PG = 4096
up = lambda x: (x + PG - 1) & ~(PG - 1)

maps = []
for l in open("/proc/%d/maps" % pid):
    f = l.split(None, 5)
    s, e = (int(x, 16) for x in f[0].split("-"))
    maps.append((s, e, f[1], int(f[2], 16), int(f[4]), f[5].strip() if len(f) > 5 else ""))
def maps_at(a):
    return [m for m in maps if m[0] <= a < m[1]][0]
def region_at(a):
    return [r for r in snap["regions"] if int(r["start_addr"], 16) <= a < int(r["end_addr"], 16)][0]

# the loader's anonymous .bss of a file: [up(bias+vaddr+filesz), up(bias+vaddr+memsz)) of
# each PT_LOAD with memsz > filesz, the bias from the file mapping right below it
def bss_ranges(prev):
    s, e, perms, off, inode, path = prev
    out = []
    with open("/proc/%d/map_files/%x-%x" % (pid, s, e), "rb") as f:
        h = f.read(64)
        assert h[:4] == b"\x7fELF" and h[4] == 2
        phoff, = struct.unpack_from("<Q", h, 32)
        phentsize, phnum = struct.unpack_from("<HH", h, 54)
        f.seek(phoff)
        for i in range(phnum):
            p = f.read(phentsize)
            typ, flags, poff, vaddr, paddr, filesz, memsz = struct.unpack_from("<IIQQQQQ", p)
            if typ == 1 and memsz > filesz and poff & ~(PG - 1) <= off < poff + filesz:
                bias = s - off + poff - vaddr
                out.append((up(bias + vaddr + filesz), up(bias + vaddr + memsz)))
    return out

bad = []
b = region_at(buf)
m = maps_at(buf)
prev = [x for x in maps if x[1] == m[0]]
print("# the bytearray's VMA %s-%s: maps says %s, memlens says %s; right after: %s" % (
    b["start_addr"], b["end_addr"], m[5] or "anonymous", b["kind"],
    prev[0][5] if prev else "nothing"))
if m[5] or m[4]:
    bad.append("the bytearray is not in an anonymous VMA?")
if b["kind"] != "anon":
    bad.append("the bytearray's VMA is %s" % b["kind"])
a = region_at(anon)
if a["kind"] != "anon":
    bad.append("the 64 MiB private anonymous mapping's VMA is %s" % a["kind"])
nbss = 0
for r in snap["regions"]:
    if r["kind"] not in ("bss", "lib-data") or r["path"]:
        continue
    s, e = int(r["start_addr"], 16), int(r["end_addr"], 16)
    prev = [x for x in maps if x[1] == s]
    ok = prev and any(s == lo and e <= hi for lo, hi in bss_ranges(prev[0]))
    nbss += 1
    if not ok:
        bad.append("%x-%x is %s but no ELF .bss" % (s, e, r["kind"]))
kinds = snap["by_kind"]
res = sum(k["resident_pages"] for k in kinds.values())
size = sum(k["size_pages"] for k in kinds.values())
rollup = [int(l.split()[1]) for l in open("/proc/%d/smaps_rollup" % pid) if l.startswith("Rss:")][0]
print("# by_kind: resident %d kB (lib-data %d kB, anon %d kB), smaps_rollup Rss %d kB; "
      "%d anonymous .bss VMAs checked against their ELF headers" % (
          res * 4, kinds.get("lib-data", {}).get("resident_pages", 0) * 4,
          kinds["anon"]["resident_pages"] * 4, rollup, nbss))
if res * 4 != rollup:
    bad.append("by_kind resident %d kB != smaps_rollup Rss %d kB" % (res * 4, rollup))
if size != snap["totals"]["size_pages"] or res != snap["totals"]["resident_pages"]:
    bad.append("by_kind does not add up to totals")
for x in bad:
    print("# " + x)
sys.exit(1 if bad else 0)
PYEOF
pyrc=$?
grep '^#' "$tmp/py.out"
if [ "$rc" -eq 0 ] && [ "$pyrc" -eq 0 ]; then
	ok snapshot_kinds_python_bytearray
else
	notok snapshot_kinds_python_bytearray "rc=$rc $(grep -v '^#' "$tmp/py.out" | tail -3) $(head -c 300 "$tmp/e")"
fi
exec 7>&-
wait "$tpid" 2>/dev/null
tpid=
t_done
