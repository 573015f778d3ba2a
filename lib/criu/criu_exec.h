/* SPDX-License-Identifier: MIT */
/* Internal to libmemlens: run a CRIU command under a time limit. */
#ifndef MEMLENS_CRIU_EXEC_H
#define MEMLENS_CRIU_EXEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "memlens/criu.h"

struct criu_exec {
	char *const *argv; /* argv[0] is the CRIU binary */
	const struct ml_criu_run_opts *o; /* NULL: defaults */
	unsigned int timeout_ms; /* overrides o->timeout_ms when non-zero */
	/* results */
	int status; /* exit status; -1 when killed by a signal */
	int signal; /* the signal that killed it */
	bool timed_out;
	uint64_t duration_ms;
	char *output; /* stdout+stderr (last 64 KiB), NUL-terminated; free() */
	size_t output_len;
};

/* 0 when CRIU ran (whatever its status); negative errno when it could not run. */
int mli_criu_exec_run(struct criu_exec *x, struct ml_err *err);

/* The same in two steps, for a CRIU that runs on while the caller works. */
struct criu_child {
	pid_t pid;
	int outfd; /* its output */
	uint64_t t0_ms;
};

int mli_criu_exec_start(struct criu_exec *x, struct criu_child *c, struct ml_err *err);
/* Has it not exited yet? (it stays to be collected by mli_criu_exec_wait()) */
bool mli_criu_exec_running(const struct criu_child *c);
/* Wait for it, up to the time limit counted from the start (then killed). */
int mli_criu_exec_wait(struct criu_exec *x, struct criu_child *c, struct ml_err *err);

/* The last lines of @text that mention "Error" (or the last lines), into @buf. */
void mli_criu_error_tail(const char *text, char *buf, size_t len);

/* Do the last @tail bytes of the file @path (a CRIU log) contain @what? */
bool mli_criu_log_tail_has(const char *path, const char *what, size_t tail);

#endif
