// SPDX-License-Identifier: MIT
/* memlens leaks: outstanding malloc-family allocations of one process, via uprobes. */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include "cli_target.h"
#include "cliutil.h"
#include "command.h"
#include "memlens/alloc_sample.h"
#include "memlens/format_leaks.h"
#include "memlens/opts.h"
#include "memlens/trace_leaks.h"
#include "opts.h"
#include "../../trace/pprof.h"
#include "../../trace/symbolize.h"
#include "../../trace/unwind.h"
#include "../live.h"
#include "../table.h"
#include "trace.h"
#include "../../trace/leakload.h"
#include "../../trace/leaks.h"
#include "../../trace/preload.h"
#include "install_paths.h"

static const char about[] =
	"Trace malloc, calloc, realloc, reallocarray, free, aligned_alloc,\n"
	"posix_memalign, memalign, valloc and pvalloc of one process with uprobes on\n"
	"its allocator (its libc, or the jemalloc/tcmalloc/mimalloc that replaces\n"
	"libc's malloc, under their prefixed names too: je_malloc, tc_malloc...; in a\n"
	"statically linked program, the executable itself), and report the\n"
	"allocations still outstanding at the end, grouped by size and by the user\n"
	"call stack that made them (symbolized from the process's ELF files, with\n"
	"source file:line and inlined functions where they or their debug files\n"
	"have DWARF).\n";

static const char footer[] =
	"Frees of blocks allocated before tracing began are counted apart\n"
	"(untracked_frees), and so are the blocks glibc's per-thread cache hands back\n"
	"to free() when a thread exits (exit_frees). mallocs - frees - missed_frees =\n"
	"outstanding. When the table of outstanding blocks is full, further\n"
	"allocations are counted as lost and the report says so. Call stacks are\n"
	"walked with frame pointers: code built without them shows its caller and\n"
	"little more: --stacks dwarf unwinds them with their DWARF call frame\n"
	"information instead, as perf record --call-graph dwarf does (the registers\n"
	"and the top --stack-size bytes of the stack are copied at each allocation\n"
	"recorded, and unwound by memlens with elfutils' libdw). An allocation whose\n"
	"stack could not be kept (the table of stacks full, the stack not walkable,\n"
	"the buffer of stack copies full) is counted, with the reason (stacks_lost),\n"
	"and shown as [stack not recorded].\n"
	"\n"
	"--sample BYTES records about one allocation per BYTES allocated, as pprof's\n"
	"heap profiler does: each thread counts down a distance drawn from an\n"
	"exponential distribution of mean BYTES, and the allocation that reaches it\n"
	"is recorded. A recorded block of s bytes stands for 1 / (1 - exp(-s/BYTES))\n"
	"blocks: the outstanding blocks and bytes shown are estimates, unbiased, with\n"
	"a relative standard error of at most sqrt(BYTES / N) for N bytes outstanding.\n"
	"With -- CMD the decision is taken in the process, by a small library memlens\n"
	"preloads into it (libmemlens-sample.so): a call not sampled costs a few\n"
	"instructions and only the sampled ones reach a uprobe. Where it cannot serve\n"
	"(-p PID, a static or set-user-ID program, --sampler uprobe), every call\n"
	"takes a uprobe and those not sampled record nothing (on Linux 6.13 and\n"
	"later, no return probe). Frees of unknown blocks are then not counted.\n";

enum { STACKS_FP = 0, STACKS_DWARF };
static const char *const stacks_modes[] = { "fp", "dwarf", NULL };
/* --sampler: who decides which allocations --sample records */
enum { SAMPLER_AUTO = 0, SAMPLER_PRELOAD, SAMPLER_UPROBE };
static const char *const sampler_modes[] = { "auto", "preload", "uprobe", NULL };

/* the deepest stack kept: frame pointers walked by the kernel, DWARF by us */
#define DWARF_DEPTH LEAKS_DWARF_DEPTH
#define STACK_MAX LEAKS_STACK_MAX

struct leaks_opts {
	pid_t pid;
	double duration;
	long top;
	bool json, no_stacks, free_at_entry, perf_uprobes;
	long max_blocks; /* --max-blocks N; 0: leaks_default_blocks() */
	long max_stacks; /* --max-stacks N; 0: LEAKS_MAX_STACKS */
	uint64_t sample; /* --sample BYTES; 0: every allocation */
	const char *folded; /* --folded FILE */
	const char *pprof; /* --pprof FILE */
	const char *debug_dir; /* --debug-dir DIR */
	int stacks; /* --stacks: STACKS_FP, STACKS_DWARF */
	int sampler; /* --sampler: SAMPLER_AUTO, SAMPLER_PRELOAD, SAMPLER_UPROBE */
	uint64_t stack_size; /* --stack-size BYTES (dwarf); 0: the default */
	int verbose;
	char **cmd;
};

struct leaks_run {
	struct ml_leaks_tracer *tr;
	struct ml_leaks_allocator alloc; /* the file whose malloc the target calls */
	struct symbolizer sym;
	const struct leaks_opts *o;
	uint64_t prev[LEAKS_NR_COUNTERS]; /* the counters at the last interval */
	FILE *folded; /* --folded FILE, created before tracing */
	FILE *pprof; /* --pprof FILE, likewise */
	uint64_t start_wall_ns, start_mono_ns; /* when tracing began */
	bool write_failed; /* it could not be written */
	bool unread; /* the final table does not hold mallocs - frees - missed_frees */
	bool preload; /* --sample: the sampler is preloaded into CMD, not uprobes */
	char sampler_so[PATH_MAX]; /* its path */
	char uprobe_why[PATH_MAX + 256]; /* --sample, uprobes: why not preloaded */
};

/* --sample BYTES: a number of bytes, with K, M, G or T (binary units) */
static int parse_sample(void *target, const char *arg, char *why, size_t len)
{
	uint64_t *out = target, mult = 1;
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(arg, &end, 10);
	if (*end && !end[1] && strchr("kKmMgGtT", *end))
		mult = 1ULL << (10 * (strchr("kmgt", *end | 0x20) - "kmgt" + 1));
	else if (*end)
		v = 0;
	if (errno || end == arg || v < 1 || v > (1ULL << 40) / mult) {
		snprintf(why, len, "must be a number of bytes from 1 to 1T: 512K, 4M, 100000");
		return -1;
	}
	*out = v * mult;
	return 0;
}

/* --stack-size BYTES: a multiple of 8 the ring buffer's records can hold */
static int parse_stack_size(void *target, const char *arg, char *why, size_t len)
{
	uint64_t v;

	if (parse_sample(&v, arg, why, len) || v < LEAKS_DWARF_STACK_MIN ||
	    v > LEAKS_DWARF_STACK_MAX || v % 8) {
		snprintf(why, len, "must be a multiple of 8 from %d to %d bytes: 4096, 16K",
			 LEAKS_DWARF_STACK_MIN, LEAKS_DWARF_STACK_MAX);
		return -1;
	}
	*(uint64_t *)target = v;
	return 0;
}

