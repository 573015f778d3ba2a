// SPDX-License-Identifier: MIT
/*
 * The case kinds that run memlens itself: attach/profile/detach cycles,
 * SIGINT in the middle of profiling, snapshots, and memlens killed with
 * SIGKILL at a random instant or at its K-th ptrace() call.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "driver.h"

int case_tries(const struct kase *k)
{
	int n = E.full ? k->tries_full : k->tries_short;

	return E.max_tries && E.max_tries < n ? E.max_tries : n;
}

uint64_t case_deadline_us(const struct kase *k)
{
	uint64_t own = now_us() + (uint64_t)(E.full ? k->secs_full : k->secs_short) * 1000000u;

	return own < E.deadline_us ? own : E.deadline_us;
}

static char *dupf(const char *fmt, const char *a, const char *b)
{
	char *s;

	if (asprintf(&s, fmt, a, b) < 0)
		abort();
	return s;
}

int case_target(const struct kase *k, struct target *t, struct result *r)
{
	char why[512];
	int n = 0;

	memset(t, 0, sizeof(*t));
	t->label = k->name;
	t->static_maps = k->static_maps;
	snprintf(t->res_path, sizeof(t->res_path), "%s/%s.result", E.tmp, k->name);
	snprintf(t->log_path, sizeof(t->log_path), "%s/%s.target.log", E.tmp, k->name);
	for (char *p = strchr(t->res_path + strlen(E.tmp) + 1, '/'); p; p = strchr(p, '/'))
		*p = '_';
	for (char *p = strchr(t->log_path + strlen(E.tmp) + 1, '/'); p; p = strchr(p, '/'))
		*p = '_';
	t->argv[n++] = dupf("%s/%s", E.workloads, k->target);
	t->argv[n++] = (char *)"-r";
	t->argv[n++] = t->res_path;
	t->argv[n++] = (char *)"-t";
	t->argv[n++] = (char *)"700"; /* it never outlives a stuck driver for long */
	for (int i = 0; k->targs[i] && n < 11; i++)
		t->argv[n++] = (char *)k->targs[i];
	t->argv[n] = NULL;
	if (target_start(t, why, sizeof(why))) {
		snprintf(r->skip, sizeof(r->skip), "the target could not be started: %.200s", why);
		return -1;
	}
	return 0;
}

/* a memlens run past SLOW_MS is slow; past HUNG_MS, hung (memlens_run) */
#define SLOW_MS 30000
#define HUNG_MS 120000

void case_finish(struct target *t, struct result *r, int extra_tries)
{
	if (target_stop(t, &r->harm))
		r->failures++;
	r->tries += extra_tries;
	snprintf(r->note, sizeof(r->note), "%s (target restarted %d times)", t->summary,
		 t->restarts);
	if (r->slow) {
		size_t l = strlen(r->note);

		snprintf(
			r->note + l, sizeof(r->note) - l,
			"; %d run(s) of memlens slower than %d s, the slowest %.0f s (at %d s: %s)",
			r->slow, SLOW_MS / 1000, r->slow_max_s, SLOW_MS / 1000, r->slow_where);
	}
	free(t->argv[0]);
	free(t->maps0);
}

static void pid_arg(char *buf, size_t len, pid_t pid)
{
	snprintf(buf, len, "%d", (int)pid);
}

/* A memlens run that went wrong: count it (as a failure of the try). */
static void memlens_failed(struct result *r, const char *what, int st, const char *err_path)
{
	char d[64], l[200];

	describe_status(st, d, sizeof(d));
	last_line(err_path, l, sizeof(l));
	tally_add(&r->harm, "memlens %s %s: %.120s", what, d, l);
}

/* One try of a looping case: the target, its pid as an argument, memlens's stderr. */
struct try_ctx {
	struct result *r;
	struct target *t;
	char pid[16];
	char err[PATH_MAX + 32];
};

/*
 * The loop every repeated case runs: start the target, then tries until the
 * case's count or deadline (or the target is gone for good). @try_once runs
 * memlens once and returns 1 when memlens itself went wrong (it tallies
 * why); after each try the target is checked for harm.
 */
