// SPDX-License-Identifier: MIT
/*
 * What region classification needs beyond the maps text: the ELF tails
 * (.bss) of mapped files and start_brk. maps alone cannot tell a library's
 * .bss from any anonymous mapping that happens to follow the library: mmap
 * puts new mappings right below the last ones, so a 1 GiB buffer often
 * sits right after some library's data. The ELF program headers say how
 * long each .bss is; they are read once per file (by device and inode)
 * and only for files that an anonymous VMA follows.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "../common/uapi.h"
#include "memlens/maps.h"

/* ELF files have a few PT_LOAD segments; more program headers than this are not looked at */
#define MAX_PHDRS 256
#define MAX_TAILS_PER_FILE 8
/*
 * Linkers put the program headers right after the ELF header: only a file
 * whose headers lie within its first 64 KiB is read (see header_resident()).
 */
#define ELF_HEADERS_MAX (64 * 1024)

struct kind_file {
	unsigned int dev_major, dev_minor;
	uint64_t inode;
};

struct ml_kind_src {
	pid_t pid;
	int stat_fd;
	struct kind_file *files; /* read already (with or without tails) */
	size_t nfiles, files_cap;
	struct ml_elf_tail *tails;
	size_t ntails, tails_cap;
};

static int read_full(int fd, void *buf, size_t len, off_t off)
{
	ssize_t r;

	do
		r = pread(fd, buf, len, off);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	return (size_t)r == len ? 0 : -ENOEXEC;
}

static void add_tail(struct ml_elf_tail *out, size_t max, int *n, uint64_t vaddr, uint64_t offset,
		     uint64_t filesz, uint64_t memsz)
{
	if (memsz <= filesz || (size_t)*n >= max)
		return;
	out[*n] = (struct ml_elf_tail){
		.vaddr = vaddr, .offset = offset, .filesz = filesz, .memsz = memsz
	};
	(*n)++;
}

/*
 * The PT_LOAD segments with a tail (memsz > filesz) of an ELF file of one
 * class: the same code for Elf64_* and Elf32_*, as the kernel's own
 * binfmt_elf does with its elf_* macros.
 */
#define DEFINE_ELF_TAILS(bits)                                                                     \
	static int elf##bits##_tails(int fd, struct ml_elf_tail *out, size_t max)                  \
	{                                                                                          \
		Elf##bits##_Ehdr e;                                                                \
		Elf##bits##_Phdr *ph;                                                              \
		int r, n = 0;                                                                      \
                                                                                                   \
		r = read_full(fd, &e, sizeof(e), 0);                                               \
		if (r)                                                                             \
			return r;                                                                  \
		if (e.e_phentsize != sizeof(*ph) || !e.e_phnum || e.e_phnum > MAX_PHDRS ||         \
		    e.e_phoff > ELF_HEADERS_MAX - e.e_phnum * sizeof(*ph))                         \
			return 0;                                                                  \
		ph = malloc(e.e_phnum * sizeof(*ph));                                              \
		if (!ph)                                                                           \
			return -ENOMEM;                                                            \
		r = read_full(fd, ph, e.e_phnum * sizeof(*ph), (off_t)e.e_phoff);                  \
		for (unsigned int i = 0; !r && i < e.e_phnum; i++)                                 \
			if (ph[i].p_type == PT_LOAD)                                               \
				add_tail(out, max, &n, ph[i].p_vaddr, ph[i].p_offset,              \
					 ph[i].p_filesz, ph[i].p_memsz);                           \
		free(ph);                                                                          \
		return r ? r : n;                                                                  \
	}
DEFINE_ELF_TAILS(64)
DEFINE_ELF_TAILS(32)

int ml_elf_tails(int fd, struct ml_elf_tail *out, size_t max)
{
	unsigned char ident[EI_NIDENT];
	int r;

	r = read_full(fd, ident, sizeof(ident), 0);
	if (r)
		return r == -ENOEXEC ? 0 : r;
	if (memcmp(ident, ELFMAG, SELFMAG) || ident[EI_DATA] != ELFDATA2LSB)
		return 0;
	if (ident[EI_CLASS] == ELFCLASS64)
		r = elf64_tails(fd, out, max);
	else if (ident[EI_CLASS] == ELFCLASS32)
		r = elf32_tails(fd, out, max);
	else
		r = 0;
	return r == -ENOEXEC ? 0 : r;
}

int ml_kind_src_open(struct ml_kind_src **out, pid_t pid, struct ml_err *err)
{
	struct ml_kind_src *k = calloc(1, sizeof(*k));
	char path[64];

	if (!k)
		return ml_err_set(err, ENOMEM, "out of memory");
	k->pid = pid;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	/* without it there is no start_brk: a hint less, no error */
	k->stat_fd = open(path, O_RDONLY | O_CLOEXEC);
	*out = k;
	return 0;
}

void ml_kind_src_close(struct ml_kind_src *k)
{
	if (!k)
		return;
	if (k->stat_fd >= 0)
		close(k->stat_fd);
	free(k->files);
	free(k->tails);
	free(k);
}

/* start_brk, field 47 of /proc/PID/stat (0 when not shown: no ptrace access, or no mm). */
static uint64_t read_start_brk(struct ml_kind_src *k)
{
	char buf[1024], *p, *tok, *save = NULL;
	ssize_t n;
	int field = 3;

	if (k->stat_fd < 0)
		return 0;
	do
		n = pread(k->stat_fd, buf, sizeof(buf) - 1, 0);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* fields are counted from the last ')': comm may hold anything */
	p = strrchr(buf, ')');
	if (!p)
		return 0;
	for (tok = strtok_r(p + 1, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save))
		if (field++ == 47)
			return strtoull(tok, NULL, 10);
	return 0;
}

