// SPDX-License-Identifier: MIT
/*
 * Post-copy, the source side: the final dump leaves private anonymous
 * pages at the source (`criu dump --lazy-pages`, run asynchronously: it
 * serves them itself and returns only once the destination fetched every
 * one), its images go over the control connection as soon as they are
 * complete, the destination restores the tree and fetches the rest.
 * CRIU leaves the tree stopped here (--leave-stopped) until then: killed
 * once every page arrived, resumed if anything failed.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "memlens/clock.h"
#include "memlens/proc.h"
#include "migrate_src.h"

#define TREE_MAX 4096
/* the pipe CRIU's lazy page server reads through (its PIPE_MAX_SIZE pages) */
#define LAZY_PIPE_BYTES (819 * 4096)

/* Can this process grow a pipe as CRIU's lazy page server does? */
static int lazy_pipe_ok(void)
{
	int p[2], ret = 0;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	if (fcntl(p[0], F_SETPIPE_SZ, LAZY_PIPE_BYTES) < 0)
		ret = -errno;
	close(p[0]);
	close(p[1]);
	return ret;
}

int mli_migrate_postcopy_precheck(const struct ml_migrate_opts *o, char *why, size_t len)
{
	char host[256], path[64], line[256];
	int port = 0;
	bool own_ns = false;
	FILE *f;

	/* without pre-dumps (-m 0) the lazy dump has no parent to track against */
	if (!o->caps->mem_dirty_track && o->max_rounds > 0) {
		snprintf(
			why, len,
			"--postcopy needs soft-dirty page tracking on this machine, which this "
			"kernel lacks (`%s check --feature mem_dirty_track` fails): the lazy final "
			"dump works from its pre-dumps. Nothing was frozen; migrate with -m 0 "
			"(post-copy without pre-dumps) or without --postcopy (one stop-and-copy "
			"dump)",
			o->caps->path);
		return -EOPNOTSUPP;
	}
	if (lazy_pipe_ok()) {
		snprintf(why, len,
			 "--postcopy needs pipes of %d KiB for CRIU's lazy page server, above "
			 "fs.pipe-max-size, which only CAP_SYS_RESOURCE may exceed (without it "
			 "CRIU fails serving the first page); nothing was frozen. Run with "
			 "CAP_SYS_RESOURCE, or raise /proc/sys/fs/pipe-max-size to %d",
			 LAZY_PIPE_BYTES / 1024, 4 << 20);
		return -EPERM;
	}
	if (!mli_mig_is_dir_dest(o->to, &port, host, sizeof(host)))
		return 0;
	/* NSpid: the tree's root in its own PID namespace reads "... 1" */
	snprintf(path, sizeof(path), "/proc/%d/status", (int)o->pid);
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "NSpid:", 6)) {
			char *last = strrchr(line, '\t');

			own_ns = last && last != strchr(line, '\t') && atoi(last + 1) == 1;
		}
	if (f)
		fclose(f);
	if (own_ns)
		return 0;
	snprintf(why, len,
		 "--postcopy to a directory on this machine would restore pid %d into this "
		 "PID namespace, where the tree keeps its PIDs, stopped, until every page has "
		 "arrived; nothing was frozen. Migrate to a `memlens migrate --receive` on "
		 "another machine or in another PID namespace, or start the tree in its own "
		 "PID namespace (`unshare --pid --fork`)",
		 (int)o->pid);
	return -EINVAL;
}

int mli_mig_postcopy_check(struct mig *m)
{
	char ans[512];
	int ret = mli_wire_send(&m->w, "CANLAZY");

	if (!ret)
		ret = mli_wire_recv(&m->w, ans, sizeof(ans));
	if (ret) {
		snprintf(m->res->error, sizeof(m->res->error),
			 "the destination closed the connection");
		return ret;
	}
	if (!strncmp(ans, "OK", 2))
		return 0;
	snprintf(m->res->error, sizeof(m->res->error),
		 "the destination cannot take post-copy: %s. Nothing was frozen; migrate "
		 "without --postcopy",
		 strncmp(ans, "ERR ", 4) ? ans : ans + 4);
	return -EOPNOTSUPP;
}

/* The address of this side of the control connection: where the destination reaches us. */
static int local_addr(struct mig *m, char *buf, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	if (getsockname(fileno(m->w.out), (struct sockaddr *)&ss, &sl) < 0)
		return -errno;
	return getnameinfo((struct sockaddr *)&ss, sl, buf, (socklen_t)len, NULL, 0, NI_NUMERICHOST)
		       ? -EADDRNOTAVAIL
		       : 0;
}

static void signal_tree(const pid_t *p, size_t n, int sig)
{
	for (size_t i = 0; i < n; i++)
		kill(p[i], sig);
}

