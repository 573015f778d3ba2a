/* SPDX-License-Identifier: MIT */
/* Internal to libmemlens: the parts of criu_dump.c the lazy dump reuses. */
#ifndef MEMLENS_CRIU_DUMP_INT_H
#define MEMLENS_CRIU_DUMP_INT_H

#include <sys/types.h>

#include "criu_exec.h"
#include "memlens/criu.h"

void mli_criu_result_init(struct ml_criu_result *res);
int mli_criu_read_pidfile(const char *path, pid_t *pid);
/*
 * The arguments of a detached CRIU command: ACTION in the images directory
 * (resolved into @dir, PATH_MAX), its log and pidfile there, DETACH.
 */
int mli_criu_detached_args(struct ml_criu_argv *a, const struct ml_criu_caps *caps,
			   const char *action, const char *detach, const char *images_dir,
			   const struct ml_criu_run_opts *o, char *dir, char *pidfile,
			   size_t pidfile_len, struct ml_criu_result *res, struct ml_err *err);
/*
 * A (pre-)dump in two halves around running CRIU: the checks and the
 * arguments into @a (@tmpdir, PATH_MAX, "" on entry: a private directory
 * for an exclude file), then its record, stats and clean-up after CRIU
 * returned @ret.
 */
int mli_criu_dump_prepare(const struct ml_criu_caps *caps, const struct ml_criu_dump_req *r,
			  const struct ml_criu_run_opts *o, struct ml_criu_argv *a, char *tmpdir,
			  struct ml_criu_result *res, struct ml_err *err);
int mli_criu_dump_finish(const struct ml_criu_dump_req *r, int ret, char *tmpdir,
			 struct ml_criu_result *res, struct ml_err *err);
/* CRIU's end (mli_criu_exec_wait()) into @res; a failure into an error with
 * CRIU's own words. Frees x->output. */
int mli_criu_exec_report(struct criu_exec *x, const struct ml_criu_run_opts *o, const char *what,
			 struct ml_criu_result *res, struct ml_err *err);

#endif
