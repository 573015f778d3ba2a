// SPDX-License-Identifier: MIT
/* Source lines and debug files with elfutils' libdwfl (see srcline.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "srcline.h"

#ifdef MEMLENS_LIBDW
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>

/* what mlt_srcline_symbol() found at one address: a table per file */
struct srcline_sym {
	uint64_t vaddr; /* the key; SYM_EMPTY: an empty slot */
	const char *name; /* NULL: no function there */
	uint64_t start;
};

#define SYM_EMPTY UINT64_MAX

struct srcline_file {
	char *path;
	Dwfl *dwfl; /* NULL: no usable file */
	Dwfl_Module *mod;
	Dwarf_Addr bias;
	/*
	 * dwfl_module_addrinfo() walks the whole symbol table on every call
	 * (tens of thousands of symbols in a debug file such as python3's),
	 * and a report asks for the same return addresses again and again
	 */
	struct srcline_sym *syms; /* open addressing, a power of two */
	size_t nsyms, cap;
};

struct srcline_cache {
	struct srcline_file *v;
	size_t n;
	char **pool; /* file names made absolute */
	size_t npool;
	const char *dirs[2]; /* debug directories: the caller's, /usr/lib/debug */
	int ndirs;
};

/* the main file is the one reported; a lookup by build id never happens */
static int no_elf(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
		  char **file_name, Elf **elfp)
{
	(void)mod, (void)userdata, (void)modname, (void)base, (void)file_name, (void)elfp;
	errno = ENOENT;
	return -1;
}

static int open_debug(const char *path, char **found)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd >= 0 && !(*found = strdup(path))) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* "/proc/PID/root/usr/bin/x" -> "/usr/bin/x": the name as the process sees it */
static const char *seen_path(const char *p)
{
	const char *r;

	if (strncmp(p, "/proc/", 6) || !(r = strstr(p + 6, "/root/")))
		return p;
	return r + 5;
}

/* @root (the target's /proc/PID/root, or "") @dir/.build-id/xx/rest.debug */
static int by_build_id(const char *root, const char *dir, const unsigned char *id, int len,
		       char **found)
{
	char path[PATH_MAX];
	int n = snprintf(path, sizeof(path), "%s%s/.build-id/%02x/", root, dir, id[0]);

	for (int i = 1; i < len && n < (int)sizeof(path) - 8; i++)
		n += snprintf(path + n, sizeof(path) - (size_t)n, "%02x", id[i]);
	if (n >= (int)sizeof(path) - 8)
		return -1;
	snprintf(path + n, sizeof(path) - (size_t)n, ".debug");
	return open_debug(path, found);
}

/*
 * libdwfl asks for the separate debug file of a module (or for the dwz
 * file its debug file names): by build id, then by name, on this machine
 * only (dwfl_standard_find_debuginfo may ask a debuginfod server). The
 * system's debug directory is looked up in the target's root first (a
 * container's own /usr/lib/debug), then in memlens's. libdwfl checks the
 * build id of what is returned.
 */
static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			  const char *file_name, const char *debuglink, GElf_Word crc, char **found)
{
	const struct srcline_cache *c = *userdata;
	const unsigned char *id;
	char path[PATH_MAX], dir[PATH_MAX], root[64] = "";
	GElf_Addr id_vaddr;
	int len, fd = -1;

	(void)modname, (void)base, (void)crc;
	if (file_name && seen_path(file_name) != file_name)
		snprintf(root, sizeof(root), "%.*s", (int)(seen_path(file_name) - file_name),
			 file_name);
	len = dwfl_module_build_id(mod, &id, &id_vaddr);
	for (int d = 0; c && len > 1 && d < c->ndirs && fd < 0; d++) {
		if (d == c->ndirs - 1 && root[0]) /* the system's */
			fd = by_build_id(root, c->dirs[d], id, len, found);
		if (fd < 0)
			fd = by_build_id("", c->dirs[d], id, len, found);
	}
	if (fd >= 0)
		return fd;
	if (debuglink && debuglink[0] == '/') { /* a dwz file, by its full name */
		if (root[0] &&
		    snprintf(path, sizeof(path), "%s%s", root, debuglink) < (int)sizeof(path) &&
		    (fd = open_debug(path, found)) >= 0)
			return fd;
		return open_debug(debuglink, found);
	}
	if (debuglink && file_name) {
		const char *slash = strrchr(file_name, '/');

		if (snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - file_name) : 1,
			     slash ? file_name : ".") >= (int)sizeof(dir))
			return errno = ENOENT, -1;
		if (snprintf(path, sizeof(path), "%s/%s", dir, debuglink) < (int)sizeof(path) &&
		    strcmp(path, file_name) && (fd = open_debug(path, found)) >= 0)
			return fd;
		if (snprintf(path, sizeof(path), "%s/.debug/%s", dir, debuglink) <
			    (int)sizeof(path) &&
		    (fd = open_debug(path, found)) >= 0)
			return fd;
		for (int d = 0; c && d < c->ndirs; d++) {
			const char *r = d == c->ndirs - 1 ? root : "";

			if (r[0] &&
			    snprintf(path, sizeof(path), "%s%s%s/%s", r, c->dirs[d], seen_path(dir),
				     debuglink) < (int)sizeof(path) &&
			    (fd = open_debug(path, found)) >= 0)
				return fd;
			if (snprintf(path, sizeof(path), "%s%s/%s", c->dirs[d], seen_path(dir),
				     debuglink) < (int)sizeof(path) &&
			    (fd = open_debug(path, found)) >= 0)
				return fd;
		}
	}
	errno = ENOENT;
	return -1;
}