static int parse_args(int argc, char **argv, struct leaks_opts *o)
{
	struct cli_opt opts[30];
	struct cli_spec spec = { .cmd = "leaks",
				 .synopsis = "(-p PID | -- CMD [ARGS...])",
				 .about = about,
				 .footer = footer,
				 .opts = opts };
	struct stat st;
	int n, r, first;

	memset(o, 0, sizeof(*o));
	o->top = 10;
	n = trace_common_opts(opts, &o->pid, &o->duration, &o->json, &o->verbose,
			      "one summary object on stdout (JSON Lines)");
	opts[0].help = "a running process (its allocator found from its maps)";
	opts[1].help = "start CMD and trace it from before its first malloc";
	opts[3].help = "also print what is outstanding every MS milliseconds (read while "
		       "the probes run: a live view; the report at the end is read once they "
		       "are detached, and is exact)";
	opts[6].help = "say which probes are used and where; twice: libbpf's log";
	opts[n++] = (struct cli_opt)CLI_OPT_TOP(&o->top, "stacks and sizes shown (default 10; "
							 "0: all)");
	opts[n++] = (struct cli_opt){ .name = "no-stacks",
				      .kind = CLI_FLAG,
				      .target = &o->no_stacks,
				      .help = "do not record call stacks (cheaper)" };
	opts[n++] = (struct cli_opt){ .name = "free-at-entry",
				      .kind = CLI_FLAG,
				      .target = &o->free_at_entry,
				      .help = "probe free() at its first instruction, not at the "
					      "first one the kernel can emulate (for comparison)" };
	opts[n++] = (struct cli_opt){ .name = "folded",
				      .arg = "FILE",
				      .kind = CLI_STR,
				      .target = &o->folded,
				      .help = "also write the outstanding bytes per call stack to "
					      "FILE as folded stacks (flamegraph.pl, speedscope, "
					      "inferno)" };
	opts[n++] = (struct cli_opt){ .name = "pprof",
				      .arg = "FILE",
				      .kind = CLI_STR,
				      .target = &o->pprof,
				      .help = "also write them to FILE as a pprof profile (gzipped "
					      "profile.proto: go tool pprof, Parca, Pyroscope), "
					      "with source files and lines where the ELF files "
					      "have DWARF" };
	opts[n++] = (struct cli_opt){ .name = "max-blocks",
				      .arg = "N",
				      .kind = CLI_LONG,
				      .target = &o->max_blocks,
				      .min = 1,
				      .max = 100000000,
				      .help = "outstanding blocks the table holds (default "
					      "1000000; with --sample, enough for a sample of "
					      "32 GiB outstanding: 65536 at 512K, from 16384 "
					      "up; each takes about 100 bytes of kernel "
					      "memory)" };
	opts[n++] = (struct cli_opt){ .name = "max-stacks",
				      .arg = "N",
				      .kind = CLI_LONG,
				      .target = &o->max_stacks,
				      .min = 1,
				      .max = 16000000,
				      .help = "distinct call stacks kept (default 262144; each "
					      "takes about 350 bytes of kernel memory once seen)" };
	opts[n++] = (struct cli_opt){ .name = "perf-uprobes",
				      .kind = CLI_FLAG,
				      .target = &o->perf_uprobes,
				      .help = "one perf-event uprobe per probe, as on kernels "
					      "before 6.6, not two uprobe_multi links (slower to "
					      "detach)" };
	opts[n++] =
		(struct cli_opt){ .name = "debug-dir",
				  .arg = "DIR",
				  .kind = CLI_STR,
				  .target = &o->debug_dir,
				  .help = "look for separate debug files in DIR first "
					  "(DIR/.build-id/xx/rest.debug, or by .gnu_debuglink "
					  "name), then beside each file and in /usr/lib/debug" };
	opts[n++] = (struct cli_opt){ .name = "sample",
				      .arg = "BYTES",
				      .kind = CLI_FUNC,
				      .target = &o->sample,
				      .fn = parse_sample,
				      .help = "record about one allocation per BYTES allocated "
					      "(512K, 4M; an exponential countdown per thread, as "
					      "pprof's heap profiler), and show estimated blocks "
					      "and bytes; calls not sampled are cheaper" };
	opts[n++] = (struct cli_opt){
		.name = "sampler",
		.arg = "auto|preload|uprobe",
		.kind = CLI_CHOICE,
		.choices = sampler_modes,
		.target = &o->sampler,
		.help = "--sample: who decides which allocations are recorded: preload, "
			"a small library memlens preloads into CMD (LD_PRELOAD), which "
			"takes the decision in the process and calls into the kernel "
			"for the recorded ones only (cheapest; with -p PID, a process "
			"started with it); uprobe, a uprobe on every allocator call "
			"(statically linked, set-user-ID or foreign programs); auto "
			"(the default): preload where it can"
	};
	opts[n++] =
		(struct cli_opt){ .name = "stacks",
				  .arg = "fp|dwarf",
				  .kind = CLI_CHOICE,
				  .choices = stacks_modes,
				  .target = &o->stacks,
				  .help = "how call stacks are walked: fp, with frame pointers, "
					  "by the kernel (the default, cheapest); dwarf, with "
					  "the DWARF call frame information of each ELF file, "
					  "in user space, from a copy of the stack (as perf's "
					  "--call-graph dwarf: whole stacks of code built "
					  "without frame pointers, at a higher cost; needs "
					  "memlens built with libdw-dev)" };
	opts[n++] =
		(struct cli_opt){ .name = "stack-size",
				  .arg = "BYTES",
				  .kind = CLI_FUNC,
				  .target = &o->stack_size,
				  .fn = parse_stack_size,
				  .help = "--stacks dwarf: bytes of stack copied at each "
					  "allocation (default 16384, at most 32768, a multiple "
					  "of 8; frames above them are not found)" };
	opts[n++] = trace_batch_opt();
	opts[n] = (struct cli_opt)CLI_OPT_END;
	r = cli_parse(&spec, argc, argv, &first);
	if (r)
		return r;
	if (first < argc)
		o->cmd = argv + first;
	if (!o->cmd == !o->pid)
		return cli_usage_error("leaks", "give one target: -p PID or -- CMD [ARGS]");
	if (o->debug_dir && stat(o->debug_dir, &st))
		return cli_usage_error("leaks",
				       "--debug-dir %s: %s: give a directory of debug files",
				       o->debug_dir, strerror(errno));
	if (o->debug_dir && !S_ISDIR(st.st_mode))
		return cli_usage_error("leaks",
				       "--debug-dir %s: not a directory: give a directory of debug "
				       "files",
				       o->debug_dir);
	if (o->stack_size && o->stacks != STACKS_DWARF)
		return cli_usage_error("leaks", "--stack-size is the copy --stacks dwarf unwinds: "
						"add --stacks dwarf");
	if (o->stacks == STACKS_DWARF && o->no_stacks)
		return cli_usage_error("leaks", "--stacks dwarf walks the call stacks: drop "
						"--no-stacks");
	if (!o->stack_size)
		o->stack_size = LEAKS_DWARF_STACK_DEFAULT;
	if (o->sampler != SAMPLER_AUTO && !o->sample)
		return cli_usage_error("leaks", "--sampler chooses how --sample samples: add "
						"--sample BYTES");
	if ((o->folded || o->pprof) && o->no_stacks)
		return cli_usage_error("leaks", "--%s needs the call stacks: drop --no-stacks",
				       o->folded ? "folded" : "pprof");
	return 0;
}

/* ---- report ---- */

/* an estimate as a whole number */
static uint64_t est(double x)
{
	return x <= 0 ? 0 : (uint64_t)llround(x);
}

/* why allocations have no stack: the reasons the BPF side tells apart */
#define NO_STACK_WHYS 4
static const struct {
	int64_t id; /* enum leaks_no_stack */
	enum leaks_counter counter;
	enum ml_leaks_reason reason; /* its key in the record's ..._by_reason objects */
	const char *text;
} no_stack_why[NO_STACK_WHYS] = {
	{ LEAKS_STACK_FULL, LEAKS_C_STACK_FULL, ML_LEAKS_REASON_TABLE_FULL,
	  "the table of stacks was full (--max-stacks makes it larger)" },
	{ LEAKS_STACK_UNWALKED, LEAKS_C_STACK_UNWALKED, ML_LEAKS_REASON_NOT_WALKED,
	  "the kernel could not walk the user stack" },
	{ LEAKS_STACK_COLLISION, LEAKS_C_STACK_COLLISION, ML_LEAKS_REASON_HASH_COLLISION,
	  "another stack had the same 63-bit hash" },
	{ LEAKS_STACK_DROPPED, LEAKS_C_STACK_DROPPED, ML_LEAKS_REASON_DROPPED,
	  "the buffer of stack copies was full (unwinding fell behind)" },
};
/* in the order of enum ml_leaks_no_stack: the tracer's counts of each */
_Static_assert(NO_STACK_WHYS == ML_LEAKS_NR_NO_STACK, "the reasons for no stack");

struct sym_stack {
	char *text; /* one mlt_symbolize() line per address */
	uint64_t ips[STACK_MAX]; /* the addresses of those lines */
	int nips;
	uint64_t count, bytes;
	double est_count, est_bytes, var; /* as in struct ml_leaks_stack */
};

/*
 * The frames of stack @id, symbolized, joined by '\n' into @st->text, their
 * addresses in @st->ips. Frame-pointer walks of code built without frame
 * pointers run into data: stop at the first address outside executable
 * mappings.
 */
