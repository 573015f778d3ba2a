// SPDX-License-Identifier: MIT
/* memlens writes: the write profiler on the command line. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_target.h"
#include "cliutil.h"
#include "command.h"
#include "live.h"
#include "table.h"
#include "memlens/format_writes.h"
#include "memlens/jsonw.h"
#include "opts.h"
#include "output.h"
#include "memlens/heat.h"
#include "memlens/hotrange.h"
#include "memlens/maps.h"
#include "memlens/profiler.h"
#include "memlens/sample.h"
#include "memlens/spawn.h"

static const char about[] =
	"Profile where a process writes: every interval, the pages of each writable\n"
	"private VMA and of its writable shared memory written since the last interval\n"
	"(userfaultfd async write-protect + PAGEMAP_SCAN), which VMAs are hot, and the\n"
	"hot ranges inside them: runs of pages written in -c intervals in a row, cold\n"
	"again after --cool intervals unwritten, at most --hot-ranges of them (the\n"
	"cheapest gaps merged). With --tree, every process under it too: a row per\n"
	"process, and the tree's totals, in which a shared memory page written by\n"
	"several processes counts once.\n";

static const char footer[] =
	"The target is stopped once, while a userfaultfd is created in it (the first\n"
	"line says for how long: 0.2 to 0.3 ms median, up to 10 ms, measured on 2 busy\n"
	"CPUs; longer the busier they are);\n"
	"on exit every registration is removed and it holds no extra fd or mapping.\n";

struct writes_ctx {
	bool json, all, quiet, tree;
	FILE *out; /* stdout, or -o FILE */
	FILE *record;
	pid_t pid;
	pthread_mutex_t out_lock;
	struct ml_profiler_sample last;
	bool have_last;
	uint64_t intervals;
	uint64_t t0_ns, interval_ms; /* the profiler's start, its interval */
	bool interval_adapted; /* --max-overhead made the interval longer at some point */
	uint64_t tick_ns_max; /* the longest tick */
	uint64_t ticks_over; /* ticks longer than the interval in force */
	int64_t max_dirty_pages;
	/* the largest standard error of a sampled written ratio, the intervals one was noted in */
	double stderr_max;
	uint64_t stderr_over;
	const struct ml_attach_stats *attach; /* how the target was stopped */
};

static void emit_interval_json(FILE *f, const struct writes_ctx *c,
			       const struct ml_profiler_sample *s, bool with_written)
{
	struct ml_jw w;

	ml_jw_init(&w, f);
	ml_fmt_writes_interval(&w, c->pid, s, with_written);
}

static int cmp_dirty(const void *a, const void *b)
{
	const struct ml_profiler_region *x = *(const struct ml_profiler_region *const *)a;
	const struct ml_profiler_region *y = *(const struct ml_profiler_region *const *)b;

	if (x->dirty_pages != y->dirty_pages)
		return x->dirty_pages < y->dirty_pages ? 1 : -1;
	return x->start < y->start ? -1 : x->start > y->start;
}

/*
 * The regions of one interval (those written, hot or warming up; all with
 * -a), sizes in one unit; @max_rows of them (0: all), the most written
 * first when @by_dirty.
 */