struct post {
	struct mig *m;
	struct ml_migrate_round *r;
	struct ml_criu_lazy_dump *d;
	struct ml_criu_lazy_dump_times t;
	struct ml_criu_result *cres;
	struct ml_err err;
	char addr[256], dir[PATH_MAX], parent[PATH_MAX];
	int port;
	pid_t tree[TREE_MAX];
	size_t ntree;
};

static int fail(struct post *p, int ret, const char *fmt, const char *what)
{
	snprintf(p->m->res->error, sizeof(p->m->res->error), fmt, what);
	return ret;
}

/* The lazy dump failed or was aborted: the tree runs on at the source. */
static int give_back(struct post *p, int ret, bool abort_dump)
{
	struct ml_err e = { 0 };

	if (p->d) {
		if (abort_dump)
			ml_criu_lazy_dump_abort(p->d, p->cres, &e);
		else
			ml_criu_lazy_dump_wait(p->d, p->cres, &e);
		ml_criu_lazy_dump_free(p->d);
		p->d = NULL;
	}
	/* CRIU gives a failed dump's tree back running; a "finished" one
	 * (--leave-stopped) stays stopped: it runs on here either way */
	signal_tree(p->tree, p->ntree, SIGCONT);
	if (p->m->p && kill(p->m->o->pid, 0) == 0)
		ml_profiler_reinit(p->m->p, &e);
	return ret;
}

static int start_dump(struct post *p, int k)
{
	struct mig *m = p->m;
	ML_OPTS(ml_criu_run_opts, ro, .timeout_ms = m->o->timeout_s * 1000);
	char ans[512];
	int ret, k2;

	ret = mli_mig_ask(m, ans, sizeof(ans), "IMAGES %d", k);
	if (!ret && sscanf(ans, "READY %d", &k2) != 1)
		ret = fail(p, -EPROTO, "the destination: %s", ans);
	if (ret)
		return ret;
	if ((ret = local_addr(m, p->addr, sizeof(p->addr))) ||
	    (p->port = mli_wire_free_port(p->addr)) < 0)
		return fail(p, ret ? ret : p->port,
			    "no address and free port for the lazy pages on this side (%s)",
			    strerror(-(ret ? ret : p->port)));
	mli_mig_round_dir(m, k, p->dir, sizeof(p->dir));
	mli_mig_round_dir(m, k - 1, p->parent, sizeof(p->parent));
	struct ml_criu_dump_req req = {
		.pid = m->o->pid,
		.images_dir = p->dir,
		.parent_dir = k > 1 ? p->parent : NULL,
		.shell_job = m->o->shell_job,
		.leave_stopped = true,
		.tcp = m->o->tcp,
		.lazy_addr = p->addr,
		.lazy_port = p->port,
		.no_exclude = true,
		.extra_args = m->o->extra_args,
		.restore_args = m->o->restore_args,
	};

	if (m->p && (ret = ml_profiler_release(m->p, &p->err)))
		return fail(p, ret, "%s", p->err.msg);
	ret = ml_criu_lazy_dump_start(m->o->caps, &req, &ro, &p->d, &p->t, p->cres, &p->err);
	if (ret) {
		give_back(p, 0, false);
		return fail(p, ret, "%s", p->err.msg);
	}
	p->ntree = ml_proc_tree(m->o->pid, p->tree, TREE_MAX);
	return 0;
}

static void fill(struct post *p, unsigned long long stored)
{
	struct ml_migrate_round *r = p->r;
	struct ml_rangeset none;

	ml_rangeset_init(&none);
	r->stored = stored; /* every file of the final dump: what it sent before the restore */
	mli_mig_fill_round(p->m, r, p->cres, &none, p->dir);
	r->pages_lazy = p->cres->pages_lazy;
	r->duration_ms = p->t.ready_ms;
	snprintf(r->note, sizeof(r->note),
		 "the frozen tree: %s, except %lld page(s) of private memory left for after "
		 "the restore (post-copy)",
		 r->k > 1 ? "what changed since the last round" : "all of its memory",
		 (long long)(r->pages_lazy > 0 ? r->pages_lazy : 0));
}

/*
 * "LAZYDONE COPIED TOTAL COPYBYTES FAULTS SERVED WAITSUM WAITMAX AFTER_MS
 * [PARENT]", or FAILED. PARENT: of COPIED, the pages read from the parent
 * rounds' images at the destination (only a CRIU with the project's
 * patches leaves those to lazy-pages; a receiver before it sends none).
 */