static void stack_text(struct leaks_run *r, int64_t id, struct sym_stack *st)
{
	static char out[STACK_MAX * 520];
	uint64_t ips[STACK_MAX];
	size_t used = 0, len = sizeof(out);
	int n = ml_leaks_tracer_stack(r->tr, id, ips, STACK_MAX);
	char buf[512];

	out[0] = 0;
	st->nips = 0;
	for (int f = 0; f < n; f++) {
		if (f && !mlt_symbolizer_is_code(&r->sym, ips[f]))
			break;
		mlt_symbolize(&r->sym, ips[f], buf, sizeof(buf));
		if (used + strlen(buf) + 2 >= len)
			break;
		used += (size_t)snprintf(out + used, len - used, "%s%s", used ? "\n" : "", buf);
		st->ips[st->nips++] = ips[f];
	}
	st->text = strdup(out);
}

static void free_sym_stacks(struct sym_stack *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i].text);
	free(v);
}

/* Each frame of @st, inlined ones included, innermost first. */
#define MAX_FRAMES (STACK_MAX * SRCLINE_MAX_INLINE)
static int stack_frames(struct leaks_run *r, const struct sym_stack *st, struct sym_frame *fr)
{
	int n = 0;

	for (int i = 0; i < st->nips; i++)
		n += mlt_symbolize_frames(&r->sym, st->ips[i], fr + n, SRCLINE_MAX_INLINE);
	return n;
}

/* The record's frames of @st, inlined ones included (their strings @r's symbolizer's). */
static void rec_frames(struct leaks_run *r, const struct sym_stack *st,
		       struct ml_leaks_stack_rec *s)
{
	static struct sym_frame fr[MAX_FRAMES];
	int n = stack_frames(r, st, fr);

	s->frames = calloc(n > 0 ? (size_t)n : 1, sizeof(*s->frames));
	if (!s->frames)
		return;
	for (int i = 0; i < n; i++)
		s->frames[s->nframes++] = (struct ml_leaks_frame_rec){
			.address = fr[i].addr,
			.function = fr[i].func,
			.has_offset = fr[i].have_off,
			.offset = fr[i].off,
			.inlined = fr[i].inlined,
			.object = fr[i].object,
			.file = fr[i].file,
			.line = (uint64_t)fr[i].line,
		};
}

static void print_frames(struct leaks_run *r, const struct sym_stack *st)
{
	static struct sym_frame fr[MAX_FRAMES];
	int n = stack_frames(r, st, fr);
	char buf[1024];

	if (!n)
		printf("    [stack not recorded]\n");
	for (int i = 0; i < n; i++) {
		mlt_sym_frame_text(&fr[i], buf, sizeof(buf));
		printf("    %s\n", buf);
	}
}

static int cmp_sym_stack(const void *a, const void *b)
{
	const struct sym_stack *x = a, *y = b;

	if (x->est_bytes != y->est_bytes)
		return x->est_bytes < y->est_bytes ? 1 : -1;
	return strcmp(x->text, y->text);
}

static int cmp_sym_text(const void *a, const void *b)
{
	return strcmp(((const struct sym_stack *)a)->text, ((const struct sym_stack *)b)->text);
}

/* Stacks that read the same once symbolized and trimmed are one stack. */
static struct sym_stack *symbolized_stacks(struct leaks_run *r,
					   const struct ml_leaks_outstanding *t, size_t *n)
{
	struct sym_stack *v = calloc(t->nstacks ? t->nstacks : 1, sizeof(*v));
	size_t out = 0;

	*n = 0;
	if (!v)
		return NULL;
	for (size_t i = 0; i < t->nstacks; i++) {
		stack_text(r, t->stacks[i].id, &v[i]);
		if (!v[i].text) {
			free_sym_stacks(v, i);
			return NULL;
		}
		v[i].count = t->stacks[i].count;
		v[i].bytes = t->stacks[i].bytes;
		v[i].est_count = t->stacks[i].est_count;
		v[i].est_bytes = t->stacks[i].est_bytes;
		v[i].var = t->stacks[i].var;
	}
	qsort(v, t->nstacks, sizeof(*v), cmp_sym_text);
	for (size_t i = 0; i < t->nstacks; i++) {
		if (out && !strcmp(v[out - 1].text, v[i].text)) {
			v[out - 1].count += v[i].count;
			v[out - 1].bytes += v[i].bytes;
			v[out - 1].est_count += v[i].est_count;
			v[out - 1].est_bytes += v[i].est_bytes;
			v[out - 1].var += v[i].var;
			free(v[i].text);
			continue;
		}
		if (out != i)
			v[out] = v[i];
		out++;
	}
	*n = out;
	qsort(v, out, sizeof(*v), cmp_sym_stack);
	return v;
}

/* How deep the distinct stacks of the outstanding blocks are (return addresses each). */
static void depth_stats(const struct sym_stack *v, size_t n, size_t *nst, double *mean, int *max)
{
	uint64_t sum = 0;

	*nst = 0;
	*max = 0;
	for (size_t i = 0; v && i < n; i++) {
		if (!v[i].nips)
			continue; /* [stack not recorded] */
		(*nst)++;
		sum += (uint64_t)v[i].nips;
		if (v[i].nips > *max)
			*max = v[i].nips;
	}
	*mean = *nst ? (double)sum / (double)*nst : 0;
}

/* dwarf: the stack copies unwound so far */
static struct ml_leaks_unwind_stats unw(const struct leaks_run *r)
{
	ML_RESULT(ml_leaks_unwind_stats, u);

	ml_leaks_tracer_unwind_stats(r->tr, &u);
	return u;
}

/* the stacks not unwound to their outermost frame */
static uint64_t unwound_partly(const struct leaks_run *r)
{
	return unw(r).out_of_copy + unw(r).no_cfi;
}

static double us_per_stack(const struct leaks_run *r)
{
	return unw(r).stacks ? (double)unw(r).ns / 1e3 / (double)unw(r).stacks : 0;
}

static void rec_depth(struct ml_leaks_rec *rec, struct leaks_run *r, const struct sym_stack *v,
		      size_t n)
{
	size_t nst;
	double mean;
	int max;

	depth_stats(v, n, &nst, &mean, &max);
	rec->has_depth = true;
	rec->depth_stacks = nst;
	rec->depth_mean = mean;
	rec->depth_max = max;
	if (r->o->stacks != STACKS_DWARF)
		return;
	rec->has_unwind = true;
	rec->unwind = (struct ml_leaks_unwind_rec){
		.stack_size = r->o->stack_size,
		.stacks = unw(r).stacks,
		.us_per_stack = us_per_stack(r),
		.frames_mean = unw(r).stacks ? (double)unw(r).frames / (double)unw(r).stacks : 0,
		.frames_max = unw(r).max_frames,
		.max_frames = DWARF_DEPTH,
		.complete = unw(r).complete,
		.cut = unw(r).cut,
		.out_of_copy = unw(r).out_of_copy,
		.no_cfi = unw(r).no_cfi,
		.not_unwound_fully = unwound_partly(r),
		.table_full = unw(r).full,
	};
}

/* The text report's line on the call stacks: how walked, how deep, at what cost. */
static void text_depth(struct leaks_run *r, const struct sym_stack *v, size_t n, int width)
{
	char un[512] = "";
	size_t nst;
	double mean;
	int max;

	depth_stats(v, n, &nst, &mean, &max);
	if (r->o->stacks == STACKS_DWARF) {
		size_t k = (size_t)snprintf(un, sizeof(un), "; %llu stacks unwound, %.1f us each",
					    (unsigned long long)unw(r).stacks, us_per_stack(r));

		if (unwound_partly(r) && k < sizeof(un))
			k += (size_t)snprintf(
				un + k, sizeof(un) - k,
				"; %llu not to their outermost frame (%llu ended above the %llu "
				"bytes copied: --stack-size makes it larger; %llu at code without "
				"call frame information)",
				(unsigned long long)unwound_partly(r),
				(unsigned long long)unw(r).out_of_copy,
				(unsigned long long)r->o->stack_size,
				(unsigned long long)unw(r).no_cfi);
		if (unw(r).cut && k < sizeof(un))
			snprintf(un + k, sizeof(un) - k, "; %llu cut at %d frames",
				 (unsigned long long)unw(r).cut, DWARF_DEPTH);
	}
	table_wrap(stdout, width, 2,
		   "call stacks: %s; %zu distinct outstanding, %.1f frames on average, at most "
		   "%d%s",
		   r->o->stacks == STACKS_DWARF ? "unwound with DWARF call frame information "
						  "(--stacks dwarf)"
						: "walked with frame pointers (--stacks fp)",
		   nst, mean, max, un);
}

