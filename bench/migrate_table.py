#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The migration table of doc/internals/measurements.md from a bench/migrate.sh run.

    bench/migrate_table.py RESULTS.jsonl... [--readme doc/internals/measurements.md]

Prints the Markdown table; with --readme FILE, replaces the text of FILE
between the "<!-- migrate-bench:start -->" and "<!-- migrate-bench:end -->"
lines.
"""
import json
import sys

MiB = 1048576.0


def pct(x):
    return "n/a" if x is None else "%+.0f%%" % (100 * x)


def mib(x):
    return "n/a" if x is None else "%.1f" % (x / MiB)


MODES = {"none": "none", "none-fork": "none (the fork)",
         "exclude": "hot VMAs (fork)", "vma": "hot VMAs (fork)",
         "page": "hot pages (memlens's CRIU)",
         "page-cool": "hot pages",
         "page-postcopy": "hot pages + post-copy",
         "postcopy-only": "post-copy alone (-m 0)"}


def label(r):
    """A mode's name in the tables, with the options it was run with."""
    name = MODES.get(r["mode"], r["mode"])
    return "%s (%s)" % (name, r["args"]) if r.get("args") else name


# the ratios' table: every mode but none, in this order
RATIO_MODES = ("none-fork", "exclude", "vma", "page", "page-cool", "page-postcopy", "postcopy-only")


