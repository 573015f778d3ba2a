// SPDX-License-Identifier: MIT
/*
 * /proc/PID/maps parser. Device numbers are hex ("fe:00"): reading them as
 * decimal silently drops those lines, and with them the data sections of
 * every binary on such a device.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memlens/maps.h"

static const char *const kind_names[ML_VMA_KIND_COUNT] = {
	[ML_VMA_ANON] = "anon",		[ML_VMA_TEXT] = "text",		[ML_VMA_DATA] = "data",
	[ML_VMA_BSS] = "bss",		[ML_VMA_HEAP] = "heap",		[ML_VMA_STACK] = "stack",
	[ML_VMA_LIB_TEXT] = "lib-text", [ML_VMA_LIB_DATA] = "lib-data", [ML_VMA_SHM] = "shm",
	[ML_VMA_FILE] = "file",		[ML_VMA_VDSO] = "vdso",		[ML_VMA_VVAR] = "vvar",
	[ML_VMA_VSYSCALL] = "vsyscall",
};

const char *ml_vma_kind_name(enum ml_vma_kind k)
{
	return (unsigned)k < ML_VMA_KIND_COUNT ? kind_names[k] : "?";
}

int ml_vma_kind_from_name(const char *name)
{
	for (int k = 0; k < ML_VMA_KIND_COUNT; k++)
		if (!strcmp(kind_names[k], name))
			return k;
	return -1;
}

void ml_vma_set_init(struct ml_vma_set *s)
{
	memset(s, 0, sizeof(*s));
}

void ml_vma_set_clear(struct ml_vma_set *s)
{
	s->n = 0;
	s->str_len = 0;
}

void ml_vma_set_free(struct ml_vma_set *s)
{
	free(s->v);
	free(s->strings);
	ml_vma_set_init(s);
}

const char *ml_vma_path(const struct ml_vma_set *set, const struct ml_vma *v)
{
	return set->strings ? set->strings + v->path_off : "";
}

static int push_string(struct ml_vma_set *s, const char *p, size_t len, uint32_t *off)
{
	if (s->str_len + len + 1 > s->str_cap) {
		size_t cap = s->str_cap ? s->str_cap * 2 : 4096;
		char *n;

		while (cap < s->str_len + len + 1)
			cap *= 2;
		n = realloc(s->strings, cap);
		if (!n)
			return -ENOMEM;
		s->strings = n;
		s->str_cap = cap;
	}
	memcpy(s->strings + s->str_len, p, len);
	s->strings[s->str_len + len] = '\0';
	*off = (uint32_t)s->str_len;
	s->str_len += len + 1;
	return 0;
}

static int push_vma(struct ml_vma_set *s, const struct ml_vma *v)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		struct ml_vma *n = realloc(s->v, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		s->v = n;
		s->cap = cap;
	}
	s->v[s->n++] = *v;
	return 0;
}

static int parse_hex(const char **pp, const char *end, uint64_t *out)
{
	const char *p = *pp;
	uint64_t v = 0;
	int digits = 0;

	while (p < end) {
		int c = *p, d;

		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			break;
		if (digits >= 16)
			return -1;
		v = v << 4 | (uint64_t)d;
		digits++;
		p++;
	}
	if (!digits)
		return -1;
	*pp = p;
	*out = v;
	return 0;
}

static int parse_dec(const char **pp, const char *end, uint64_t *out)
{
	const char *p = *pp;
	uint64_t v = 0;
	int digits = 0;

	while (p < end && *p >= '0' && *p <= '9') {
		if (digits >= 20)
			return -1;
		v = v * 10 + (uint64_t)(*p - '0');
		digits++;
		p++;
	}
	if (!digits)
		return -1;
	*pp = p;
	*out = v;
	return 0;
}

static int expect(const char **pp, const char *end, char c)
{
	if (*pp >= end || **pp != c)
		return -1;
	(*pp)++;
	return 0;
}

static void skip_spaces(const char **pp, const char *end)
{
	while (*pp < end && **pp == ' ')
		(*pp)++;
}

/* One line, without its newline. */
static int parse_line(const char *p, const char *end, struct ml_vma_set *out)
{
	struct ml_vma v = { 0 };
	uint64_t maj, min;
	int i;

	if (parse_hex(&p, end, &v.start) || expect(&p, end, '-') || parse_hex(&p, end, &v.end) ||
	    expect(&p, end, ' '))
		return -1;
	if (v.end <= v.start || (v.start & 0xfff) || (v.end & 0xfff))
		return -1;
	for (i = 0; i < 4; i++) {
		if (p >= end)
			return -1;
		v.perms[i] = *p++;
	}
	if (!strchr("r-", v.perms[0]) || !strchr("w-", v.perms[1]) || !strchr("x-", v.perms[2]) ||
	    !strchr("ps", v.perms[3]))
		return -1;
	if (expect(&p, end, ' ') || parse_hex(&p, end, &v.offset) || expect(&p, end, ' ') ||
	    parse_hex(&p, end, &maj) || expect(&p, end, ':') || parse_hex(&p, end, &min) ||
	    expect(&p, end, ' ') || parse_dec(&p, end, &v.inode))
		return -1;
	if (maj > 0xfff || min > 0xfffff)
		return -1;
	v.dev_major = (unsigned int)maj;
	v.dev_minor = (unsigned int)min;
	skip_spaces(&p, end);
	if (memchr(p, '\0', (size_t)(end - p)))
		return -1;
	if (push_string(out, p, (size_t)(end - p), &v.path_off))
		return -2;
	return push_vma(out, &v) ? -2 : 0;
}