/*
 * The record's stacks: the first @top of @v (0: all), each one's lines
 * (its text cut at each '\n', in place) and frames. Free with free_rec_stacks().
 */
static void rec_stacks(struct ml_leaks_rec *rec, struct leaks_run *r, struct sym_stack *v, size_t n,
		       long top)
{
	size_t k = top && (size_t)top < n ? (size_t)top : n;

	rec->stacks = calloc(k ? k : 1, sizeof(*rec->stacks));
	if (!rec->stacks)
		return;
	for (size_t i = 0; v && i < k; i++) {
		struct ml_leaks_stack_rec *s = &rec->stacks[rec->nstacks++];
		size_t nl = 1;
		const char **lines;
		char *save = NULL, *tok;

		for (const char *p = v[i].text; *p; p++)
			nl += *p == '\n';
		lines = calloc(nl, sizeof(*lines));

		s->count = est(v[i].est_count);
		s->bytes = est(v[i].est_bytes);
		s->sampled = v[i].count;
		s->sampled_bytes = v[i].bytes;
		s->bytes_stderr = est(sqrt(v[i].var));
		s->stack = lines;
		for (tok = strtok_r(v[i].text, "\n", &save); lines && tok;
		     tok = strtok_r(NULL, "\n", &save))
			lines[s->nstack++] = tok;
		rec_frames(r, &v[i], s);
	}
}

static void free_rec_stacks(struct ml_leaks_rec *rec)
{
	for (size_t i = 0; rec->stacks && i < rec->nstacks; i++) {
		free((void *)rec->stacks[i].stack);
		free(rec->stacks[i].frames);
	}
	free(rec->stacks);
}

/* The allocator's path as the target sees it (without /proc/PID/root). */
static const char *path_shown(const char *path)
{
	const char *p = path;

	if (!strncmp(p, "/proc/", 6) && (p = strstr(p + 6, "/root/")))
		return p + 5;
	return path;
}

static const char *alloc_shown(const struct ml_leaks_allocator *a)
{
	return path_shown(a->path);
}

/* elapsed_s < 0: the final report; else an interval block, @last at the end */
struct report_at {
	double elapsed_s;
	bool last;
};

static void rec_counters(struct ml_leaks_rec *rec, const uint64_t *c)
{
	rec->mallocs = c[LEAKS_C_ALLOCS];
	rec->frees = c[LEAKS_C_FREES];
	rec->untracked_frees = c[LEAKS_C_UNTRACKED];
	rec->exit_frees = c[LEAKS_C_EXIT_FREES];
	rec->missed_frees = c[LEAKS_C_MISSED_FREES];
	rec->failed = c[LEAKS_C_FAILED];
	rec->lost = c[LEAKS_C_LOST];
	rec->stale_calls = c[LEAKS_C_STALE];
	rec->unpaired_returns = c[LEAKS_C_UNPAIRED];
}

static uint64_t stacks_lost(const uint64_t *c)
{
	uint64_t n = 0;

	for (int w = 0; w < NO_STACK_WHYS; w++)
		n += c[no_stack_why[w].counter];
	return n;
}

static long max_stacks(const struct leaks_opts *o)
{
	return o->max_stacks ? o->max_stacks : (long)LEAKS_MAX_STACKS;
}

/*
 * The allocations recorded without their stack, by reason: all of them
 * (counted when they were made), and those still outstanding (read from
 * the table, the ones by_stack shows as an empty stack).
 */
static void rec_no_stack(struct ml_leaks_rec *rec, struct leaks_run *r,
			 const struct ml_leaks_outstanding *t, const uint64_t *c)
{
	rec->stacks_kept = t->stacks_kept;
	rec->max_stacks = r->o->no_stacks ? 0 : max_stacks(r->o);
	rec->stacks_lost = stacks_lost(c);
	for (int i = 0; i < NO_STACK_WHYS; i++) {
		enum ml_leaks_reason k = no_stack_why[i].reason;

		rec->stacks_lost_by_reason[k] = c[no_stack_why[i].counter];
		rec->outstanding_no_stack_by_reason[k].count = t->no_stack_count[i];
		rec->outstanding_no_stack_by_reason[k].bytes = t->no_stack_bytes[i];
		rec->outstanding_no_stack += t->no_stack_count[i];
		rec->outstanding_no_stack_bytes += t->no_stack_bytes[i];
	}
}

/* --sample: every allocation call, sampled or not (the per-CPU calls[] counters) */
/* --sample: the rate, what was sampled, and the standard error of the total */
static void rec_sampling(struct ml_leaks_rec *rec, struct leaks_run *r,
			 const struct ml_leaks_outstanding *t)
{
	rec->sample_bytes = r->o->sample;
	ml_leaks_tracer_calls(r->tr, &rec->allocation_calls, &rec->allocation_call_bytes);
	rec->sampled_outstanding = t->count;
	rec->sampled_outstanding_bytes = t->bytes;
	rec->outstanding_bytes_stderr = est(sqrt(t->var));
}

static void print_json(struct leaks_run *r, const struct leaks_opts *o,
		       const struct ml_leaks_outstanding *t, const uint64_t *c,
		       const struct report_at *at)
{
	size_t nsz = o->top && (size_t)o->top < t->nsizes ? (size_t)o->top : t->nsizes, nst = 0;
	struct ml_leaks_rec rec = {
		.interval = at->elapsed_s >= 0,
		.pid = r->sym.pid,
		.allocator = alloc_shown(&r->alloc),
		/* a prefixed allocator, probed beside it */
		.allocator_prefixed = r->alloc.prefixed[0] ? path_shown(r->alloc.prefixed) : NULL,
		.mode = ml_leaks_tracer_mode(r->tr),
		.sampler = r->o->sample ? (r->preload ? "preload" : "uprobe") : NULL,
		.stacks_mode = o->no_stacks ? "none" : stacks_modes[o->stacks],
		.recursion_misses = ml_leaks_tracer_recursion_misses(r->tr),
		.outstanding = est(t->est_count),
		.outstanding_bytes = est(t->est_bytes),
		.table_unread = r->unread,
	};
	struct sym_stack *v = NULL;
	struct ml_jw w;

	if (rec.interval) {
		rec.elapsed_ms = (uint64_t)(at->elapsed_s * 1000);
		rec.last = at->last;
		rec.interval_mallocs = c[LEAKS_C_ALLOCS] - r->prev[LEAKS_C_ALLOCS];
		rec.interval_frees = c[LEAKS_C_FREES] - r->prev[LEAKS_C_FREES];
	}
	rec_counters(&rec, c);
	if (o->sample)
		rec_sampling(&rec, r, t);
	rec_no_stack(&rec, r, t, c);
	rec.sizes = calloc(nsz ? nsz : 1, sizeof(*rec.sizes));
	for (size_t i = 0; rec.sizes && i < nsz; i++)
		rec.sizes[rec.nsizes++] = (struct ml_leaks_size_rec){
			.size = t->sizes[i].size,
			.count = est(t->sizes[i].est_count),
			.bytes = est(t->sizes[i].est_bytes),
			.sampled = t->sizes[i].count,
		};
	if (!o->no_stacks) {
		v = symbolized_stacks(r, t, &nst);
		rec_stacks(&rec, r, v, nst, o->top);
		rec_depth(&rec, r, v, nst);
	}
	ml_jw_init(&w, stdout);
	ml_fmt_leaks(&w, &rec);
	free_rec_stacks(&rec);
	free(rec.sizes);
	free_sym_stacks(v, nst);
}

