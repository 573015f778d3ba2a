// SPDX-License-Identifier: MIT
/*
 * uprobe_floor: what uprobes alone cost a program, with nothing done in
 * them: the floor under any uprobe-based allocation tracer.
 *   uprobe_floor REPS LIB ENTRIES RETURNS [-M 'LEAKS ARGS']... -- CMD [ARG...]
 * ENTRIES and RETURNS are comma-separated file offsets in LIB (hex, 0x...;
 * RETURNS may be "-"), as `memlens leaks -v` prints them. CMD runs REPS
 * times in each of three modes, interleaved: untracked; with an empty BPF
 * program (it returns at once) on every offset of ENTRIES, one uprobe_multi
 * link (the trap of every call, as `leaks --sample` takes); and the same
 * with return probes on RETURNS too (a second link: as `leaks` exact
 * takes); and, for each -M, under `$MEMLENS leaks -p PID ARGS` (memlens's
 * own per-call work on top of the traps); for each -P, the same with CMD
 * started with memlens's preloaded sampler ($MEMLENS_SAMPLER in its
 * LD_PRELOAD, MEMLENS_SAMPLE_BYTES the --sample of ARGS), which memlens
 * -p finds there and probes the markers of (`leaks --sample -- CMD`'s
 * way, without memlens's start and end); for each -S BYTES, the sampler
 * preloaded at that rate and no memlens at all (its decisions alone, the
 * markers empty). Each time is the target's own,
 * from its release to its exit: CMD is started under ptrace and held from
 * its exec until it has mapped LIB, the probes attached (or memlens
 * started, until it says it is tracing) for its process only, and the
 * clock started when it is let go, so no tracer's own start and end are
 * in it. The target's CPU time (user
 * and system, from wait4: a trap's handling is the target's system time)
 * is taken too: on a loaded machine it varies far less than the wall
 * time. Prints the median of each mode and its ratio to the untracked
 * one, then one line per mode for scripts:
 * "floor MODE WALL_S RATIO CPU_S CPU_RATIO".
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/bpf.h>

#define MAX_OFFS 64
#define MAX_REPS 101
#define ATTACH_UPROBE_MULTI 48 /* BPF_TRACE_UPROBE_MULTI */
#define UPROBE_MULTI_RETURN 1U /* BPF_F_UPROBE_MULTI_RETURN */

/* link_create's uprobe_multi member (Linux 6.6+), spelt out for older headers */
struct umulti_create {
	__u32 prog_fd, target_fd, attach_type, flags;
	__aligned_u64 path, offsets, ref_ctr_offsets, cookies;
	__u32 cnt, multi_flags, pid;
};

static long sys_bpf(int cmd, void *attr, size_t size)
{
	return syscall(__NR_bpf, cmd, attr, size);
}

/* "r0 = 0; exit": runs, does nothing */
static int empty_prog(void)
{
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.prog_type = BPF_PROG_TYPE_KPROBE;
	a.expected_attach_type = ATTACH_UPROBE_MULTI;
	a.insns = (__u64)(uintptr_t)insns;
	a.insn_cnt = 2;
	a.license = (__u64)(uintptr_t) "GPL";
	return (int)sys_bpf(BPF_PROG_LOAD, &a, sizeof(a));
}

static int umulti(int prog, const char *path, const uint64_t *offs, unsigned int n, int ret,
		  pid_t pid)
{
	union {
		union bpf_attr attr;
		struct umulti_create lc;
		char pad[sizeof(union bpf_attr) + 64];
	} a;

	memset(&a, 0, sizeof(a));
	a.lc.prog_fd = (__u32)prog;
	a.lc.attach_type = ATTACH_UPROBE_MULTI;
	a.lc.path = (__u64)(uintptr_t)path;
	a.lc.offsets = (__u64)(uintptr_t)offs;
	a.lc.cnt = n;
	a.lc.multi_flags = ret ? UPROBE_MULTI_RETURN : 0;
	a.lc.pid = (__u32)pid;
	return (int)sys_bpf(BPF_LINK_CREATE, &a, sizeof(a));
}

