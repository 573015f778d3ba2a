// SPDX-License-Identifier: MIT
/*
 * Post-copy with CRIU's lazy pages: `criu dump --lazy-pages` run in two
 * halves (its images are complete long before it returns: it serves the
 * lazy pages until the destination fetched them all), `criu lazy-pages`
 * at the destination, and the feature check both need.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <netdb.h>

#include "criu_dump.h"
#include "criu_exec.h"
#include "criu_restore_opts.h"
#include "memlens/clock.h"
#include "memlens/criu.h"

struct ml_criu_lazy_dump {
	struct ml_criu_dump_req req;
	struct ml_criu_run_opts o;
	struct ml_criu_argv a;
	struct criu_exec x;
	struct criu_child c;
	char tmpdir[PATH_MAX];
	char addr[256];
	bool collected;
};

int ml_criu_check_feature(const struct ml_criu_caps *caps, const char *feature,
			  const struct ml_criu_run_opts *o, struct ml_err *err)
{
	char *argv[] = { (char *)caps->path, (char *)"check", (char *)"--feature", (char *)feature,
			 NULL };
	struct ml_criu_run_opts ov;
	struct criu_exec x = { .argv = argv, .o = &ov };
	char why[256];
	int ret = ml_opts_load(&ov, sizeof(ov), o, "ml_criu_run_opts", err);

	if (!ret)
		ret = mli_criu_exec_run(&x, err);
	if (ret)
		return ret;
	if (!x.timed_out && x.status == 0) {
		free(x.output);
		return 0;
	}
	mli_criu_error_tail(x.output, why, sizeof(why));
	free(x.output);
	if (x.timed_out)
		return ml_err_set(err, ETIMEDOUT,
				  "`criu check --feature %s` did not answer within its time limit",
				  feature);
	return ml_err_set(err, EOPNOTSUPP, "`%s check --feature %s` fails: %s", caps->path, feature,
			  why[0] ? why : "no reason given");
}

/* Is a TCP socket of this network namespace listening on @port? */
static bool port_listening(int port)
{
	static const char *const files[] = { "/proc/net/tcp", "/proc/net/tcp6" };
	char line[512];

	for (size_t i = 0; i < 2; i++) {
		FILE *f = fopen(files[i], "re");

		if (!f)
			continue;
		while (fgets(line, sizeof(line), f)) {
			char local[128];
			unsigned int p, st;
			char *colon;

			if (sscanf(line, " %*d: %127s %*s %x", local, &st) != 2)
				continue;
			colon = strrchr(local, ':');
			if (colon && sscanf(colon + 1, "%x", &p) == 1 && (int)p == port &&
			    st == 0x0A) {
				fclose(f);
				return true;
			}
		}
		fclose(f);
	}
	return false;
}

static int read_file(const char *path, char **buf, size_t *len)
{
	FILE *f = fopen(path, "re");
	size_t cap = 1 << 16, n = 0, r;
	char *b = malloc(cap + 1);

	if (!f || !b) {
		int e = f ? ENOMEM : errno;

		free(b);
		if (f)
			fclose(f);
		return -e;
	}
	while ((r = fread(b + n, 1, cap - n, f)) > 0) {
		n += r;
		if (n == cap) {
			char *nb = realloc(b, 2 * cap + 1);

			if (!nb) {
				free(b);
				fclose(f);
				return -ENOMEM;
			}
			b = nb;
			cap *= 2;
		}
	}
	fclose(f);
	b[n] = '\0';
	*buf = b;
	*len = n;
	return 0;
}

/* The page counts (and the freeze) from the dump's own log. */
static void counts_from_log(const char *log, struct ml_criu_result *res, int64_t *frozen_us)
{
	int64_t w, l, h, fz;
	size_t len;
	char *buf;

	*frozen_us = -1;
	if (read_file(log, &buf, &len))
		return;
	if (!ml_criu_parse_dump_log(buf, len, &w, &l, &h, &fz)) {
		res->pages_written = w;
		res->pages_lazy = l;
		res->pages_skipped_parent = h;
		res->pages_scanned = -1;
		*frozen_us = fz;
	}
	free(buf);
}