def table(rows):
    out = []
    k = rows[0]
    crius = sorted({r["criu"] for r in rows})
    out.append("Measured by `bench/migrate.sh`, every mode of a workload in one run (kernel %s in QEMU TCG, CRIU %s, "
               "source and destination on one machine): `memlens migrate` without "
               "exclusion (`--no-exclude`), with hot VMAs left out whole (the CRIU fork) and "
               "with hot pages left out (CRIU with memlens's patches); ratios against the "
               "workload's `none` row of the same run; next to each, "
               "`migrate-model` on a `writes --record` trace of the same workload from "
               "the same run, its rounds at the times that migration made them (`--round-at`) "
               "and with the parameters given below the tables "
               "(error: model vs measured); data: the workload checked its own memory "
               "after the restore." % (k["kernel"], " and ".join(crius)))
    out.append("")
    out.append("| workload | left out | rounds | MiB per round | total MiB (× none) | "
               "downtime s (× none) | data | model total MiB (error) | "
               "model downtime s (error) |")
    out.append("|---|---|---|---|---|---|---|---|---|")
    none = {r["workload"]: r for r in rows if r["mode"] == "none"}

    def ratio(r, key):
        n = none.get(r["workload"])
        return "" if not n or not n[key] or r["mode"] == "none" else " (%.2f×)" % (r[key] / n[key])

    for r in rows:
        v = r.get("data_verified")
        out.append("| %s | %s | %d | %s | %s%s | %.2f%s | %s | %s (%s) | %s (%s) |" % (
            r["workload"], label(r),
            r["rounds"], " / ".join(mib(b) for b in r["round_bytes"]),
            mib(r["total_bytes"]), ratio(r, "total_bytes"),
            r["downtime_ms"] / 1000.0, ratio(r, "downtime_ms"),
            ("-" if v is None else ("intact" if v else "WRONG")) + ("*" if r.get("data_note") else ""),
            mib(r["model_total_bytes"]), pct(r["model_error_total"]),
            "n/a" if r["model_downtime_ms"] is None else "%.2f" % (r["model_downtime_ms"] / 1000.0),
            pct(r["model_error_downtime"])))
    notes = sorted({r["data_note"] for r in rows if r.get("data_note")})
    if notes:
        out.append("")
        out.append("\\* " + "; ".join(notes) + ".")
    out.append("")
    out.append("Against `none` in the same run: bytes sent before the freeze (the pre-dump "
               "rounds), total bytes (with post-copy the pages copied in after the restore "
               "too), downtime; and the model's error for the same mode, its downtime fitted "
               "three ways: from the mode's own migration; from the workload's `none` "
               "migration made with the same CRIU binary (the fork's `none` for its hot "
               "VMAs, memlens's CRIU's for the rest); and, for post-copy, from another "
               "workload's migration in the same mode.")
    out.append("")
    nf = any(r.get("model_error_downtime_none_fit") is not None for r in rows)
    xf = any(r.get("model_error_downtime_xfit") is not None for r in rows)
    out.append("| workload | left out | pre-copy bytes × none | total bytes × none | "
               "downtime × none | model total error | model downtime error |%s%s" %
               (" fitted from none (same CRIU) |" if nf else "",
                " fitted from another workload |" if xf else ""))
    out.append("|---|---|---|---|---|---|---|%s%s" % ("---|" if nf else "", "---|" if xf else ""))
    by = {}
    for r in rows:
        by.setdefault(r["workload"], {})[r["mode"]] = r
    for w, m in by.items():
        n = m.get("none")
        if not n:
            continue
        pre_n = sum(n["round_bytes"][:-1])
        for mode in RATIO_MODES:
            e = m.get(mode)
            if not e:
                continue
            pre = sum(e["round_bytes"][:-1])
            xfrom = e.get("model_xfit_from")
            out.append("| %s | %s | %s | %.2f | %.2f | %s | %s |%s%s" % (
                w, label(e), "%.2f" % (pre / pre_n) if pre_n else "n/a",
                e["total_bytes"] / max(n["total_bytes"], 1),
                e["downtime_ms"] / max(n["downtime_ms"], 1), pct(e["model_error_total"]),
                pct(e.get("model_error_downtime")),
                " %s%s |" % (pct(e.get("model_error_downtime_none_fit")),
                             " (%s)" % e["model_fit_peer"]
                             if e.get("model_fit_peer") not in (None, "none") and
                             e.get("model_error_downtime_none_fit") is not None else "")
                if nf else "",
                " %s%s |" % (pct(e.get("model_error_downtime_xfit")),
                             " (%s)" % xfrom.rsplit("-" + mode, 1)[0] if xfrom else "")
                if xf else ""))
    mem = sorted({r.get("model_memory") for r in rows if r.get("model_memory")})
    if mem:
        out.append("")
        out.append("The model's memory: %s." % " and ".join(
            {"resident": "the resident pages the trace recorded (each VMA's, every interval)",
             "vmas": "the VMAs' size (a trace without resident pages)"}.get(x, x) for x in mem))
    post = [r for r in rows if r.get("postcopy")]
    if post:
        out.append("")
        out.append("With post-copy the tree runs again after the restore and the rest of its "
                   "pages follow; the time until the last one arrived (from the freeze), what "
                   "came after the restore, and the faults the restored tree waited on:")
        out.append("")
        out.append("| workload | left out | downtime s | last page s (× none's downtime) | MiB after the restore "
                   "| faults waited on | wait avg / max ms | model last page s (error) "
                   "| error fitted from none | from another workload |")
        out.append("|---|---|---|---|---|---|---|---|---|---|")
        for r in post:
            n = by.get(r["workload"], {}).get("none")
            lp = r.get("last_page_ms")
            out.append("| %s | %s | %.2f | %s%s | %s | %s | %s | %s (%s) | %s | %s |" % (
                r["workload"], label(r), r["downtime_ms"] / 1000.0,
                "n/a" if lp is None else "%.2f" % (lp / 1000.0),
                " (%.2f×)" % (lp / n["downtime_ms"]) if lp is not None and n and n["downtime_ms"] else "",
                mib(r.get("lazy_bytes")),
                "n/a" if r.get("lazy_faults") is None else "%d" % r["lazy_faults"],
                "n/a" if r.get("lazy_fault_wait_avg_us") is None else "%.1f / %.1f" % (
                    r["lazy_fault_wait_avg_us"] / 1000.0, r["lazy_fault_wait_max_us"] / 1000.0),
                "n/a" if r.get("model_last_page_ms") is None else "%.2f" % (r["model_last_page_ms"] / 1000.0),
                pct(r.get("model_error_last_page")), pct(r.get("model_error_last_page_none_fit")),
                pct(r.get("model_error_last_page_xfit"))))
        lazy = [r for r in post if r.get("model_lazy_bandwidth_mbps") is not None]
        if lazy:
            out.append("")
            out.append("The model's last page: the fixed parts, then all of the tree's memory in the "
                       "trace (the pre-dump rounds' pages too: memlens's CRIU leaves those to the "
                       "lazy-pages daemon, which copies them in after the restore) at the lazy "
                       "bandwidth `--calibrate` fits from the migration (the pages copied in over "
                       "the time from the end of the downtime to the last page, less the faults' "
                       "waits), plus the faults times their average wait: %s." % "; ".join(
                           "%s %s %.1f MiB at %.1f MiB/s + %d × %.1f ms" % (
                               r["workload"], r["mode"], (r.get("model_lazy_bytes") or 0) / MiB,
                               r["model_lazy_bandwidth_mbps"], r.get("model_lazy_faults") or 0,
                               r.get("model_lazy_fault_ms") or 0) for r in lazy))
    fit = [r for r in rows if r.get("model_dump_fixed_s") is not None]
    if fit:
        out.append("")
        out.append("%s: the model's downtime is the final dump (a fixed part, then the final round's "
                   "bytes at the bandwidth) plus the restore (a fixed part, then the tree's whole "
                   "memory at the restore's bandwidth: a restore loads the pre-dump rounds' pages "
                   "too); with post-copy the fixed parts alone. `migrate-model --calibrate` fits "
                   "them from each mode's own migration: the bandwidth from its rounds' durations "
                   "against their bytes, the dump's fixed part from the rest of its downtime, the "
                   "restore's bandwidth from its restore with a fixed part of %s s assumed (a "
                   "post-copy restore, which loads no memory, is all fixed part). Fitted "
                   "(bandwidth MiB/s, dump fixed s, restore fixed s, restore MiB/s): %s. Fitted "
                   "so, a mode's downtime error is mostly that of its bytes (the final round's, and the tree's "
                   "memory%s); the ratios' table also fits each mode from the `none` migration "
                   "made with the same CRIU, and post-copy from another workload's "
                   "migration." % (
                       ", ".join(dict.fromkeys(r["workload"] for r in fit)),
                       " / ".join(sorted({"%.2f" % r["model_restore_fixed_s"] for r in fit
                                          if not r.get("postcopy")})),
                       "; ".join("%s %s %.1f, %.2f, %.2f, %s" % (
                           r["workload"], r["mode"], r["bandwidth_mbps"] or 0,
                           r["model_dump_fixed_s"], r["model_restore_fixed_s"],
                           "%.1f" % r["model_restore_bandwidth_mbps"]
                           if r.get("model_restore_bandwidth_mbps") and not r.get("postcopy")
                           else "-") for r in fit),
                       ": the resident pages of the trace, against the pages the dump found"
                       if all(r.get("model_memory") == "resident" for r in fit)
                       else ": the VMAs of the trace, against the pages the dump found"))
    old = [r for r in rows if r.get("model_freeze_overhead_s") is not None]
    fos = sorted({r["model_freeze_overhead_s"] for r in old})
    if fos:
        out.append("")
        out.append("%s%s: the model's downtime %s a freeze overhead (CRIU's dump of all but the "
                   "memory, and the restore) measured on the workload's `none` migration of the "
                   "same run: %s s, plus the final round's bytes at the bandwidth that migration "
                   "measured; `none`'s own downtime error is therefore its final round's bytes' "
                   "error." % (
                       ", ".join(dict.fromkeys(r["workload"] for r in old)),
                       " (a run before the model had the restore's part of its own)" if fit else "",
                       "is" if fit else "adds",
                       " / ".join("%.2f" % f for f in fos)))
    return "\n".join(out)


def main():
    args = sys.argv[1:]
    readme = None
    if "--readme" in args:
        i = args.index("--readme")
        readme = args[i + 1]
        del args[i:i + 2]
    if not args:
        sys.exit("usage: bench/migrate_table.py RESULTS.jsonl... [--readme doc/internals/measurements.md]")
    rows = [json.loads(line) for a in args for line in open(a) if line.strip()]
    if not rows:
        sys.exit("bench/migrate_table.py: %s: no results" % " ".join(args))
    text = table(rows)
    print(text)
    if readme:
        src = open(readme).read()
        a, b = "<!-- migrate-bench:start -->", "<!-- migrate-bench:end -->"
        if a not in src or b not in src:
            sys.exit("bench/migrate_table.py: %s has no %s ... %s markers" % (readme, a, b))
        head, rest = src.split(a, 1)
        _, tail = rest.split(b, 1)
        open(readme, "w").write(head + a + "\n" + text + "\n" + b + tail)


if __name__ == "__main__":
    main()
