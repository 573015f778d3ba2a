#!/usr/bin/env python3
"""Check a report's DOM, as a browser parsed it (chromium --dump-dom),
against the JSON Lines the report was drawn from.

    check_trace_dom.py DOM leaks|slab|oom|runs|faults JSONL

Prints what differs and exits 1, or prints a one-line summary and exits 0.
"""
import json
import re
import sys
from html.parser import HTMLParser


class Node:
    def __init__(self, tag, attrs, parent):
        self.tag, self.attrs, self.parent = tag, dict(attrs), parent
        self.kids, self.text = [], ""

    def cls(self):
        return (self.attrs.get("class") or "").split()

    def all(self):
        yield self
        for k in self.kids:
            yield from k.all()

    def find(self, tag=None, cls=None):
        return [n for n in self.all() if (tag is None or n.tag == tag)
                and (cls is None or cls in n.cls())]

    def alltext(self):
        return self.text + "".join(k.alltext() for k in self.kids)


VOID = {"meta", "br", "img", "input", "link", "hr", "rect", "line", "circle",
        "polyline", "polygon", "path"}


class Tree(HTMLParser):
    def __init__(self):
        super().__init__()
        self.root = Node("root", [], None)
        self.cur = self.root

    def handle_starttag(self, tag, attrs):
        n = Node(tag, attrs, self.cur)
        self.cur.kids.append(n)
        if tag not in VOID:
            self.cur = n

    def handle_startendtag(self, tag, attrs):
        self.cur.kids.append(Node(tag, attrs, self.cur))

    def handle_endtag(self, tag):
        n = self.cur
        while n is not None and n.tag != tag:
            n = n.parent
        if n is not None and n.parent is not None:
            self.cur = n.parent

    def handle_data(self, data):
        self.cur.text += data


def lines(path):
    return [json.loads(l) for l in open(path) if l.startswith("{")]


def rows(table):
    return [[td.alltext().strip() for td in tr.find("td")] for tr in table.find("tr")
            if tr.find("td")]


errors = []


def expect(what, got, want):
    if got != want:
        errors.append(f"{what}: report {got!r}, JSON {want!r}")


def frame_name(s):
    # "main+0x18d (leaky)" -> "main (leaky)", as the report and --folded name frames
    return re.sub(r"\+0x[0-9a-f]+ \(", " (", s, count=1)


def check_leaks(doc, ls):
    fin = [d for d in ls if d["type"] == "leaks"][-1]
    sec = [s for s in doc.find("section", "leaks") if f"pid {fin['pid']}" in s.alltext()][0]
    frames = sec.find("g", "fframe")
    root = [f for f in frames if f.attrs["data-depth"] == "0"]
    expect("icicle root bytes", [int(f.attrs["data-bytes"]) for f in root],
           [sum(s["bytes"] for s in fin["by_stack"])])
    # the tree the stacks make, outermost frame first: one frame a node
    nodes = {}
    for s in fin["by_stack"]:
        path = () if s["stack"] else ("[stack not recorded]",)
        if path:
            nodes[path] = nodes.get(path, 0) + s["bytes"]
        for f in reversed(s["stack"]):
            path += (frame_name(f),)
            nodes[path] = nodes.get(path, 0) + s["bytes"]
    want = sorted((len(p), b) for p, b in nodes.items())
    got = sorted((int(f.attrs["data-depth"]), int(f.attrs["data-bytes"]))
                 for f in frames if f.attrs["data-depth"] != "0")
    expect("icicle frames (depth, bytes)", got, want)
    # largest first: each frame's children left to right by bytes, descending
    by_depth = {}
    for f in frames:
        r = f.find("rect")[0]
        by_depth.setdefault(int(f.attrs["data-depth"]), []).append(
            (float(r.attrs["x"]), int(f.attrs["data-bytes"])))
    expect("the widest frame of depth 1 is leftmost",
           sorted(by_depth.get(1, []))[0][1] if by_depth.get(1) else None,
           max((b for _, b in by_depth.get(1, [])), default=None))
    table = sec.find("table", "leak-sizes")[0]
    expect("by-size table", [[int(c) for c in r[:3]] for r in rows(table)],
           [[z["size"], z["count"], z["bytes"]] for z in fin["by_size"][:20]])
    head = sec.find("p", "headline")[0].alltext()
    blocks = f"{fin['outstanding']:,}"
    if f"in {blocks} block" not in head:
        errors.append(f"headline {head!r} does not say {blocks} blocks")
    return f"{len(frames)} frames, {len(fin['by_stack'])} stacks, {len(fin['by_size'])} sizes"


