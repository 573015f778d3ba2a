/* SPDX-License-Identifier: MIT */
/* Internal to libmemlens: the record of the options a restore repeats. */
#ifndef MEMLENS_CRIU_RESTORE_OPTS_H
#define MEMLENS_CRIU_RESTORE_OPTS_H

#include "memlens/criu.h"

/*
 * After a successful dump: @dir/memlens-restore-opts.txt with the option
 * of @tcp, those of @extra a restore needs (ml_criu_restore_needs()) and
 * every one of @restore (options only a restore takes), one per line;
 * empty when there are none.
 */
int mli_criu_restore_opts_write(const char *dir, enum ml_criu_tcp tcp, const char *const *extra,
				const char *const *restore, struct ml_err *err);

/*
 * The options of a restore from @dir: the recorded ones (a recorded TCP
 * option only when @r chose none, and none @r passes itself), then @r's
 * TCP option, into @a; what came from the record into @repeated
 * (space-separated). 0 or -ENOMEM.
 */
int mli_criu_restore_opts_add(struct ml_criu_argv *a, const char *dir,
			      const struct ml_criu_restore_req *r, char *repeated, size_t len);

#endif