static bool file_known(const struct ml_kind_src *k, const struct ml_vma *v)
{
	for (size_t i = 0; i < k->nfiles; i++)
		if (k->files[i].inode == v->inode && k->files[i].dev_major == v->dev_major &&
		    k->files[i].dev_minor == v->dev_minor)
			return true;
	return false;
}

/*
 * The file @v maps: through /proc/PID/map_files (root: the very file,
 * also when deleted or in another mount namespace), else by its path
 * under /proc/PID/root when that is the same device and inode. Never
 * opened unless a regular file: opening a device may do something.
 */
static int open_mapped(const struct ml_kind_src *k, const struct ml_vma_set *set,
		       const struct ml_vma *v)
{
	char path[PATH_MAX + 64];
	const char *p = ml_vma_path(set, v);
	struct stat st;
	size_t len = strlen(p);
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", (int)k->pid,
		 (unsigned long long)v->start, (unsigned long long)v->end);
	if (!stat(path, &st) && S_ISREG(st.st_mode)) {
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
		if (fd >= 0)
			return fd;
	}
	if (p[0] != '/' || (len > 10 && !strcmp(p + len - 10, " (deleted)")))
		return -ENOENT;
	snprintf(path, sizeof(path), "/proc/%d/root%s", (int)k->pid, p);
	if (stat(path, &st) || !S_ISREG(st.st_mode) || st.st_ino != v->inode ||
	    major(st.st_dev) != v->dev_major || minor(st.st_dev) != v->dev_minor)
		return -ENOENT;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	return fd >= 0 ? fd : -errno;
}

/*
 * Reading a page of a tmpfs file that is in swap brings it back into
 * memory: the target's memory would change because we looked. 1 when
 * [0, @len) of @fd has no page in swap (or @fd is not on tmpfs), 0 when it
 * has or cannot be known.
 */
static int header_resident(int fd, uint64_t len)
{
	struct ml_cachestat_range range = { 0, len };
	struct ml_cachestat cs;
	struct statfs sfs;

	if (fstatfs(fd, &sfs) || sfs.f_type != TMPFS_MAGIC)
		return 1;
	if (syscall(__NR_cachestat, fd, &range, &cs, 0))
		return 0;
	return cs.nr_evicted == 0;
}

/* Whether some VMA maps the same file as @v executable: an ELF object the loader mapped. */
static bool mapped_exec(const struct ml_vma_set *set, const struct ml_vma *v)
{
	for (size_t i = 0; i < set->n; i++) {
		const struct ml_vma *o = &set->v[i];

		if (o->perms[2] == 'x' && o->inode == v->inode && o->dev_major == v->dev_major &&
		    o->dev_minor == v->dev_minor)
			return true;
	}
	return false;
}

/* Read the tails of the file @v maps, once. */
static void learn_file(struct ml_kind_src *k, const struct ml_vma_set *set, const struct ml_vma *v)
{
	struct ml_elf_tail t[MAX_TAILS_PER_FILE];
	int fd = open_mapped(k, set, v), n;

	if (fd == -ENOENT)
		return; /* gone, or not reachable now: maybe next time */
	if (fd >= 0 && !header_resident(fd, ELF_HEADERS_MAX)) {
		close(fd);
		return; /* in swap: not now */
	}
	n = fd < 0 ? 0 : ml_elf_tails(fd, t, MAX_TAILS_PER_FILE);
	if (fd >= 0)
		close(fd);
	if (n < 0)
		n = 0; /* unreadable: no tail known, and not tried again */
	if (k->nfiles == k->files_cap) {
		size_t cap = k->files_cap ? 2 * k->files_cap : 16;
		struct kind_file *f = realloc(k->files, cap * sizeof(*f));

		if (!f)
			return;
		k->files = f;
		k->files_cap = cap;
	}
	if (k->ntails + (size_t)n > k->tails_cap) {
		size_t cap = k->tails_cap ? 2 * k->tails_cap : 16;
		struct ml_elf_tail *nt;

		while (cap < k->ntails + (size_t)n)
			cap *= 2;
		nt = realloc(k->tails, cap * sizeof(*nt));
		if (!nt)
			return;
		k->tails = nt;
		k->tails_cap = cap;
	}
	k->files[k->nfiles++] = (struct kind_file){ v->dev_major, v->dev_minor, v->inode };
	for (int i = 0; i < n; i++) {
		t[i].dev_major = v->dev_major;
		t[i].dev_minor = v->dev_minor;
		t[i].inode = v->inode;
		k->tails[k->ntails++] = t[i];
	}
}

void ml_maps_classify_proc(struct ml_kind_src *k, struct ml_vma_set *set, const char *exe)
{
	struct ml_maps_hints h = { 0 };

	if (!k) {
		ml_maps_classify_hints(set, exe, NULL);
		return;
	}
	/* only a file that an anonymous private VMA directly follows can have its .bss there */
	for (size_t i = 1; i < set->n; i++) {
		const struct ml_vma *prev = &set->v[i - 1], *v = &set->v[i];

		if (prev->inode && prev->end == v->start && !v->inode && v->perms[3] == 'p' &&
		    !file_known(k, prev) && mapped_exec(set, prev))
			learn_file(k, set, prev);
	}
	h.start_brk = read_start_brk(k);
	h.tails = k->tails;
	h.ntails = k->ntails;
	ml_maps_classify_hints(set, exe, &h);
}
