// SPDX-License-Identifier: MIT
/* leaks --sample -- CMD: an allocator in the program itself (trace/preload.h). */
#include <stdio.h>

#include "elfsym.h"
#include "preload.h"

void mlt_preload_own_allocator(const char *path, char *name, size_t len)
{
	static const char *const names[] = { "malloc",	  "free",      "je_malloc", "je_free",
					     "tc_malloc", "tc_free",   "mallocx",   "je_mallocx",
					     "dallocx",	  "je_dallocx" };
	struct elf_syms syms;
	uint64_t va;

	name[0] = 0;
	if (mlt_elf_syms_load(path, &syms, NULL))
		return;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && !name[0]; i++)
		if (!mlt_elf_syms_find(&syms, names[i], &va) && va)
			snprintf(name, len, "%s", names[i]);
	mlt_elf_syms_free(&syms);
}
