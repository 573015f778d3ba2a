// SPDX-License-Identifier: MIT
/* memlens report: one self-contained HTML page from the other commands' JSON Lines. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cliutil.h"
#include "command.h"
#include "opts.h"
#include "output.h"
#include "memlens/report.h"

static const char about[] =
	"Draw one self-contained HTML page (inline SVG and CSS: no script, no network,\n"
	"opens in any browser) from the JSON Lines other memlens commands write.\n"
	"Each line is recognised by its \"type\":\n"
	"  interval        memlens writes --json / --record: a heat map of the\n"
	"                  written ratio of each VMA over time (hot intervals\n"
	"                  marked) and the dirty-rate line\n"
	"  snapshot        memlens snapshot --json: resident memory by region kind\n"
	"                  over time (stacked) and in-memory / written share per kind\n"
	"                  (runs of one command side by side)\n"
	"  faults          memlens faults --json: fault latency histograms\n"
	"                  (faults_interval, of -i: faults over time)\n"
	"  leaks           memlens leaks --json: outstanding bytes by call stack as\n"
	"                  a flame graph, and by block size (leaks_interval: over time)\n"
	"  slab            memlens slab --json: per cache allocated, freed and net\n"
	"                  (slab_interval, of -i: per interval, over time)\n"
	"  oom_kill        memlens oom --json: each kill on a timeline, with its victim\n"
	"                  (oom_interval, oom_summary: the counts)\n"
	"  migrate_model   memlens migrate-model --json: bytes per pre-copy round\n"
	"  summary         the last line of writes and snapshot --json\n";

static const char footer[] =
	"Exit status: 0 written; 2 bad usage or bad input (the message names the file\n"
	"and line); 1 the page could not be written.\n"
	"Example (--record keeps the program's own output out of the JSON):\n"
	"  memlens writes -d 10 --record writes.jsonl -- ./app\n"
	"  memlens report writes.jsonl -o report.html\n";

struct report_args {
	const char *out;
	bool skip_unknown;
	struct ml_report_opts opts;
};

static int parse_args(int argc, char **argv, struct report_args *a, int *first)
{
	long points = 0, vmas = 0;
	struct cli_opt opts[] = {
		{ .arg = "FILE...",
		  .kind = CLI_ARGS,
		  .help = "JSON Lines files; - reads standard input" },
		CLI_OPT_OUTPUT(&a->out, "where to write the page (default report.html; - for "
					"stdout)"),
		{ .name = "title",
		  .arg = "TEXT",
		  .kind = CLI_STR,
		  .target = &a->opts.title,
		  .help = "the page's title (default \"memlens report\")" },
		{ .name = "max-points",
		  .arg = "N",
		  .kind = CLI_LONG,
		  .target = &points,
		  .min = 10,
		  .max = 5000,
		  .help = "time columns per chart before long runs are averaged down (default "
			  "360)" },
		{ .name = "max-vmas",
		  .arg = "N",
		  .kind = CLI_LONG,
		  .target = &vmas,
		  .min = 1,
		  .max = 1000,
		  .help = "VMAs in a heat map, the most written ones (default 40)" },
		{ .name = "skip-unknown",
		  .kind = CLI_FLAG,
		  .target = &a->skip_unknown,
		  .help = "skip lines of other types instead of stopping at them" },
		CLI_OPT_END,
	};
	struct cli_spec spec = { .cmd = "report",
				 .about = about,
				 .footer = footer,
				 .opts = opts,
				 .check_operand = cli_input_file };
	int r = cli_parse(&spec, argc, argv, first);

	if (r)
		return r;
	a->opts.max_cols = (int)points;
	a->opts.max_rows = (int)vmas;
	if (*first >= argc)
		return cli_usage_error("report", "give at least one JSON Lines file");
	return EXIT_OK;
}

static int load_inputs(struct ml_report *r, int n, char **files)
{
	struct ml_err err = { 0 };
	int ret;

	for (int i = 0; i < n; i++) {
		if (!strcmp(files[i], "-"))
			ret = ml_report_load_stream(r, stdin, "(stdin)", &err);
		else
			ret = ml_report_load_file(r, files[i], &err);
		if (ret) {
			cli_error("report", "%s", err.msg);
			return ret == -ENOMEM || ret == -EIO ? EXIT_FAIL : EXIT_USAGE;
		}
	}
	return EXIT_OK;
}

/* Write to a temporary file first: a failed run never leaves half a page. */
static int write_page(const char *path, const struct ml_rbuf *page)
{
	char tmp[4096];
	struct stat st;
	bool direct;
	int fd, e = 0;

	if (!strcmp(path, "-")) {
		fwrite(page->p, 1, page->len, stdout);
		return -out_flush(stdout);
	}
	/* a device or a fifo (/dev/stdout, a pipe) is written, never replaced */
	direct = !stat(path, &st) && !S_ISREG(st.st_mode);
	if (snprintf(tmp, sizeof(tmp), "%s.tmp%d", path, (int)getpid()) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	if (direct)
		fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOCTTY);
	else
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return -errno;
	for (size_t done = 0; done < page->len && !e;) {
		ssize_t w = write(fd, page->p + done, page->len - done);

		if (w > 0)
			done += (size_t)w;
		else if (w < 0 && errno != EINTR)
			e = errno;
		else if (w == 0)
			e = EIO;
	}
	if (!e && !direct && fsync(fd))
		e = errno; /* a full disk may only say so now (delayed allocation) */
	if (close(fd) && !e && errno != EINTR)
		e = errno;
	if (!direct && !e && rename(tmp, path))
		e = errno;
	if (!direct && e)
		unlink(tmp);
	return -e;
}

