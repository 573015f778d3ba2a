#!/bin/bash
# SPDX-License-Identifier: MIT
# Makes doc/report.png, the report screenshot of the README's quick tour:
# memlens writes on the migwork workload (hot, idle, hot-then-cold and
# cold-then-hot memory), memlens migrate-model on its page ranges, memlens
# report on both, drawn by headless chromium, then cropped to the page and
# reduced to 256 colours (python3-pil) to stay small.
# Needs root (memlens writes attaches to the workload), `make`, chromium.
set -eu
cd "$(dirname "$0")/.."
M=$PWD/build/memlens W=$PWD/build/workloads out=${1:-doc/report.png}
for py in python3 /usr/bin/python3; do
	"$py" -c 'import PIL' 2>/dev/null && break
	py=
done
[ -x "$M" ] && [ -x "$W/migwork" ] || { echo "$0: build first: make" >&2; exit 1; }
[ -n "$py" ] || { echo "$0: needs python3-pil: apt-get install python3-pil" >&2; exit 1; }
chromium=$(command -v chromium || command -v chromium-browser) ||
	{ echo "$0: needs chromium: apt-get install chromium" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
cd "$tmp"
"$W/migwork" -H 24 -k 3 -I 64 -C 16 -W 16 -T 3 >mig.out 2>&1 &
pid=$!
for _ in $(seq 100); do grep -q ready mig.out && break; sleep 0.1; done
"$M" writes -q -p "$pid" -d 5 -i 250 --json --record trace.jsonl -o writes.jsonl
kill "$pid"
wait "$pid" 2>/dev/null || true
"$M" migrate-model trace.jsonl -b 200 -r 0.5 --json >model.jsonl
"$M" report writes.jsonl model.jsonl --title "memlens report: migwork" -o report.html >/dev/null
"$chromium" --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking \
	--disable-component-update --disable-sync --hide-scrollbars --user-data-dir="$tmp/profile" \
	--window-size=1100,2000 --screenshot="$tmp/full.png" "file://$tmp/report.html" 2>/dev/null
cd - >/dev/null
"$py" - "$tmp/full.png" "$out" <<'PY'
import sys
from PIL import Image
im = Image.open(sys.argv[1]).convert('RGB')
w, h = im.size
px = im.load()
ink = [y for y in range(h) if any(px[x, y] != (255, 255, 255) for x in range(0, w, 3))]
im = im.crop((0, 0, w, min(h, ink[-1] + 24)))
im.quantize(colors=256, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE).save(
    sys.argv[2], optimize=True)
PY
echo "wrote $out ($(stat -c %s "$out") bytes)"