def check_slab(doc, ls):
    fin = [d for d in ls if d["type"] == "slab"][-1]
    ivs = [d for d in ls if d["type"] == "slab_interval"]
    sec = doc.find("section", "slab")[0]
    want = {r["cache"]: [r["allocs"], r["frees"], r["net"], r["net_kb"]] for r in fin["rows"]}
    got = rows(sec.find("table", "slab")[0])
    if not got:
        errors.append("the slab table has no rows")
    for r in got:
        expect(f"cache {r[0]}", [int(c) for c in r[1:5]], want.get(r[0]))
    panels = sec.find("g", "slabpanel")
    for p in panels:
        c = p.attrs["data-cache"]
        net = sum(r["allocs"] - r["frees"] for d in ivs for r in d["rows"] if r["cache"] == c)
        expect(f"net of {c} over the intervals", int(p.attrs["data-net"]), net)
    if ivs and not panels:
        errors.append("slab intervals but no chart")
    return f"{len(got)} caches in the table, {len(panels)} charts over {len(ivs)} intervals"


def check_oom(doc, ls):
    kills = [d for d in ls if d["type"] == "oom_kill"]
    sec = doc.find("section", "oom")[0]
    marks = sec.find("g", "oomkill")
    expect("kills marked (pid, RSS kB)",
           sorted((int(m.attrs["data-pid"]), int(m.attrs["data-rss-kb"])) for m in marks),
           sorted((k["victim_pid"], k["anon_rss_kb"] + k["file_rss_kb"] + k["shmem_rss_kb"])
                  for k in kills))
    for m, k in zip(marks, kills):
        if k["victim_comm"] not in m.alltext():
            errors.append(f"mark of pid {k['victim_pid']} does not name {k['victim_comm']}")
    t = rows(sec.find("table", "oom")[0])
    expect("table victims", [(r[0], int(r[1])) for r in t],
           [(k["victim_comm"], k["victim_pid"]) for k in kills])
    return f"{len(marks)} kills marked"


def check_runs(doc, ls):
    snaps = [d for d in ls if d["type"] == "snapshot"]
    pids = []
    for d in snaps:
        if d["pid"] not in pids:
            pids.append(d["pid"])
    secs = doc.find("section", "runs")
    expect("one section for the runs", len(secs), 1)
    if not secs:
        return ""
    sec = secs[0]
    for s in doc.find("section", "snapshots"):
        if any(f"pid {p}" in s.alltext() for p in pids):
            errors.append("a run also has a section of its own")
    t = sec.find("table", "runs")[0]
    expect("columns", len(t.find("th")) - 1, len(pids))
    pid_row = [r for r in rows(t) if r[0] == "pid"][0]
    expect("pids side by side", [int(x) for x in pid_row[1:]], pids)

    def res(d):
        return sum(r["resident_pages"] for r in d["regions"]) * d["page_size"]
    peak = [max(res(d) for d in snaps if d["pid"] == p) for p in pids]
    end = [[res(d) for d in snaps if d["pid"] == p][-1] for p in pids]
    got_peak = [int(td.attrs["data-bytes"]) for td in t.find("tr", "peak")[0].find("td")[1:]]
    got_end = [int(td.attrs["data-bytes"]) for td in t.find("tr", "end")[0].find("td")[1:]]
    expect("peak of each run (bytes)", got_peak, peak)
    expect("end of each run (bytes)", got_end, end)
    expect("lines over time", len(sec.find("polyline", "run")), len(pids))
    head = sec.find("p", "headline")[0].alltext()
    if not head.startswith(f"{len(pids)} runs: peak "):
        errors.append(f"headline {head!r}")
    return f"{len(pids)} runs, peaks {peak}, ends {end}"


def check_faults(doc, ls):
    ivs = [d for d in ls if d["type"] == "faults_interval"]
    secs = doc.find("section", "faultseries")
    expect("faults over time", len(secs), 1 if ivs else 0)
    if secs:
        pts = secs[0].find("polyline", "minor")[0].attrs["points"].split()
        expect("points", len(pts), len(ivs))
    return f"{len(ivs)} intervals"


def main():
    dom, kind, src = sys.argv[1:4]
    t = Tree()
    t.feed(open(dom).read())
    what = globals()["check_" + kind](t.root, lines(src))
    if errors:
        print("\n".join(errors))
        sys.exit(1)
    print(what)


main()