int ml_maps_parse(const char *buf, size_t len, struct ml_vma_set *out, struct ml_err *err)
{
	const char *p = buf, *end = buf + len;
	unsigned long lineno = 0;

	ml_vma_set_clear(out);
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		int r;

		lineno++;
		if (le > p) {
			r = parse_line(p, le, out);
			if (r == -2)
				return ml_err_set(err, ENOMEM, "out of memory parsing maps");
			if (r)
				return ml_err_set(err, EINVAL, "malformed maps line %lu: \"%.*s\"",
						  lineno, (int)(le - p > 120 ? 120 : le - p), p);
			if (out->n > 1 && out->v[out->n - 1].start < out->v[out->n - 2].end)
				return ml_err_set(err, EAGAIN,
						  "maps line %lu overlaps or is out of order (the "
						  "memory map changed while it was read)",
						  lineno);
		}
		p = nl ? nl + 1 : end;
	}
	return 0;
}

ssize_t ml_maps_read_raw(int fd, char **buf, size_t *bufsz, struct ml_err *err)
{
	size_t len = 0;
	ssize_t r;

	if (!*buf) {
		*bufsz = 64 * 1024;
		*buf = malloc(*bufsz);
		if (!*buf)
			return ml_err_set(err, ENOMEM, "out of memory reading maps");
	}
	for (;;) {
		if (len == *bufsz) {
			char *n = realloc(*buf, *bufsz * 2);

			if (!n)
				return ml_err_set(err, ENOMEM, "out of memory reading maps");
			*buf = n;
			*bufsz *= 2;
		}
		r = pread(fd, *buf + len, *bufsz - len, (off_t)len);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return ml_err_set(err, errno == ENOENT ? ESRCH : errno, "reading maps: %s",
					  strerror(errno));
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	if (len == 0)
		return ml_err_set(
			err, ESRCH,
			"the process has no memory map (it exited, or it is a kernel thread)");
	return (ssize_t)len;
}

/*
 * The kernel prints the maps one VMA after the other without holding the
 * whole memory map still (per-VMA locks, and the lock is dropped between
 * the page-sized chunks of a read): a VMA that is merged, grows or moves
 * meanwhile is printed twice, or after its neighbour. That is a normal
 * event for a process that maps memory while we look (a JIT, a garbage
 * collector, a growing heap), not an error: such a text is read again.
 * Each read is a fresh chance, so a few reads in a row all seeing a change
 * mean a process that remaps faster than its maps can be printed.
 */
ssize_t ml_maps_parse_fd(int fd, char **buf, size_t *bufsz, size_t len, struct ml_vma_set *out,
			 struct ml_err *err)
{
	ssize_t n = (ssize_t)len;
	int r, tries = 1;

	for (;;) {
		r = ml_maps_parse(*buf, (size_t)n, out, err);
		if (r != -EAGAIN)
			return r ? r : n;
		if (tries == ML_MAPS_READ_TRIES)
			break;
		n = ml_maps_read_raw(fd, buf, bufsz, err);
		if (n < 0)
			return n;
		tries++;
	}
	return ml_err_set(err, EAGAIN,
			  "the memory map kept changing while it was read: %d reads in a row saw "
			  "a VMA twice or out of order",
			  tries);
}

int ml_maps_read_fd(int fd, char **buf, size_t *bufsz, struct ml_vma_set *out, struct ml_err *err)
{
	ssize_t len = ml_maps_read_raw(fd, buf, bufsz, err);

	if (len < 0)
		return (int)len;
	len = ml_maps_parse_fd(fd, buf, bufsz, (size_t)len, out, err);
	return len < 0 ? (int)len : 0;
}

int ml_maps_read(pid_t pid, struct ml_vma_set *out, struct ml_err *err)
{
	char path[64], *buf = NULL;
	size_t sz = 0;
	int fd, r;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;

		if (e == ENOENT)
			return ml_err_set(err, ESRCH, "no process with pid %d", (int)pid);
		return ml_err_set(err, e, "cannot open %s: %s", path, strerror(e));
	}
	r = ml_maps_read_fd(fd, &buf, &sz, out, err);
	free(buf);
	close(fd);
	return r;
}