static void case_loop(const struct kase *k, struct result *r, int (*try_once)(struct try_ctx *c))
{
	struct target t;
	struct try_ctx c = { .r = r, .t = &t };
	uint64_t end = case_deadline_us(k);

	if (case_target(k, &t, r))
		return;
	snprintf(c.err, sizeof(c.err), "%s.memlens.err", t.log_path);
	while (r->tries < case_tries(k) && now_us() < end && t.pid > 0) {
		int bad;

		pid_arg(c.pid, sizeof(c.pid), t.pid);
		bad = try_once(&c);
		bad += target_check(&t, &r->harm);
		r->tries++;
		r->failures += bad > 0;
	}
	case_finish(&t, r, 0);
}

/*
 * memlens @argv to its end: 1 when it hung or failed. Past SLOW_MS it is
 * slow, not yet hung (on a loaded machine a run waits for the CPU, and so
 * does the target it stops): where it waits is noted, and it gets
 * HUNG_MS in all before it counts as hung.
 */
static int memlens_run(struct try_ctx *c, char **argv, const char *hung, const char *failed)
{
	uint64_t t0 = now_us();
	pid_t pid = spawn(argv, NULL, c->err);
	char where[64] = "";
	bool to, slow = pid > 0 && !exits_within(pid, SLOW_MS);
	int st;

	if (slow)
		proc_where(pid, where, sizeof(where));
	st = wait_for(pid, slow ? HUNG_MS - SLOW_MS : SLOW_MS, &to);
	if (to || !WIFEXITED(st) || WEXITSTATUS(st)) {
		memlens_failed(c->r, to ? hung : failed, st, c->err);
		return 1;
	}
	if (slow) {
		double s = (double)(now_us() - t0) / 1e6;

		c->r->slow++;
		if (s > c->r->slow_max_s) {
			c->r->slow_max_s = s;
			snprintf(c->r->slow_where, sizeof(c->r->slow_where), "%s", where);
		}
	}
	return 0;
}

static int try_cycle(struct try_ctx *c)
{
	char *argv[] = {
		(char *)E.memlens, "writes", "-p", c->pid, "-i", "10", "-d", "0.05", "-q", NULL
	};

	return memlens_run(c, argv, "hung (2 min), then", "failed:");
}

/*
 * memlens writes -p PID -i 10 -d 0.05: attach, five profiling intervals,
 * detach. memlens must succeed every time, the target must not notice.
 */
void case_cycles(const struct kase *k, struct result *r)
{
	case_loop(k, r, try_cycle);
}

/* memlens @m holds its userfaultfd: it has attached and profiles. */
static bool profiling(pid_t m)
{
	char p[64], l[320], link[128];
	DIR *d;
	struct dirent *e;
	bool found = false;

	snprintf(p, sizeof(p), "/proc/%d/fd", (int)m);
	d = opendir(p);
	if (!d)
		return false;
	while (!found && (e = readdir(d))) {
		ssize_t n;

		snprintf(l, sizeof(l), "%s/%s", p, e->d_name);
		n = readlink(l, link, sizeof(link) - 1);
		found = n > 0 && (link[n] = '\0', strstr(link, "userfaultfd"));
	}
	closedir(d);
	return found;
}

static int try_sigint(struct try_ctx *c)
{
	char *argv[] = { (char *)E.memlens, "writes", "-p", c->pid, "-i", "10", "-q", NULL };
	bool to;
	int st, i;
	pid_t m = spawn(argv, NULL, c->err);

	for (i = 0; i < 5000 && !profiling(m); i++)
		sleep_us(1000);
	sleep_us(rnd(50001));
	kill(m, SIGINT);
	st = wait_for(m, 30000, &to);
	if (to || !WIFEXITED(st) || WEXITSTATUS(st) || i == 5000) {
		memlens_failed(c->r,
			       to	   ? "hung after SIGINT, then"
			       : i == 5000 ? "did not start profiling in 5 s:"
					   : "after SIGINT:",
			       st, c->err);
		return 1;
	}
	return 0;
}

/*
 * memlens writes -p PID -i 10 stopped by SIGINT 0-50 ms after it started
 * profiling (it holds its userfaultfd): the orderly way out in the middle
 * of the profiling. It must print its summary, exit 0, detach.
 */
void case_sigint(const struct kase *k, struct result *r)
{
	case_loop(k, r, try_sigint);
}

static int try_snapshot(struct try_ctx *c)
{
	char *argv[] = { (char *)E.memlens, "snapshot", "-p", c->pid, NULL };

	return memlens_run(c, argv, "snapshot hung, then", "snapshot failed:");
}

