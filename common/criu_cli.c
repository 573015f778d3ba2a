// SPDX-License-Identifier: MIT
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cliutil.h"
#include "command.h"
#include "criu_cli.h"

#ifndef MEMLENS_BUILD_CRIU
#define MEMLENS_BUILD_CRIU ""
#endif

int criu_cli_locate(const char *explicit_path, char *out, size_t len, struct ml_err *err)
{
	const char *env = getenv("MEMLENS_CRIU");

	if (!(explicit_path && *explicit_path) && env && *env)
		explicit_path = env;
	return ml_criu_locate(explicit_path, MEMLENS_BUILD_CRIU, out, len, err);
}

const char *criu_cli_build_criu(void)
{
	return MEMLENS_BUILD_CRIU[0] && access(MEMLENS_BUILD_CRIU, X_OK) == 0 ? MEMLENS_BUILD_CRIU
									      : NULL;
}

const char *criu_cli_cache_dir(char *buf, size_t len)
{
	const char *d = getenv("MEMLENS_CACHE_DIR"), *base;

	if (d && *d)
		return d;
	if (geteuid() == 0)
		return "/var/cache/memlens";
	if ((base = getenv("XDG_CACHE_HOME")) && *base)
		snprintf(buf, len, "%s/memlens", base);
	else if ((base = getenv("HOME")) && *base)
		snprintf(buf, len, "%s/.cache/memlens", base);
	else
		return NULL;
	return buf;
}

/* Probed once per run: every later call with the same CRIU reuses it. */
static struct ml_criu_caps probed;
static bool have_probed;

int criu_cli_setup(const char *cmd, const char *explicit_path, unsigned int timeout_ms,
		   struct ml_criu_caps *caps)
{
	struct ml_err err = { 0 };
	char path[PATH_MAX], dir[PATH_MAX];
	ML_OPTS(ml_criu_probe_opts, po, .timeout_ms = timeout_ms);
	int r;

	po.cache_dir = criu_cli_cache_dir(dir, sizeof(dir));
	r = criu_cli_locate(explicit_path, path, sizeof(path), &err);
	if (!r && have_probed && !strcmp(path, probed.path)) {
		*caps = probed;
	} else if (!r) {
		caps->sz = sizeof(*caps);
		r = ml_criu_probe_opts(path, caps, &po, &err);
		if (!r) {
			probed = *caps;
			have_probed = true;
		}
	}
	if (r) {
		cli_error(cmd, "%s", err.msg);
		return r == -ENOENT || r == -EACCES ? EXIT_NOFEATURE : exit_code_for(r);
	}
	if (caps->timed_out) {
		/*
		 * Slow is not broken: CRIU's own run is bounded by the same time
		 * limit and says what fails. What the probe did not find out
		 * (pre-dump, the exclude options) is not used.
		 */
		cli_error(cmd,
			  "warning: %s (a busy machine?); going on without it: pre-dump and "
			  "CRIU's exclude options are not used. A longer --timeout gives the "
			  "probe more time",
			  caps->check_msg);
		caps->works = true;
		return EXIT_OK;
	}
	if (!caps->works) {
		cli_error(cmd,
			  "the CRIU at %s (version %s) fails `criu check` on this kernel%s%s; "
			  "pass a working CRIU (4.1 or newer) with --criu PATH or MEMLENS_CRIU",
			  caps->path, caps->version[0] ? caps->version : "unknown",
			  caps->check_msg[0] ? ": " : "", caps->check_msg);
		return EXIT_NOFEATURE;
	}
	return EXIT_OK;
}

/* Options memlens itself sets: passing them again would contradict it. */
static const char *const owned_opts[] = {
	"--images-dir",
	"--tree",
	"--pid",
	"--log-file",
	"--work-dir",
	"--exclude-range",
	"--exclude-file",
	"--no-parent-range",
	"--page-server",
	"--address",
	"--port",
	"--leave-running",
	"--prev-images-dir",
	"--shell-job",
	"--restore-detached",
	"--pidfile",
	"--daemon",
	"--verbosity",
	NULL,
};