static bool path_is_special(const char *p)
{
	return p[0] == '[';
}

static bool path_is_shm(const char *p)
{
	return !strncmp(p, "/dev/shm/", 9) || !strncmp(p, "/SYSV", 5) ||
	       !strncmp(p, "/memfd:", 7) || !strncmp(p, "/dev/zero", 9);
}

/* A shared object: the same file has an executable mapping somewhere. */
static bool file_has_exec(const struct ml_vma_set *s, const struct ml_vma *v)
{
	for (size_t i = 0; i < s->n; i++) {
		const struct ml_vma *o = &s->v[i];

		if (o->inode == v->inode && o->dev_major == v->dev_major &&
		    o->dev_minor == v->dev_minor && o->perms[2] == 'x')
			return true;
	}
	return false;
}

#define PAGE_UP(x) (((x) + 4095) & ~4095ULL)

/*
 * @v is the .bss of the file mapped by @prev: @prev maps part of an ELF
 * segment that has a tail, and @v starts where the loader maps that tail
 * (the page end of the segment's file part) and ends no later than the
 * segment's memory does. Both loaders map it so: binfmt_elf's elf_load()
 * for the executable, ld.so's _dl_map_segments() for shared objects, with
 * one anonymous mmap of [PAGE_UP(bias + p_vaddr + p_filesz),
 * PAGE_UP(bias + p_vaddr + p_memsz)). A larger anonymous VMA there is some
 * other mapping (which may have merged with the .bss): adjacency alone
 * says nothing, since mmap places new mappings right below the last ones.
 */
static bool is_elf_tail(const struct ml_vma *prev, const struct ml_vma *v,
			const struct ml_maps_hints *h)
{
	if (!h || prev->end != v->start || !prev->inode)
		return false;
	for (size_t i = 0; i < h->ntails; i++) {
		const struct ml_elf_tail *t = &h->tails[i];
		uint64_t base, start, end;

		if (t->inode != prev->inode || t->dev_major != prev->dev_major ||
		    t->dev_minor != prev->dev_minor || !t->filesz)
			continue;
		/* @prev maps file bytes of this segment */
		if (prev->offset < (t->offset & ~4095ULL) || prev->offset >= t->offset + t->filesz)
			continue;
		/* p_vaddr and p_offset are congruent modulo the page size: the
		 * load bias is where @prev is less what it maps (unsigned
		 * arithmetic wraps consistently) */
		base = prev->start - prev->offset + t->offset - t->vaddr;
		start = PAGE_UP(base + t->vaddr + t->filesz);
		end = PAGE_UP(base + t->vaddr + t->memsz);
		if (v->start == start && v->end <= end)
			return true;
	}
	return false;
}