static void region_table(const struct writes_ctx *c, FILE *f, const struct ml_profiler_sample *s,
			 int width, size_t max_rows, bool by_dirty)
{
	static const struct table_col cols[] = {
		{ "PID", TABLE_RIGHT, 0, false },     { "ADDRESS", TABLE_LEFT, 0, false },
		{ "KIND", TABLE_LEFT, 0, false },     { "SIZE", TABLE_RIGHT, 0, false },
		{ "WRITTEN", TABLE_RIGHT, 0, false }, { "RATIO", TABLE_RIGHT, 0, false },
		{ "CONS", TABLE_RIGHT, 1, false },    { "HOT", TABLE_LEFT, 0, false },
		{ "MAPPING", TABLE_LEFT, 0, true },
	};
	const struct ml_profiler_region **v = calloc(s->nregions + 1, sizeof(*v));
	struct table *t;
	uint64_t max = 0, div;
	const char *unit;
	size_t n = 0;
	char a[32];

	if (!v)
		return;
	for (size_t i = 0; i < s->nregions; i++) {
		const struct ml_profiler_region *r = &s->regions[i];

		if (!c->all && !r->dirty_pages && !r->hot && !r->consecutive_hot)
			continue;
		v[n++] = r;
		if (r->end - r->start > max)
			max = r->end - r->start;
	}
	if (!n) {
		fprintf(f, "  (no writes)\n");
		free(v);
		return;
	}
	if (by_dirty)
		qsort(v, n, sizeof(*v), cmp_dirty);
	div = ml_size_unit(max, 7, &unit);
	/* the PID column with --tree only */
	t = c->tree ? table_new(cols, 9) : table_new(cols + 1, 8);
	for (size_t i = 0; i < n; i++) {
		const struct ml_profiler_region *r = v[i];

		table_row(t);
		if (c->tree)
			table_cell(t, "%d", (int)r->pid);
		table_cell(t, "%s", table_addr(r->start, a, sizeof(a)));
		table_cell(t, "%s", ml_vma_kind_name(r->kind));
		table_cell(t, "%llu", (unsigned long long)ml_in_unit(r->end - r->start, div));
		table_cell(t, "%llu", (unsigned long long)ml_in_unit(r->dirty_pages * 4096, div));
		if (r->estimated)
			table_cell(t, "~%.3f", r->written_ratio);
		else
			table_cell(t, "%.3f", r->written_ratio);
		table_cell(t, "%d", r->consecutive_hot);
		table_cell(t, "%s", r->hot ? "HOT" : "");
		table_cell(t, "%s%s", table_basename(r->path ? r->path : ""),
			   r->shared ? " (shared)" : "");
	}
	if (n < s->nregions && !c->all)
		fprintf(f, "  sizes in %s; the %zu of %zu VMAs written or hot (-a: all):\n", unit,
			n, s->nregions);
	else
		fprintf(f, "  sizes in %s:\n", unit);
	table_print(t, f, width, 2, max_rows);
	table_free(t);
	free(v);
}

/*
 * The hot ranges inside the VMAs: a count line, then @max_rows of them (0:
 * all); pages counts the cold pages a merge took in, "hot" those that are.
 */
static void hot_range_lines(FILE *f, const struct ml_hotrange_set *h, size_t max_rows, bool tree)
{
	char b1[16], b2[16], a[40];
	size_t n = max_rows && max_rows < h->n ? max_rows : h->n;

	if (!h->n)
		return;
	fprintf(f, "  hot ranges%s: %zu, %s hot", h->estimated ? " (estimated from a sample)" : "",
		h->n, ml_fmt_bytes(h->hot_bytes, b1, sizeof(b1)));
	if (h->unmerged > h->n)
		fprintf(f, " (%zu runs merged into %zu: %s of cold pages taken in)", h->unmerged,
			h->n, ml_fmt_bytes(h->merge_cost_bytes, b2, sizeof(b2)));
	fputc('\n', f);
	for (size_t i = 0; i < n; i++) {
		const struct ml_hotrange_range *r = &h->r[i];
		uint64_t pages = (r->end - r->start) / 4096;

		if (tree)
			fprintf(f, "    pid %d", (int)r->pid);
		fprintf(f, "    %s %8llu page%s", table_range(r->start, r->end, a, sizeof(a)),
			(unsigned long long)pages, pages == 1 ? "" : "s");
		if (r->hot_pages != pages)
			fprintf(f, " (%llu hot)", (unsigned long long)r->hot_pages);
		fputc('\n', f);
	}
	if (n < h->n)
		fprintf(f, "    ... %zu more (-a lists them all)\n", h->n - n);
}

/* A tree's processes: one row each, what it wrote this interval and since the start. */
/* The tree's processes; @max_lines > 0: as many as fit in that many lines, title included */
static void process_table(FILE *f, const struct ml_profiler_sample *s, int width, int max_lines)
{
	static const struct table_col cols[] = {
		{ "PID", TABLE_RIGHT, 0, false },	 { "PPID", TABLE_RIGHT, 1, false },
		{ "COMM", TABLE_LEFT, 0, false },	 { "WRITTEN", TABLE_RIGHT, 0, false },
		{ "SHARED", TABLE_RIGHT, 0, false },	 { "HOT", TABLE_RIGHT, 0, false },
		{ "CUMULATIVE", TABLE_RIGHT, 1, false }, { "STATE", TABLE_LEFT, 0, true },
	};
	struct table *t = table_new(cols, 8);
	char b1[16], b2[16], b3[16], b4[16];

	for (size_t i = 0; i < s->nprocs; i++) {
		const struct ml_profiler_proc *p = &s->procs[i];

		table_row(t);
		table_cell(t, "%d", (int)p->pid);
		table_cell(t, "%d", (int)p->ppid);
		table_cell(t, "%s", p->comm);
		table_cell(t, "%s", ml_fmt_bytes((uint64_t)p->dirty_pages * 4096, b1, sizeof(b1)));
		table_cell(t, "%s",
			   ml_fmt_bytes((uint64_t)p->shared_dirty_pages * 4096, b2, sizeof(b2)));
		table_cell(t, "%s", ml_fmt_bytes(p->hot_bytes, b3, sizeof(b3)));
		table_cell(t, "%s",
			   ml_fmt_bytes((uint64_t)p->cumulative_dirty_bytes, b4, sizeof(b4)));
		table_cell(t, "%s", p->exited ? "exited" : p->failed ? p->note : "");
	}
	fprintf(f, "  processes (written this interval; SHARED: of it, shared memory):\n");
	if (max_lines > 0)
		table_print_fit(t, f, width, 2, max_lines - 1);
	else
		table_print(t, f, width, 2, 0);
	table_free(t);
}