/* Outstanding blocks by size, @n rows (sizes in bytes, as malloc() was asked). */
static void sizes_table(FILE *f, const struct ml_leaks_outstanding *t, size_t n, int width)
{
	static const struct table_col cols[] = {
		{ "SIZE", TABLE_RIGHT, 0, false },
		{ "COUNT", TABLE_RIGHT, 0, false },
		{ "BYTES", TABLE_RIGHT, 0, false },
	};
	struct table *tb = table_new(cols, 3);

	for (size_t i = 0; i < n && i < t->nsizes; i++) {
		table_row(tb);
		table_cell(tb, "%12llu", (unsigned long long)t->sizes[i].size);
		table_cell(tb, "%10llu", (unsigned long long)est(t->sizes[i].est_count));
		table_cell(tb, "%12llu", (unsigned long long)est(t->sizes[i].est_bytes));
	}
	table_print(tb, f, width, 0, 0);
	table_free(tb);
}

/*
 * The live view's stacks: one line each, the most bytes first, "COUNT
 * blocks BYTES: frame < caller" (the two innermost frames, inlined ones
 * included), cut at @width; @n lines at most, the last saying how many more.
 */
static void stacks_lines(FILE *f, struct leaks_run *r, const struct ml_leaks_outstanding *t,
			 size_t n, int width)
{
	static struct sym_frame fr[MAX_FRAMES];
	struct sym_stack *v;
	char b1[16], a[512], b[512], line[1200];
	size_t nst, i;

	size_t fit;

	if (n < 2)
		return;
	v = symbolized_stacks(r, t, &nst);
	fit = nst <= n - 1 ? nst : n - 2; /* the header; the "more" line when cut */
	fprintf(f, "top stacks (blocks, bytes outstanding: innermost frame < its caller):\n");
	for (i = 0; v && i < fit; i++) {
		int nf = stack_frames(r, &v[i], fr);

		a[0] = b[0] = 0;
		if (nf > 0)
			mlt_sym_frame_text(&fr[0], a, sizeof(a));
		if (nf > 1)
			mlt_sym_frame_text(&fr[1], b, sizeof(b));
		snprintf(line, sizeof(line), "%8llu %8s: %s%s%s",
			 (unsigned long long)est(v[i].est_count),
			 ml_fmt_bytes(est(v[i].est_bytes), b1, sizeof(b1)),
			 nf ? a : "[stack not recorded]", nf > 1 ? " < " : "", b);
		fprintf(f, "%.*s\n", width, line);
	}
	if (v && i < nst)
		fprintf(f, "... %zu more stacks (the report at the end lists them)\n", nst - i);
	free_sym_stacks(v, nst);
}

/* One frame of the live view: the totals, the block sizes outstanding and the top stacks that fit.
 */
static void print_screen(struct leaks_run *r, const struct ml_leaks_outstanding *t,
			 const uint64_t *c, const struct report_at *at)
{
	FILE *f = live_frame();
	size_t room = live_rows() > 6 ? (size_t)(live_rows() - 6) : 0, nsz;
	char b1[16];

	fprintf(f, "memlens leaks - pid %d, %.1f s, every %g s; q or Ctrl-C quits\n",
		(int)r->sym.pid, at->elapsed_s, trace_interval_s());
	fprintf(f, "this interval: %llu allocations, %llu frees\n",
		(unsigned long long)(c[LEAKS_C_ALLOCS] - r->prev[LEAKS_C_ALLOCS]),
		(unsigned long long)(c[LEAKS_C_FREES] - r->prev[LEAKS_C_FREES]));
	/* wrapped, not cut; a second line is one row less below */
	int more = table_wrap(f, live_cols(), 2,
			      "since the start: %llu allocations, %llu frees; outstanding %s%llu "
			      "blocks, %s",
			      (unsigned long long)c[LEAKS_C_ALLOCS],
			      (unsigned long long)c[LEAKS_C_FREES], r->o->sample ? "~" : "",
			      (unsigned long long)est(t->est_count),
			      ml_fmt_bytes(est(t->est_bytes), b1, sizeof(b1))) -
		   1;

	fputc('\n', f);
	room = room > (size_t)more ? room - (size_t)more : 0;
	/* sizes in the upper part (at most half when there are stacks to show), stacks below */
	nsz = t->nsizes < room ? t->nsizes : room;
	if (!r->o->no_stacks && t->nstacks && nsz > room / 2)
		nsz = room / 2;
	if (nsz)
		sizes_table(f, t, nsz, live_cols());
	if (nsz < t->nsizes)
		fprintf(f, "... %zu more sizes\n", t->nsizes - nsz);
	if (!r->o->no_stacks && t->nstacks && room > nsz + 4) {
		fputc('\n', f);
		stacks_lines(f, r, t, room - nsz - 4, live_cols());
	}
	live_show();
}

/* One warning: how many allocations have no stack, why, and how many are outstanding. */
static void text_no_stack(struct leaks_run *r, const struct ml_leaks_outstanding *t,
			  const uint64_t *c, int width)
{
	uint64_t n = 0, bytes = 0;
	char why[512], b1[16];
	size_t used = 0;

	why[0] = 0;
	for (int i = 0; i < NO_STACK_WHYS; i++) {
		const char *text = no_stack_why[i].text;
		char full[128];

		n += t->no_stack_count[i];
		bytes += t->no_stack_bytes[i];
		if (!c[no_stack_why[i].counter])
			continue;
		if (no_stack_why[i].id == LEAKS_STACK_FULL) {
			snprintf(full, sizeof(full),
				 "the table of %ld stacks was full (--max-stacks makes it larger)",
				 max_stacks(r->o));
			text = full;
		}
		used += (size_t)snprintf(why + used, sizeof(why) - used, "%s%llu because %s",
					 used ? "; " : "",
					 (unsigned long long)c[no_stack_why[i].counter], text);
		if (used >= sizeof(why))
			break;
	}
	table_wrap(stdout, width, 2,
		   "warning: %llu allocations recorded without their call stack (%s); %llu of "
		   "them outstanding, %s, shown as [stack not recorded]",
		   (unsigned long long)stacks_lost(c), why, (unsigned long long)n,
		   ml_fmt_bytes(bytes, b1, sizeof(b1)));
}

/* --sample: the estimate of what is outstanding, with its standard error */
static void text_sampling(struct leaks_run *r, const struct ml_leaks_outstanding *t, int width)
{
	char b1[16], b2[16], b3[16];
	uint64_t calls, bytes, c[LEAKS_NR_COUNTERS];

	ml_leaks_tracer_counters(r->tr, c); /* read now, as the calls are */
	ml_leaks_tracer_calls(r->tr, &calls, &bytes);
	table_wrap(stdout, width, 2,
		   "sampled: about one allocation per %s allocated (%llu of %llu allocation "
		   "calls recorded, of %s asked for); the counts below are estimates",
		   ml_fmt_bytes(r->o->sample, b1, sizeof(b1)),
		   (unsigned long long)c[LEAKS_C_ALLOCS], (unsigned long long)calls,
		   ml_fmt_bytes(bytes, b2, sizeof(b2)));
	if (r->preload)
		table_wrap(stdout, width, 2,
			   "sampler: preload (%s in the process decides; a uprobe on its two "
			   "markers records the sampled blocks and their frees)",
			   MLT_SAMPLER_SO);
	else
		table_wrap(stdout, width, 2,
			   "sampler: uprobe (a uprobe on every allocator call: %s)", r->uprobe_why);
	table_wrap(stdout, width, 2,
		   "outstanding (estimated): ~%llu blocks, ~%s (standard error %s; from %llu "
		   "sampled blocks, %s)",
		   (unsigned long long)est(t->est_count),
		   ml_fmt_bytes(est(t->est_bytes), b1, sizeof(b1)),
		   ml_fmt_bytes(est(sqrt(t->var)), b2, sizeof(b2)), (unsigned long long)t->count,
		   ml_fmt_bytes(t->bytes, b3, sizeof(b3)));
}

