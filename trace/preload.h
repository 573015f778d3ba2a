/* SPDX-License-Identifier: MIT */
/*
 * leaks --sample -- CMD: whether CMD can be given the preloaded sampler
 * (trace/preload/sample.c), where the sampler is, and CMD's LD_PRELOAD
 * with it. No state; nothing printed.
 */
#ifndef MEMLENS_TRACE_PRELOAD_H
#define MEMLENS_TRACE_PRELOAD_H

#include <stddef.h>
#include <stdint.h>

#define MLT_SAMPLER_SO "libmemlens-sample.so"
/* the variable the sampler reads its mean distance in bytes from */
#define MLT_SAMPLER_ENV "MEMLENS_SAMPLE_BYTES"

enum mlt_exec_kind {
	MLT_EXEC_DYNAMIC, /* the dynamic loader starts it: LD_PRELOAD is honoured */
	MLT_EXEC_STATIC, /* no dynamic loader */
	MLT_EXEC_SECURE, /* setuid, setgid or file capabilities: the loader ignores LD_PRELOAD */
	MLT_EXEC_FOREIGN, /* another ELF class or machine than memlens's */
	MLT_EXEC_UNKNOWN, /* not found, not readable, not ELF */
};

/*
 * What the kernel would run for @cmd as execvp() finds it on $PATH (a
 * script's interpreter, one level), with the reason in @why (@len bytes)
 * for anything but MLT_EXEC_DYNAMIC. @elf (NULL, or PATH_MAX bytes): the
 * ELF file examined.
 */
enum mlt_exec_kind mlt_preload_exec_kind(const char *cmd, char *elf, char *why, size_t len);

/*
 * Does the ELF file @path define an allocator of its own (malloc or free,
 * or jemalloc's or tcmalloc's prefixed names)? Its calls to it would not
 * reach a preloaded malloc: the name found into @name, else "".
 * (trace/preload_elf.c)
 */
void mlt_preload_own_allocator(const char *path, char *name, size_t len);

/* The file execvp() runs for @cmd, into @out: 0, or -ENOENT. */
int mlt_preload_which(const char *cmd, char *out, size_t len);

/* LD_PRELOAD = @so, then @old (NULL or ""), into @out: 0, or -ENAMETOOLONG. */
int mlt_preload_env(const char *old, const char *so, char *out, size_t len);

/*
 * The sampler: MLT_SAMPLER_SO in @exe_dir (memlens's build tree), else in
 * @installed_dir (where make install puts it): its canonical path into
 * @out. 0, or -ENOENT.
 */
int mlt_preload_find(const char *exe_dir, const char *installed_dir, char *out, size_t len);

/*
 * A process started with the sampler: in its environment @env (@len bytes,
 * NUL-separated, as /proc/PID/environ), an LD_PRELOAD naming
 * MLT_SAMPLER_SO (its path into @so) and MLT_SAMPLER_ENV (its rate into
 * *@rate). 0, or -ENOENT when either is missing.
 */
int mlt_preload_from_environ(const char *env, size_t len, char *so, size_t solen, uint64_t *rate);

/*
 * The end of @path's loaded image: the highest p_vaddr + p_memsz of its
 * PT_LOAD segments, into *@end. 0, or -errno (-ENOEXEC: not an ELF file
 * of ours with a loadable segment).
 */
int mlt_preload_image_end(const char *path, uint64_t *end);

#endif