/* What the tree's totals and shared memory come to, when there is something to say. */
static void tree_lines(FILE *f, const struct ml_profiler_sample *s)
{
	char b1[16];

	if (s->tree)
		fprintf(f, "  tree: %zu processes; shared memory written: %s (each page once)\n",
			s->nprocs,
			ml_fmt_bytes((uint64_t)s->shared_dirty_pages * 4096, b1, sizeof(b1)));
	if (s->shared_untracked)
		fprintf(f,
			"  shared: %d writable shared memory VMA%s not tracked on this kernel "
			"(it lacks UFFD_FEATURE_WP_HUGETLBFS_SHMEM)\n",
			s->shared_untracked, s->shared_untracked == 1 ? "" : "s");
}

/* After the tick's time: that it took longer than the interval, when it did */
static void tick_over_text(FILE *f, const struct ml_profiler_sample *s)
{
	if (s->tick_over_interval)
		fprintf(f, ", longer than the %u ms interval", s->interval_ms);
}

/* "  sample 1/10 (faults cost 1.2% of a CPU)": how the interval was tracked */
static void sampling_text(FILE *f, const struct ml_profiler_sampling *s)
{
	if (!s->on)
		return;
	if (s->k > 1)
		fprintf(f, "  sample 1/%u", s->k);
	else
		fprintf(f, "  sample 1/1 (every page)");
	fprintf(f, "  overhead %.2f%% of a CPU", s->cost * 100);
	if (s->max_error > 0 && s->error >= 0)
		fprintf(f, ", error %.1f%%", s->error * 100);
	if (s->next_k != s->k)
		fprintf(f, ", next 1/%u", s->next_k);
}

static void print_table(const struct writes_ctx *c, const struct ml_profiler_sample *s)
{
	char b1[16], b2[16], b3[16];
	int width = table_width(c->out);

	fprintf(c->out, "interval %llu  t=%.2fs  VMAs %d (tracked %d)  hot %d  tick %.2f ms",
		(unsigned long long)s->seq, s->t_ms / 1000.0, s->total_vmas, s->tracked_vmas,
		s->hot_vmas, s->tick_ns / 1e6);
	tick_over_text(c->out, s);
	sampling_text(c->out, &s->sampling);
	fputc('\n', c->out);
	if (s->tree)
		process_table(c->out, s, width, 0);
	region_table(c, c->out, s, width, 0, false);
	hot_range_lines(c->out, &s->hot, c->all ? 0 : 16, s->tree);
	tree_lines(c->out, s);
	table_wrap(c->out, width, 4,
		   "  dirty: %lld pages (%s) in %.2f s = %.0f pages/s; cumulative %s, avg %s/s",
		   (long long)s->dirty.dirty_pages,
		   ml_fmt_bytes((uint64_t)s->dirty.dirty_bytes, b1, sizeof(b1)), s->interval_s,
		   s->dirty.dirty_rate_pages_per_sec,
		   ml_fmt_bytes((uint64_t)s->dirty.cumulative_dirty_bytes, b2, sizeof(b2)),
		   ml_fmt_bytes((uint64_t)s->dirty.avg_dirty_rate, b3, sizeof(b3)));
	fputc('\n', c->out);
	fflush(c->out);
}

