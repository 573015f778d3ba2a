// SPDX-License-Identifier: MIT
/*
 * Probes of the kernel interfaces memlens uses, each by using it once on
 * memlens's own memory. See memlens/features.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kernel.h"
#include "memlens/features.h"

#define PIDNS_INIT_INO 0xEFFFFFFCU /* PROC_PID_INIT_INO */
#define PM_SOFT_DIRTY (1ULL << 55)
#define CAP_SYS_PTRACE_BIT 19

struct ml_feature *ml_feature_add(struct ml_feature_list *l, const char *group, const char *name,
				  enum ml_feature_state state, const char *used_by, const char *fix,
				  const char *fmt, ...)
{
	size_t cap = sizeof(l->items) / sizeof(l->items[0]);
	struct ml_feature *f = &l->items[l->n < cap ? l->n++ : cap - 1];
	va_list ap;

	memset(f, 0, sizeof(*f));
	f->group = group;
	f->name = name;
	f->state = state;
	f->used_by = used_by;
	f->fix = state == ML_FEATURE_MISSING ? fix : NULL;
	va_start(ap, fmt);
	vsnprintf(f->detail, sizeof(f->detail), fmt, ap);
	va_end(ap);
	return f;
}

/* First line of a small file, newline stripped; -1 when unreadable. */
static int read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	char *ok;

	if (!f)
		return -1;
	ok = fgets(buf, (int)len, f);
	fclose(f);
	if (!ok)
		return -1;
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

static void probe_pagemap_scan(struct ml_feature_list *l)
{
	if (mli_pagescan_supported())
		ml_feature_add(l, "memory", "pagemap_scan", ML_FEATURE_OK,
			       "writes, snapshot, checkpoint, agent, migrate's hot-range exclusion",
			       NULL, "the PAGEMAP_SCAN ioctl answers on /proc/self/pagemap")
			->core = true;
	else
		ml_feature_add(l, "memory", "pagemap_scan", ML_FEATURE_MISSING,
			       "writes, checkpoint, agent, migrate's hot-range exclusion (snapshot "
			       "reads /proc/PID/pagemap instead: same counts, slower)",
			       "use Linux 6.7 or newer (PAGEMAP_SCAN came in 6.7)",
			       "the PAGEMAP_SCAN ioctl is refused on /proc/self/pagemap")
			->core = true;
}

static void probe_uffd(struct ml_feature_list *l)
{
	uint64_t f = mli_uffd_kernel_features();
	struct ml_feature *it;

	if (!f)
		it = ml_feature_add(l, "memory", "uffd_wp_async", ML_FEATURE_MISSING,
				    "writes, checkpoint, agent",
				    "use a kernel with CONFIG_USERFAULTFD; without root, allow it "
				    "(sysctl vm.unprivileged_userfaultfd=1) or run as root",
				    "userfaultfd() is refused (%s)", strerror(errno));
	else if ((f & UFFD_WP_FEATURES) != UFFD_WP_FEATURES)
		it = ml_feature_add(l, "memory", "uffd_wp_async", ML_FEATURE_MISSING,
				    "writes, checkpoint, agent",
				    "use Linux 6.7 or newer (async write-protect came in 6.7)",
				    "userfaultfd lacks %s (features 0x%llx)",
				    !(f & UFFD_FEATURE_WP_ASYNC) ? "WP_ASYNC" : "WP_UNPOPULATED",
				    (unsigned long long)f);
	else
		it = ml_feature_add(
			l, "memory", "uffd_wp_async", ML_FEATURE_OK, "writes, checkpoint, agent",
			NULL, "userfaultfd with WP_ASYNC and WP_UNPOPULATED (features 0x%llx)",
			(unsigned long long)f);
	it->core = true;
}

/* A page written just now reads soft-dirty in pagemap when the kernel tracks it. */
static void probe_soft_dirty(struct ml_feature_list *l)
{
	long pg = sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t ent = 0;
	int fd;

	if (p == MAP_FAILED)
		return;
	p[0] = 1;
	fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && pread(fd, &ent, sizeof(ent), (off_t)((uintptr_t)p / pg * 8)) != 8)
		ent = 0;
	if (fd >= 0)
		close(fd);
	munmap(p, pg);
	if (ent & PM_SOFT_DIRTY)
		ml_feature_add(l, "memory", "soft_dirty", ML_FEATURE_OK, "checkpoint --pre-dump",
			       NULL,
			       "a page written just now reads soft-dirty in /proc/self/pagemap");
	else
		ml_feature_add(
			l, "memory", "soft_dirty", ML_FEATURE_MISSING,
			"checkpoint --pre-dump (CRIU pre-dump and --track-mem)",
			"use a kernel built with CONFIG_MEM_SOFT_DIRTY; until then take full "
			"dumps and model pre-copy with `memlens migrate-model`",
			"a page written just now does not read soft-dirty: "
			"CONFIG_MEM_SOFT_DIRTY is not set");
}

