/* SPDX-License-Identifier: MIT */
/*
 * memlens report: a model built from the JSON Lines that `memlens writes`,
 * `snapshot`, `faults` and `migrate-model` write, and its rendering into one
 * self-contained HTML page (inline SVG and CSS, no script, no network).
 * Reads only the files it is given; never prints.
 */
#ifndef MEMLENS_REPORT_H
#define MEMLENS_REPORT_H

/* the interface libmemlens.so exports (built with -fvisibility=hidden) */
#pragma GCC visibility push(default)

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "memlens/err.h"
#include "memlens/opts.h"
#include "memlens/maps.h"

/* A growable string. On allocation failure @oom is set and output dropped. */
struct ml_rbuf {
	char *p;
	size_t len, cap;
	bool oom;
};

void ml_rb_printf(struct ml_rbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ml_rb_puts(struct ml_rbuf *b, const char *s);
void ml_rb_html(struct ml_rbuf *b, const char *s); /* escaped for HTML text and attributes */
void ml_rb_free(struct ml_rbuf *b);

/* Region kinds: those of maps.h, plus one for names it does not know. */
#define ML_REPORT_KIND_OTHER ML_VMA_KIND_COUNT
#define ML_REPORT_KINDS (ML_VMA_KIND_COUNT + 1)
int ml_report_kind(const char *name);
const char *ml_report_kind_label(int k);
const char *ml_report_kind_colour(int k); /* fixed: the same kind, the same colour */

/* ---- memlens writes: "interval" and "summary" lines of one pid ---- */
struct ml_rep_interval {
	double t_ms, interval_s;
	double dirty_pages, rate_pps;
	double seq, wall_ms; /* "seq", "dirty"."timestamp_ms": identify the interval */
	int hot_vmas;
	bool has_ranges; /* its line carried "written" */
};

struct ml_rep_vma {
	uint64_t start, end;
	int kind;
	char *path; /* the mapping's name ("path" of writes --json), or NULL */
	double dirty_pages; /* summed over the intervals */
	bool hot_ever;
};

struct ml_rep_cell {
	uint32_t iv, vma;
	float ratio;
	bool hot;
};

/* A page range written in interval @iv ("written" of writes --record). */
struct ml_rep_range {
	uint32_t iv;
	uint64_t start, end;
};

/*
 * One run of memlens writes. Its --json and --record outputs are the same
 * intervals (same pid, seq and wall clock): read both, they make one run.
 */
struct ml_rep_writes {
	char *src;
	char *also; /* the other file of the same run, if any */
	long pid;
	double page_size;
	struct ml_rep_interval *iv;
	size_t niv, civ;
	struct ml_rep_vma *vma;
	size_t nvma, cvma;
	struct ml_rep_cell *cell;
	size_t ncell, ccell;
	uint32_t *hint; /* vma index of region #j in the previous interval */
	size_t nhint;
	struct ml_rep_range *range;
	size_t nrange, crange;
	bool have_ranges; /* some interval carried "written" */
	bool have_summary;
	char stopped_because[64];
	long intervals, hot_vmas;
	double cumulative_dirty_bytes, avg_dirty_rate;
};

/* ---- memlens snapshot: "snapshot" lines of one pid ---- */
struct ml_rep_snap_point {
	double t_ms;
	double resident[ML_REPORT_KINDS]; /* pages */
};

struct ml_rep_kind_use {
	/* pages, in the last snapshot: written since the previous cycle
	 * ("written_pages", snapshot --writes), dirty page flag ("page_flags"
	 * "dirty", snapshot --pages) */
	double size, resident, swapped, written, dirty;
};

struct ml_rep_snaps {
	char *src;
	long pid;
	double page_size;
	struct ml_rep_snap_point *pt;
	size_t npt, cpt;
	struct ml_rep_kind_use last[ML_REPORT_KINDS];
	bool have_written, have_dirty;
	double cycle_us_max, cycle_us_sum;
	char stopped_because[64]; /* from its "summary" line */
	char command[256]; /* "command" of its summary: the argv, space-separated ("" unknown) */
};

/* ---- memlens faults -i: its "faults_interval" lines ---- */
struct ml_rep_fault_point {
	double t_ms, minor, major; /* faults in the interval ending at t_ms */
};

struct ml_rep_fault_series {
	char *src;
	struct ml_rep_fault_point *pt;
	size_t npt, cpt;
};

/* ---- memlens faults: the last "faults" line of a file ---- */
#define ML_REP_HIST_MAX 64
struct ml_rep_fault_row {
	char comm[32];
	long pid; /* -1: none (system-wide rows are per command) */
	double minor, major, retried; /* retried: NAN when not known */
};

struct ml_rep_faults {
	char *src;
	char mode[24]; /* the tracer's hooks, when it says */
	struct ml_rep_fault_row *rows;
	size_t nrows;
	double minor[ML_REP_HIST_MAX], major[ML_REP_HIST_MAX];
	size_t nminor, nmajor;
};

/* ---- memlens migrate-model: the last "migrate_model" line of a file ---- */
struct ml_rep_policy {
	char name[32];
	double *rounds; /* bytes of round 1, 2, ... */
	size_t nrounds;
	double total_bytes, final_round_bytes, downtime_ms;
};

struct ml_rep_migrate {
	char *src;
	double bandwidth_mbps, round_interval_s;
	struct ml_rep_policy *pol;
	size_t npol;
};

/* ---- memlens leaks: the "leaks" line of a file, and its "leaks_interval" lines ---- */
struct ml_rep_leak_stack {
	double count, bytes;
	char **frames; /* "function (object)", outermost first; offsets dropped */
	size_t nframes;
};

struct ml_rep_leak_size {
	double size, count, bytes;
};

struct ml_rep_leak_point {
	double t_ms, outstanding, outstanding_bytes;
};

struct ml_rep_leaks {
	char *src;
	long pid;
	char allocator[128];
	bool have_final; /* a "leaks" line (else only intervals) */
	double mallocs, frees, outstanding, outstanding_bytes;
	/* leaks --sample: the mean bytes between samples (0: exact), and the
	 * standard error of the estimated outstanding_bytes */
	double sample_bytes, outstanding_bytes_stderr;
	double no_stack, no_stack_bytes; /* outstanding blocks without a stack */
	double stacks_kept; /* distinct stacks traced (by_stack holds the largest -T) */
	struct ml_rep_leak_size *sizes;
	size_t nsizes;
	struct ml_rep_leak_stack *stacks;
	size_t nstacks;
	struct ml_rep_leak_point *pt; /* from "leaks_interval" */
	size_t npt, cpt;
};

/* ---- memlens slab: the "slab" line of a file and its "slab_interval" lines ---- */
struct ml_rep_slab_cache {
	char name[64];
	double allocs, frees, net, net_kb; /* of the "slab" line (or the intervals summed) */
	bool in_final;
};

/* One cache's counts in one interval. */
struct ml_rep_slab_cell {
	uint32_t iv, cache;
	double allocs, frees;
};

struct ml_rep_slab {
	char *src;
	bool have_final;
	double *iv_ms; /* end of each interval, ms since the start */
	size_t niv, civ;
	struct ml_rep_slab_cache *cache;
	size_t ncache, ccache;
	struct ml_rep_slab_cell *cell;
	size_t ncell, ccell;
	double unseen_allocs;
	char kmalloc[16];
};

/* ---- memlens oom: "oom_kill" lines of a file (and its "oom_summary") ---- */
struct ml_rep_oom_kill {
	double time_ms; /* wall clock, ms since the epoch */
	long victim_pid, trigger_pid;
	char victim_comm[32], trigger_comm[32], scope[16], cgroup[128];
	double anon_rss_kb, file_rss_kb, shmem_rss_kb, total_vm_kb, limit_kb;
};

struct ml_rep_oom {
	char *src;
	struct ml_rep_oom_kill *kill;
	size_t nkill, ckill;
	bool have_summary;
	double kills, lost; /* of "oom_summary" */
	double *iv_ms, *iv_kills; /* "oom_interval": end of each interval, its kills */
	size_t niv, civ;
};

struct ml_report {
	struct ml_rep_writes *w;
	size_t nw;
	struct ml_rep_snaps *s;
	size_t ns;
	struct ml_rep_faults *f;
	size_t nf;
	struct ml_rep_migrate *m;
	size_t nm;
	struct ml_rep_fault_series *fs;
	size_t nfs;
	struct ml_rep_leaks *l;
	size_t nl;
	struct ml_rep_slab *sl;
	size_t nsl;
	struct ml_rep_oom *o;
	size_t no;
	size_t lines; /* JSON lines read */
	bool skip_unknown; /* set before loading: skip lines of other types */
	size_t max_line; /* set before loading: longest line accepted (0: ML_MAX_LINE) */
	size_t skipped; /* lines skipped for their type */
	char **srcs; /* input files, in order */
	size_t nsrcs;
};

void ml_report_init(struct ml_report *r);
void ml_report_free(struct ml_report *r);

/*
 * Read one JSON Lines file. Errors name the file and the line:
 * -ENOENT/-EACCES (cannot open), -EINVAL (empty, not JSON, unknown "type",
 * a field missing or of the wrong type, a line longer than max_line, a
 * directory), -EIO (read error), -ENOMEM.
 */
int ml_report_load_file(struct ml_report *r, const char *path, struct ml_err *err);
/* The same from an open stream (stdin), called @name in messages. */
int ml_report_load_stream(struct ml_report *r, FILE *f, const char *name, struct ml_err *err);
/* One line of @src (for the file reader and the tests). */
int ml_report_load_line(struct ml_report *r, const char *src, long lineno, const char *text,
			size_t len, struct ml_err *err);

struct ml_report_opts {
	size_t sz; /* sizeof(struct ml_report_opts): memlens/opts.h */
	const char *title;
	int max_cols; /* time columns/points per chart (downsampling); 0: 360 */
	int max_rows; /* VMAs in a heat map; 0: 40 */
};

/* Append the whole HTML page to @out. -EINVAL if @r holds no data, -ENOMEM. */
int ml_report_render(const struct ml_report *r, const struct ml_report_opts *o, struct ml_rbuf *out,
		     struct ml_err *err);

#pragma GCC visibility pop

#endif
