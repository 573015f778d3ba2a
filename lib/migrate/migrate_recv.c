// SPDX-License-Identifier: MIT
/*
 * The destination side of a live migration: for each round a
 * `criu page-server` into DIR/K (its parent DIR/K-1), the final dump's
 * other images into DIR/K, then `criu restore` there.
 */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "memlens/clock.h"
#include "migrate_recv.h"
#include "migrate_recvst.h"
#include "migrate_wire.h"
#include "memlens/proc.h"

void mli_mig_recv_round_dir(const struct recv_state *s, int k, char *buf, size_t len)
{
	snprintf(buf, len, "%.4000s/%d", s->o->dir, k);
}

static int start_round(struct recv_state *s, int k)
{
	struct ml_criu_page_server_req rq = { .addr = s->o->host };
	ML_OPTS(ml_criu_run_opts, ro, .timeout_ms = s->o->timeout_s * 1000);
	char dir[PATH_MAX], parent[PATH_MAX];
	struct ml_criu_result res;
	struct ml_err e = { 0 };
	int port, r;

	if (k != s->round + 1 || s->ps_pid)
		return mli_wire_send(&s->w, "ERR round %d out of order (expected %d)", k,
				     s->round + 1);
	mli_mig_recv_round_dir(s, k, dir, sizeof(dir));
	mli_mig_recv_round_dir(s, k - 1, parent, sizeof(parent));
	port = mli_wire_free_port(s->o->host);
	if (port < 0)
		return mli_wire_send(&s->w, "ERR no free port on %s: %s", s->o->host,
				     strerror(-port));
	rq.images_dir = dir;
	rq.port = port;
	rq.parent_dir = k > 1 ? parent : NULL;
	s->files_round = false;
	r = ml_criu_page_server_start(s->o->caps, &rq, &ro, &s->ps_pid, &res, &e);
	if (r)
		return mli_wire_send(&s->w, "ERR %s", e.msg);
	s->round = k;
	return mli_wire_send(&s->w, "PORT %d", port);
}

/* The page server exits by itself once the dump has closed its connection. */
static int end_round(struct recv_state *s, int k)
{
	char dir[PATH_MAX];
	struct ml_err e;

	if (k != s->round || (!s->ps_pid && !s->files_round))
		return mli_wire_send(&s->w, "ERR no page server for round %d", k);
	for (int i = 0; s->ps_pid && i < 3000 && !ml_proc_exited(s->ps_pid, 0); i++)
		usleep(10000);
	if (s->ps_pid)
		ml_criu_page_server_stop(s->ps_pid, &e);
	s->ps_pid = 0;
	mli_mig_recv_round_dir(s, k, dir, sizeof(dir));
	return mli_wire_send(&s->w, "STORED %d %llu", k,
			     (unsigned long long)ml_criu_dir_bytes(dir, NULL));
}

static int recv_file(struct recv_state *s, const char *name, unsigned long long size)
{
	char dir[PATH_MAX];
	int r;

	mli_mig_recv_round_dir(s, s->round, dir, sizeof(dir));
	r = mli_wire_recv_file(&s->w, dir, name, size);
	if (r == -EPIPE)
		return r;
	if (r) {
		struct ml_mig_event ev = {
			.kind = ML_MIG_EV_STORE_FAILED, .dir = dir, .name = name, .err = r
		};

		mli_mig_emit(s->o->on_event, s->o->arg, &ev, "cannot store %s/%s: %s", dir, name,
			     strerror(-r));
	}
	return 0;
}

