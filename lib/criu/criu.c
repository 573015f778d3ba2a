// SPDX-License-Identifier: MIT
/* Find a CRIU binary and find out what it supports. */
#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "criu_cache.h"
#include "criu_exec.h"
#include "memlens/criu.h"

static int resolve_path(const char *p, char *out, size_t len, struct ml_err *err)
{
	char buf[PATH_MAX];

	if (!realpath(p, buf))
		return ml_err_set(err, errno == ENOENT ? ENOENT : errno,
				  "CRIU binary %s: %s; pass a working CRIU (4.1 or newer) with "
				  "--criu PATH or MEMLENS_CRIU",
				  p, strerror(errno));
	if (access(buf, X_OK) < 0)
		return ml_err_set(err, EACCES, "CRIU binary %s is not executable", buf);
	if ((size_t)snprintf(out, len, "%s", buf) >= len)
		return ml_err_set(err, ENAMETOOLONG, "CRIU path too long: %s", buf);
	return 0;
}

static int search_path(char *out, size_t len, struct ml_err *err)
{
	const char *path = getenv("PATH");
	char cand[PATH_MAX];

	if (!path)
		path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
	while (*path) {
		size_t n = strcspn(path, ":");

		if (n && n < sizeof(cand) - 6) {
			snprintf(cand, sizeof(cand), "%.*s/criu", (int)n, path);
			if (access(cand, X_OK) == 0)
				return resolve_path(cand, out, len, err);
		}
		path += n;
		if (*path == ':')
			path++;
	}
	return ml_err_set(err, ENOENT,
			  "no CRIU found: none given with --criu, MEMLENS_CRIU is not set and "
			  "there is no `criu` on PATH; install CRIU 4.1 or newer (the source "
			  "tree's scripts/ensure-criu.sh builds 4.1.1) and pass it with --criu "
			  "PATH or MEMLENS_CRIU");
}

int ml_criu_locate(const char *explicit_path, const char *fallback, char *out, size_t len,
		   struct ml_err *err)
{
	int r;

	if (explicit_path && *explicit_path)
		return resolve_path(explicit_path, out, len, err);
	r = search_path(out, len, err);
	if (r == -ENOENT && fallback && *fallback && access(fallback, X_OK) == 0)
		return resolve_path(fallback, out, len, err);
	return r;
}

/* Run `criu ARGS...` with the probes' time limit; output into x (caller frees). */
static int run_quick(const char *path, const char *const *args, unsigned int timeout_ms,
		     struct criu_exec *x, struct ml_err *err)
{
	char *argv[8];
	size_t n = 0;

	argv[n++] = (char *)path;
	while (args && *args && n < 7)
		argv[n++] = (char *)*args++;
	argv[n] = NULL;
	memset(x, 0, sizeof(*x));
	x->argv = argv;
	x->timeout_ms = timeout_ms;
	return mli_criu_exec_run(x, err);
}

static void parse_version(const char *out, char *ver, size_t len)
{
	const char *v = out ? strstr(out, "Version:") : NULL;

	ver[0] = '\0';
	if (!v)
		return;
	v += 8;
	while (*v == ' ')
		v++;
	snprintf(ver, len, "%.*s", (int)strcspn(v, " \n"), v);
}

/*
 * The fork's options, each with a harmless value: CRIU parses every option
 * before it looks at the command, so `criu OPTS --version` either prints
 * the version (all accepted) or stops at the first one it does not know
 * ("unrecognized option '--NAME...'"). Detected by acceptance, not by
 * --help: the fork parses --exclude-file without listing it.
 */
static const struct {
	const char *arg, *name;
	size_t off;
} fork_opts[] = {
	{ "--exclude-range=1000:2000", "--exclude-range",
	  offsetof(struct ml_criu_caps, exclude_range) },
	{ "--exclude-file=/dev/null", "--exclude-file",
	  offsetof(struct ml_criu_caps, exclude_file) },
	{ "--no-parent-range=1000:2000", "--no-parent-range",
	  offsetof(struct ml_criu_caps, no_parent_range) },
};
#define NFORK_OPTS (sizeof(fork_opts) / sizeof(fork_opts[0]))

/* Which fork option does @out say is unknown? Its index, or -1. */
static int unrecognized(const char *out)
{
	const char *u = out ? strstr(out, "unrecognized option") : NULL;

	if (!u)
		return -1;
	u += strlen("unrecognized option");
	u += strcspn(u, "-\n");
	for (size_t i = 0; i < NFORK_OPTS; i++) {
		size_t n = strlen(fork_opts[i].name);

		if (!strncmp(u, fork_opts[i].name, n) && !isalnum((unsigned char)u[n]) &&
		    u[n] != '-')
			return (int)i;
	}
	return -1;
}

