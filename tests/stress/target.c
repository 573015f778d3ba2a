// SPDX-License-Identifier: MIT
/* A stress target: start it, check it after each try, stop it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "driver.h"

static char *read_file(const char *path, size_t *len)
{
	size_t cap = 65536, n = 0;
	char *b = malloc(cap);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t r;

	if (!b || fd < 0) {
		free(b);
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	while ((r = read(fd, b + n, cap - n)) > 0) {
		n += (size_t)r;
		if (n == cap) {
			char *nb = realloc(b, cap * 2);

			if (!nb) {
				free(b);
				close(fd);
				return NULL;
			}
			b = nb;
			cap *= 2;
		}
	}
	close(fd);
	*len = n;
	return b;
}

int target_start(struct target *t, char *why, size_t len)
{
	int fd;

	fd = open(t->res_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, 4096)) {
		snprintf(why, len, "cannot create %s: %s", t->res_path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (t->res)
		munmap(t->res, 4096);
	t->res = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (t->res == MAP_FAILED) {
		t->res = NULL;
		snprintf(why, len, "cannot map %s: %s", t->res_path, strerror(errno));
		return -1;
	}
	t->pid = spawn(t->argv, t->log_path, t->log_path);
	if (t->pid < 0) {
		snprintf(why, len, "fork: %s", strerror(errno));
		return -1;
	}
	for (int i = 0; i < 1000; i++) {
		int st;

		if (__atomic_load_n(&t->res->magic, __ATOMIC_SEQ_CST) == STRESS_MAGIC &&
		    t->res->pid == t->pid)
			break;
		if (waitpid(t->pid, &st, WNOHANG) == t->pid) {
			char s[64], l[256];

			describe_status(st, s, sizeof(s));
			last_line(t->log_path, l, sizeof(l));
			snprintf(why, len, "%s did not start (%s): %s", t->argv[0], s, l);
			t->pid = 0;
			return -1;
		}
		sleep_us(10000);
	}
	if (t->res->magic != STRESS_MAGIC) {
		snprintf(why, len, "%s did not get ready in 10 s", t->argv[0]);
		target_kill(t);
		return -1;
	}
	free(t->maps0);
	t->maps0 = NULL;
	if (t->static_maps) {
		char p[64];

		sleep_us(100000); /* its threads have settled */
		snprintf(p, sizeof(p), "/proc/%d/maps", (int)t->pid);
		t->maps0 = read_file(p, &t->maps0_len);
	}
	return 0;
}

