// SPDX-License-Identifier: MIT
/*
 * uprobe_floor: what uprobes alone cost a program, with nothing done in
 * them: the floor under any uprobe-based allocation tracer.
 *   uprobe_floor REPS LIB ENTRIES RETURNS -- CMD [ARG...]
 * ENTRIES and RETURNS are comma-separated file offsets in LIB (hex, 0x...;
 * RETURNS may be "-"), as `memlens leaks -v` prints them. CMD runs REPS
 * times in each of three modes, interleaved: untracked; with an empty BPF
 * program (it returns at once) on every offset of ENTRIES, one uprobe_multi
 * link (the trap of every call, as `leaks --sample` takes); and the same
 * with return probes on RETURNS too (a second link: as `leaks` exact
 * takes). Each time is the target's own, from its release to its exit:
 * CMD is started under ptrace, stopped at its exec, the probes attached
 * for its process only, and the clock started when it is let go, so the
 * tracer's own start and end are not in it. Prints the median of each
 * mode and its ratio to the untracked one, then one line per mode for
 * scripts: "floor MODE MEDIAN_S RATIO".
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
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

struct probes {
	const char *lib;
	uint64_t ent[MAX_OFFS], ret[MAX_OFFS];
	unsigned int nent, nret;
	int prog;
};

/* one run of @argv in @mode (0 untracked, 1 entries, 2 entries and returns): seconds, < 0 failed */
static double run(char **argv, int mode, const struct probes *p)
{
	int st, links[2] = { -1, -1 };
	double t0, t;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (!pid) {
		int null = open("/dev/null", O_WRONLY);

		if (null >= 0)
			dup2(null, STDOUT_FILENO);
		ptrace(PTRACE_TRACEME, 0, NULL, NULL);
		execvp(argv[0], argv);
		_exit(127);
	}
	/* stopped at its exec: the new program's memory map, libc not mapped yet */
	if (waitpid(pid, &st, 0) != pid || !WIFSTOPPED(st)) {
		fprintf(stderr, "uprobe_floor: %s did not stop at its exec\n", argv[0]);
		return -1;
	}
	if (mode >= 1)
		links[0] = umulti(p->prog, p->lib, p->ent, p->nent, 0, pid);
	if (mode >= 2 && p->nret)
		links[1] = umulti(p->prog, p->lib, p->ret, p->nret, 1, pid);
	if ((mode >= 1 && links[0] < 0) || (mode >= 2 && p->nret && links[1] < 0)) {
		fprintf(stderr, "uprobe_floor: uprobe_multi link on %s: %s (Linux 6.6+, root)\n",
			p->lib, strerror(errno));
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		return -1;
	}
	t0 = now();
	ptrace(PTRACE_DETACH, pid, NULL, NULL);
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	t = now() - t0;
	for (int i = 0; i < 2; i++)
		if (links[i] >= 0)
			close(links[i]);
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

int main(int argc, char **argv)
{
	static const char *const mode_name[3] = { "untracked", "entries", "entries+returns" };
	double t[3][MAX_REPS], med[3];
	struct probes p = { 0 };
	int reps;

	if (argc < 7 || strcmp(argv[5], "--")) {
		fprintf(stderr, "usage: uprobe_floor REPS LIB ENTRIES RETURNS -- CMD [ARG...]\n");
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
	p.prog = empty_prog();
	if (p.prog < 0) {
		fprintf(stderr, "uprobe_floor: cannot load a BPF program: %s (run as root)\n",
			strerror(errno));
		return 1;
	}
	for (int r = 0; r < reps; r++)
		for (int m = 0; m < 3; m++) {
			t[m][r] = run(argv + 6, m, &p);
			if (t[m][r] < 0)
				return 1;
		}
	for (int m = 0; m < 3; m++) {
		qsort(t[m], (size_t)reps, sizeof(double), cmp_d);
		med[m] = t[m][reps / 2];
	}
	printf("uprobe floor: %s, %u entry and %u return probes in %s, an empty program; "
	       "the target's own time, median of %d\n",
	       argv[6], p.nent, p.nret, p.lib, reps);
	for (int m = 0; m < 3; m++)
		printf("  %-16s %9.4f s  %6.2fx untracked\n", mode_name[m], med[m],
		       med[m] / med[0]);
	for (int m = 0; m < 3; m++)
		printf("floor %s %.6f %.4f\n", mode_name[m], med[m], med[m] / med[0]);
	return 0;
}