static unsigned int parse_offs(const char *s, uint64_t *v)
{
	unsigned int n = 0;
	char *end;

	if (!strcmp(s, "-"))
		return 0;
	while (*s && n < MAX_OFFS) {
		v[n++] = strtoull(s, &end, 0);
		if (end == s || (*end && *end != ',')) {
			fprintf(stderr, "uprobe_floor: bad offset list at '%s'\n", s);
			exit(2);
		}
		s = *end ? end + 1 : end;
	}
	return n;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#define MAX_MEMLENS 4

struct probes {
	const char *lib;
	uint64_t ent[MAX_OFFS], ret[MAX_OFFS];
	unsigned int nent, nret;
	int prog;
	/* -M ARGS, -P ARGS: memlens leaks runs; -S BYTES: the sampler alone (margs NULL) */
	const char *margs[MAX_MEMLENS];
	char rate[MAX_MEMLENS][24]; /* -P, -S: the sampler's rate; "" for -M */
	int nm;
};

/* BYTES, or the --sample BYTES of @args (K, M, G: binary units), in bytes; 0 if none */
static unsigned long long rate_of(const char *args)
{
	const char *s = strstr(args, "--sample ");
	unsigned long long v;
	char *end;

	s = s ? s + 9 : args;
	v = strtoull(s, &end, 10);
	if (*end == 'K' || *end == 'k')
		v <<= 10;
	else if (*end == 'M' || *end == 'm')
		v <<= 20;
	else if (*end == 'G' || *end == 'g')
		v <<= 30;
	return v;
}

/* the child, before its exec: the sampler first in LD_PRELOAD, at @rate */
static void preload_env(const char *rate)
{
	const char *so = getenv("MEMLENS_SAMPLER"), *old = getenv("LD_PRELOAD");
	char buf[8192];

	if (!so)
		_exit(126);
	snprintf(buf, sizeof(buf), "%s%s%s", so, old ? " " : "", old ? old : "");
	setenv("LD_PRELOAD", buf, 1);
	setenv("MEMLENS_SAMPLE_BYTES", rate, 1);
}

/* does process @pid map @lib's code (as memlens waits for it)? */
static int maps_lib(pid_t pid, const char *lib)
{
	char path[64], line[4096];
	int found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		const char *perms = strchr(line, ' ');

		found = strstr(line, lib) && perms && perms[3] == 'x';
	}
	fclose(f);
	return found;
}

/*
 * `$MEMLENS leaks -p PID ARGS` (ARGS split at spaces), started on the
 * stopped target; its pid, once it says it is tracing, else -1. Its
 * stderr stays open in *@errfd (it writes there at the end).
 */
static pid_t start_memlens(pid_t target, const char *args, int *errfd)
{
	char *argv[32], pidarg[16], buf[4096], *copy = strdup(args), *save = NULL;
	const char *m = getenv("MEMLENS");
	int n = 0, fds[2];
	size_t got = 0;
	pid_t pid;

	if (!m || !copy || pipe(fds))
		return -1;
	snprintf(pidarg, sizeof(pidarg), "%d", (int)target);
	argv[n++] = (char *)m;
	argv[n++] = "leaks";
	argv[n++] = "-p";
	argv[n++] = pidarg;
	for (char *w = strtok_r(copy, " ", &save); w && n < 30; w = strtok_r(NULL, " ", &save))
		argv[n++] = w;
	argv[n] = NULL;
	pid = fork();
	if (!pid) {
		int null = open("/dev/null", O_WRONLY);

		if (null >= 0)
			dup2(null, STDOUT_FILENO);
		dup2(fds[1], STDERR_FILENO);
		execv(m, argv);
		_exit(127);
	}
	free(copy);
	close(fds[1]);
	*errfd = fds[0];
	while (pid > 0 && got < sizeof(buf) - 1) {
		ssize_t r = read(fds[0], buf + got, sizeof(buf) - 1 - got);

		if (r <= 0)
			break;
		got += (size_t)r;
		buf[got] = 0;
		if (strstr(buf, "tracing"))
			return pid;
	}
	buf[got] = 0;
	fprintf(stderr, "uprobe_floor: memlens did not start tracing: %s\n", buf);
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	close(fds[0]);
	return -1;
}

