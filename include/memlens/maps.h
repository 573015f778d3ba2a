/* SPDX-License-Identifier: MIT */
/*
 * /proc/PID/maps: parsing, classification of each VMA into a region kind,
 * the writable-private filter of the write profiler, and VMA-set diffing.
 */
#ifndef MEMLENS_MAPS_H
#define MEMLENS_MAPS_H

/* the interface libmemlens.so exports (built with -fvisibility=hidden) */
#pragma GCC visibility push(default)

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "memlens/err.h"

enum ml_vma_kind {
	ML_VMA_ANON = 0,
	ML_VMA_TEXT, /* main executable, executable or read-only image */
	ML_VMA_DATA, /* main executable, writable (.data) */
	ML_VMA_BSS, /* the executable's .bss: its ELF tail (struct ml_elf_tail) */
	ML_VMA_HEAP,
	ML_VMA_STACK,
	ML_VMA_LIB_TEXT, /* shared object, executable or read-only */
	ML_VMA_LIB_DATA, /* shared object, writable (incl. its .bss: its ELF tail) */
	ML_VMA_SHM, /* shared anonymous, /dev/shm, SysV, memfd */
	ML_VMA_FILE, /* other file mappings */
	ML_VMA_VDSO,
	ML_VMA_VVAR,
	ML_VMA_VSYSCALL,
	ML_VMA_KIND_COUNT
};

struct ml_vma {
	uint64_t start, end; /* [start, end) */
	uint64_t offset;
	uint64_t inode;
	unsigned int dev_major, dev_minor;
	char perms[5]; /* "rwxp" */
	enum ml_vma_kind kind;
	uint32_t path_off; /* into vma_set.strings; see ml_vma_path() */
};

struct ml_vma_set {
	struct ml_vma *v;
	size_t n, cap;
	char *strings;
	size_t str_len, str_cap;
};

/*
 * Parse the text of a maps file. Malformed lines are an error (-EINVAL); a
 * line that overlaps the one before or comes before it is -EAGAIN: the
 * memory map changed while the kernel printed it, the text must be read
 * again.
 */
int ml_maps_parse(const char *buf, size_t len, struct ml_vma_set *out, struct ml_err *err);

/* How many times a maps file is read before its changing is an error. */
#define ML_MAPS_READ_TRIES 8

/*
 * Read and parse /proc/PID/maps. -ESRCH when the process is gone or a zombie;
 * a text that changed while it was read is read again (up to
 * ML_MAPS_READ_TRIES reads, then -EAGAIN).
 */
int ml_maps_read(pid_t pid, struct ml_vma_set *out, struct ml_err *err);

/* The raw text of an open maps fd (re-read from offset 0; @buf grows as needed): its length or
 * -errno. */
ssize_t ml_maps_read_raw(int fd, char **buf, size_t *bufsz, struct ml_err *err);

/*
 * Parse the @len bytes of maps text in *@buf, which were read from @fd; while
 * the text is inconsistent (-EAGAIN from maps_parse), read @fd again into
 * *@buf and parse that, up to ML_MAPS_READ_TRIES reads in all. Returns the
 * length of the text parsed (now in *@buf) or -errno: -EAGAIN when every
 * read saw the memory map change.
 */
ssize_t ml_maps_parse_fd(int fd, char **buf, size_t *bufsz, size_t len, struct ml_vma_set *out,
			 struct ml_err *err);

/* ml_maps_read_raw() and ml_maps_parse_fd(): 0 or -errno. */
int ml_maps_read_fd(int fd, char **buf, size_t *bufsz, struct ml_vma_set *out, struct ml_err *err);

/*
 * A PT_LOAD segment of an ELF file whose memory is longer than its file
 * part (p_memsz > p_filesz): the loader (the kernel for the executable,
 * ld.so for shared objects) maps the rest, its .bss, anonymously, from the
 * page end of the file part up to the page end of p_vaddr + p_memsz.
 */
struct ml_elf_tail {
	unsigned int dev_major, dev_minor; /* the file, as maps shows it */
	uint64_t inode;
	uint64_t vaddr, offset, filesz, memsz; /* p_vaddr, p_offset, p_filesz, p_memsz */
};

/* What classification knows beyond the maps text (every field optional). */
struct ml_maps_hints {
	uint64_t start_brk; /* /proc/PID/stat field 47; 0 when unknown */
	const struct ml_elf_tail *tails; /* of the mapped ELF files that have one */
	size_t ntails;
};

/*
 * Classify every VMA from what the kernel shows of it (path, device and
 * inode, permissions, the kernel's own names) and @h. @exe is the main
 * executable's path, or NULL to guess. An anonymous VMA is the .bss of a
 * file (bss, lib-data) only when @h has that file's ELF tail and the VMA
 * is exactly where the loader maps it, and no larger: anything else is
 * anon, whatever it is next to. A pure function of its arguments.
 */
void ml_maps_classify_hints(struct ml_vma_set *set, const char *exe, const struct ml_maps_hints *h);

/* ml_maps_classify_hints() without hints: no anonymous VMA is taken for a .bss. */
void ml_maps_classify(struct ml_vma_set *set, const char *exe);

/*
 * The ELF tails (see struct ml_elf_tail) of the open file @fd, at most @max,
 * with dev/inode left 0: how many, 0 for a file that is no ELF file or has
 * none, or -errno when it cannot be read.
 */
int ml_elf_tails(int fd, struct ml_elf_tail *out, size_t max);

/*
 * Hints of one process for ml_maps_classify_hints(), gathered from
 * /proc/PID/stat and the ELF headers of its mapped files (read once per
 * file: kept by device and inode).
 */
struct ml_kind_src;

int ml_kind_src_open(struct ml_kind_src **out, pid_t pid, struct ml_err *err);
void ml_kind_src_close(struct ml_kind_src *k);

/*
 * Classify @set, the maps of the process @k was opened on, with its hints.
 * A file that cannot be read, or a stat that cannot, only means fewer
 * hints: this never fails.
 */
void ml_maps_classify_proc(struct ml_kind_src *k, struct ml_vma_set *set, const char *exe);

const char *ml_vma_path(const struct ml_vma_set *set, const struct ml_vma *v);
const char *ml_vma_kind_name(enum ml_vma_kind k);
int ml_vma_kind_from_name(const char *name);
static inline uint64_t vma_pages(const struct ml_vma *v)
{
	return (v->end - v->start) / 4096;
}

/* Writable, private and not a kernel-provided mapping: what the profiler tracks. */
bool ml_vma_is_writable_private(const struct ml_vma *v);
/* Writable shared memory (shmem, memfd, SysV, shared anonymous: ML_VMA_SHM, "rw-s"). */
bool ml_vma_is_writable_shm(const struct ml_vma *v);

void ml_vma_set_init(struct ml_vma_set *s);
void ml_vma_set_clear(struct ml_vma_set *s);
void ml_vma_set_free(struct ml_vma_set *s);

/*
 * Indices of VMAs of @cur that have no VMA with the
 * same [start, end) in @old. Returns the count written to @added (at most
 * @max). Both sets must be sorted by start, as maps files are.
 */
size_t ml_vma_diff(const struct ml_vma_set *old, const struct ml_vma_set *cur, size_t *added,
		   size_t max);

/* Index of the VMA containing @addr, or -1. */
long ml_vma_find(const struct ml_vma_set *s, uint64_t addr);

#pragma GCC visibility pop

#endif