/* One frame of the live view: totals, then the most written regions that fit. */
static void print_screen(const struct writes_ctx *c, const struct ml_profiler_sample *s)
{
	FILE *f = live_frame();
	char b1[16], b2[16], b3[16];
	int rows = live_rows() - 8;

	fprintf(f, "memlens writes - pid %d, interval %llu, %.1f s; q or Ctrl-C quits\n",
		(int)c->pid, (unsigned long long)s->seq, s->t_ms / 1000.0);
	fprintf(f, "VMAs %d, tracked %d, hot %d; tick %.2f ms", s->total_vmas, s->tracked_vmas,
		s->hot_vmas, s->tick_ns / 1e6);
	tick_over_text(f, s);
	sampling_text(f, &s->sampling);
	fputc('\n', f);
	fprintf(f, "written: %s in %.2f s; cumulative %s, average %s/s\n\n",
		ml_fmt_bytes((uint64_t)s->dirty.dirty_bytes, b1, sizeof(b1)), s->interval_s,
		ml_fmt_bytes((uint64_t)s->dirty.cumulative_dirty_bytes, b2, sizeof(b2)),
		ml_fmt_bytes((uint64_t)s->dirty.avg_dirty_rate, b3, sizeof(b3)));
	/* a tree: its processes first, in at most a third of what is left, then the regions */
	if (s->tree && rows > 6) {
		char *text = NULL;
		size_t len = 0;
		FILE *m = open_memstream(&text, &len);

		if (m) {
			tree_lines(m, s);
			process_table(m, s, live_cols(), rows / 3);
			fclose(m);
			fwrite(text, 1, len, f);
			for (size_t i = 0; i < len; i++)
				rows -= text[i] == '\n';
			free(text);
		}
	}
	if (rows > 0)
		region_table(c, f, s, live_cols(), (size_t)rows, true);
	live_show();
}

/*
 * The standard errors a sampled interval states, of the VMAs of which its
 * sample held two blocks or more: a single block's is the bound of any
 * ratio (the spread is not measured), a small VMA's every time.
 */
static void note_stderr(struct writes_ctx *c, const struct ml_profiler_sample *s)
{
	bool over = false;

	for (size_t i = 0; i < s->nregions; i++) {
		const struct ml_profiler_region *r = &s->regions[i];

		if (!r->estimated || r->sampled_pages <= ML_SAMPLE_BLOCK_PAGES)
			continue;
		if (r->ratio_stderr > c->stderr_max)
			c->stderr_max = r->ratio_stderr;
		over |= r->ratio_stderr > ML_WRITES_STDERR_NOTE;
	}
	c->stderr_over += over;
}

static void on_tick(const struct ml_profiler_sample *s, void *arg)
{
	struct writes_ctx *c = arg;

	if (s->target_exited && !s->nregions)
		return;
	pthread_mutex_lock(&c->out_lock);
	if (c->json)
		emit_interval_json(c->out, c, s, false);
	else if (!c->quiet && live_on())
		print_screen(c, s);
	else if (!c->quiet)
		print_table(c, s);
	if (c->record)
		emit_interval_json(c->record, c, s, true);
	ml_profiler_sample_free(&c->last);
	if (!ml_profiler_sample_copy(&c->last, s))
		c->have_last = true;
	c->intervals++;
	if (s->sampling.next_interval_ms > c->interval_ms)
		c->interval_adapted = true;
	if (s->tick_ns > c->tick_ns_max)
		c->tick_ns_max = s->tick_ns;
	c->ticks_over += s->tick_over_interval;
	if (s->dirty.dirty_pages > c->max_dirty_pages)
		c->max_dirty_pages = s->dirty.dirty_pages;
	note_stderr(c, s);
	pthread_mutex_unlock(&c->out_lock);
}