static void print_table(struct leaks_run *r, const struct leaks_opts *o,
			const struct ml_leaks_outstanding *t, const uint64_t *c,
			const struct report_at *at)
{
	size_t nsz = o->top && (size_t)o->top < t->nsizes ? (size_t)o->top : t->nsizes;
	uint64_t rec = ml_leaks_tracer_recursion_misses(r->tr);
	struct sym_stack *v;
	int width = table_width(stdout);
	size_t nst;
	char b1[16], b2[16];

	if (at->elapsed_s >= 0)
		table_wrap(stdout, width, 4,
			   "--- %.3f s%s: %llu allocations and %llu frees in this interval "
			   "(read while tracing)",
			   at->elapsed_s, at->last ? " (end)" : "",
			   (unsigned long long)(c[LEAKS_C_ALLOCS] - r->prev[LEAKS_C_ALLOCS]),
			   (unsigned long long)(c[LEAKS_C_FREES] - r->prev[LEAKS_C_FREES]));
	table_wrap(stdout, width, 2,
		   "pid %d: %llu allocations, %llu frees, %llu frees of blocks from before "
		   "tracing, %llu failed",
		   (int)r->sym.pid, (unsigned long long)c[LEAKS_C_ALLOCS],
		   (unsigned long long)c[LEAKS_C_FREES], (unsigned long long)c[LEAKS_C_UNTRACKED],
		   (unsigned long long)c[LEAKS_C_FAILED]);
	if (c[LEAKS_C_EXIT_FREES])
		table_wrap(
			stdout, width, 2,
			"%llu frees at thread exit of blocks glibc's per-thread cache held (freed "
			"before, or its own)",
			(unsigned long long)c[LEAKS_C_EXIT_FREES]);
	if (!r->alloc.is_libc)
		printf("allocator: %s (in place of libc's malloc)\n", alloc_shown(&r->alloc));
	if (r->alloc.prefixed[0])
		printf("also probed: %s (its je_malloc or tc_malloc)\n",
		       path_shown(r->alloc.prefixed));
	if (o->sample)
		text_sampling(r, t, width);
	else
		printf("outstanding: %llu blocks, %s\n", (unsigned long long)t->count,
		       ml_fmt_bytes(t->bytes, b1, sizeof(b1)));
	if (r->unread)
		table_wrap(stdout, width, 2,
			   "warning: the table of outstanding blocks does not hold allocations - "
			   "frees - missed frees (%llu): it could not be read in full",
			   (unsigned long long)(c[LEAKS_C_ALLOCS] - c[LEAKS_C_FREES] -
						c[LEAKS_C_MISSED_FREES]));
	if (c[LEAKS_C_LOST])
		table_wrap(stdout, width, 2,
			   "warning: %llu allocations not recorded (the table of %ld outstanding "
			   "blocks "
			   "was full; --max-blocks makes it larger): outstanding is a lower bound, "
			   "and their frees count as untracked",
			   (unsigned long long)c[LEAKS_C_LOST],
			   o->max_blocks ? o->max_blocks : (long)leaks_default_blocks(o->sample));
	if (c[LEAKS_C_MISSED_FREES])
		table_wrap(stdout, width, 2,
			   "warning: %llu blocks were allocated again at an address whose free was "
			   "not seen",
			   (unsigned long long)c[LEAKS_C_MISSED_FREES]);
	if (c[LEAKS_C_STALE] || c[LEAKS_C_UNPAIRED] || rec)
		table_wrap(stdout, width, 2,
			   "calls not seen whole: %llu begun before the probes were attached, %llu "
			   "whose return was not seen, %llu probe hits lost to other BPF programs "
			   "on the same CPU",
			   (unsigned long long)c[LEAKS_C_UNPAIRED],
			   (unsigned long long)c[LEAKS_C_STALE], (unsigned long long)rec);
	if (stacks_lost(c))
		text_no_stack(r, t, c, width);
	if (!t->count && !r->unread) { /* no table, no stacks: say so in words */
		if (o->sample)
			table_wrap(stdout, width, 2,
				   "no leak seen: no sampled block is outstanding (a leak of less "
				   "than about %s in all can go unsampled)",
				   ml_fmt_bytes(o->sample, b1, sizeof(b1)));
		else
			printf("no leak seen: no block is outstanding\n");
		return;
	}
	putchar('\n');
	sizes_table(stdout, t, nsz, width);
	if (o->no_stacks)
		return;
	v = symbolized_stacks(r, t, &nst);
	putchar('\n');
	text_depth(r, v, nst, width);
	for (size_t i = 0; v && i < nst && (!o->top || i < (size_t)o->top); i++) {
		if (o->sample)
			printf("\n~%llu blocks, ~%s outstanding (standard error %s; %llu sampled) "
			       "from:\n",
			       (unsigned long long)est(v[i].est_count),
			       ml_fmt_bytes(est(v[i].est_bytes), b1, sizeof(b1)),
			       ml_fmt_bytes(est(sqrt(v[i].var)), b2, sizeof(b2)),
			       (unsigned long long)v[i].count);
		else
			printf("\n%llu blocks, %s outstanding from:\n",
			       (unsigned long long)v[i].count,
			       ml_fmt_bytes(v[i].bytes, b1, sizeof(b1)));
		print_frames(r, &v[i]);
	}
	free_sym_stacks(v, nst);
}

/*
 * One line per stack, outermost frame first, frames joined by ';', then a
 * space and the bytes outstanding: "main (leaky);leak (leaky) 4096000".
 * Functions inlined at a call are frames of their own, after the function
 * they were inlined into. Offsets are dropped, so that a function is one
 * node however many call sites it has; ';' inside a name becomes ':'.
 */
static int write_folded(struct leaks_run *r, const struct ml_leaks_outstanding *t, FILE *f)
{
	static struct sym_frame fr[MAX_FRAMES];
	struct sym_stack *v;
	char buf[1024];
	size_t n;

	v = symbolized_stacks(r, t, &n);
	for (size_t i = 0; v && i < n; i++) {
		int nf = stack_frames(r, &v[i], fr);

		if (!nf)
			fputs("[stack not recorded]", f);
		for (int k = nf - 1; k >= 0; k--) {
			struct sym_frame name = fr[k];

			/* the function only: no offset, line, or inlined mark */
			name.have_off = name.inlined = false;
			name.file = NULL;
			mlt_sym_frame_text(&name, buf, sizeof(buf));
			for (char *c = buf; *c; c++)
				if (*c == ';')
					*c = ':';
			fprintf(f, "%s%s", k == nf - 1 ? "" : ";", buf);
		}
		fprintf(f, " %llu\n", (unsigned long long)est(v[i].est_bytes));
	}
	free_sym_stacks(v, n);
	if (fclose(f))
		return -errno;
	return 0;
}

/*
 * The outstanding blocks per call stack as a pprof profile: one sample per
 * stack, values inuse_objects (blocks) and inuse_space (bytes), as Go's
 * heap profiles name them. Closes @f.
 */
static int write_pprof(struct leaks_run *r, const struct ml_leaks_outstanding *t, FILE *f)
{
	static const struct pprof_type types[] = { { "inuse_objects", "count" },
						   { "inuse_space", "bytes" } };
	struct ml_err err = { 0 };
	struct pprof *p = mlt_pprof_new(&r->sym, types, 2, &err);
	char comment[4400];
	int e = p ? 0 : -err.code;

	for (size_t i = 0; p && !e && i < t->nstacks; i++) {
		uint64_t u[STACK_MAX];
		double v[2] = { t->stacks[i].est_count, t->stacks[i].est_bytes };

		e = mlt_pprof_add(p, u, ml_leaks_tracer_stack(r->tr, t->stacks[i].id, u, STACK_MAX),
				  v);
	}
	if (p && !e) {
		char rate[96] = "";

		if (r->o->sample)
			snprintf(rate, sizeof(rate),
				 "; sampled, one allocation per %llu bytes on average: values "
				 "are estimates",
				 (unsigned long long)r->o->sample);
		snprintf(comment, sizeof(comment),
			 "memlens leaks: blocks still allocated by pid %d when tracing ended "
			 "(allocator %s)%s",
			 (int)r->sym.pid, alloc_shown(&r->alloc), rate);
		mlt_pprof_comment(p, comment);
		if (r->o->sample) /* as Go's heap profiles: one sample per period of bytes */
			mlt_pprof_period(p, &(struct pprof_type){ "space", "bytes" },
					 (int64_t)r->o->sample);
		mlt_pprof_times(p, (int64_t)r->start_wall_ns,
				(int64_t)(ml_mono_ns() - r->start_mono_ns));
		e = mlt_pprof_write(p, f);
	}
	mlt_pprof_free(p);
	if (fclose(f) && !e)
		e = -errno;
	return e;
}