void target_kill(struct target *t)
{
	if (t->pid > 0) {
		kill(t->pid, SIGKILL);
		while (waitpid(t->pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	t->pid = 0;
}

static char proc_state(pid_t pid)
{
	char p[64], b[512], *q;
	int fd;
	ssize_t n;

	snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return '?';
	n = read(fd, b, sizeof(b) - 1);
	close(fd);
	if (n <= 0)
		return '?';
	b[n] = '\0';
	q = strrchr(b, ')');
	return q && q[1] && q[2] ? q[2] : '?';
}

/* A stopped state of the whole process: its threads stopped or traced. */
static char stopped_thread(pid_t pid)
{
	char p[64];
	DIR *d;
	struct dirent *e;
	char found = 0;

	snprintf(p, sizeof(p), "/proc/%d/task", (int)pid);
	d = opendir(p);
	if (!d)
		return 0;
	while (!found && (e = readdir(d))) {
		char s;

		if (e->d_name[0] == '.')
			continue;
		s = proc_state((pid_t)atoi(e->d_name));
		if (s == 't' || s == 'T')
			found = s;
	}
	closedir(d);
	return found;
}

static int uffd_fds(pid_t pid)
{
	char p[64], l[320], link[128];
	DIR *d;
	struct dirent *e;
	int n = 0;

	snprintf(p, sizeof(p), "/proc/%d/fd", (int)pid);
	d = opendir(p);
	if (!d)
		return 0;
	while ((e = readdir(d))) {
		ssize_t k;

		if (e->d_name[0] == '.')
			continue;
		snprintf(l, sizeof(l), "%s/%s", p, e->d_name);
		k = readlink(l, link, sizeof(link) - 1);
		if (k > 0) {
			link[k] = '\0';
			n += strstr(link, "userfaultfd") != NULL;
		}
	}
	closedir(d);
	return n;
}

static bool has_line(const char *text, size_t len, const char *line, size_t llen)
{
	for (const char *p = text; p < text + len;) {
		const char *nl = memchr(p, '\n', (size_t)(text + len - p));
		size_t l = nl ? (size_t)(nl - p) : (size_t)(text + len - p);

		if (l == llen && !memcmp(p, line, l))
			return true;
		p += l + 1;
	}
	return false;
}

/* The lines of @a that @b lacks, prefixed with @sign, into @f. */
static void lines_missing(FILE *f, char sign, const char *a, size_t alen, const char *b,
			  size_t blen)
{
	int shown = 0;

	for (const char *p = a; p < a + alen && shown < 4;) {
		const char *nl = memchr(p, '\n', (size_t)(a + alen - p));
		size_t l = nl ? (size_t)(nl - p) : (size_t)(a + alen - p);

		if (!has_line(b, blen, p, l)) {
			fprintf(f, "#   %c %.*s\n", sign, (int)(l > 120 ? 120 : l), p);
			shown++;
		}
		p += l + 1;
	}
}

int target_check(struct target *t, struct tally *h)
{
	int found = 0, st;
	char s;

	if (t->pid <= 0)
		return 0;
	if (waitpid(t->pid, &st, WNOHANG) == t->pid) {
		char d[64];

		describe_status(st, d, sizeof(d));
		tally_add(h, "target %s", d);
		t->pid = 0;
		found++;
		goto restart;
	}
	/* a stop memlens left behind: give a resumed process a moment first */
	for (int i = 0; i < 50 && (s = stopped_thread(t->pid)); i++)
		sleep_us(20000);
	if ((s = stopped_thread(t->pid))) {
		tally_add(h, "target left %s", s == 't' ? "in a trace stop" : "stopped (T)");
		found++;
	}
	/* memlens killed mid-injection: the thread closes the descriptor
	 * itself once it runs again, which on a loaded machine may take a
	 * scheduling delay */
	for (int i = 0; i < 50 && uffd_fds(t->pid); i++)
		sleep_us(20000);
	if (uffd_fds(t->pid)) {
		tally_add(h, "target holds a userfaultfd");
		found++;
	}
	if (t->static_maps && t->maps0) {
		char p[64];
		size_t len = 0;
		char *m;

		snprintf(p, sizeof(p), "/proc/%d/maps", (int)t->pid);
		m = read_file(p, &len);
		if (m && len && (len != t->maps0_len || memcmp(m, t->maps0, len))) {
			tally_add(h, "target's memory map changed (a mapping left behind?)");
			printf("# %s: the memory map changed:\n", t->label);
			lines_missing(stdout, '-', t->maps0, t->maps0_len, m, len);
			lines_missing(stdout, '+', m, len, t->maps0, t->maps0_len);
			found++;
		}
		free(m);
	}
	if (__atomic_load_n(&t->res->harm, __ATOMIC_SEQ_CST)) {
		tally_add(h, "target saw: %.150s", t->res->first);
		found++;
	}
	if (!found) {
		uint64_t c0 = __atomic_load_n(&t->res->checks, __ATOMIC_SEQ_CST);
		int i;

		for (i = 0; i < 300; i++) {
			if (__atomic_load_n(&t->res->checks, __ATOMIC_SEQ_CST) != c0)
				break;
			sleep_us(10000);
		}
		if (i == 300) {
			tally_add(h, "target made no progress for 3 s");
			found++;
		}
	}
	if (!found)
		return 0;
	/* it may be dying of what was found: say so */
	if (waitpid(t->pid, &st, WNOHANG) == t->pid) {
		char d[64];

		describe_status(st, d, sizeof(d));
		tally_add(h, "target %s", d);
		t->pid = 0;
	}
restart:
	/* begin the next try with a clean target */
	target_kill(t);
	t->restarts++;
	{
		char why[512];

		if (target_start(t, why, sizeof(why))) {
			tally_add(h, "target could not be started again: %.120s", why);
			t->pid = 0;
		}
	}
	return found;
}

int target_stop(struct target *t, struct tally *h)
{
	bool to;
	int st, found = 0;

	if (t->pid <= 0)
		return 0;
	kill(t->pid, SIGTERM);
	st = wait_for(t->pid, 10000, &to);
	t->pid = 0;
	if (to) {
		tally_add(h, "target did not stop on SIGTERM within 10 s");
		return 1;
	}
	if (!WIFEXITED(st) || (WEXITSTATUS(st) != 0 && WEXITSTATUS(st) != 1)) {
		char d[64];

		describe_status(st, d, sizeof(d));
		tally_add(h, "target %s at its end", d);
		found++;
	} else if (WEXITSTATUS(st) == 1 || t->res->harm) {
		tally_add(h, "target saw: %.150s", t->res->first);
		found++;
	}
	snprintf(t->summary, sizeof(t->summary), "%s",
		 t->res->done ? t->res->summary : "(no summary)");
	return found;
}
