// SPDX-License-Identifier: MIT
/* The rows of a profiled process tree (tree_rows.h). */
#include "tree_rows.h"

#include "memlens/units.h"

void tree_rows_print(FILE *f, const struct tree_rows *t)
{
	char b[16], d[16];

	if (!t->n)
		return;
	fprintf(f, "%s%zu in the tree%s\n", t->label, t->total > t->n ? t->total : t->n,
		t->profiled ? " (hot memory and bytes written while profiled)" : "");
	for (size_t i = 0; i < t->n; i++) {
		const struct ml_profiler_proc *q = &t->procs[i];

		if (t->profiled)
			fprintf(f, "    %7d %-16s hot %8s  written %8s%s\n", (int)q->pid, q->comm,
				ml_fmt_bytes(q->hot_bytes, b, sizeof(b)),
				ml_fmt_bytes((uint64_t)q->cumulative_dirty_bytes, d, sizeof(d)),
				q->exited   ? "  (exited)"
				: q->failed ? "  (not profiled)"
					    : "");
		else
			fprintf(f, "    %7d %s\n", (int)q->pid, q->comm);
	}
	if (t->total > t->n)
		fprintf(f, "    and %zu more\n", t->total - t->n);
	if (t->profiled)
		fprintf(f, "    %7s %-16s hot %8s  written %8s  (shared once)\n", "", "tree total",
			ml_fmt_bytes(t->hot_bytes, b, sizeof(b)),
			ml_fmt_bytes(t->dirty_bytes > 0 ? (uint64_t)t->dirty_bytes : 0, d,
				     sizeof(d)));
}