static int collect(struct ml_criu_lazy_dump *d, struct ml_criu_result *res, struct ml_err *err)
{
	int64_t fz;
	int ret;

	if (d->collected)
		return ml_err_set(err, EALREADY, "the lazy dump was collected already");
	d->collected = true;
	ret = mli_criu_exec_wait(&d->x, &d->c, err);
	if (!ret)
		ret = mli_criu_exec_report(&d->x, &d->o, "dump --lazy-pages", res, err);
	ret = mli_criu_dump_finish(&d->req, ret, d->tmpdir, res, err);
	counts_from_log(res->log_path, res, &fz);
	return ret;
}

static int wait_ready(struct ml_criu_lazy_dump *d, struct ml_criu_lazy_dump_times *t,
		      struct ml_criu_result *res, struct ml_err *err)
{
	uint64_t limit = d->o.timeout_ms ? d->o.timeout_ms : ML_CRIU_DEFAULT_TIMEOUT_MS;

	for (;;) {
		if (!mli_criu_exec_running(&d->c)) {
			int ret = collect(d, res, err);

			return ret ? ret
				   : ml_err_set(err, EPROTO,
						"criu dump --lazy-pages ended without serving the "
						"lazy pages; see its log %s",
						res->log_path);
		}
		if (mli_criu_log_tail_has(res->log_path, "Starting lazy pages server", 65535) &&
		    port_listening(d->req.lazy_port))
			break;
		if (ml_mono_ms() - d->c.t0_ms > limit)
			break; /* collect() kills it: the time limit passed */
		usleep(10000);
	}
	if (ml_mono_ms() - d->c.t0_ms > limit)
		return collect(d, res, err) ?: -ETIMEDOUT;
	t->start_ms = d->c.t0_ms;
	t->ready_ms = ml_mono_ms() - d->c.t0_ms;
	{
		struct ml_criu_result tmp;

		memset(&tmp, 0, sizeof(tmp));
		counts_from_log(res->log_path, &tmp, &t->frozen_ms);
		if (t->frozen_ms >= 0)
			t->frozen_ms /= 1000;
	}
	return 0;
}

int ml_criu_lazy_dump_start(const struct ml_criu_caps *caps, const struct ml_criu_dump_req *req,
			    const struct ml_criu_run_opts *o, struct ml_criu_lazy_dump **out,
			    struct ml_criu_lazy_dump_times *t, struct ml_criu_result *res,
			    struct ml_err *err)
{
	struct ml_criu_lazy_dump *d;
	struct ml_criu_run_opts ov;
	int ret;

	*out = NULL;
	memset(t, 0, sizeof(*t));
	t->frozen_ms = -1;
	ret = ml_opts_load(&ov, sizeof(ov), o, "ml_criu_run_opts", err);
	if (ret)
		return ret;
	o = &ov;
	if (req->pre_dump || req->lazy_port <= 0 || !req->lazy_addr)
		return ml_err_set(err, EINVAL,
				  "a lazy dump needs the address and port of its page server, "
				  "and is no pre-dump");
	d = calloc(1, sizeof(*d));
	if (!d)
		return ml_err_set(err, ENOMEM, "out of memory");
	d->req = *req;
	if (o)
		d->o = *o;
	if (req->timeout_ms)
		d->o.timeout_ms = req->timeout_ms;
	snprintf(d->addr, sizeof(d->addr), "%s", req->lazy_addr);
	d->req.lazy_addr = d->addr;
	ml_criu_argv_init(&d->a);
	ret = mli_criu_dump_prepare(caps, &d->req, &d->o, &d->a, d->tmpdir, res, err);
	if (ret) {
		mli_criu_dump_finish(&d->req, ret, d->tmpdir, res, err);
		ml_criu_lazy_dump_free(d);
		return ret;
	}
	d->x = (struct criu_exec){ .argv = d->a.v, .o = &d->o };
	ret = mli_criu_exec_start(&d->x, &d->c, err);
	if (ret) {
		d->collected = true;
		ml_criu_lazy_dump_free(d);
		return ret;
	}
	ret = wait_ready(d, t, res, err);
	/* the images go as soon as they are complete: with what their
	 * restore must repeat (written again when the dump ends) */
	if (!ret)
		ret = mli_criu_restore_opts_write(d->req.images_dir, d->req.tcp, d->req.extra_args,
						  d->req.restore_args, err);
	if (ret) {
		ml_criu_lazy_dump_free(d); /* a server still waiting is made to fail */
		return ret;
	}
	*out = d;
	return 0;
}