static void probe_kpageflags(struct ml_feature_list *l)
{
	int fd = open("/proc/kpageflags", O_RDONLY | O_CLOEXEC);
	int fd2 = open("/proc/kpagecount", O_RDONLY | O_CLOEXEC);
	int e = errno;

	if (fd >= 0 && fd2 >= 0)
		ml_feature_add(l, "memory", "kpageflags", ML_FEATURE_OK, "snapshot --pages", NULL,
			       "/proc/kpageflags and /proc/kpagecount are readable");
	else
		ml_feature_add(
			l, "memory", "kpageflags", ML_FEATURE_MISSING, "snapshot --pages",
			e == EACCES || e == EPERM ? "run as root (CAP_SYS_ADMIN)"
						  : "use a kernel with CONFIG_PROC_PAGE_MONITOR",
			"/proc/kpageflags or /proc/kpagecount cannot be opened: %s", strerror(e));
	if (fd >= 0)
		close(fd);
	if (fd2 >= 0)
		close(fd2);
}

static bool have_cap(int bit)
{
	char line[256];
	unsigned long long eff = 0;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &eff) == 1)
			break;
	fclose(f);
	return eff & (1ULL << bit);
}

static void probe_ptrace(struct ml_feature_list *l)
{
	char buf[32];
	int scope = 0;
	bool cap = have_cap(CAP_SYS_PTRACE_BIT);
	struct ml_feature *it;

	if (!read_line("/proc/sys/kernel/yama/ptrace_scope", buf, sizeof(buf)))
		scope = atoi(buf);
	if (scope >= 3)
		it = ml_feature_add(l, "process", "ptrace", ML_FEATURE_MISSING,
				    "writes, checkpoint, agent",
				    "kernel.yama.ptrace_scope=3 forbids ptrace until reboot",
				    "Yama ptrace_scope is 3: no process may be traced");
	else if (scope >= 1 && !cap)
		it = ml_feature_add(
			l, "process", "ptrace", ML_FEATURE_MISSING, "writes, checkpoint, agent",
			"run as root or with CAP_SYS_PTRACE (or sysctl "
			"kernel.yama.ptrace_scope=0 for your own processes)",
			"Yama ptrace_scope is %d and memlens lacks CAP_SYS_PTRACE", scope);
	else
		it = ml_feature_add(l, "process", "ptrace", ML_FEATURE_OK,
				    "writes, checkpoint, agent", NULL,
				    "ptrace allowed (Yama ptrace_scope %d%s)", scope,
				    cap ? ", CAP_SYS_PTRACE" : ", own processes only");
	it->core = true;
}

static void probe_pidfd_getfd(struct ml_feature_list *l)
{
	int pfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
	int fd = pfd >= 0 ? (int)syscall(SYS_pidfd_getfd, pfd, pfd, 0) : -1;
	int e = errno;

	if (fd >= 0)
		ml_feature_add(l, "process", "pidfd_getfd", ML_FEATURE_OK,
			       "writes, checkpoint, agent", NULL, "pidfd_open and pidfd_getfd work")
			->core = true;
	else
		ml_feature_add(l, "process", "pidfd_getfd", ML_FEATURE_MISSING,
			       "writes, checkpoint, agent", "use Linux 5.6 or newer",
			       "%s fails: %s", pfd < 0 ? "pidfd_open" : "pidfd_getfd", strerror(e))
			->core = true;
	if (fd >= 0)
		close(fd);
	if (pfd >= 0)
		close(pfd);
}

static void probe_pidns(struct ml_feature_list *l)
{
	struct stat st;

	if (stat("/proc/self/ns/pid", &st) < 0)
		return;
	if (st.st_ino == PIDNS_INIT_INO)
		ml_feature_add(l, "process", "pid_namespace", ML_FEATURE_INFO, "every -p PID", NULL,
			       "the initial PID namespace: pids are the kernel's");
	else
		ml_feature_add(l, "process", "pid_namespace", ML_FEATURE_INFO, "every -p PID", NULL,
			       "PID namespace %llu (a container or pod): pids are as seen here, "
			       "processes outside it are out of reach",
			       (unsigned long long)st.st_ino);
}

static void probe_thp(struct ml_feature_list *l)
{
	char buf[128], *a, *b;

	if (read_line("/sys/kernel/mm/transparent_hugepage/enabled", buf, sizeof(buf))) {
		ml_feature_add(l, "memory", "thp", ML_FEATURE_INFO, "snapshot (huge_pages)", NULL,
			       "no transparent huge pages in this kernel");
		return;
	}
	a = strchr(buf, '[');
	b = a ? strchr(a, ']') : NULL;
	if (a && b)
		*b = '\0';
	ml_feature_add(l, "memory", "thp", ML_FEATURE_INFO, "snapshot (huge_pages)", NULL,
		       "transparent huge pages: %s", a && b ? a + 1 : buf);
}

static void probe_swap(struct ml_feature_list *l)
{
	FILE *f = fopen("/proc/swaps", "re");
	char line[512];
	int n = -1;

	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		n++;
	fclose(f);
	if (n > 0)
		ml_feature_add(l, "memory", "swap", ML_FEATURE_INFO, "snapshot (swapped_pages)",
			       NULL, "%d swap area(s)", n);
	else
		ml_feature_add(l, "memory", "swap", ML_FEATURE_INFO, "snapshot (swapped_pages)",
			       NULL, "no swap: swapped page counts are always 0");
}

void ml_features_probe_memory(struct ml_feature_list *l)
{
	probe_pagemap_scan(l);
	probe_uffd(l);
	probe_soft_dirty(l);
	probe_kpageflags(l);
	probe_thp(l);
	probe_swap(l);
	probe_ptrace(l);
	probe_pidfd_getfd(l);
	probe_pidns(l);
}