static void say_written(const char *path, const struct ml_report *r, size_t bytes)
{
	char size[16];

	if (!strcmp(path, "-"))
		return;
	printf("memlens report: wrote %s (%s): %zu writes run(s), %zu snapshot series, "
	       "%zu fault histogram(s), %zu migration model(s), %zu leaks run(s), %zu slab "
	       "run(s), %zu OOM watch(es) from %zu JSON lines\n",
	       path, ml_fmt_bytes(bytes, size, sizeof(size)), r->nw, r->ns, r->nf, r->nm, r->nl,
	       r->nsl, r->no, r->lines);
}

int cmd_report(int argc, char **argv)
{
	struct report_args a = { .out = "report.html", .opts.sz = sizeof(struct ml_report_opts) };
	struct ml_err err = { 0 };
	struct ml_rbuf page = { 0 };
	struct ml_report r;
	int rc, ret, first;

	rc = parse_args(argc, argv, &a, &first);
	if (rc)
		return rc < 0 ? EXIT_OK : rc;
	ml_report_init(&r);
	r.skip_unknown = a.skip_unknown;
	rc = load_inputs(&r, argc - first, argv + first);
	if (rc)
		goto out;
	ret = ml_report_render(&r, &a.opts, &page, &err);
	if (ret) {
		cli_error("report", "%s", err.msg);
		rc = ret == -EINVAL ? EXIT_USAGE : EXIT_FAIL;
		goto out;
	}
	ret = write_page(a.out, &page);
	if (ret) {
		if (!strcmp(a.out, "-"))
			out_close("report", stdout); /* says it, once */
		else
			cli_error("report",
				  "writing %s: %s; check the directory exists, is writable and "
				  "has room",
				  a.out, strerror(-ret));
		rc = EXIT_FAIL;
		goto out;
	}
	say_written(a.out, &r, page.len);
out:
	ml_rb_free(&page);
	ml_report_free(&r);
	return rc;
}

MEMLENS_COMMAND(report, "report", 80, "an HTML report (SVG charts) from other commands' JSON Lines",
		cmd_report);