void ml_maps_classify_hints(struct ml_vma_set *s, const char *exe, const struct ml_maps_hints *h)
{
	const char *guess = NULL;

	if (!exe || !*exe) {
		for (size_t i = 0; i < s->n; i++) {
			const char *p = ml_vma_path(s, &s->v[i]);

			if (p[0] == '/') {
				guess = p;
				break;
			}
		}
		exe = guess ? guess : "";
	}
	for (size_t i = 0; i < s->n; i++) {
		struct ml_vma *v = &s->v[i];
		const struct ml_vma *prev = i ? &s->v[i - 1] : NULL;
		const char *p = ml_vma_path(s, v);
		bool shared = v->perms[3] == 's';
		bool tail = !shared && !v->inode && prev && is_elf_tail(prev, v, h);

		/*
		 * The kernel names the VMA that overlaps [start_brk, brk]
		 * [heap] (vma_is_initial_heap()): with no heap yet and brk
		 * not randomised, that is the executable's .bss ending at
		 * start_brk.
		 */
		if (tail && !strcmp(p, "[heap]") && h->start_brk && v->end <= h->start_brk) {
			v->kind = !strcmp(ml_vma_path(s, prev), exe) ? ML_VMA_BSS : ML_VMA_LIB_DATA;
		} else if (path_is_special(p)) {
			if (!strcmp(p, "[heap]"))
				v->kind = ML_VMA_HEAP;
			else if (!strncmp(p, "[stack", 6))
				v->kind = ML_VMA_STACK;
			else if (!strcmp(p, "[vdso]"))
				v->kind = ML_VMA_VDSO;
			else if (!strncmp(p, "[vvar", 5))
				v->kind = ML_VMA_VVAR;
			else if (!strcmp(p, "[vsyscall]"))
				v->kind = ML_VMA_VSYSCALL;
			else /* [anon:NAME] (PR_SET_VMA_ANON_NAME), [anon_shmem:NAME], ... */
				v->kind = shared ? ML_VMA_SHM : ML_VMA_ANON;
		} else if (!*p) {
			if (shared)
				v->kind = ML_VMA_SHM;
			else if (tail)
				v->kind = !strcmp(ml_vma_path(s, prev), exe) ? ML_VMA_BSS
									     : ML_VMA_LIB_DATA;
			else
				v->kind = ML_VMA_ANON;
		} else if (shared && path_is_shm(p)) {
			v->kind = ML_VMA_SHM;
		} else if (!strcmp(p, exe)) {
			v->kind = v->perms[1] == 'w' ? ML_VMA_DATA : ML_VMA_TEXT;
		} else if (!shared && file_has_exec(s, v)) {
			v->kind = v->perms[1] == 'w' ? ML_VMA_LIB_DATA : ML_VMA_LIB_TEXT;
		} else {
			v->kind = shared && !v->inode ? ML_VMA_SHM : ML_VMA_FILE;
		}
	}
}

void ml_maps_classify(struct ml_vma_set *s, const char *exe)
{
	ml_maps_classify_hints(s, exe, NULL);
}

bool ml_vma_is_writable_private(const struct ml_vma *v)
{
	if (v->perms[1] != 'w' || v->perms[3] != 'p')
		return false;
	return v->kind != ML_VMA_VDSO && v->kind != ML_VMA_VVAR && v->kind != ML_VMA_VSYSCALL;
}

bool ml_vma_is_writable_shm(const struct ml_vma *v)
{
	return v->perms[1] == 'w' && v->perms[3] == 's' && v->kind == ML_VMA_SHM;
}

size_t ml_vma_diff(const struct ml_vma_set *old, const struct ml_vma_set *cur, size_t *added,
		   size_t max)
{
	size_t i = 0, j = 0, n = 0;

	for (j = 0; j < cur->n && n < max; j++) {
		const struct ml_vma *c = &cur->v[j];

		while (i < old->n && old->v[i].start < c->start)
			i++;
		if (i < old->n && old->v[i].start == c->start && old->v[i].end == c->end)
			continue;
		added[n++] = j;
	}
	return n;
}

long ml_vma_find(const struct ml_vma_set *s, uint64_t addr)
{
	size_t lo = 0, hi = s->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->v[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < s->n && s->v[lo].start <= addr && addr < s->v[lo].end)
		return (long)lo;
	return -1;
}