static int restore(struct recv_state *s, int k, int shell_job)
{
	ML_OPTS(ml_criu_run_opts, ro, .timeout_ms = s->o->timeout_s * 1000);
	struct ml_criu_restore_req rq = { .shell_job = shell_job != 0 };
	struct ml_criu_result res;
	struct ml_err e = { 0 };
	char dir[PATH_MAX];
	int r;

	if (k != s->round)
		return mli_wire_send(&s->w, "ERR restore of round %d, but round %d came last", k,
				     s->round);
	mli_mig_recv_round_dir(s, k, dir, sizeof(dir));
	rq.images_dir = dir;
	r = ml_criu_restore(s->o->caps, &rq, &ro, &res, &e);
	if (r)
		return mli_wire_send(&s->w, "ERR %s", e.msg);
	if (s->o->verbose) {
		struct ml_mig_event ev = { .kind = ML_MIG_EV_RESTORED,
					   .dir = dir,
					   .pid = res.restored_pid,
					   .ms = res.duration_ms };

		mli_mig_emit(s->o->on_event, s->o->arg, &ev, "restored pid %d from %s in %.2f s",
			     (int)res.restored_pid, dir, res.duration_ms / 1000.0);
	}
	return mli_wire_send(&s->w, "RESTORED %d %llu", (int)res.restored_pid,
			     (unsigned long long)res.duration_ms);
}

static int serve(struct recv_state *s)
{
	char line[512], name[256];
	unsigned long long size;
	int k, x, r, port;

	r = mli_wire_recv(&s->w, line, sizeof(line));
	if (r || strcmp(line, MIGRATE_HELLO))
		return mli_wire_send(&s->w, "ERR this is a memlens migrate receiver; it speaks %s",
				     MIGRATE_HELLO)
			       ?: -EPROTO;
	r = mli_wire_send(&s->w, "OK %s", s->o->caps->version[0] ? s->o->caps->version : "unknown");
	while (!r && !(r = mli_wire_recv(&s->w, line, sizeof(line)))) {
		if (sscanf(line, "ROUND %d", &k) == 1)
			r = start_round(s, k);
		else if (sscanf(line, "DONE %d", &k) == 1)
			r = end_round(s, k);
		else if (sscanf(line, "FILE %255s %llu", name, &size) == 2)
			r = recv_file(s, name, size);
		else if (sscanf(line, "RESTORE %d %d", &k, &x) == 2)
			return restore(s, k, x);
		else if (sscanf(line, "IMAGES %d", &k) == 1)
			r = mli_mig_recv_files_round(s, k);
		else if (!strcmp(line, "CANLAZY"))
			r = mli_mig_recv_can_lazy(s);
		else if (sscanf(line, "LAZY %d %d %255s %d", &k, &x, name, &port) == 4)
			return mli_mig_recv_restore_lazy(s, k, x, name, port);
		else if (!strncmp(line, "ABORT ", 6)) {
			struct ml_mig_event ev = { .kind = ML_MIG_EV_ABORTED, .err = -ECANCELED };

			mli_mig_emit(s->o->on_event, s->o->arg, &ev,
				     "the source refused the migration before its first round, "
				     "nothing was sent: %s",
				     line + 6);
			return -ECANCELED;
		} else
			r = mli_wire_send(&s->w, "ERR unknown request '%.100s'", line);
	}
	return r == -EPIPE ? -ECONNRESET : r;
}

int mli_migrate_receive(int lfd, const struct ml_migrate_recv_opts *o)
{
	struct recv_state s = { .o = o };
	int fd, r;

	if (mkdir(o->dir, 0700) < 0 && errno != EEXIST) {
		struct ml_mig_event ev = { .kind = ML_MIG_EV_DIR_FAILED,
					   .dir = o->dir,
					   .err = -errno };

		mli_mig_emit(o->on_event, o->arg, &ev, "cannot create %s: %s", o->dir,
			     strerror(-ev.err));
		return ev.err;
	}
	do
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	while (fd < 0 && errno == EINTR);
	if (fd < 0)
		return -errno;
	r = mli_wire_open(&s.w, fd);
	if (!r)
		r = serve(&s);
	if (s.ps_pid) {
		struct ml_err e;

		ml_criu_page_server_stop(s.ps_pid, &e);
	}
	mli_wire_close(&s.w);
	return r;
}
