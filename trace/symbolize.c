// SPDX-License-Identifier: MIT
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize.h"

void mlt_symbolizer_init(struct symbolizer *s, pid_t pid)
{
	memset(s, 0, sizeof(*s));
	s->pid = pid;
	ml_vma_set_init(&s->maps);
}

void mlt_symbolizer_refresh(struct symbolizer *s)
{
	struct ml_vma_set fresh;

	ml_vma_set_init(&fresh);
	if (ml_maps_read(s->pid, &fresh, NULL) || !fresh.n) {
		ml_vma_set_free(&fresh);
		return;
	}
	ml_vma_set_free(&s->maps);
	s->maps = fresh;
	s->have_maps = 1;
}

static struct sym_file *file_syms(struct symbolizer *s, const char *path)
{
	struct sym_file *f, *n;
	char proc_path[4200];

	for (size_t i = 0; i < s->nfiles; i++)
		if (!strcmp(s->files[i].path, path))
			return s->files[i].loaded > 0 ? &s->files[i] : NULL;
	n = realloc(s->files, (s->nfiles + 1) * sizeof(*n));
	if (!n)
		return NULL;
	s->files = n;
	f = &s->files[s->nfiles++];
	memset(f, 0, sizeof(*f));
	f->path = strdup(path);
	/* the process's own view of the file first (mount namespaces) */
	snprintf(proc_path, sizeof(proc_path), "/proc/%d/root%s", (int)s->pid, path);
	if (!mlt_elf_syms_load(proc_path, &f->syms, NULL))
		f->open_path = strdup(proc_path);
	else if (!mlt_elf_syms_load(path, &f->syms, NULL))
		f->open_path = strdup(path);
	f->loaded = f->open_path ? 1 : -1;
	return f->loaded > 0 ? f : NULL;
}

static struct srcline_cache *lines(struct symbolizer *s)
{
	if (!s->lines)
		s->lines = mlt_srcline_new(s->debug_dir);
	return s->lines;
}

void mlt_symbolizer_info(struct symbolizer *s, uint64_t addr, struct sym_info *out)
{
	const struct elf_sym *sym;
	struct sym_file *f;
	long i;

	memset(out, 0, sizeof(*out));
	i = s->have_maps ? ml_vma_find(&s->maps, addr) : -1;
	if (i < 0)
		return;
	out->vma = &s->maps.v[i];
	out->path = ml_vma_path(&s->maps, out->vma);
	f = out->path[0] == '/' ? file_syms(s, out->path) : NULL;
	if (!f)
		return;
	out->open_path = f->open_path;
	if (mlt_elf_off_to_vaddr(&f->syms, addr - out->vma->start + out->vma->offset, &out->vaddr))
		return;
	out->have_vaddr = true;
	sym = mlt_elf_syms_at(&f->syms, out->vaddr);
	if (sym) {
		out->sym = sym->name;
		out->sym_vaddr = sym->vaddr;
	} else if (lines(s) && !mlt_srcline_symbol(s->lines, f->open_path, out->vaddr, &out->sym,
						   &out->sym_vaddr)) {
		/* a local function of a stripped file, from its debug file */
	}
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

void mlt_symbolize(struct symbolizer *s, uint64_t addr, char *out, size_t len)
{
	struct sym_info si;
	const char *base;

	mlt_symbolizer_info(s, addr, &si);
	if (!si.vma) {
		snprintf(out, len, "0x%llx", (unsigned long long)addr);
		return;
	}
	base = base_name(si.path);
	if (!si.sym) {
		snprintf(out, len, "0x%llx (%s)", (unsigned long long)addr, *base ? base : "?");
		return;
	}
	snprintf(out, len, "%s+0x%llx (%s)", si.sym, (unsigned long long)(si.vaddr - si.sym_vaddr),
		 base);
}

int mlt_symbolize_frames(struct symbolizer *s, uint64_t ip, struct sym_frame *out, int max)
{
	struct srcline_frame fr[SRCLINE_MAX_INLINE];
	struct sym_info call, at;
	int nf = 0, n;

	memset(out, 0, sizeof(*out) * (size_t)max);
	out[0].addr = ip;
	/* the function and offset of ip itself, as mlt_symbolize() names them */
	mlt_symbolizer_info(s, ip, &at);
	if (!at.vma)
		return 1;
	out[0].object = at.path;
	/* its source line and inlined functions: those of the call at ip - 1 */
	mlt_symbolizer_info(s, ip - 1, &call);
	if (call.vma == at.vma && call.open_path && call.have_vaddr && lines(s))
		nf = mlt_srcline_lookup(s->lines, call.open_path, call.vaddr, fr,
					max < SRCLINE_MAX_INLINE ? max : SRCLINE_MAX_INLINE);
	n = nf ? nf : 1;
	for (int k = 0; k < n; k++) {
		struct sym_frame *f = &out[k];
		bool outer = k == n - 1;

		f->addr = ip;
		f->object = at.path;
		f->inlined = !outer;
		f->func = k < nf ? fr[k].func : NULL;
		f->file = k < nf ? fr[k].file : NULL;
		f->line = k < nf ? fr[k].line : 0;
		if (outer && at.sym) {
			f->func = at.sym;
			f->have_off = true;
			f->off = at.vaddr - at.sym_vaddr;
		}
	}
	return n;
}

void mlt_sym_frame_text(const struct sym_frame *f, char *out, size_t len)
{
	const char *base = f->object ? base_name(f->object) : NULL;
	size_t n;

	if (!f->object)
		n = (size_t)snprintf(out, len, "0x%llx", (unsigned long long)f->addr);
	else if (!f->func)
		n = (size_t)snprintf(out, len, "0x%llx (%s)", (unsigned long long)f->addr,
				     *base ? base : "?");
	else if (f->have_off)
		n = (size_t)snprintf(out, len, "%s+0x%llx (%s)", f->func,
				     (unsigned long long)f->off, base);
	else
		n = (size_t)snprintf(out, len, "%s%s (%s)", f->func, f->inlined ? " [inlined]" : "",
				     base);
	if (f->file && n < len)
		snprintf(out + n, len - n, " at %s:%d", base_name(f->file), f->line);
}

bool mlt_symbolizer_is_code(struct symbolizer *s, uint64_t addr)
{
	long i = s->have_maps ? ml_vma_find(&s->maps, addr) : -1;

	return i >= 0 && s->maps.v[i].perms[2] == 'x';
}

void mlt_symbolizer_free(struct symbolizer *s)
{
	for (size_t i = 0; i < s->nfiles; i++) {
		free(s->files[i].path);
		free(s->files[i].open_path);
		mlt_elf_syms_free(&s->files[i].syms);
	}
	free(s->files);
	mlt_srcline_free(s->lines);
	ml_vma_set_free(&s->maps);
	memset(s, 0, sizeof(*s));
}