/*
 * The preloaded sampler's probe hits the kernel gave the other marker's
 * cookie (told apart by their pc: with -v), and those at neither marker
 * (dropped: always said).
 */
static void say_marker_hits(const struct leaks_run *r)
{
	uint64_t miscookied, stray;

	ml_leaks_tracer_marker_hits(r->tr, &miscookied, &stray);
	if (stray)
		fprintf(stderr,
			"memlens leaks: warning: %llu probe hits of the sampler were at neither of "
			"its markers: dropped\n",
			(unsigned long long)stray);
	if (miscookied && r->o->verbose)
		fprintf(stderr,
			"memlens leaks: %llu probe hits of the sampler came with the other "
			"marker's cookie (told apart by their address)\n",
			(unsigned long long)miscookied);
}

static void report(struct leaks_run *r, const struct report_at *at)
{
	uint64_t c[LEAKS_NR_COUNTERS];
	struct ml_leaks_outstanding t;

	ml_leaks_tracer_counters(r->tr, c);
	/* what it could read, even short of memory; with dwarf, every copy so far unwound */
	ml_leaks_tracer_read(r->tr, &t);
	c[LEAKS_C_STACK_FULL] += unw(r).full; /* dwarf: more stacks than --max-stacks */
	if (at->elapsed_s < 0)
		r->unread =
			t.count != c[LEAKS_C_ALLOCS] - c[LEAKS_C_FREES] - c[LEAKS_C_MISSED_FREES];
	if (r->o->json)
		print_json(r, r->o, &t, c, at);
	else if (live_on() && at->elapsed_s >= 0)
		print_screen(r, &t, c, at);
	else
		print_table(r, r->o, &t, c, at);
	if (at->elapsed_s < 0 && r->folded) {
		int e = write_folded(r, &t, r->folded);

		r->folded = NULL;
		if (e)
			cli_error("leaks", "cannot write the folded stacks to %s: %s", r->o->folded,
				  strerror(-e));
		r->write_failed = e != 0;
	}
	if (at->elapsed_s < 0 && r->pprof) {
		int e = write_pprof(r, &t, r->pprof);

		r->pprof = NULL;
		if (e)
			cli_error("leaks", "cannot write the pprof profile to %s: %s", r->o->pprof,
				  strerror(-e));
		r->write_failed |= e != 0;
	}
	if (at->elapsed_s >= 0 && !r->o->json && !live_on())
		printf("\n");
	fflush(stdout);
	if (at->elapsed_s < 0 && r->preload)
		say_marker_hits(r);
	memcpy(r->prev, c, sizeof(c));
	ml_leaks_outstanding_free(&t);
}

static void on_tick(void *arg, double elapsed_s, bool last)
{
	struct leaks_run *r = arg;

	mlt_symbolizer_refresh(&r->sym);
	report(r, &(struct report_at){ elapsed_s, last });
}

static void on_idle(void *arg)
{
	mlt_symbolizer_refresh(
		&((struct leaks_run *)arg)->sym); /* maps of a process that may exit */
}

/* --stacks dwarf: the stack copies, unwound as they come */
static int poll_leaks(void *tr, int timeout_ms)
{
	return ml_leaks_tracer_poll(tr, timeout_ms);
}

static enum trace_stop run_until_done(struct leaks_run *r, const struct leaks_opts *o,
				      struct ml_trace_target *t)
{
	/* no ring buffer (stacks walked with frame pointers, or none): no poll */
	bool rb = ml_leaks_tracer_fd(r->tr) >= 0;
	struct trace_loop l = { .duration_s = o->duration,
				.t = t,
				.poll = rb ? poll_leaks : NULL,
				.src = r->tr,
				.tick = on_tick,
				.idle = on_idle,
				.arg = r };
	sigset_t sigs;

	enum trace_stop why;

	cli_block_signals(&sigs);
	trace_live_start(o->json);
	why = trace_run(&sigs, &l);
	live_stop();
	if (why == TRACE_STOP_TARGET && !trace_quiet() && !ml_trace_target_spawned(t))
		fprintf(stderr,
			"memlens leaks: process %d exited; outstanding allocations at its exit\n",
			(int)ml_trace_target_pid(t));
	return why;
}

static void *detach_thread(void *tr)
{
	ml_leaks_tracer_detach(tr);
	return NULL;
}

/*
 * -p PID: a process started with the sampler in its environment
 * (LD_PRELOAD naming it, MEMLENS_SAMPLE_BYTES the rate of --sample) has
 * its markers probed; any other process, uprobes on its allocator.
 */
static int pid_sampler(struct leaks_run *r, const struct leaks_opts *o)
{
	char path[64], so[PATH_MAX - 32], *env = NULL;
	uint64_t rate = 0;
	size_t len = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/environ", (int)o->pid);
	f = fopen(path, "re");
	if (f) {
		env = malloc(1 << 20);
		len = env ? fread(env, 1, (1 << 20) - 1, f) : 0;
		fclose(f);
	}
	if (!env || mlt_preload_from_environ(env, len, so, sizeof(so), &rate)) {
		free(env);
		if (o->sampler == SAMPLER_PRELOAD) {
			cli_error("leaks",
				  "--sampler preload: process %d was not started with %s "
				  "and %s in its environment; use --sampler uprobe",
				  (int)o->pid, MLT_SAMPLER_SO, MLT_SAMPLER_ENV);
			return EXIT_USAGE;
		}
		snprintf(r->uprobe_why, sizeof(r->uprobe_why),
			 "-p PID: the process was not started with the sampler");
		return 0;
	}
	free(env);
	if (rate != o->sample) {
		if (o->sampler == SAMPLER_PRELOAD) {
			cli_error("leaks",
				  "--sampler preload: the sampler in process %d samples every "
				  "%llu bytes: give --sample %llu",
				  (int)o->pid, (unsigned long long)rate, (unsigned long long)rate);
			return EXIT_USAGE;
		}
		snprintf(r->uprobe_why, sizeof(r->uprobe_why),
			 "-p PID: the sampler in the process samples every %llu bytes, not %llu",
			 (unsigned long long)rate, (unsigned long long)o->sample);
		return 0;
	}
	/* the path as the process sees it, from here */
	snprintf(r->sampler_so, sizeof(r->sampler_so), "/proc/%d/root%s", (int)o->pid, so);
	r->preload = true;
	return 0;
}

/*
 * --sample -- CMD: preload the sampler into CMD where the dynamic loader
 * will load it, else uprobes (and r->uprobe_why says why). 0, or an exit
 * code after an error message.
 */