int criu_cli_opt_fn(void *target, const char *arg, char *why, size_t len)
{
	struct criu_cli_opts *o = target;
	size_t n = strcspn(arg, "=");

	if (strncmp(arg, "--", 2) || n < 3 || strpbrk(arg, " \t\n")) {
		snprintf(why, len,
			 "takes one long CRIU option like --tcp-established or --ext-unix-sk");
		return -1;
	}
	for (int i = 0; owned_opts[i]; i++) {
		if (strlen(owned_opts[i]) == n && !strncmp(arg, owned_opts[i], n)) {
			snprintf(why, len,
				 "cannot pass %.*s: memlens sets %.*s itself (use memlens's own "
				 "option for it)",
				 (int)n, arg, (int)n, arg);
			return -1;
		}
	}
	if (o->n >= CRIU_CLI_MAX_OPTS) {
		snprintf(why, len, "may be given at most %d times", CRIU_CLI_MAX_OPTS);
		return -1;
	}
	o->v[o->n++] = arg;
	o->v[o->n] = NULL;
	return 0;
}

int criu_cli_tcp_fn(void *target, const char *arg, char *why, size_t len)
{
	if (!ml_criu_tcp_parse(arg, target))
		return 0;
	snprintf(why, len, "must be refuse, established or close");
	return -1;
}

int criu_cli_add_opt(const char *cmd, struct criu_cli_opts *o, const char *arg)
{
	char why[256];

	if (!criu_cli_opt_fn(o, arg, why, sizeof(why)))
		return 0;
	cli_error(cmd, "--criu-opt %s, not '%s'", why, arg);
	return EXIT_USAGE;
}

int criu_cli_preflight(const char *cmd, pid_t pid, const struct ml_criu_caps *caps,
		       const struct ml_criu_preflight_opts *o, bool quiet, bool listed,
		       struct ml_criu_preflight *out)
{
	struct ml_criu_preflight_opts x = *o;
	struct ml_err err = { 0 };
	int r;

	x.criu_version = caps ? caps->version : NULL;
	out->sz = sizeof(*out);
	r = ml_criu_preflight(pid, &x, out, &err);
	if (r) {
		cli_error(cmd, "%s", err.msg);
		return exit_code_for(r);
	}
	if (out->nrefused)
		cli_error(cmd,
			  "CRIU would refuse the process tree of pid %d (%zu process%s): %zu "
			  "finding%s %s; CRIU was not run and nothing was frozen",
			  (int)pid, out->nprocs, out->nprocs == 1 ? "" : "es", out->nrefused,
			  out->nrefused == 1 ? "" : "s", listed ? "in the report" : "below");
	for (size_t i = 0; i < out->n && !listed; i++) {
		const struct ml_criu_finding *f = &out->f[i];

		if (f->absorbed && (quiet || out->nrefused))
			continue;
		fprintf(stderr, "%s pid %d (%s): %s\n    %s%s\n", f->absorbed ? "  note:" : " ",
			(int)f->pid, f->comm, f->resource, f->absorbed ? "" : "fix: ", f->fix);
	}
	if (out->nfound > out->n && !listed)
		fprintf(stderr, "  and %zu more\n", out->nfound - out->n);
	return out->nrefused ? EXIT_REFUSED : 0;
}

int criu_cli_check_only(const char *cmd, const struct ml_criu_caps *caps,
			const struct ml_criu_dump_req *req, unsigned int timeout_s, char *hint,
			size_t hint_len)
{
	struct ml_criu_run_opts ro = { .timeout_ms = timeout_s * 1000 };
	struct ml_criu_result *res = calloc(1, sizeof(*res));
	struct ml_err err = { 0 };
	int r;

	if (!res)
		return EXIT_FAIL;
	r = ml_criu_dump_check_only(caps, req, &ro, res, &err);
	if (r == -EOPNOTSUPP) {
		fprintf(stderr, "memlens %s: %s: only memlens's own inspection was done\n", cmd,
			err.msg);
		r = 0;
	} else if (r) {
		cli_error(cmd, "`criu dump --check-only` refused: %s", err.msg);
		if (res->hint[0])
			snprintf(hint, hint_len, "%s", res->hint);
	} else {
		fprintf(stderr, "memlens %s: `criu dump --check-only` found nothing to refuse\n",
			cmd);
	}
	free(res);
	return r == -EIO ? EXIT_REFUSED : r ? exit_code_for(r) : 0;
}
