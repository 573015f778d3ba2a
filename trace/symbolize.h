/* SPDX-License-Identifier: MIT */
/*
 * User addresses of one process -> "function+0xoff (file)", from its ELF
 * files; with libdw, also the source file:line of each and the functions
 * inlined there (srcline.h).
 */
#ifndef MEMLENS_SYMBOLIZE_H
#define MEMLENS_SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "memlens/maps.h"
#include "elfsym.h"
#include "srcline.h"

struct sym_file {
	char *path;
	char *open_path; /* where it was opened from (/proc/PID/root/..., or path) */
	struct elf_syms syms;
	int loaded; /* 1 ok, -1 failed */
};

struct symbolizer {
	pid_t pid;
	struct ml_vma_set maps; /* the last snapshot that could be read */
	int have_maps;
	struct sym_file *files;
	size_t nfiles;
	const char *debug_dir; /* searched for debug files first; NULL: none */
	struct srcline_cache *lines; /* made at the first lookup */
};

void mlt_symbolizer_init(struct symbolizer *s, pid_t pid);
/* Re-read the process's maps; keeps the previous snapshot once it has exited. */
void mlt_symbolizer_refresh(struct symbolizer *s);
/* Always writes something: "main+0x1d (leaky)", "0x7f12... (libfoo.so)", "0x1234". */
void mlt_symbolize(struct symbolizer *s, uint64_t addr, char *out, size_t len);
/* What is known of one address, for formats that want the parts. */
struct sym_info {
	const struct ml_vma *vma; /* its mapping; NULL: in none */
	const char *path; /* the mapping's name ("" when anonymous) */
	const char *open_path; /* the file as this process can open it, or NULL */
	bool have_vaddr;
	uint64_t vaddr; /* the address as the ELF file numbers it */
	const char *sym; /* the symbol containing it, or NULL */
	uint64_t sym_vaddr;
};
void mlt_symbolizer_info(struct symbolizer *s, uint64_t addr, struct sym_info *out);

/*
 * One frame of a call stack: the function a return address is in, and
 * each function inlined at the call (they come first, innermost first).
 */
struct sym_frame {
	uint64_t addr; /* the return address */
	const char *func; /* NULL: not known */
	bool have_off; /* the function's own frame: addr - the symbol's start */
	uint64_t off;
	const char *object; /* the mapping's path ("" anonymous), NULL: in none */
	const char *file; /* the source file, NULL: not known */
	int line; /* 0: not known */
	bool inlined;
};

/*
 * The frames of return address @ip (its call is at ip - 1), innermost
 * first, at most @max (>= 1): always at least one. The strings belong to
 * @s until mlt_symbolizer_free().
 */
int mlt_symbolize_frames(struct symbolizer *s, uint64_t ip, struct sym_frame *out, int max);
/*
 * A frame as text: "main+0x1d (leaky) at leaky.c:42",
 * "fill [inlined] (leaky) at leaky.c:17", "0x7f12... (libfoo.so)".
 */
void mlt_sym_frame_text(const struct sym_frame *f, char *out, size_t len);

/* @addr is in an executable mapping (a plausible return address). */
bool mlt_symbolizer_is_code(struct symbolizer *s, uint64_t addr);
void mlt_symbolizer_free(struct symbolizer *s);

#endif