/* memlens snapshot -p PID: one snapshot, which must succeed every time. */
void case_snapshot(const struct kase *k, struct result *r)
{
	case_loop(k, r, try_snapshot);
}

static int try_kill_random(struct try_ctx *c)
{
	char *argv[] = {
		(char *)E.memlens, "writes", "-p", c->pid, "-i", "10", "-d", "2", "-q", NULL
	};
	pid_t m = spawn(argv, NULL, c->err);

	sleep_us(rnd(50001));
	kill(m, SIGKILL);
	wait_for(m, 30000, NULL);
	return 0; /* only the target's harm counts */
}

/*
 * memlens writes -p PID -i 10 -d 2, SIGKILLed 0-50 ms after it started
 * (uniformly): before, during or after its attach. Its death must not
 * harm the target.
 */
void case_kill_random(const struct kase *k, struct result *r)
{
	case_loop(k, r, try_kill_random);
}

static bool have_strace(char *path, size_t len)
{
	static const char *const dirs[] = { "/usr/bin", "/bin", "/usr/local/bin" };

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, len, "%s/strace", dirs[i]);
		if (!access(path, X_OK))
			return true;
	}
	return false;
}

/* The ptrace() calls of one normal cycle, counted by strace. */
static int count_ptrace_calls(const char *strace, pid_t target, const char *log)
{
	char pid[16], line[512];
	char *argv[] = { (char *)strace,
			 "-f",
			 "-qq",
			 "-e",
			 "trace=ptrace",
			 "-o",
			 (char *)log,
			 (char *)E.memlens,
			 "writes",
			 "-p",
			 pid,
			 "-i",
			 "10",
			 "-d",
			 "0.05",
			 "-q",
			 NULL };
	FILE *f;
	int n = 0, st;

	pid_arg(pid, sizeof(pid), target);
	st = wait_for(spawn(argv, NULL, NULL), 60000, NULL);
	if (st < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
		return -1;
	f = fopen(log, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, "ptrace(") != NULL;
	fclose(f);
	return n;
}

/*
 * memlens SIGKILLed by strace at its K-th ptrace() call, for every K of a
 * normal cycle (and two beyond, where it runs to its end): the injection
 * interrupted at every step. In the full run every K is tried 3 times.
 */
void case_kill_ptrace(const struct kase *k, struct result *r)
{
	struct target t;
	uint64_t end = case_deadline_us(k);
	char strace[PATH_MAX], pid[16], err[PATH_MAX + 32], log[PATH_MAX + 32];
	int n, reps = E.full ? 3 : 1;

	if (!have_strace(strace, sizeof(strace))) {
		snprintf(r->skip, sizeof(r->skip), "strace is not installed (Debian: strace)");
		return;
	}
	if (case_target(k, &t, r))
		return;
	snprintf(err, sizeof(err), "%s.memlens.err", t.log_path);
	snprintf(log, sizeof(log), "%s.strace", t.log_path);
	n = count_ptrace_calls(strace, t.pid, log);
	if (n <= 0) {
		snprintf(r->skip, sizeof(r->skip),
			 "memlens under strace did not complete a normal cycle (log: %.150s)", log);
		target_kill(&t);
		free(t.argv[0]);
		free(t.maps0);
		return;
	}
	for (int rep = 0; rep < reps; rep++)
		for (int kk = 1; kk <= n + 2 && now_us() < end && t.pid > 0; kk++) {
			char inject[64];
			char *argv[] = { strace,   "-f",	   "-qq", "-o",	  "/dev/null",
					 "-e",	   "trace=ptrace", "-e",  inject, (char *)E.memlens,
					 "writes", "-p",	   pid,	  "-i",	  "10",
					 "-d",	   "0.05",	   "-q",  NULL };
			bool to;

			snprintf(inject, sizeof(inject), "inject=ptrace:signal=SIGKILL:when=%d",
				 kk);
			pid_arg(pid, sizeof(pid), t.pid);
			wait_for(spawn(argv, NULL, err), 30000, &to);
			if (to)
				tally_add(&r->harm, "memlens under strace hung (30 s)");
			if (target_check(&t, &r->harm) > 0 || to) {
				r->failures++;
				fprintf(stderr, "# K=%d: harm\n", kk);
			}
			r->tries++;
		}
	case_finish(&t, r, 0);
	{
		size_t l = strlen(r->note);

		snprintf(r->note + l, sizeof(r->note) - l, "; a normal cycle makes %d ptrace calls",
			 n);
	}
}
