// SPDX-License-Identifier: MIT
/* Source lines from DWARF with elfutils' libdwfl (see srcline.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "srcline.h"

#ifdef MEMLENS_LIBDW
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>

struct srcline_file {
	char *path;
	Dwfl *dwfl; /* NULL: no usable file */
	Dwfl_Module *mod;
	Dwarf_Addr bias;
};

struct srcline_cache {
	struct srcline_file *v;
	size_t n;
	char **pool; /* file names made absolute */
	size_t npool;
};

static const Dwfl_Callbacks callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
};

struct srcline_cache *srcline_new(void)
{
	return calloc(1, sizeof(struct srcline_cache));
}

void srcline_free(struct srcline_cache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++) {
		free(c->v[i].path);
		if (c->v[i].dwfl)
			dwfl_end(c->v[i].dwfl);
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
	if (!f->mod || !dwfl_module_getdwarf(f->mod, &f->bias)) {
		dwfl_end(f->dwfl);
		f->dwfl = NULL;
		f->mod = NULL;
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

int srcline_lookup(struct srcline_cache *c, const char *path, uint64_t vaddr,
		   struct srcline_frame *out, int max)
{
	struct srcline_file *f = c ? file_for(c, path) : NULL;
	Dwarf_Addr pc, cubias;
	Dwarf_Die *cu, *scopes = NULL;
	Dwfl_Line *l;
	int n = 0, nscopes, line = 0;

	if (!f || !f->mod || max <= 0)
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

#else /* built without libdw */

struct srcline_cache {
	int unused;
};

struct srcline_cache *srcline_new(void)
{
	return calloc(1, sizeof(struct srcline_cache));
}

void srcline_free(struct srcline_cache *c)
{
	free(c);
}

int srcline_lookup(struct srcline_cache *c, const char *path, uint64_t vaddr,
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