static const Dwfl_Callbacks callbacks = {
	.find_elf = no_elf,
	.find_debuginfo = find_debuginfo,
	.section_address = dwfl_offline_section_address,
};

struct srcline_cache *mlt_srcline_new(const char *debug_dir)
{
	struct srcline_cache *c = calloc(1, sizeof(struct srcline_cache));

	if (!c)
		return NULL;
	if (debug_dir && debug_dir[0])
		c->dirs[c->ndirs++] = debug_dir;
	c->dirs[c->ndirs++] = "/usr/lib/debug";
	return c;
}

void mlt_srcline_free(struct srcline_cache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++) {
		free(c->v[i].path);
		if (c->v[i].dwfl)
			dwfl_end(c->v[i].dwfl);
		free(c->v[i].syms);
	}
	for (size_t i = 0; i < c->npool; i++)
		free(c->pool[i]);
	free(c->pool);
	free(c->v);
	free(c);
}

static struct srcline_file *file_for(struct srcline_cache *c, const char *path)
{
	struct srcline_file *f, *n;
	void **userdata;

	for (size_t i = 0; i < c->n; i++)
		if (!strcmp(c->v[i].path, path))
			return &c->v[i];
	n = realloc(c->v, (c->n + 1) * sizeof(*n));
	if (!n)
		return NULL;
	c->v = n;
	f = &c->v[c->n++];
	memset(f, 0, sizeof(*f));
	f->path = strdup(path);
	f->dwfl = dwfl_begin(&callbacks);
	if (!f->dwfl || !f->path)
		return f;
	f->mod = dwfl_report_offline(f->dwfl, path, path, -1);
	dwfl_report_end(f->dwfl, NULL, NULL);
	if (f->mod && dwfl_module_info(f->mod, &userdata, NULL, NULL, NULL, NULL, NULL, NULL))
		*userdata = c; /* for find_debuginfo */
	if (!f->mod || !dwfl_module_getdwarf(f->mod, &f->bias)) {
		/* no DWARF: the symbol tables may still serve (mlt_srcline_symbol) */
		if (!f->mod || !dwfl_module_getelf(f->mod, &f->bias)) {
			dwfl_end(f->dwfl);
			f->dwfl = NULL;
			f->mod = NULL;
		}
	}
	return f;
}

/* file @idx of the line table of the unit @cu */
static const char *unit_file(Dwarf_Die *cu, Dwarf_Word idx)
{
	Dwarf_Files *files;
	size_t n;

	if (dwarf_getsrcfiles(cu, &files, &n) || idx >= n)
		return NULL;
	return dwarf_filesrc(files, idx, NULL, NULL);
}

static void describe_func(Dwarf_Die *die, struct srcline_frame *fr)
{
	int line = 0;

	fr->func = dwarf_diename(die);
	fr->func_file = dwarf_decl_file(die);
	if (!dwarf_decl_line(die, &line))
		fr->func_line = line;
}

/* @name relative to the unit's compilation directory, made absolute */
static const char *absolute(struct srcline_cache *c, Dwarf_Die *cu, const char *name)
{
	Dwarf_Attribute a;
	const char *dir;
	char *full, **pool;

	if (!name || name[0] == '/' || !cu ||
	    !(dir = dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &a))) || dir[0] != '/')
		return name;
	for (size_t i = 0; i < c->npool; i++) {
		size_t n = strlen(dir);

		if (!strncmp(c->pool[i], dir, n) && c->pool[i][n] == '/' &&
		    !strcmp(c->pool[i] + n + 1, name))
			return c->pool[i];
	}
	pool = realloc(c->pool, (c->npool + 1) * sizeof(*pool));
	if (!pool)
		return name;
	c->pool = pool;
	if (asprintf(&full, "%s/%s", dir, name) < 0)
		return name;
	c->pool[c->npool++] = full;
	return full;
}

int mlt_srcline_lookup(struct srcline_cache *c, const char *path, uint64_t vaddr,
		       struct srcline_frame *out, int max)
{
	struct srcline_file *f = c ? file_for(c, path) : NULL;
	Dwarf_Addr pc, cubias;
	Dwarf_Die *cu, *scopes = NULL;
	Dwfl_Line *l;
	int n = 0, nscopes, line = 0;

