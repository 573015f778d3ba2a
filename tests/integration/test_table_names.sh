#!/bin/bash
# memlens snapshot's table with names longer than their column, at several
# widths (COLUMNS 40, 60, 80, 120, 200), as a pmap user reads it (at 40 no
# name fits on its row: each is on a line of its own under it):
#   - no line is wider than COLUMNS, and nothing is cut with "~";
#   - a name with no space that fits on a line (a dotted library name, one
#     made of dashes and underscores) is shown whole, on its row or on a
#     line of its own under it (never broken at a dot or a dash), so grep
#     finds it; that line starts with a space, so it never reads as a row;
#   - a name longer than a whole line is broken after a '/' or at the edge,
#     never at a dot inside what fits;
#   - put back together, every VMA's name is the one pmap -X prints (and
#     /proc/PID/maps: pmap cuts a name past its width, memlens does not).
# The target: python3 mapping files of such names (read-only, shared).
set -u
. "$(dirname "$0")/../lib.bash"
M=${MEMLENS:?}
t_tmpdir table_names
PY=$(readlink -f /usr/bin/python3 2>/dev/null || true)
if [ ! -x "$PY" ] || ! command -v pmap >/dev/null; then
	skip table_names "needs /usr/bin/python3 and pmap (procps)"
	exit 0
fi
d="$tmp/maps"
mkdir -p "$d"
names=(
	libQt5WebEngineCore.so.5.15.8
	libboost_program_options-mt-x64.so.1.83.0
	libverylongname.with.many.dots.so.1.2.3.4.5.6.7
	"$(printf 'x%.0s' $(seq 150)).bin"
	"data file (kept).bin"
)
for n in "${names[@]}"; do head -c 8192 /dev/zero >"$d/$n"; done
start_ready target "$tmp/py.out" "$PY" -c '
import mmap, os, sys, time
fs = [open(os.path.join(sys.argv[1], n), "rb") for n in sys.argv[2:]]
ms = [mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) for f in fs]
print("ready", os.getpid(), flush=True)
time.sleep(600)' "$d" "${names[@]}"
pid=$ready_pid
pmap -X "$pid" >"$tmp/X"
cat "/proc/$pid/maps" >"$tmp/X.maps"

for cols in 40 60 80 120 200; do
	COLUMNS=$cols "$M" snapshot -p "$pid" >"$tmp/t$cols" 2>"$tmp/e$cols"
	rc=$?
	"$PY" - "$tmp/t$cols" "$tmp/X" "$cols" "${names[@]}" >"$tmp/v$cols" 2>&1 <<'PYEOF'
import sys
lines = open(sys.argv[1]).read().splitlines()
cols = int(sys.argv[3])
files = sys.argv[4:]
bad = []
i = next(k for k, l in enumerate(lines) if l.startswith("ADDRESS"))
if "MAPPING" in lines[i]:
    col = lines[i].index("MAPPING")
else:
    # no room for names on the rows: the header's on the line under it, and
    # every name on a line of its own under its row
    if lines[i + 1].strip() != "MAPPING" or not lines[i + 1].startswith(" "):
        bad.append("no MAPPING header: %r" % lines[i:i + 2])
    col = len(lines[i]) + 1
    i += 1
names, parts, addr = {}, {}, None
for l in lines[i + 1:]:
    if not l.strip() or l.startswith("("):
        break
    if not l.startswith(" "):
        addr = int(l.split()[0], 16)
        names[addr] = l[col:].strip() if len(l) > col else ""
        parts[addr] = [names[addr]] if names[addr] else []
    else:
        names[addr] += l.strip()
        parts[addr].append(l.strip())
for n, l in enumerate(lines):
    if len(l) > cols:
        bad.append("line %d is %d columns: %r" % (n, len(l), l))
    if l.endswith("~"):
        bad.append("cut: %r" % l)
# the VMAs of the mapped files, by pmap
# the names: /proc/PID/maps's, as pmap prints them (pmap cuts a name past
# its own width: its name is then where ours begins)
want = {}
for l in open(sys.argv[2] + ".maps").read().splitlines():
    f = l.split(None, 5)
    path = f[5] if len(f) > 5 else ""
    want[int(f[0].split("-")[0], 16)] = path.rsplit("/", 1)[-1] if path.startswith("/") else path
xl = open(sys.argv[2]).read().splitlines()
k = next(l.split() for l in xl if l.split()[:1] == ["Address"]).index("Mapping")
for l in xl:
    f = l.split()
    if len(f) < k or not all(c in "0123456789abcdef" for c in f[0]):
        continue
    a = int(f[0], 16)
    if not want.get(a, "").startswith(" ".join(f[k:])):
        bad.append("%x: pmap %r, maps %r" % (a, " ".join(f[k:]), want.get(a)))
for a, w in want.items():
    if " " in w:
        w = w.replace(" ", "")  # a name with spaces wraps at them
        got = names.get(a, "").replace(" ", "")
    else:
        got = names.get(a)
    if got != w:
        bad.append("%x: %r, pmap %r" % (a, got, w))
for f in files:
    a = [k for k, w in want.items() if w == f]
    if not a:
        bad.append("/proc/PID/maps does not show %s" % f)
        continue
    p = parts.get(a[0], [])
    if " " in f:
        continue
    if len(f) <= cols - 1:
        if f not in p:
            bad.append("%s not whole on one line: %r" % (f, p))
    else:
        # longer than a line: pieces as long as the line allows, no dot break
        if any(len(x) < cols // 2 for x in p[:-1]):
            bad.append("%s broken short: %r" % (f, p))
print("\n".join(bad))
sys.exit(1 if bad else 0)
PYEOF
	v=$?
	check "table_names_$cols" '[ $rc = 0 ] && [ $v = 0 ]' "rc=$rc $(cat "$tmp/e$cols") $(cat "$tmp/v$cols")"
done
t_done
