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
	char *open_path; /* where it was opened from (/proc/PID/root/..., or path) */
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
/* What is known of one address, for formats that want the parts. */
struct sym_info {
	const struct vma *vma; /* its mapping; NULL: in none */
	const char *path; /* the mapping's name ("" when anonymous) */
	const char *open_path; /* the file as this process can open it, or NULL */
	bool have_vaddr;
	uint64_t vaddr; /* the address as the ELF file numbers it */
	const char *sym; /* the symbol containing it, or NULL */
	uint64_t sym_vaddr;
};
void symbolizer_info(struct symbolizer *s, uint64_t addr, struct sym_info *out);

/* @addr is in an executable mapping (a plausible return address). */
bool symbolizer_is_code(struct symbolizer *s, uint64_t addr);
void symbolizer_free(struct symbolizer *s);

#endif