static void print_summary(struct writes_ctx *c, enum ml_stop why)
{
	const struct ml_profiler_sample *s = &c->last;
	char b1[16], b2[16];
	/* the intervals the clock allowed from the start to now; a slow tick
	 * or a busy CPU leaves fewer */
	uint64_t want = c->t0_ns ? (ml_mono_ns() - c->t0_ns) / (c->interval_ms * 1000000ULL) : 0;
	/* a longer interval --max-overhead chose is kept as it was meant to be */
	bool taken = want < 2 || c->intervals * 100 >= want * 95 || c->interval_adapted;
	bool kept = taken && !c->ticks_over;

	if (want < c->intervals)
		want = c->intervals;
	if (c->json) {
		struct ml_writes_summary sum = { .pid = c->pid,
						 .intervals = c->intervals,
						 .why = why,
						 .attach = c->attach,
						 .last = c->have_last ? s : NULL,
						 .interval_ms = c->interval_ms,
						 .intervals_wanted = want,
						 .interval_kept = kept,
						 .tick_ns_max = c->tick_ns_max,
						 .ticks_over_interval = c->ticks_over,
						 .ratio_stderr_max = c->stderr_max,
						 .ratio_stderr_over = c->stderr_over };
		struct ml_jw w;

		ml_jw_init(&w, c->out);
		ml_fmt_writes_summary(&w, &sum);
		return;
	}
	fprintf(c->out, "summary: pid %d%s, %llu interval%s, stopped because %s\n", (int)c->pid,
		c->tree ? " and its tree" : "", (unsigned long long)c->intervals,
		c->intervals == 1 ? "" : "s", ml_stop_text(why));
	if (c->ticks_over)
		table_wrap(c->out, table_width(c->out), 4,
			   "  the interval was not kept: %llu of the %llu ticks took longer than "
			   "the interval (-i %llu ms), the longest %.1f ms; %llu of the %llu "
			   "intervals the time allowed were taken: give -i a longer interval than "
			   "the longest tick",
			   (unsigned long long)c->ticks_over, (unsigned long long)c->intervals,
			   (unsigned long long)c->interval_ms, c->tick_ns_max / 1e6,
			   (unsigned long long)c->intervals, (unsigned long long)want);
	else if (!kept)
		table_wrap(c->out, table_width(c->out), 4,
			   "  the interval was not kept: %llu of the %llu intervals of %llu ms the "
			   "time allowed; no tick took longer than the interval (the longest "
			   "%.1f ms): a busy CPU delayed them",
			   (unsigned long long)c->intervals, (unsigned long long)want,
			   (unsigned long long)c->interval_ms, c->tick_ns_max / 1e6);
	if (!c->have_last)
		return;
	if (s->tree)
		process_table(c->out, s, table_width(c->out), 0);
	fprintf(c->out, "  VMAs %d, tracked %d, hot %d; cumulative written %s, average %s/s\n",
		s->total_vmas, s->tracked_vmas, s->hot_vmas,
		ml_fmt_bytes((uint64_t)s->dirty.cumulative_dirty_bytes, b1, sizeof(b1)),
		ml_fmt_bytes((uint64_t)s->dirty.avg_dirty_rate, b2, sizeof(b2)));
	for (size_t i = 0; i < s->nregions; i++) {
		const struct ml_profiler_region *r = &s->regions[i];
		char a[40];

		if (r->hot && s->tree)
			fprintf(c->out, "  HOT pid %d %s %-8s %6s ratio %.3f for %d intervals\n",
				(int)r->pid, table_range(r->start, r->end, a, sizeof(a)),
				ml_vma_kind_name(r->kind),
				ml_fmt_bytes(r->end - r->start, b1, sizeof(b1)), r->written_ratio,
				r->consecutive_hot);
		else if (r->hot)
			fprintf(c->out, "  HOT %s %-8s %6s ratio %.3f for %d intervals\n",
				table_range(r->start, r->end, a, sizeof(a)),
				ml_vma_kind_name(r->kind),
				ml_fmt_bytes(r->end - r->start, b1, sizeof(b1)), r->written_ratio,
				r->consecutive_hot);
	}
	hot_range_lines(c->out, &s->hot, 0, s->tree);
	tree_lines(c->out, s);
	if (c->stderr_over)
		table_wrap(
			c->out, table_width(c->out), 4,
			"  note: a sampled written ratio had a standard error of up to %.3f, over "
			"%.2f in %llu of %llu intervals: " ML_WRITES_STDERR_ADVICE,
			c->stderr_max, ML_WRITES_STDERR_NOTE, (unsigned long long)c->stderr_over,
			(unsigned long long)c->intervals);
}

/* A write to the output or the record file failed (their buffers flushed). */
static bool output_failed(struct writes_ctx *c)
{
	bool bad;

	pthread_mutex_lock(&c->out_lock);
	bad = out_flush(c->out) || (c->record && out_flush(c->record));
	pthread_mutex_unlock(&c->out_lock);
	return bad;
}

/* Has @child exited? It is left a zombie for the caller's waitpid() (WNOWAIT is waitid's). */
static bool child_exited(pid_t child)
{
	siginfo_t si = { 0 };

	return !waitid(P_PID, (id_t)child, &si, WEXITED | WNOHANG | WNOWAIT) && si.si_pid == child;
}

/* Does @pid ignore @sig (SigIgn of /proc/PID/status)? */
static bool ignores(pid_t pid, int sig)
{
	char path[64], line[256];
	unsigned long long mask = 0;
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = sscanf(line, "SigIgn: %llx", &mask) == 1;
	fclose(f);
	return found && sig > 0 && sig <= 64 && (mask >> (sig - 1) & 1);
}