static int lazy_done(struct post *p, const char *ans, uint64_t restored_ms)
{
	struct ml_migrate_lazy *l = &p->m->res->lazy;
	long long c, t, after, par = 0;
	unsigned long long cb, f, fs, ws, wm;

	if (sscanf(ans, "LAZYDONE %lld %lld %llu %llu %llu %llu %llu %lld %lld", &c, &t, &cb, &f,
		   &fs, &ws, &wm, &after, &par) < 8 ||
	    par < 0 || par > c)
		return -EPROTO;
	l->pages_copied = c;
	l->pages_total = t;
	l->pages_parent = par;
	l->bytes = (uint64_t)(c - par) * 4096;
	l->copy_bytes = cb;
	l->faults = f;
	l->faults_served = fs;
	l->wait_sum_us = ws;
	l->wait_max_us = wm;
	l->last_page_ms = restored_ms + (after > 0 ? (uint64_t)after : 0);
	return 0;
}

static int restore_and_fetch(struct post *p, int k)
{
	struct mig *m = p->m;
	struct ml_migrate_result *res = m->res;
	uint64_t frozen_at = p->t.start_ms + (p->t.frozen_ms > 0 ? (uint64_t)p->t.frozen_ms : 0);
	unsigned long long ms;
	char ans[512];
	int pid, ret;

	ret = mli_wire_send(&m->w, "LAZY %d %d %s %d", k, m->o->shell_job, p->addr, p->port);
	if (!ret)
		ret = mli_wire_recv(&m->w, ans, sizeof(ans));
	if (ret)
		return give_back(p, fail(p, ret, "%s", "the destination closed the connection"),
				 true);
	if (sscanf(ans, "RESTORED %d %llu", &pid, &ms) != 2)
		return give_back(p,
				 fail(p, -EPROTO, "the destination could not restore: %s",
				      strncmp(ans, "ERR ", 4) ? ans : ans + 4),
				 true);
	res->downtime_ms = ml_mono_ms() - frozen_at;
	res->restored = pid;
	res->restore_ms = ms;
	ret = mli_wire_recv(&m->w, ans, sizeof(ans));
	if (ret || lazy_done(p, ans, res->downtime_ms)) {
		/* the destination killed what it restored: it runs on here */
		give_back(p, 0, true);
		res->restored = 0;
		return fail(p, ret ? ret : -EIO,
			    "the lazy pages did not all arrive (the destination killed what "
			    "it restored): %s",
			    ret ? "the destination closed the connection"
				: (strncmp(ans, "LAZYFAILED ", 11) ? ans : ans + 11));
	}
	ret = ml_criu_lazy_dump_wait(p->d, p->cres, &p->err);
	res->lazy.done_ms = ml_mono_ms() - frozen_at;
	ml_criu_lazy_dump_free(p->d);
	p->d = NULL;
	/* every page is at the destination, which runs the tree: the stopped
	 * tree here is what a dump without --leave-stopped would have killed */
	signal_tree(p->tree, p->ntree, SIGKILL);
	if (ret) {
		struct ml_mig_event ev = { .kind = ML_MIG_EV_LAZY_DUMP_FAILED, .err = ret };

		mli_mig_emit(m->o->on_event, m->o->arg, &ev, "%s (every lazy page was delivered)",
			     p->err.msg);
	}
	return 0;
}

int mli_mig_postcopy_final(struct mig *m, int k)
{
	struct ml_migrate_round *r = &m->r[m->res->nr];
	struct post *p = calloc(1, sizeof(*p));
	unsigned long long stored = 0;
	char ans[512];
	int ret, k2;

	if (!p || !(p->cres = calloc(1, sizeof(*p->cres)))) {
		free(p);
		return -ENOMEM;
	}
	p->m = m;
	p->r = r;
	memset(r, 0, sizeof(*r));
	r->k = k;
	r->start_ms = (ml_mono_ns() - m->t0_ns) / 1000000;
	ret = start_dump(p, k);
	if (!ret) {
		ret = mli_mig_send_images(m, k, &r->files_bytes);
		if (ret)
			give_back(p, ret, true);
	}
	if (!ret && (mli_mig_ask(m, ans, sizeof(ans), "DONE %d", k) ||
		     sscanf(ans, "STORED %d %llu", &k2, &stored) != 2))
		ret = give_back(
			p, fail(p, -EPROTO, "the destination did not store the images: %s", ans),
			true);
	if (!ret) {
		m->res->dump_ms = p->t.ready_ms;
		ret = restore_and_fetch(p, k);
	}
	if (!ret) {
		/* the final dump's counts are complete only now (its log) */
		fill(p, stored);
		m->res->total += r->bytes + m->res->lazy.bytes;
		m->res->nr++;
		if (m->o->on_round)
			m->o->on_round(r, m->o->arg);
	}
	free(p->cres);
	free(p);
	return ret;
}
