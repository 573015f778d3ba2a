/* SPDX-License-Identifier: MIT */
/* The probe cache of ml_criu_probe_opts() (lib/criu/criu_cache.c). */
#ifndef MEMLENS_CRIU_CACHE_H
#define MEMLENS_CRIU_CACHE_H

#include "memlens/criu.h"

/*
 * Fill @c (but its path) from @dir's answer for the binary at @path (absolute) on this
 * kernel: 0, or -ENOENT (none), -ESTALE (another binary or kernel), -EPERM
 * (not the caller's, or writable by others: ignored), -errno.
 */
int mli_criu_cache_load(const char *dir, const char *path, struct ml_criu_caps *c);
/* Keep @c in @dir (created 0700) when it passed; 0 or -errno. */
int mli_criu_cache_store(const char *dir, const struct ml_criu_caps *c);

#endif
