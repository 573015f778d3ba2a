// SPDX-License-Identifier: MIT
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include "memlens/maps.h"
#include "allocfind.h"
#include "elfsym.h"

/* a dynamic loader maps libc within its first few dozen system calls */
#define LIBC_MAX_SYSCALL_STOPS 4000

static bool is_libc(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strncmp(base, "libc.so", 7) || !strncmp(base, "libc-", 5) ||
	       !strncmp(base, "libc.musl", 9) || !strncmp(base, "ld-musl", 7);
}

static bool is_loader(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strncmp(base, "ld-linux", 8) || !strncmp(base, "ld.so", 5);
}

/*
 * Among the executable file mappings of @set (libc at @libc), the object
 * the dynamic linker binds malloc to: the program itself when it exports
 * malloc and free, else the first other library that does, else libc.
 */
static const char *const alloc_fns[] = { "malloc", "free" };
static const char *const prefixed_fns[][2] = { { "je_malloc", "je_free" },
					       { "tc_malloc", "tc_free" } };

/* Has @path (a /proc/PID/root path) a prefixed allocator? @exe: its .symtab too. */
static bool has_prefixed(const char *path, bool exe)
{
	struct ml_err err = { 0 };
	struct elf_syms syms;
	bool found = false;
	uint64_t va;

	for (int i = 0; i < 2 && !found; i++)
		found = mlt_elf_exports(path, prefixed_fns[i], 2);
	if (found || !exe || mlt_elf_syms_load(path, &syms, &err))
		return found;
	for (int i = 0; i < 2 && !found; i++)
		found = !mlt_elf_syms_find(&syms, prefixed_fns[i][0], &va) &&
			!mlt_elf_syms_find(&syms, prefixed_fns[i][1], &va);
	mlt_elf_syms_free(&syms);
	return found;
}

