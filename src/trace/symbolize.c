// SPDX-License-Identifier: MIT
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize.h"

void symbolizer_init(struct symbolizer *s, pid_t pid)
{
	memset(s, 0, sizeof(*s));
	s->pid = pid;
	ml_vma_set_init(&s->maps);
}

void symbolizer_refresh(struct symbolizer *s)
{
	struct vma_set fresh;

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
	if (!elf_syms_load(proc_path, &f->syms, NULL))
		f->open_path = strdup(proc_path);
	else if (!elf_syms_load(path, &f->syms, NULL))
		f->open_path = strdup(path);
	f->loaded = f->open_path ? 1 : -1;
	return f->loaded > 0 ? f : NULL;
}

void symbolizer_info(struct symbolizer *s, uint64_t addr, struct sym_info *out)
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
	if (elf_off_to_vaddr(&f->syms, addr - out->vma->start + out->vma->offset, &out->vaddr))
		return;
	out->have_vaddr = true;
	sym = elf_syms_at(&f->syms, out->vaddr);
	if (sym) {
		out->sym = sym->name;
		out->sym_vaddr = sym->vaddr;
	}
}

void symbolize(struct symbolizer *s, uint64_t addr, char *out, size_t len)
{
	const struct elf_sym *sym;
	const struct vma *v;
	struct sym_file *f;
	const char *path, *base;
	uint64_t vaddr;
	long i;

	i = s->have_maps ? ml_vma_find(&s->maps, addr) : -1;
	if (i < 0) {
		snprintf(out, len, "0x%llx", (unsigned long long)addr);
		return;
	}
	v = &s->maps.v[i];
	path = ml_vma_path(&s->maps, v);
	base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	f = path[0] == '/' ? file_syms(s, path) : NULL;
	if (!f || elf_off_to_vaddr(&f->syms, addr - v->start + v->offset, &vaddr) ||
	    !(sym = elf_syms_at(&f->syms, vaddr))) {
		snprintf(out, len, "0x%llx (%s)", (unsigned long long)addr, *base ? base : "?");
		return;
	}
	snprintf(out, len, "%s+0x%llx (%s)", sym->name, (unsigned long long)(vaddr - sym->vaddr),
		 base);
}

bool symbolizer_is_code(struct symbolizer *s, uint64_t addr)
{
	long i = s->have_maps ? ml_vma_find(&s->maps, addr) : -1;

	return i >= 0 && s->maps.v[i].perms[2] == 'x';
}

void symbolizer_free(struct symbolizer *s)
{
	for (size_t i = 0; i < s->nfiles; i++) {
		free(s->files[i].path);
		free(s->files[i].open_path);
		elf_syms_free(&s->files[i].syms);
	}
	free(s->files);
	ml_vma_set_free(&s->maps);
	memset(s, 0, sizeof(*s));
}
