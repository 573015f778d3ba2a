/* SPDX-License-Identifier: MIT */
/* User addresses of one process -> "function+0xoff (file)", from its ELF files. */
#ifndef MEMLENS_SYMBOLIZE_H
#define MEMLENS_SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "memlens/maps.h"
#include "elfsym.h"

struct sym_file {
	char *path;
	struct elf_syms syms;
	int loaded; /* 1 ok, -1 failed */
};

struct symbolizer {
	pid_t pid;
	struct vma_set maps; /* the last snapshot that could be read */
	int have_maps;
	struct sym_file *files;
	size_t nfiles;
};

void symbolizer_init(struct symbolizer *s, pid_t pid);
/* Re-read the process's maps; keeps the previous snapshot once it has exited. */
void symbolizer_refresh(struct symbolizer *s);
/* Always writes something: "main+0x1d (leaky)", "0x7f12... (libfoo.so)", "0x1234". */
void symbolize(struct symbolizer *s, uint64_t addr, char *out, size_t len);
/* @addr is in an executable mapping (a plausible return address). */
bool symbolizer_is_code(struct symbolizer *s, uint64_t addr);
void symbolizer_free(struct symbolizer *s);

#endif
