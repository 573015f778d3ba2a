/* SPDX-License-Identifier: MIT */
/* Shared by `memlens checkpoint` and `memlens restore`: choose and probe CRIU. */
#ifndef MEMLENS_CRIU_CLI_H
#define MEMLENS_CRIU_CLI_H

#include <stdio.h>

#include "memlens/criu.h"
#include "memlens/criu_preflight.h"

/*
 * Which CRIU the command-line tools and the agent use: --criu PATH, else
 * $MEMLENS_CRIU, else `criu` on $PATH, else the CRIU this build was told
 * about at build time (MEMLENS_BUILD_CRIU, the Makefile's BUILD_CRIU: the
 * one scripts/ensure-criu.sh builds for the source tree; empty for an
 * installed build). 0 or -errno with @err set.
 */
int criu_cli_locate(const char *explicit_path, char *out, size_t len, struct ml_err *err);

/* The CRIU this build was told about (see above) when it is there and executable, else NULL. */
const char *criu_cli_build_criu(void);

/*
 * Where the answers of CRIU probes that passed are kept between runs:
 * $MEMLENS_CACHE_DIR, else /var/cache/memlens for root, else
 * $XDG_CACHE_HOME/memlens or ~/.cache/memlens (in @buf). NULL when none
 * can be named.
 */
const char *criu_cli_cache_dir(char *buf, size_t len);

/*
 * Locate CRIU (criu_cli_locate()), probe it, each probe bounded by
 * @timeout_ms (the command's --timeout), and require `criu check` to pass.
 * A probe that did not answer in time is a warning, not a failure. A probe
 * that passed is remembered per CRIU binary and kernel (ml_criu_probe_opts()'s
 * cache_dir: $MEMLENS_CACHE_DIR, /var/cache/memlens for root, else the
 * user's cache directory). Prints the error; returns an exit code.
 */
int criu_cli_setup(const char *cmd, const char *explicit_path, unsigned int timeout_ms,
		   struct ml_criu_caps *caps);

/* Up to CRIU_CLI_MAX_OPTS --criu-opt values, NULL-terminated for extra_args. */
#define CRIU_CLI_MAX_OPTS 16
struct criu_cli_opts {
	const char *v[CRIU_CLI_MAX_OPTS + 1];
	int n;
};

/*
 * Take one --criu-opt value (one CRIU option, "--name" or "--name=value").
 * Refuses options memlens sets itself (images dir, pid, logs, exclusion,
 * page server, leave-running, parent, shell-job). Prints the error;
 * returns 0 or EXIT_USAGE.
 */
int criu_cli_add_opt(const char *cmd, struct criu_cli_opts *o, const char *arg);

/*
 * The same for the option parser (opts.h CLI_FUNC, @target a struct
 * criu_cli_opts): 0, or -1 with @why filled in.
 */
int criu_cli_opt_fn(void *target, const char *arg, char *why, size_t len);

/*
 * --tcp POLICY for the option parser (@target an enum ml_criu_tcp): refuse,
 * established or close. 0, or -1 with @why filled in.
 */
int criu_cli_tcp_fn(void *target, const char *arg, char *why, size_t len);

/*
 * Before anything is frozen: what CRIU would refuse in @pid's tree
 * (ml_criu_preflight() with @o, the version of @caps). When it would, every
 * finding goes to stderr (process, resource, what fixes it) and the result
 * is EXIT_REFUSED; otherwise 0, the findings that an option takes care of
 * said as notes (unless @quiet). With @listed the caller's own report on
 * stdout lists them (--check-only in text): stderr then gets one line that
 * says so. Another error: its message and exit code.
 */
int criu_cli_preflight(const char *cmd, pid_t pid, const struct ml_criu_caps *caps,
		       const struct ml_criu_preflight_opts *o, bool quiet, bool listed,
		       struct ml_criu_preflight *out);

/*
 * --check-only: `criu dump --check-only` of @req's tree when this CRIU has
 * it (else said so on stderr, and not an error). Returns an exit code:
 * EXIT_REFUSED when CRIU refused, with its reasons.
 */
int criu_cli_check_only(const char *cmd, const struct ml_criu_caps *caps,
			const struct ml_criu_dump_req *req, unsigned int timeout_s, char *hint,
			size_t hint_len);

/* The help of --check-only, the same for checkpoint and migrate. */
#define CRIU_CLI_CHECK_ONLY_HELP                                                                   \
	"look for what CRIU would refuse (sockets, terminals, tracers, file locks, "               \
	"file descriptors, SysV IPC; then `criu dump --check-only` when this CRIU has it) "        \
	"and exit: nothing is profiled or frozen"

/* The help of --tcp, the same for every command that dumps. */
#define CRIU_CLI_TCP_HELP                                                                          \
	"established TCP connections: refuse (the default: a tree with any is not "                \
	"checkpointed), established (kept, for a restore where the addresses move too) "           \
	"or close (restored closed); the restore repeats it"

#endif