/*
 * One run of @argv in @mode (0 untracked, 1 entries, 2 entries and
 * returns, 3 and on: memlens with @p->margs[mode - 3]): its wall time in
 * seconds, < 0 if it failed; its CPU time in *@cpu. The target is held
 * (ptrace) from its exec until it has mapped @p->lib, in every mode.
 */
static double run(char **argv, int mode, const struct probes *p, double *cpu)
{
	struct rusage ru;
	int st, links[2] = { -1, -1 }, errfd = -1;
	pid_t pid = fork(), mpid = -1;
	double t0, t;

	if (pid < 0)
		return -1;
	if (!pid) {
		int null = open("/dev/null", O_WRONLY);

		if (null >= 0)
			dup2(null, STDOUT_FILENO);
		if (mode >= 3 && p->rate[mode - 3][0])
			preload_env(p->rate[mode - 3]);
		ptrace(PTRACE_TRACEME, 0, NULL, NULL);
		execvp(argv[0], argv);
		_exit(127);
	}
	if (waitpid(pid, &st, 0) != pid || !WIFSTOPPED(st)) {
		fprintf(stderr, "uprobe_floor: %s did not stop at its exec\n", argv[0]);
		return -1;
	}
	/* system call by system call until the library is mapped */
	while (!maps_lib(pid, p->lib)) {
		if (ptrace(PTRACE_SYSCALL, pid, NULL, NULL) || waitpid(pid, &st, 0) != pid ||
		    !WIFSTOPPED(st)) {
			fprintf(stderr, "uprobe_floor: %s ended before it mapped %s\n", argv[0],
				p->lib);
			return -1;
		}
	}
	if (mode == 1 || mode == 2)
		links[0] = umulti(p->prog, p->lib, p->ent, p->nent, 0, pid);
	if (mode == 2 && p->nret)
		links[1] = umulti(p->prog, p->lib, p->ret, p->nret, 1, pid);
	if (mode >= 3 && p->margs[mode - 3])
		mpid = start_memlens(pid, p->margs[mode - 3], &errfd);
	if (((mode == 1 || mode == 2) && links[0] < 0) || (mode == 2 && p->nret && links[1] < 0) ||
	    (mode >= 3 && p->margs[mode - 3] && mpid < 0)) {
		if (mode < 3)
			fprintf(stderr,
				"uprobe_floor: uprobe_multi link on %s: %s (Linux 6.6+, root)\n",
				p->lib, strerror(errno));
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		return -1;
	}
	t0 = now();
	ptrace(PTRACE_DETACH, pid, NULL, NULL);
	if (wait4(pid, &st, 0, &ru) != pid)
		return -1;
	t = now() - t0;
	*cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	for (int i = 0; i < 2; i++)
		if (links[i] >= 0)
			close(links[i]);
	if (mpid > 0) { /* it ends when the target does */
		char buf[4096];

		while (read(errfd, buf, sizeof(buf)) > 0)
			;
		close(errfd);
		waitpid(mpid, NULL, 0);
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		fprintf(stderr, "uprobe_floor: %s failed (status 0x%x)\n", argv[0], st);
		return -1;
	}
	return t;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* the name of @mode for scripts: no spaces ("memlens:--sample_512K") */
static void mode_name(const struct probes *p, int mode, char *buf, size_t len)
{
	static const char *const fixed[3] = { "untracked", "entries", "entries+returns" };

	if (mode < 3) {
		snprintf(buf, len, "%s", fixed[mode]);
		return;
	}
	if (!p->margs[mode - 3])
		snprintf(buf, len, "sampler-alone:%s", p->rate[mode - 3]);
	else
		snprintf(buf, len, "memlens%s:%s", p->rate[mode - 3][0] ? "-preload" : "",
			 p->margs[mode - 3]);
	for (char *c = buf; *c; c++)
		if (*c == ' ')
			*c = '_';
}

int main(int argc, char **argv)
{
	static double t[3 + MAX_MEMLENS][MAX_REPS], c[3 + MAX_MEMLENS][MAX_REPS];
	double med[3 + MAX_MEMLENS], cmed[3 + MAX_MEMLENS];
	struct probes p = { 0 };
	int reps, a = 5, nmodes;
	char name[128];

	while (a + 1 < argc && p.nm < MAX_MEMLENS &&
	       (!strcmp(argv[a], "-M") || !strcmp(argv[a], "-P") || !strcmp(argv[a], "-S"))) {
		p.margs[p.nm] = argv[a][1] == 'S' ? NULL : argv[a + 1];
		if (argv[a][1] != 'M')
			snprintf(p.rate[p.nm], sizeof(p.rate[p.nm]), "%llu", rate_of(argv[a + 1]));
		if (argv[a][1] != 'M' && (!rate_of(argv[a + 1]) || !getenv("MEMLENS_SAMPLER"))) {
			fprintf(stderr,
				"uprobe_floor: %s needs a rate (--sample BYTES) and "
				"MEMLENS_SAMPLER, the sampler, in the environment\n",
				argv[a]);
			return 2;
		}
		p.nm++;
		a += 2;
	}
	if (argc < a + 2 || strcmp(argv[a], "--")) {
		fprintf(stderr,
			"usage: uprobe_floor REPS LIB ENTRIES RETURNS [-M 'LEAKS ARGS']... "
			"[-P 'LEAKS ARGS']... [-S BYTES]... -- CMD [ARG...]\n(-M: also under "
			"$MEMLENS leaks -p PID ARGS; -P: the same with the sampler "
			"preloaded; -S: the sampler preloaded alone)\n");
		return 2;
	}
	reps = atoi(argv[1]);
	if (reps < 1 || reps > MAX_REPS) {
		fprintf(stderr, "uprobe_floor: REPS from 1 to %d\n", MAX_REPS);
		return 2;
	}
	p.lib = argv[2];
	p.nent = parse_offs(argv[3], p.ent);
	p.nret = parse_offs(argv[4], p.ret);
	if (!p.nent) {
		fprintf(stderr, "uprobe_floor: no entry offsets\n");
		return 2;
	}
	if (p.nm && !getenv("MEMLENS")) {
		fprintf(stderr, "uprobe_floor: -M and -P need MEMLENS, the memlens binary, in the "
				"environment\n");
		return 2;
	}
	p.prog = empty_prog();
	if (p.prog < 0) {
		fprintf(stderr, "uprobe_floor: cannot load a BPF program: %s (run as root)\n",
			strerror(errno));
		return 1;
	}
	nmodes = 3 + p.nm;
	for (int r = 0; r < reps; r++)
		for (int m = 0; m < nmodes; m++) {
			t[m][r] = run(argv + a + 1, m, &p, &c[m][r]);
			if (t[m][r] < 0)
				return 1;
		}
	for (int m = 0; m < nmodes; m++) {
		qsort(t[m], (size_t)reps, sizeof(double), cmp_d);
		qsort(c[m], (size_t)reps, sizeof(double), cmp_d);
		med[m] = t[m][reps / 2];
		cmed[m] = c[m][reps / 2];
	}
	printf("uprobe floor: %s, %u entry and %u return probes in %s, an empty program; "
	       "the target's own time, median of %d\n",
	       argv[a + 1], p.nent, p.nret, p.lib, reps);
	for (int m = 0; m < nmodes; m++) {
		mode_name(&p, m, name, sizeof(name));
		printf("  %-36s wall %9.4f s %6.2fx untracked, cpu %9.4f s %6.2fx\n", name, med[m],
		       med[m] / med[0], cmed[m], cmed[0] > 0 ? cmed[m] / cmed[0] : 0);
	}
	for (int m = 0; m < nmodes; m++) {
		mode_name(&p, m, name, sizeof(name));
		printf("floor %s %.6f %.4f %.6f %.4f\n", name, med[m], med[m] / med[0], cmed[m],
		       cmed[0] > 0 ? cmed[m] / cmed[0] : 0);
	}
	return 0;
}