static void choose_allocator(pid_t pid, const struct ml_vma_set *set, const char *libc,
			     struct alloc_lib *a)
{
	char exe[PATH_MAX], cand[PATH_MAX], link[64];
	const char *pick = NULL, *last = "", *extra = NULL;
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	n = readlink(link, exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';
	for (size_t i = 0; i < set->n; i++) {
		const char *p = ml_vma_path(set, &set->v[i]);

		if (p[0] != '/' || set->v[i].perms[2] != 'x' || !strcmp(p, last) || is_libc(p) ||
		    is_loader(p))
			continue;
		last = p;
		snprintf(cand, sizeof(cand), "/proc/%d/root%s", (int)pid, p);
		if (!mlt_elf_exports(cand, alloc_fns, 2)) {
			if (!extra && has_prefixed(cand, !strcmp(p, exe)))
				extra = p;
			continue;
		}
		if (!strcmp(p, exe)) {
			pick = p;
			break;
		}
		if (!pick)
			pick = p;
	}
	a->is_libc = !pick;
	snprintf(a->path, sizeof(a->path), "/proc/%d/root%s", (int)pid, pick ? pick : libc);
	a->extra[0] = 0;
	if (extra && (!pick || strcmp(extra, pick)) &&
	    snprintf(a->extra, sizeof(a->extra), "/proc/%d/root%.4000s", (int)pid, extra) >=
		    (int)sizeof(a->extra))
		a->extra[0] = 0;
}

/*
 * A statically linked program (no dynamic loader mapped, no libc): its
 * allocator is in the executable itself, found by name in its symbol
 * table (.symtab: a stripped one has none). 0; -ENOENT: not static (the
 * loader is mapped), or not yet known; -ENOEXEC: static, without malloc.
 */
static int static_allocator(pid_t pid, const struct ml_vma_set *set, struct alloc_lib *a)
{
	static const char *const mallocs[] = { "malloc", "je_malloc", "tc_malloc" };
	char exe[4001], link[64];
	struct ml_err err = { 0 };
	struct elf_syms syms;
	uint64_t va;
	bool found = false;
	ssize_t n;

	for (size_t i = 0; i < set->n; i++)
		if (is_loader(ml_vma_path(set, &set->v[i])))
			return -ENOENT; /* dynamic: the loader has not mapped libc yet */
	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	n = readlink(link, exe, sizeof(exe) - 1);
	if (n <= 0)
		return -ENOENT;
	exe[n] = '\0';
	if (snprintf(a->path, sizeof(a->path), "/proc/%d/root%.4000s", (int)pid, exe) >=
	    (int)sizeof(a->path))
		return -ENOENT;
	if (mlt_elf_syms_load(a->path, &syms, &err))
		return -ENOENT;
	for (size_t i = 0; i < sizeof(mallocs) / sizeof(mallocs[0]) && !found; i++)
		found = !mlt_elf_syms_find(&syms, mallocs[i], &va);
	/* glibc's own malloc: its thread-exit hook is there too */
	a->is_libc = !mlt_elf_syms_find(&syms, "__libc_malloc", &va);
	a->is_static = true;
	mlt_elf_syms_free(&syms);
	return found ? 0 : -ENOEXEC;
}

/* 0 found, -ENOENT libc not (yet) mapped, other: the process is gone */
static int scan_maps(pid_t pid, struct alloc_lib *a, struct ml_err *err)
{
	struct ml_vma_set set;
	int e;

	ml_vma_set_init(&set);
	e = ml_maps_read(pid, &set, err);
	if (e)
		goto out;
	e = -ENOENT;
	a->is_static = false;
	a->extra[0] = 0;
	for (size_t i = 0; i < set.n; i++) {
		const char *p = ml_vma_path(&set, &set.v[i]);

		if (p[0] == '/' && is_libc(p) && set.v[i].perms[2] == 'x') {
			choose_allocator(pid, &set, p, a);
			e = 0;
			break;
		}
	}
	if (e == -ENOENT)
		e = static_allocator(pid, &set, a);
	if (e == -ENOEXEC)
		e = ml_err_set(err, ENOENT,
			       "process %d is statically linked and its symbol table names no "
			       "malloc (stripped): memlens leaks cannot find its allocator",
			       (int)pid);
out:
	ml_vma_set_free(&set);
	return e;
}

int mlt_alloc_find(pid_t pid, struct alloc_lib *a, struct ml_err *err)
{
	int e = scan_maps(pid, a, err);

	if (e == -ENOENT)
		return ml_err_set(err, ENOENT,
				  "no C library (libc.so) is mapped in process %d, and it has no "
				  "malloc in its symbol table: a statically linked program is "
				  "traced only when it is not stripped",
				  (int)pid);
	return e;
}

/* Mapped executable? A read-only first mapping of libc comes before its text. */
static int wait_stop(pid_t pid, int *status, struct ml_err *err)
{
	while (waitpid(pid, status, __WALL) < 0) {
		if (errno != EINTR)
			return ml_err_set(err, errno, "waitpid(%d): %s", (int)pid, strerror(errno));
	}
	if (WIFEXITED(*status) || WIFSIGNALED(*status))
		return ml_err_set(err, ESRCH,
				  "the command exited without loading a C library (libc.so): a "
				  "statically linked program is traced only when its symbol table "
				  "names malloc (not stripped)");
	return 0;
}

int mlt_alloc_wait_loaded(pid_t pid, struct alloc_lib *a, struct ml_err *err)
{
	int status, sig = 0, e;

	if (ptrace(PTRACE_SETOPTIONS, pid, NULL,
		   (void *)(long)(PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACEEXEC)) < 0)
		return ml_err_set(err, errno, "ptrace(PTRACE_SETOPTIONS): %s", strerror(errno));
	for (int i = 0; i < LIBC_MAX_SYSCALL_STOPS; i++) {
		e = scan_maps(pid, a, err);
		if (e != -ENOENT)
			return e;
		if (ptrace(PTRACE_SYSCALL, pid, NULL, (void *)(long)sig) < 0)
			return ml_err_set(err, errno, "ptrace(PTRACE_SYSCALL): %s",
					  strerror(errno));
		e = wait_stop(pid, &status, err);
		if (e)
			return e;
		sig = 0;
		if (WIFSTOPPED(status) && WSTOPSIG(status) != (SIGTRAP | 0x80) && !(status >> 16))
			sig = WSTOPSIG(status); /* a signal for it: pass it on */
	}
	return ml_err_set(err, ENOENT,
			  "the command mapped no C library (libc.so) in its first %d system "
			  "calls: a statically linked program is traced only when its symbol "
			  "table names malloc (not stripped)",
			  LIBC_MAX_SYSCALL_STOPS / 2);
}