/* Send @sig; if the child ignores it (a background job ignores SIGINT), SIGTERM, then SIGKILL. */
static void stop_child(pid_t child, int sig)
{
	static const int next[] = { SIGTERM, SIGKILL };
	int step = 0;

	if (sig != SIGTERM && ignores(child, sig))
		sig = SIGTERM;
	kill(child, sig);
	for (; step < 2; step++) {
		for (int i = 0; i < 40; i++) {
			if (child_exited(child))
				return;
			usleep(i < 10 ? 5000 : 50000);
		}
		kill(child, next[step]);
	}
}

/*
 * -d: over once @want intervals were printed (@want 0: once the duration
 * has passed); ticks that are very late (a huge target, a loaded machine)
 * do not keep it going much beyond the duration.
 */
static bool duration_over(struct writes_ctx *c, uint64_t t0, double duration, uint64_t want)
{
	double el = (double)(ml_mono_ns() - t0) / 1e9;
	uint64_t n;
	bool adapted;

	if (!want)
		return el >= duration;
	pthread_mutex_lock(&c->out_lock);
	n = c->intervals;
	adapted = c->interval_adapted;
	pthread_mutex_unlock(&c->out_lock);
	/* --max-overhead made intervals longer: SEC seconds, not SEC intervals */
	return n >= want || el >= duration * (adapted ? 1 : 3) + (adapted ? 0 : 2);
}

