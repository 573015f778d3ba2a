/* SPDX-License-Identifier: MIT */
/* ELF function symbols of one file (libelf): by name, and by address. */
#ifndef MEMLENS_ELFSYM_H
#define MEMLENS_ELFSYM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memlens/err.h"

struct elf_sym {
	uint64_t vaddr, size;
	const char *name; /* into elf_syms.strs */
};

struct elf_seg {
	uint64_t vaddr, off, filesz;
};

struct elf_syms {
	struct elf_sym *v; /* sorted by vaddr */
	size_t n;
	char *strs;
	size_t strs_len;
	struct elf_seg seg[16]; /* PT_LOAD segments */
	int nseg;
};

/* Function symbols of .symtab, or of .dynsym when the file is stripped. */
int mlt_elf_syms_load(const char *path, struct elf_syms *out, struct ml_err *err);
void mlt_elf_syms_free(struct elf_syms *s);
/* Does @path export (define in .dynsym) every function of @names[0..n)? One pass. */
bool mlt_elf_exports(const char *path, const char *const *names, int n);
/* The function containing @vaddr, or NULL. */
const struct elf_sym *mlt_elf_syms_at(const struct elf_syms *s, uint64_t vaddr);
/* The address of function @name: 0 or -ENOENT. */
int mlt_elf_syms_find(const struct elf_syms *s, const char *name, uint64_t *vaddr);
/* vaddr <-> file offset through the PT_LOAD segments: 0 or -ENOENT. */
int mlt_elf_vaddr_to_off(const struct elf_syms *s, uint64_t vaddr, uint64_t *off);
int mlt_elf_off_to_vaddr(const struct elf_syms *s, uint64_t off, uint64_t *vaddr);

#endif
