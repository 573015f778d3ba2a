// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elfsym.h"

static int cmp_sym(const void *a, const void *b)
{
	const struct elf_sym *x = a, *y = b;

	return x->vaddr < y->vaddr ? -1 : x->vaddr > y->vaddr;
}

static int grow(struct elf_syms *s, size_t *cap, size_t need_strs, size_t *scap)
{
	if (s->n == *cap) {
		size_t c = *cap ? *cap * 2 : 1024;
		struct elf_sym *v = realloc(s->v, c * sizeof(*v));

		if (!v)
			return -ENOMEM;
		s->v = v;
		*cap = c;
	}
	if (s->strs_len + need_strs > *scap) {
		size_t c = (*scap ? *scap * 2 : 65536) + need_strs;
		char *p = realloc(s->strs, c);

		if (!p)
			return -ENOMEM;
		s->strs = p;
		*scap = c;
	}
	return 0;
}

/* Names are stored as offsets first (strs moves while it grows). */
static int read_symtab(Elf *elf, Elf_Scn *scn, GElf_Shdr *sh, struct elf_syms *s)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t cap = 0, scap = 0, nsyms;

	if (!d || !sh->sh_entsize)
		return -EINVAL;
	nsyms = sh->sh_size / sh->sh_entsize;
	for (size_t i = 0; i < nsyms; i++) {
		GElf_Sym sym;
		const char *name;
		size_t len;

		if (!gelf_getsym(d, (int)i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
		    !sym.st_value || sym.st_shndx == SHN_UNDEF)
			continue;
		name = elf_strptr(elf, sh->sh_link, sym.st_name);
		if (!name || !*name)
			continue;
		len = strlen(name) + 1;
		if (grow(s, &cap, len, &scap))
			return -ENOMEM;
		memcpy(s->strs + s->strs_len, name, len);
		s->v[s->n].vaddr = sym.st_value;
		s->v[s->n].size = sym.st_size;
		s->v[s->n].name = (const char *)(uintptr_t)s->strs_len;
		s->strs_len += len;
		s->n++;
	}
	return 0;
}

static void read_segments(Elf *elf, struct elf_syms *s)
{
	size_t n = 0;

	if (elf_getphdrnum(elf, &n))
		return;
	for (size_t i = 0; i < n && s->nseg < 16; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		s->seg[s->nseg].vaddr = ph.p_vaddr;
		s->seg[s->nseg].off = ph.p_offset;
		s->seg[s->nseg].filesz = ph.p_filesz;
		s->nseg++;
	}
}

static Elf_Scn *find_section(Elf *elf, Elf64_Word type, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, sh) && sh->sh_type == type)
			return scn;
	return NULL;
}

int mlt_elf_syms_load(const char *path, struct elf_syms *out, struct ml_err *err)
{
	GElf_Shdr sh;
	Elf_Scn *scn;
	Elf *elf = NULL;
	int fd, e = 0;

	memset(out, 0, sizeof(*out));
	if (elf_version(EV_CURRENT) == EV_NONE)
		return ml_err_set(err, ENOTSUP, "libelf: %s", elf_errmsg(-1));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return ml_err_set(err, errno, "cannot open %s: %s", path, strerror(errno));
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		e = ml_err_set(err, ENOEXEC, "%s is not an ELF file", path);
		goto out;
	}
	read_segments(elf, out);
	scn = find_section(elf, SHT_SYMTAB, &sh);
	if (!scn)
		scn = find_section(elf, SHT_DYNSYM, &sh);
	if (scn && read_symtab(elf, scn, &sh, out)) {
		e = ml_err_set(err, ENOMEM, "out of memory reading the symbols of %s", path);
		goto out;
	}
	for (size_t i = 0; i < out->n; i++)
		out->v[i].name = out->strs + (uintptr_t)out->v[i].name;
	if (out->n)
		qsort(out->v, out->n, sizeof(*out->v), cmp_sym);
out:
	if (elf)
		elf_end(elf);
	close(fd);
	if (e)
		mlt_elf_syms_free(out);
	return e;
}

bool mlt_elf_exports(const char *path, const char *const *names, int n)
{
	unsigned int found = 0, all = (1u << n) - 1;
	Elf_Data *d;
	GElf_Shdr sh;
	Elf_Scn *scn;
	Elf *elf;
	int fd;

	if (n < 1 || n > 31 || elf_version(EV_CURRENT) == EV_NONE)
		return false;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	scn = elf && elf_kind(elf) == ELF_K_ELF ? find_section(elf, SHT_DYNSYM, &sh) : NULL;
	d = scn && sh.sh_entsize ? elf_getdata(scn, NULL) : NULL;
	for (size_t i = 0; d && found != all && i < sh.sh_size / sh.sh_entsize; i++) {
		GElf_Sym sym;
		const char *nm;
		int bind;

		if (!gelf_getsym(d, (int)i, &sym) || sym.st_shndx == SHN_UNDEF ||
		    (GELF_ST_TYPE(sym.st_info) != STT_FUNC &&
		     GELF_ST_TYPE(sym.st_info) != STT_GNU_IFUNC))
			continue;
		bind = GELF_ST_BIND(sym.st_info);
		nm = elf_strptr(elf, sh.sh_link, sym.st_name);
		if ((bind != STB_GLOBAL && bind != STB_WEAK) || !nm)
			continue;
		for (int k = 0; k < n; k++)
			if (!strcmp(nm, names[k]))
				found |= 1u << k;
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return found == all;
}

void mlt_elf_syms_free(struct elf_syms *s)
{
	free(s->v);
	free(s->strs);
	memset(s, 0, sizeof(*s));
}

const struct elf_sym *mlt_elf_syms_at(const struct elf_syms *s, uint64_t vaddr)
{
	size_t lo = 0, hi = s->n;

	while (lo < hi) { /* last symbol with vaddr <= @vaddr */
		size_t mid = (lo + hi) / 2;

		if (s->v[mid].vaddr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	lo--;
	/* size 0 (hand-written asm): accept up to 4 KiB past the start */
	if (vaddr < s->v[lo].vaddr + (s->v[lo].size ? s->v[lo].size : 4096))
		return &s->v[lo];
	return NULL;
}

int mlt_elf_syms_find(const struct elf_syms *s, const char *name, uint64_t *vaddr)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->v[i].name, name)) {
			*vaddr = s->v[i].vaddr;
			return 0;
		}
	return -ENOENT;
}

int mlt_elf_vaddr_to_off(const struct elf_syms *s, uint64_t vaddr, uint64_t *off)
{
	for (int i = 0; i < s->nseg; i++)
		if (vaddr >= s->seg[i].vaddr && vaddr < s->seg[i].vaddr + s->seg[i].filesz) {
			*off = vaddr - s->seg[i].vaddr + s->seg[i].off;
			return 0;
		}
	return -ENOENT;
}

int mlt_elf_off_to_vaddr(const struct elf_syms *s, uint64_t off, uint64_t *vaddr)
{
	for (int i = 0; i < s->nseg; i++)
		if (off >= s->seg[i].off && off < s->seg[i].off + s->seg[i].filesz) {
			*vaddr = off - s->seg[i].off + s->seg[i].vaddr;
			return 0;
		}
	return -ENOENT;
}