int cmd_writes(int argc, char **argv)
{
	ML_OPTS(ml_profiler_opts, po);
	struct writes_ctx c = { 0 };
	struct ml_profiler *p = NULL;
	struct ml_err err = { 0 };
	const char *record_path = NULL, *out_path = NULL;
	enum ml_stop why = ML_STOP_SIGNAL;
	double duration = 0;
	bool batch = false;
	sigset_t sigs;
	pid_t pid = 0, child = 0;
	int r, rc = EXIT_OK, stop_sig = 0, first;
	long interval_ms = 0;
	double max_overhead = 0, max_error = 0;
	struct cli_opt opts[] = {
		CLI_OPT_PID(&pid, "profile a running process"),
		CLI_OPT_CMD("start CMD and profile it from its first instruction; CMD is "
			    "stopped (the signal memlens got, else SIGTERM) when memlens stops "
			    "first"),
		CLI_OPT_INTERVAL(&interval_ms, 10, 600000,
				 "scan interval in milliseconds (default 1000)"),
		CLI_OPT_THRESHOLD(&po.hot_threshold,
				  "written ratio above which an interval is hot (default 0.3)"),
		CLI_OPT_CONSECUTIVE(
			&po.hot_consecutive, ML_HEAT_WINDOW,
			"hot intervals in a row before a VMA is hot, and written intervals "
			"in a row before a page is (default 3)"),
		CLI_OPT_COOL(&po.hot_cool, "a hot page turns cold after N intervals in a row "
					   "unwritten (default: -c)"),
		CLI_OPT_HOT_RANGES(&po.hot_ranges_max,
				   "report at most N hot ranges, merging those with the smallest "
				   "gaps (default 256)"),
		CLI_OPT_SAMPLE(
			&po.sample_k,
			"write-protect only this fraction of each VMA's pages each "
			"interval (0.1 or 1/10: a rotating sample of 64 KiB blocks, every "
			"page once in 10 intervals) and estimate from it; the written "
			"ratios and hot ranges are then estimates; not with --record (default: "
			"every page)"),
		CLI_OPT_MAX_OVERHEAD(&max_overhead,
				     "keep what tracking costs the target under PCT% of one CPU "
				     "(its write faults times their cost): sample fewer pages, "
				     "and if need be scan less often, while it would not be"),
		CLI_OPT_MAX_ERROR(&max_error,
				  "sample as few pages as keep each VMA's estimated written "
				  "pages within a standard error of PCT% of them: every page to "
				  "start with, then down to --sample's fraction (default 1/10) "
				  "while the error predicted there is under half the bound, more "
				  "pages while it is over, as many as --max-overhead allows "
				  "(default 1)"),
		CLI_OPT_DURATION(&duration, 0.001,
				 "stop after SEC seconds: SEC intervals of 1 s without -i "
				 "(default: Ctrl-C or the target's exit)"),
		{ .name = "tree",
		  .kind = CLI_FLAG,
		  .target = &c.tree,
		  .help = "profile every process under the target too (as CRIU dumps them): a "
			  "row per process, the tree's totals" },
		{ .letter = 'a',
		  .name = "all",
		  .kind = CLI_FLAG,
		  .target = &c.all,
		  .help = "list every tracked VMA, not only written or hot ones" },
		CLI_OPT_OUTPUT(&out_path, "write the output (table or JSON) to FILE, not stdout"),
		CLI_OPT_JSON(&c.json, "JSON Lines: one \"interval\" object per interval, then "
				      "one \"summary\" object"),
		{ .name = "record",
		  .arg = "FILE",
		  .kind = CLI_STR,
		  .target = &record_path,
		  .help = "also write each interval's written page ranges to FILE (JSON Lines; "
			  "the input of migrate-model and report)" },
		CLI_OPT_QUIET(&c.quiet, "nothing on the terminal but errors: no tables, no live "
					"view; the summary (or --json) goes only to -o FILE"),
		{ .name = "batch",
		  .kind = CLI_FLAG,
		  .target = &batch,
		  .help = "on a terminal too: one table per interval, appended, not the "
			  "refreshing view (q or Ctrl-C quits that)" },
		CLI_OPT_END,
	};
	struct cli_spec spec = { .cmd = "writes",
				 .synopsis = "(-p PID | -- CMD [ARGS...])",
				 .about = about,
				 .footer = footer,
				 .opts = opts };

	r = cli_parse(&spec, argc, argv, &first);
	if (r)
		return r < 0 ? EXIT_OK : r;
	if ((pid && first < argc) || (!pid && first >= argc))
		return cli_usage_error("writes", "give either -p PID or -- CMD [ARGS]");
	rc = cli_check_target("writes", pid, argv + first);
	if (rc)
		return rc;
	po.interval_ms = (unsigned int)interval_ms;
	po.tree = c.tree;
	po.max_overhead = max_overhead / 100;
	po.max_error = max_error / 100;
	/* migrate-model and report replay every written page of a record */
	if (record_path && (po.sample_k > 1 || max_overhead > 0 || max_error > 0))
		return cli_usage_error("writes",
				       "--record needs every written page: it does not "
				       "combine with --sample, --max-overhead or --max-error");
	/* -d without -i: intervals of 1 s, or one interval of the whole duration */
	if (duration > 0 && !interval_ms)
		po.interval_ms =
			duration * 1000 < ML_PROFILER_DEFAULT_INTERVAL_MS
				? (unsigned int)(duration * 1000 < 10 ? 10 : duration * 1000)
				: ML_PROFILER_DEFAULT_INTERVAL_MS;
	c.out = stdout;
	if (out_path || c.quiet) {
		c.out = out_open(out_path ? out_path : "/dev/null");
		if (!c.out) {
			cli_error("writes", "cannot create the output file %s: %s", out_path,
				  strerror(errno));
			return EXIT_FAIL;
		}
	}
	if (record_path) {
		c.record = out_open(record_path);
		if (!c.record) {
			cli_error("writes", "cannot create the record file %s: %s", record_path,
				  strerror(errno));
			if (c.out != stdout)
				fclose(c.out);
			return EXIT_FAIL;
		}
		po.record_ranges = true;
		/* the model's memory: the pages a checkpoint dumps, not the VMAs' size */
		po.count_resident = true;
	}
	pthread_mutex_init(&c.out_lock, NULL);
	cli_block_signals(&sigs);
	if (!pid) {
		child = ml_spawn_stopped(argv + first, &err);
		if (child < 0) {
			rc = cli_spawn_failed("writes", &err);
			goto out;
		}
		pid = child;
		po.target_stopped = true;
	}
	c.pid = pid;
	r = ml_profiler_open(&p, pid, &po, &err);
	if (r) {
		cli_error("writes", "%s", err.msg);
		rc = exit_code_for(r);
		if (child) {
			ml_spawn_release(child, NULL);
			kill(child, SIGKILL);
			waitpid(child, NULL, 0);
		}
		goto out;
	}
	c.attach = ml_profiler_attach_stats(p);
	if (!c.json && !c.quiet && c.out == stdout && live_wanted(batch)) {
		live_start();
	} else if (!c.json && !c.quiet) {
		const struct ml_attach_stats *st = c.attach;

		table_wrap(c.out, table_width(c.out), 0,
			   "profiling pid %d every %u ms (hot: ratio > %.2f for %d intervals; "
			   "hot ranges: pages written %d intervals in a row, cold after %d "
			   "unwritten, at most %u); target stopped %.2f ms for setup. Ctrl-C to "
			   "stop.",
			   (int)pid, ml_profiler_options(p)->interval_ms,
			   ml_profiler_options(p)->hot_threshold,
			   ml_profiler_options(p)->hot_consecutive,
			   ml_profiler_options(p)->hot_consecutive,
			   ml_profiler_options(p)->hot_cool, ml_profiler_options(p)->hot_ranges_max,
			   st->stopped_ns / 1e6);
		fputc('\n', c.out);
		if (po.sample_k > 1 || po.max_overhead > 0 || po.max_error > 0) {
			const struct ml_profiler_opts *o = ml_profiler_options(p);

			if (o->max_error > 0)
				fprintf(c.out,
					"sampling: every page to start with, then as few as keep "
					"the standard error of each VMA's written pages under "
					"%.1f%% of them, 1/%u at least (64 KiB blocks, rotating)",
					o->max_error * 100, o->sample_k);
			else
				fprintf(c.out,
					"sampling: 1/%u of the pages each interval (64 KiB "
					"blocks, rotating)",
					o->sample_k > 1 ? o->sample_k : 1);
			uint64_t measured = ml_wp_fault_ns(); /* cached: what the profiler used */

			if (o->max_overhead > 0)
				fprintf(c.out,
					", fewer while the write faults would cost more than "
					"%.2f%% of a CPU",
					o->max_overhead * 100);
			fprintf(c.out,
				"\nfault cost: %.2f us of the target's CPU per tracked write fault "
				"(%s)\n",
				o->fault_ns / 1e3,
				measured && o->fault_ns == measured
					? "measured on this machine"
					: "assumed: it could not be measured here");
		}
		fflush(c.out);
	}
	r = ml_profiler_start(p, on_tick, &c, &err);
	if (r) {
		cli_error("writes", "%s", err.msg);
		rc = EXIT_FAIL;
		goto out_close;
	}
	uint64_t t0 = ml_mono_ns();

	c.t0_ns = t0;
	c.interval_ms = ml_profiler_options(p)->interval_ms;
	/*
	 * -d SEC without -i: SEC intervals of 1 s, counted (not a race between
	 * the last tick and the clock); with -i: SEC seconds.
	 */
	uint64_t want =
		interval_ms
			? 0
			: (uint64_t)(duration * 1000 / ml_profiler_options(p)->interval_ms + 0.5);
	for (;;) {
		int sig = cli_wait_signal(&sigs, 50);

		if (sig) {
			why = ML_STOP_SIGNAL;
			stop_sig = sig;
			break;
		}
		if (!ml_profiler_running(p)) {
			struct ml_err e2 = { 0 };
			int er = ml_profiler_error(p, &e2);

			live_stop(); /* what follows is said on the normal screen */

			if (er == -ESRCH) {
				why = ML_STOP_TARGET_EXITED;
				if (!c.json && !c.quiet)
					fprintf(stderr,
						"memlens writes: the target process %d exited; "
						"profiling stopped\n",
						(int)pid);
			} else {
				why = ML_STOP_ERROR;
				cli_error("writes", "%s", e2.msg);
				rc = exit_code_for(er);
			}
			break;
		}
		if (duration > 0 && duration_over(&c, t0, duration, want)) {
			why = ML_STOP_DURATION;
			break;
		}
		if (output_failed(&c)) {
			why = ML_STOP_ERROR; /* out_close() below or main() names the stream */
			rc = EXIT_FAIL;
			break;
		}
	}
	ml_profiler_stop(p);
	live_stop();
	/* never a summary after intervals that were lost */
	if (!output_failed(&c))
		print_summary(&c, why);
out_close:
	ml_profiler_close(p);
	if (child) {
		int status;

		/* we started it: it does not outlive us (like timeout(1)) */
		if (why != ML_STOP_TARGET_EXITED)
			stop_child(child, stop_sig ? stop_sig : SIGTERM);
		if (waitpid(child, &status, 0) == child && rc == EXIT_OK &&
		    why == ML_STOP_TARGET_EXITED && WIFEXITED(status))
			rc = WEXITSTATUS(status);
	}
out:
	if (c.record && out_close("writes", c.record))
		rc = EXIT_FAIL;
	if (c.out && c.out != stdout && out_close("writes", c.out))
		rc = EXIT_FAIL;
	ml_profiler_sample_free(&c.last);
	return rc;
}

MEMLENS_COMMAND(writes, "writes", 10, "where a process writes: per-VMA written pages, hot VMAs",
		cmd_writes);