	if (!f || !f->mod || max <= 0 || !dwfl_module_getdwarf(f->mod, &cubias))
		return 0;
	pc = vaddr + f->bias;
	l = dwfl_module_getsrc(f->mod, pc);
	memset(out, 0, sizeof(*out) * (size_t)max);
	if (l)
		out[0].file = dwfl_lineinfo(l, NULL, &line, NULL, NULL, NULL);
	out[0].line = line;
	cu = dwfl_module_addrdie(f->mod, pc, &cubias);
	nscopes = cu ? dwarf_getscopes(cu, pc - cubias, &scopes) : 0;
	/*
	 * dwarf_getscopes() continues an inlined instance with the scopes of
	 * its abstract definition: the callers come from the instance's own
	 * parents (dwarf_getscopes_die), as eu-addr2line -i does.
	 */
	if (nscopes > 0) {
		Dwarf_Die inner = scopes[0];

		free(scopes);
		scopes = NULL;
		nscopes = dwarf_getscopes_die(&inner, &scopes);
	}
	for (int i = 0; i < nscopes && n < max; i++) {
		Dwarf_Attribute a;
		Dwarf_Word w;
		int tag = dwarf_tag(&scopes[i]);

		if (tag != DW_TAG_subprogram && tag != DW_TAG_inlined_subroutine)
			continue;
		describe_func(&scopes[i], &out[n]);
		if (tag == DW_TAG_subprogram) {
			n++;
			break;
		}
		/* inlined: the caller's frame is at the call site */
		if (++n >= max)
			break;
		if (dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_file, &a), &w) == 0)
			out[n].file = unit_file(cu, w);
		if (dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_line, &a), &w) == 0)
			out[n].line = (int)w;
	}
	free(scopes);
	if (!n && out[0].file)
		n = 1; /* a line, but no function DIE around it */
	for (int i = 0; i < n; i++) {
		out[i].file = absolute(c, cu, out[i].file);
		out[i].func_file = absolute(c, cu, out[i].func_file);
	}
	return n;
}

static size_t sym_slot(const struct srcline_file *f, uint64_t vaddr)
{
	size_t i = (size_t)((vaddr * 0x9e3779b97f4a7c15ULL) >> 20) & (f->cap - 1);

	while (f->syms[i].vaddr != SYM_EMPTY && f->syms[i].vaddr != vaddr)
		i = (i + 1) & (f->cap - 1);
	return i;
}

/* room for one more entry, at most half full; false when out of memory */
static bool sym_room(struct srcline_file *f)
{
	struct srcline_sym *old = f->syms;
	size_t ocap = f->cap, ncap = ocap ? ocap * 2 : 256;

	if ((f->nsyms + 1) * 2 <= ocap)
		return true;
	f->syms = malloc(ncap * sizeof(*f->syms));
	if (!f->syms) {
		f->syms = old;
		return false;
	}
	for (size_t i = 0; i < ncap; i++)
		f->syms[i].vaddr = SYM_EMPTY;
	f->cap = ncap;
	for (size_t i = 0; i < ocap; i++)
		if (old[i].vaddr != SYM_EMPTY)
			f->syms[sym_slot(f, old[i].vaddr)] = old[i];
	free(old);
	return true;
}

int mlt_srcline_symbol(struct srcline_cache *c, const char *path, uint64_t vaddr, const char **name,
		       uint64_t *start)
{
	struct srcline_file *f = c ? file_for(c, path) : NULL;
	struct srcline_sym e = { .vaddr = vaddr };
	GElf_Off off = 0;
	GElf_Sym sym;

	if (!f || !f->mod)
		return -ENOENT;
	if (f->cap && vaddr != SYM_EMPTY) {
		const struct srcline_sym *hit = &f->syms[sym_slot(f, vaddr)];

		if (hit->vaddr == vaddr) {
			*name = hit->name;
			*start = hit->start;
			return hit->name ? 0 : -ENOENT;
		}
	}
	*name = dwfl_module_addrinfo(f->mod, vaddr + f->bias, &off, &sym, NULL, NULL, NULL);
	if (*name && GELF_ST_TYPE(sym.st_info) == STT_FUNC) {
		e.name = *name;
		e.start = vaddr - off;
	}
	/* the names are libdwfl's, alive as long as the module */
	if (vaddr != SYM_EMPTY && sym_room(f)) {
		f->syms[sym_slot(f, vaddr)] = e;
		f->nsyms++;
	}
	*name = e.name;
	if (!e.name)
		return -ENOENT;
	*start = e.start;
	return 0;
}

#else /* built without libdw */

struct srcline_cache {
	int unused;
};

struct srcline_cache *mlt_srcline_new(const char *debug_dir)
{
	(void)debug_dir;
	return calloc(1, sizeof(struct srcline_cache));
}

void mlt_srcline_free(struct srcline_cache *c)
{
	free(c);
}

int mlt_srcline_symbol(struct srcline_cache *c, const char *path, uint64_t vaddr, const char **name,
		       uint64_t *start)
{
	(void)c, (void)path, (void)vaddr, (void)name, (void)start;
	return -ENOENT;
}

int mlt_srcline_lookup(struct srcline_cache *c, const char *path, uint64_t vaddr,
		       struct srcline_frame *out, int max)
{
	(void)c;
	(void)path;
	(void)vaddr;
	(void)out;
	(void)max;
	return 0;
}
#endif