/* Version and the options CRIU accepts: one quick run, one more per unknown option. */
static int probe_options(const char *path, struct ml_criu_caps *c, unsigned int timeout_ms,
			 struct ml_err *err)
{
	bool tried[NFORK_OPTS] = { false };

	for (size_t round = 0; round <= NFORK_OPTS; round++) {
		const char *args[NFORK_OPTS + 2];
		struct criu_exec x;
		size_t n = 0;
		int ret, bad;

		for (size_t i = 0; i < NFORK_OPTS; i++)
			if (!tried[i])
				args[n++] = fork_opts[i].arg;
		args[n++] = "--version";
		args[n] = NULL;
		ret = run_quick(path, args, timeout_ms, &x, err);
		if (ret)
			return ret;
		if (x.timed_out) {
			c->timed_out = true;
			snprintf(c->check_msg, sizeof(c->check_msg),
				 "`criu --version` did not answer within %u s", timeout_ms / 1000);
			free(x.output);
			return 0;
		}
		bad = x.status ? unrecognized(x.output) : -1;
		if (bad >= 0 && !tried[bad]) {
			tried[bad] = true; /* not accepted: try again without it */
			free(x.output);
			continue;
		}
		parse_version(x.output, c->version, sizeof(c->version));
		free(x.output);
		if (!c->version[0])
			return 0; /* not a CRIU that answers --version: `check` says why */
		for (size_t i = 0; i < NFORK_OPTS; i++)
			*(bool *)((char *)c + fork_opts[i].off) = !tried[i];
		return 0;
	}
	return 0;
}

/*
 * Whether @out, a failed `criu check`, failed only its ns_last_pid check:
 * every check error (cr-check.c's) says the sysctl is inaccessible, as it
 * is where /proc/sys is read-only (in a container).
 */
static bool only_ns_last_pid_failed(const char *out)
{
	static const char check_err[] = "Error (criu/cr-check.c:";
	int n = 0;

	for (const char *l = out; l && *l; l += strcspn(l, "\n"), l += *l == '\n') {
		size_t len = strcspn(l, "\n");
		const char *e = strstr(l, check_err);

		if (!e || e >= l + len)
			continue;
		if (!memmem(l, len, "ns_last_pid sysctl is inaccessible", 34))
			return false;
		n++;
	}
	return n > 0;
}

/*
 * CRIU needs ns_last_pid only where the kernel lacks clone3()'s set_tid
 * (before Linux 5.5): with it, restores set each pid through clone3, and a
 * read-only /proc/sys does not matter. `criu check --feature
 * clone3_set_tid` says which.
 */
static int ns_last_pid_unneeded(const char *path, unsigned int timeout_ms, bool *unneeded,
				struct ml_err *err)
{
	static const char *const set_tid[] = { "check", "--feature", "clone3_set_tid", NULL };
	struct criu_exec x;
	int ret = run_quick(path, set_tid, timeout_ms, &x, err);

	if (ret)
		return ret;
	*unneeded = x.status == 0 && !x.timed_out;
	free(x.output);
	return 0;
}

/*
 * `criu check` (the features CRIU cannot do without), then, when it passes,
 * `criu check --feature mem_dirty_track` (soft-dirty: what pre-dump needs).
 * Not `check --extra`: its many optional probes take minutes in a slow VM.
 */
static int probe_check(const char *path, struct ml_criu_caps *c, unsigned int timeout_ms,
		       struct ml_err *err)
{
	static const char *const check[] = { "check", NULL };
	static const char *const dirty[] = { "check", "--feature", "mem_dirty_track", NULL };
	struct criu_exec x;
	int ret = run_quick(path, check, timeout_ms, &x, err);

	if (ret)
		return ret;
	c->works = x.status == 0 && !x.timed_out;
	c->timed_out = x.timed_out;
	if (x.timed_out) /* slow, not failed: say so, and how long it had */
		snprintf(c->check_msg, sizeof(c->check_msg),
			 "`criu check` did not answer within %u s", timeout_ms / 1000);
	else if (!c->works)
		mli_criu_error_tail(x.output, c->check_msg, sizeof(c->check_msg));
	if (!c->works && !x.timed_out && only_ns_last_pid_failed(x.output)) {
		ret = ns_last_pid_unneeded(path, timeout_ms, &c->works, err);
		if (ret) {
			free(x.output);
			return ret;
		}
		if (c->works)
			c->check_msg[0] = '\0';
	}
	free(x.output);
	if (!c->works)
		return 0;
	ret = run_quick(path, dirty, timeout_ms, &x, err);
	if (ret)
		return ret;
	c->mem_dirty_track = x.status == 0 && !x.timed_out;
	if (x.timed_out) {
		c->timed_out = true;
		snprintf(c->check_msg, sizeof(c->check_msg),
			 "`criu check --feature mem_dirty_track` did not answer within %u s",
			 timeout_ms / 1000);
	}
	free(x.output);
	return 0;
}