int ml_criu_lazy_dump_wait(struct ml_criu_lazy_dump *d, struct ml_criu_result *res,
			   struct ml_err *err)
{
	return collect(d, res, err);
}

int ml_criu_lazy_dump_abort(struct ml_criu_lazy_dump *d, struct ml_criu_result *res,
			    struct ml_err *err)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai = NULL;
	char port[16];

	snprintf(port, sizeof(port), "%d", d->req.lazy_port);
	if (!d->collected && !getaddrinfo(d->addr, port, &hints, &ai)) {
		int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);

		/* shorter than any request: CRIU's server fails on it */
		if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
		    write(fd, "x", 1) < 0)
			(void)0;
		if (fd >= 0)
			close(fd);
		freeaddrinfo(ai);
	}
	return collect(d, res, err);
}

void ml_criu_lazy_dump_free(struct ml_criu_lazy_dump *d)
{
	if (!d)
		return;
	if (!d->collected) {
		struct ml_criu_result res;
		struct ml_err e;

		/* never left running: a server nobody reached fails, the tree
		 * is given back */
		ml_criu_lazy_dump_abort(d, &res, &e);
	}
	ml_criu_argv_free(&d->a);
	free(d);
}

int ml_criu_lazy_pages_start(const struct ml_criu_caps *caps,
			     const struct ml_criu_lazy_pages_req *r,
			     const struct ml_criu_run_opts *o, pid_t *pid,
			     struct ml_criu_result *res, struct ml_err *err)
{
	char dir[PATH_MAX], pidfile[PATH_MAX + 24];
	struct ml_criu_run_opts ro;
	struct ml_criu_argv a;
	int ret;

	mli_criu_result_init(res);
	*pid = 0;
	ret = ml_opts_load(&ro, sizeof(ro), o, "ml_criu_run_opts", err);
	if (ret)
		return ret;
	ro.log_level = 4; /* every fault and copy, with its time */
	ml_criu_argv_init(&a);
	ret = mli_criu_detached_args(&a, caps, "lazy-pages", "--daemon", r->images_dir, &ro, dir,
				     pidfile, sizeof(pidfile), res, err);
	if (ret)
		goto out;
	ret = ml_criu_argv_add(&a, "--page-server");
	if (!ret)
		ret = ml_criu_argv_addf(&a, "--address=%s", r->addr);
	if (!ret)
		ret = ml_criu_argv_addf(&a, "--port=%d", r->port);
	if (ret) {
		ret = ml_err_set(err, ENOMEM, "out of memory");
		goto out;
	}
	{
		struct criu_exec x = { .argv = a.v, .o = &ro };

		ml_criu_argv_format(&a, res->cmdline, sizeof(res->cmdline));
		ret = mli_criu_exec_run(&x, err);
		if (!ret)
			ret = mli_criu_exec_report(&x, &ro, "lazy-pages", res, err);
	}
	if (!ret && mli_criu_read_pidfile(pidfile, pid))
		ret = ml_err_set(err, EIO, "criu lazy-pages started but wrote no pid into %s",
				 pidfile);
out:
	ml_criu_argv_free(&a);
	return ret;
}

int ml_criu_read_lazy_log(const char *path, struct ml_criu_lazy_stats *st, struct ml_err *err)
{
	size_t len;
	char *buf;
	int ret = read_file(path, &buf, &len);

	if (ret)
		return ml_err_set(err, -ret, "cannot read the lazy-pages log %s: %s", path,
				  strerror(-ret));
	ret = ml_criu_parse_lazy_log(buf, len, st); /* @st's sz: the caller's */
	free(buf);
	if (ret)
		return ml_err_set(err, EINVAL, "%s is not the log of a `criu lazy-pages -v4`",
				  path);
	return 0;
}