static int choose_sampler(struct leaks_run *r, const struct leaks_opts *o)
{
	char exe[PATH_MAX], elf[PATH_MAX], why[PATH_MAX + 128], own[32];
	enum mlt_exec_kind k;
	ssize_t n;

	r->preload = false;
	if (!o->sample)
		return 0;
	if (o->pid && o->sampler != SAMPLER_UPROBE)
		return pid_sampler(r, o);
	if (o->sampler == SAMPLER_UPROBE) {
		snprintf(r->uprobe_why, sizeof(r->uprobe_why), "--sampler uprobe");
		return 0;
	}
	k = mlt_preload_exec_kind(o->cmd[0], elf, why, sizeof(why));
	if (k == MLT_EXEC_DYNAMIC) {
		mlt_preload_own_allocator(elf, own, sizeof(own));
		if (own[0]) {
			k = MLT_EXEC_STATIC;
			snprintf(why, sizeof(why),
				 "%s has an allocator of its own (it defines %s), which a "
				 "preloaded malloc would not see",
				 elf, own);
		}
	}
	if (k != MLT_EXEC_DYNAMIC) {
		if (o->sampler == SAMPLER_PRELOAD) {
			cli_error("leaks", "--sampler preload: %s; use --sampler uprobe", why);
			return EXIT_USAGE;
		}
		snprintf(r->uprobe_why, sizeof(r->uprobe_why), "%s", why);
		if (!trace_quiet())
			fprintf(stderr,
				"memlens leaks: %s: sampling with uprobes on its allocator (the "
				"preloaded sampler needs a program the dynamic loader starts, "
				"with the allocator of a library)\n",
				why);
		return 0;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = 0;
	if (n > 0 && strrchr(exe, '/'))
		*strrchr(exe, '/') = 0;
	if (mlt_preload_find(exe, MEMLENS_SAMPLERDIR, r->sampler_so, sizeof(r->sampler_so))) {
		cli_error("leaks",
			  "--sample: the sampler %s is neither beside memlens (%s) nor in %s: "
			  "build it (make) or install it (make install), or sample with "
			  "uprobes (--sampler uprobe)",
			  MLT_SAMPLER_SO, exe, MEMLENS_SAMPLERDIR);
		return EXIT_FAIL;
	}
	if (strpbrk(r->sampler_so, " :\t")) { /* LD_PRELOAD's separators */
		snprintf(r->uprobe_why, sizeof(r->uprobe_why),
			 "the sampler's path %s has a space or a colon, which LD_PRELOAD "
			 "cannot hold",
			 r->sampler_so);
		if (o->sampler == SAMPLER_PRELOAD) {
			cli_error("leaks", "--sampler preload: %s", r->uprobe_why);
			return EXIT_FAIL;
		}
		if (!trace_quiet())
			fprintf(stderr, "memlens leaks: %s: sampling with uprobes\n",
				r->uprobe_why);
		return 0;
	}
	r->preload = true;
	return 0;
}

/*
 * Start CMD; with the preloaded sampler, with it first in its LD_PRELOAD
 * (the user's own kept after it) and the rate in its environment: the
 * variables are set in ours for the exec and restored after.
 */
static int spawn_cmd(struct leaks_run *r, const struct leaks_opts *o, struct ml_trace_target **t,
		     bool *not_started, struct ml_err *err)
{
	char *old = getenv("LD_PRELOAD"), *saved, *pre, rate[32];
	size_t len = strlen(r->sampler_so) + (old ? strlen(old) : 0) + 2;
	int e;

	if (!r->preload)
		return ml_trace_target_spawn(t, o->cmd, not_started, err);
	saved = old ? strdup(old) : NULL;
	pre = malloc(len);
	if (!pre || (old && !saved) || mlt_preload_env(old, r->sampler_so, pre, len)) {
		free(pre);
		free(saved);
		return ml_err_set(err, ENOMEM, "out of memory");
	}
	snprintf(rate, sizeof(rate), "%llu", (unsigned long long)o->sample);
	setenv("LD_PRELOAD", pre, 1);
	setenv(MLT_SAMPLER_ENV, rate, 1);
	e = ml_trace_target_spawn(t, o->cmd, not_started, err);
	if (saved)
		setenv("LD_PRELOAD", saved, 1);
	else
		unsetenv("LD_PRELOAD");
	unsetenv(MLT_SAMPLER_ENV);
	if (o->verbose)
		fprintf(stderr, "memlens leaks: started with LD_PRELOAD=%s %s=%s\n", pre,
			MLT_SAMPLER_ENV, rate);
	free(pre);
	free(saved);
	return e;
}

/* -v: what the loader says, on stderr */
static void say(void *arg, const char *fmt, ...)
{
	va_list ap;

	(void)arg;
	fputs("memlens leaks: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

static int cmd_leaks(int argc, char **argv)
{
	struct ml_trace_target *t = NULL;
	bool not_started = false;
	struct leaks_run r = { 0 };
	struct ml_err err = { 0 };
	struct leaks_opts o;
	int e;

	r.o = &o;
	e = parse_args(argc, argv, &o);
	if (e)
		return e < 0 ? EXIT_OK : e;
	e = cli_check_target("leaks", o.pid, o.cmd);
	if (e)
		return e;
	e = trace_output_open("leaks", o.cmd != NULL);
	if (e)
		return e;
	if (o.folded && !(r.folded = fopen(o.folded, "we"))) {
		cli_error("leaks", "cannot write the folded stacks to %s: %s", o.folded,
			  strerror(errno));
		return errno == EACCES || errno == EPERM ? EXIT_PERM : EXIT_FAIL;
	}
	if (o.stacks == STACKS_DWARF && !mlt_unwind_supported()) {
		cli_error("leaks",
			  "--stacks dwarf: this memlens was built without elfutils' libdw "
			  "(install libdw-dev, then rebuild)%s",
#ifdef __x86_64__
			  ""
#else
			  "; and it unwinds x86-64 only"
#endif
		);
		return EXIT_FAIL;
	}
	if (o.pprof && !mlt_pprof_supported()) {
		cli_error("leaks", "--pprof: this memlens was built without protobuf-c (install "
				   "libprotobuf-c-dev and protobuf-c-compiler, then rebuild)");
		return EXIT_FAIL;
	}
	if (o.pprof && !(r.pprof = fopen(o.pprof, "we"))) {
		cli_error("leaks", "cannot write the pprof profile to %s: %s", o.pprof,
			  strerror(errno));
		return errno == EACCES || errno == EPERM ? EXIT_PERM : EXIT_FAIL;
	}
	trace_libbpf_quiet(o.verbose);
	trace_say_pidns("leaks", o.verbose);
	e = choose_sampler(&r, &o);
	if (e)
		return e;
	if (o.sample && !r.preload && o.verbose)
		fprintf(stderr, "memlens leaks: sampler: uprobes on the allocator (%s)\n",
			r.uprobe_why);
	e = mlt_trace_preflight(&err);
	if (!e)
		e = o.cmd ? spawn_cmd(&r, &o, &t, &not_started, &err)
			  : ml_trace_target_attach(&t, o.pid, &err);
	if (!e) {
		ML_OPTS(ml_leaks_tracer_opts, lo, .pid = ml_trace_target_pid(t),
			.wait_loaded = ml_trace_target_spawned(t), .no_stacks = o.no_stacks,
			.free_at_entry = o.free_at_entry, .perf_uprobes = o.perf_uprobes,
			.stacks = o.stacks == STACKS_DWARF ? ML_LEAKS_STACKS_DWARF
							   : ML_LEAKS_STACKS_FP,
			.max_blocks = o.max_blocks, .max_stacks = o.max_stacks, .sample = o.sample,
			.stack_size = o.stack_size, .say = o.verbose ? say : NULL,
			.preload = r.preload ? r.sampler_so : NULL);

		e = ml_leaks_tracer_open(&r.tr, &lo, &err);
	}
	if (!e) {
		r.alloc.sz = sizeof(r.alloc);
		ml_leaks_tracer_allocator(r.tr, &r.alloc);
	}
	if (e)
		goto out;
	mlt_symbolizer_init(&r.sym, ml_trace_target_pid(t));
	r.sym.debug_dir = o.debug_dir;
	mlt_symbolizer_refresh(&r.sym);
	trace_output_switch(); /* after the spawn: CMD keeps our stdout */
	e = ml_trace_target_release(t, &err);
	if (e)
		goto out;
	{
		char what[32];

		snprintf(what, sizeof(what), "pid %d", (int)ml_trace_target_pid(t));
		trace_say_tracing("leaks", what, o.duration, true);
	}
	{
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		r.start_wall_ns = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
		r.start_mono_ns = ml_mono_ns();
	}
	{
		bool gone = run_until_done(&r, &o, t) == TRACE_STOP_TARGET;
		pthread_t det;

		mlt_symbolizer_refresh(&r.sym);
		/*
		 * The table is read once nothing changes it any more: once the
		 * uprobes are removed, or once the target is gone. Then the
		 * removal (the kernel's grace periods, tens of milliseconds)
		 * runs while the report is made rather than before it.
		 */
		gone = gone && !pthread_create(&det, NULL, detach_thread, r.tr);
		if (!gone)
			ml_leaks_tracer_detach(r.tr);
		report(&r, &(struct report_at){ -1, true });
		if (gone)
			pthread_join(det, NULL);
	}
out:
	if (e)
		e = trace_fail("leaks", not_started, e, &err);
	ml_leaks_tracer_detach(r.tr);
	if (r.folded)
		fclose(r.folded);
	if (r.pprof)
		fclose(r.pprof);
	ml_leaks_tracer_close(r.tr);
	mlt_symbolizer_free(&r.sym);
	ml_trace_target_close(t, true);
	return e ? e : r.write_failed ? EXIT_FAIL : EXIT_OK;
}

MEMLENS_COMMAND(leaks, "leaks", 22, "outstanding malloc/free allocations by size and stack (eBPF)",
		cmd_leaks);