bool ml_criu_can_exclude(const struct ml_criu_caps *c)
{
	return c && (c->exclude_range || c->exclude_file);
}

const char *ml_criu_granularity(const struct ml_criu_caps *c)
{
	if (!c) /* the caller passes every option: assume the fork's */
		return "vma";
	if (!ml_criu_can_exclude(c))
		return "none";
	return c->page_granular ? "page" : "vma";
}

/*
 * The project's patches take a PID in a range and say so in --help
 * ("--exclude-range [PID:]START:END"); the fork parses "1:1000:2000" as
 * 1-0x1000 without complaint, so acceptance cannot tell them apart.
 */
static int probe_page_granular(const char *path, struct ml_criu_caps *c, unsigned int timeout_ms,
			       struct ml_err *err)
{
	static const char *const help[] = { "--help", NULL };
	struct criu_exec x;
	int ret;

	if (!c->exclude_range)
		return 0;
	ret = run_quick(path, help, timeout_ms, &x, err);
	if (ret)
		return ret;
	c->page_granular =
		!x.timed_out && x.output && strstr(x.output, "--exclude-range [PID:]START:END");
	free(x.output);
	return 0;
}

void ml_criu_caps_options(const struct ml_criu_caps *c, char *buf, size_t len)
{
	size_t pos = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < NFORK_OPTS; i++) {
		bool on = *(const bool *)((const char *)c + fork_opts[i].off);

		pos += (size_t)snprintf(buf + pos, pos < len ? len - pos : 0, "%s%s %s",
					i ? ", " : "", fork_opts[i].name, on ? "yes" : "no");
	}
}

/* ml_criu_probe_opts() into @c, the library's own struct (zeroed) */
static int probe(const char *path, struct ml_criu_caps *c, const struct ml_criu_probe_opts *opts,
		 struct ml_err *err)
{
	struct ml_criu_probe_opts ov;
	const struct ml_criu_probe_opts *o = &ov;
	unsigned int timeout_ms;
	int ret;

	ret = ml_opts_load(&ov, sizeof(ov), opts, "ml_criu_probe_opts", err);
	if (ret)
		return ret;
	timeout_ms = o->timeout_ms ? o->timeout_ms : ML_CRIU_PROBE_TIMEOUT_MS;
	ret = resolve_path(path, c->path, sizeof(c->path), err);
	if (ret)
		return ret;
	if (o && o->cache_dir && !mli_criu_cache_load(o->cache_dir, c->path, c))
		return 0;
	ret = probe_options(c->path, c, timeout_ms, err);
	if (!ret && !c->timed_out)
		ret = probe_page_granular(c->path, c, timeout_ms, err);
	if (!ret && !c->timed_out)
		ret = probe_check(c->path, c, timeout_ms, err);
	/* a cache that cannot be written only costs the next command a probe */
	if (!ret && o && o->cache_dir)
		mli_criu_cache_store(o->cache_dir, c);
	return ret;
}

/* the fields every caller's struct ml_criu_caps has: up to its last one, cached */
#define CAPS_MIN (offsetof(struct ml_criu_caps, cached) + sizeof(bool))

int ml_criu_probe_opts(const char *path, struct ml_criu_caps *c,
		       const struct ml_criu_probe_opts *opts, struct ml_err *err)
{
	struct ml_criu_caps *v = calloc(1, sizeof(*v));
	int ret;

	if (!v)
		return ml_err_set(err, ENOMEM, "out of memory");
	/* the caller's struct as large as its sz says (memlens/opts.h): cleared, or refused */
	ret = ml_result_store(c, v, sizeof(*v), CAPS_MIN, "ml_criu_caps", err);
	if (!ret) {
		ret = probe(path, v, opts, err);
		ml_result_store(c, v, sizeof(*v), CAPS_MIN, "ml_criu_caps", NULL);
	}
	free(v);
	return ret;
}

int ml_criu_probe(const char *path, struct ml_criu_caps *c, struct ml_err *err)
{
	return ml_criu_probe_opts(path, c, NULL, err);
}
