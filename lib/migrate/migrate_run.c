// SPDX-License-Identifier: MIT
/*
 * The source side of a live migration (migrate_run.h), for `memlens
 * migrate` and the agent's Migrate RPC: the rounds over the control
 * connection to the receiver (migrate_wire.h), CRIU through the
 * checkpoint flow of the library.
 */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "memlens/clock.h"
#include "memlens/proc.h"
#include "migrate_recv.h"
#include "migrate_run.h"
#include "migrate_src.h"
#include "migrate_wire.h"

/* Wait @ms (the caller's pause); nonzero: stop. */
static int mig_pause_ms(struct mig *m, unsigned int ms)
{
	if (m->o->pause)
		return m->o->pause(ms, m->o->arg);
	usleep(ms * 1000);
	return 0;
}

static void *recv_thread(void *arg)
{
	struct mig *m = arg;

	mli_migrate_receive(m->lfd, &m->ro);
	return NULL;
}

/* A destination given as a directory (not HOST:PORT). */
bool mli_mig_is_dir_dest(const char *to, int *port, char *host, size_t len)
{
	struct stat st;

	return mli_wire_parse_hostport(to, host, len, port) ||
	       (stat(to, &st) == 0 && S_ISDIR(st.st_mode)) || strchr(to, '/');
}

/* The destination: a receiver of our own for a local DIR, or HOST:PORT. */
static int connect_dest(struct mig *m)
{
	int port = 0, fd, r;

	if (mli_mig_is_dir_dest(m->o->to, &port, m->host, sizeof(m->host))) {
		m->ro = (struct ml_migrate_recv_opts){ .sz = sizeof(m->ro),
						       .dir = m->o->to,
						       .host = "127.0.0.1",
						       .caps = m->o->caps,
						       .timeout_s = m->o->timeout_s,
						       .on_event = m->o->on_event,
						       .arg = m->o->arg };
		m->lfd = mli_wire_listen("127.0.0.1", 0, &port);
		if (m->lfd < 0)
			return m->lfd;
		snprintf(m->host, sizeof(m->host), "127.0.0.1");
		r = pthread_create(&m->recv, NULL, recv_thread, m);
		if (r) {
			close(m->lfd);
			m->lfd = -1;
			return -r;
		}
		m->recv_on = true;
	} else if (!port) {
		return -EINVAL;
	}
	fd = mli_wire_connect(m->host, port);
	if (fd < 0)
		return fd;
	r = mli_wire_open(&m->w, fd);
	m->w_open = !r;
	return r;
}

static void end_receiver(struct mig *m)
{
	if (m->w_open)
		mli_wire_close(&m->w);
	m->w_open = false;
	if (m->recv_on) {
		/* never connected: wake its accept() */
		shutdown(m->lfd, SHUT_RDWR);
		pthread_join(m->recv, NULL);
		m->recv_on = false;
	}
	if (m->lfd >= 0)
		close(m->lfd);
	m->lfd = -1;
}

/* Send a request, read the answer; -EPROTO with the destination's ERR text. */
int mli_mig_ask(struct mig *m, char *ans, size_t len, const char *fmt, int k)
{
	int r = mli_wire_send(&m->w, fmt, k);

	if (!r)
		r = mli_wire_recv(&m->w, ans, len);
	if (r) {
		snprintf(m->res->error, sizeof(m->res->error),
			 "the destination closed the connection");
		return r;
	}
	if (!strncmp(ans, "ERR ", 4)) {
		snprintf(m->res->error, sizeof(m->res->error), "the destination: %s", ans + 4);
		return -EPROTO;
	}
	return 0;
}

void mli_mig_round_dir(const struct mig *m, int k, char *buf, size_t len)
{
	snprintf(buf, len, "%.4000s/%d", m->o->work, k);
}

/* A file of @d that goes to the destination as an image (no log, no link). */
static bool shipped(DIR *d, const char *name, struct stat *st)
{
	return fstatat(dirfd(d), name, st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st->st_mode) &&
	       mli_wire_name_ok(name) && !strstr(name, ".log");
}

/* The bytes of the files mli_mig_send_images() sends from @dir. */
static uint64_t images_bytes(const char *dir)
{
	uint64_t sum = 0;
	struct dirent *de;
	struct stat st;
	DIR *d = opendir(dir);

	if (!d)
		return 0;
	while ((de = readdir(d)))
		if (shipped(d, de->d_name, &st))
			sum += (uint64_t)st.st_size;
	closedir(d);
	return sum;
}

void mli_mig_fill_round(struct mig *m, struct ml_migrate_round *r, const struct ml_criu_result *res,
			const struct ml_rangeset *hot, const char *dir)
{
	long page = sysconf(_SC_PAGESIZE);

	r->pages = res->pages_written;
	r->shpages = res->shpages_written;
	r->pages_scanned = res->pages_scanned;
	r->pages_skipped_parent = res->pages_skipped_parent;
	/* every file the page server wrote; CRIU's page counts, shared memory
	 * included, when the destination did not say */
	r->bytes = r->stored;
	if (!r->bytes)
		r->bytes = (uint64_t)(r->pages > 0 ? r->pages : 0) * (uint64_t)page +
			   (uint64_t)(r->shpages > 0 ? r->shpages : 0) * (uint64_t)page;
	/* the final dump's other images go after it (with post-copy the
	 * destination counted them already: every round comes as files) */
	if (!r->pre_dump && !m->o->postcopy)
		r->images = images_bytes(dir);
	r->bytes += r->images;
	r->duration_ms = res->duration_ms;
	r->hot_ranges = hot->n;
	r->hot_bytes = ml_rangeset_bytes(hot);
	r->excluded = res->exclude.nexclude;
	r->no_parent = res->exclude.nno_parent;
	if (!r->pre_dump && !res->exclude.nno_parent && !res->exclude.parent_unusable)
		snprintf(r->note, sizeof(r->note), "%s",
			 r->k > 1 ? "the frozen tree: what changed since the last round"
				  : "the frozen tree: all of its memory");
	else if (!m->res->exclude && r->pre_dump)
		snprintf(r->note, sizeof(r->note), "nothing left out: %s", m->res->why);
	else
		snprintf(r->note, sizeof(r->note), "%s", res->exclude.note);
}

#define STOPPED_MAX 8 /* stopped processes a round's note names */

/*
 * The processes of @root's tree that are stopped (state T), at most @max
 * in @out; their number. CRIU's pre-dump skips a stopped task: it dumps
 * none of its memory, so the next round has no parent pages for it and
 * sends all of them.
 */
static int tree_stopped(pid_t root, pid_t *out, int max)
{
	enum { TREE = 4096 };
	pid_t *tree = malloc(TREE * sizeof(*tree));
	struct ml_proc_stat st;
	size_t n;
	int k = 0;

	if (!tree)
		return 0;
	n = ml_proc_tree(root, tree, TREE);
	for (size_t i = 0; i < n; i++) {
		if (ml_proc_stat_read(tree[i], 0, &st) || st.state != 'T')
			continue;
		if (k < max)
			out[k] = tree[i];
		k++;
	}
	free(tree);
	return k;
}

/* Say in the round's note which processes (@n, the first STOPPED_MAX in @pids) its pre-dump
 * skipped. */
static void note_stopped(struct ml_migrate_round *r, const pid_t *pids, int n)
{
	size_t len = strlen(r->note);
	char list[128] = "";
	size_t l = 0;

	for (int i = 0; i < n && i < STOPPED_MAX && l < sizeof(list); i++)
		l += (size_t)snprintf(list + l, sizeof(list) - l, "%s%d", i ? ", " : "", pids[i]);
	if (len < sizeof(r->note))
		snprintf(r->note + len, sizeof(r->note) - len,
			 "%s%d stopped process(es) (pid %s%s) skipped by CRIU's pre-dump: the "
			 "next round sends all of their memory",
			 len ? "; " : "", n, list, n > STOPPED_MAX ? ", ..." : "");
}

/* One round: a page server at the destination, CRIU, the destination's count. */
/*
 * Round @k; @send_hot: a pre-dump that leaves nothing out (the last one
 * before the final dump, which then carries only what is written after it).
 */
static int do_round(struct mig *m, int k, bool pre_dump, bool send_hot)
{
	struct ml_migrate_round *r = &m->r[m->res->nr];
	struct ml_criu_result *res = calloc(1, sizeof(*res));
	char ans[512], dir[PATH_MAX], parent[PATH_MAX];
	struct ml_err err = { 0 };
	struct ml_rangeset hot;
	int port, ret, k2;
	unsigned long long stored;

	if (!res)
		return -ENOMEM;
	ml_rangeset_init(&hot);
	memset(r, 0, sizeof(*r));
	r->k = k;
	r->pre_dump = pre_dump;
	r->pages_lazy = -1;
	r->start_ms = (ml_mono_ns() - m->t0_ns) / 1000000;
	/* post-copy: written here and shipped (a lazy dump needs its parent's
	 * pagemaps on this side); else into a page server at the destination */
	port = 0;
	if (m->o->postcopy) {
		ret = mli_mig_ask(m, ans, sizeof(ans), "IMAGES %d", k);
		if (!ret && sscanf(ans, "READY %d", &k2) != 1)
			ret = -EPROTO;
	} else {
		ret = mli_mig_ask(m, ans, sizeof(ans), "ROUND %d", k);
		if (!ret && sscanf(ans, "PORT %d", &port) != 1)
			ret = -EPROTO;
	}
	if (ret)
		goto out;
	mli_mig_round_dir(m, k, dir, sizeof(dir));
	mli_mig_round_dir(m, k - 1, parent, sizeof(parent));
	struct ml_criu_dump_req req = {
		.pid = m->o->pid,
		.images_dir = dir,
		.parent_dir = k > 1 ? parent : NULL,
		.pre_dump = pre_dump,
		.shell_job = m->o->shell_job,
		.page_server_addr = m->host,
		.page_server_port = port,
		.no_exclude = !m->res->exclude || send_hot,
		.extra_args = m->o->extra_args,
		.restore_args = pre_dump ? NULL : m->o->restore_args,
		.tcp = m->o->tcp,
	};

	pid_t stopped[STOPPED_MAX];
	int nstopped = pre_dump ? tree_stopped(m->o->pid, stopped, STOPPED_MAX) : 0;

	ret = ml_criu_checkpoint(m->sess, m->p, &req, res, &hot, &err);
	m->criu_end_ns = ml_mono_ns();
	if (!ret && !pre_dump)
		ml_criu_read_dump_frozen(dir, &m->res->frozen_us, &err);
	if (ret)
		snprintf(m->res->error, sizeof(m->res->error), "%s", err.msg);
	else if (m->o->postcopy)
		ret = mli_mig_send_images(m, k, &r->files_bytes);
	/* the page server ends with the dump, failed or not */
	if (mli_mig_ask(m, ans, sizeof(ans), "DONE %d", k) == 0 &&
	    sscanf(ans, "STORED %d %llu", &k2, &stored) == 2)
		r->stored = stored;
	if (ret)
		goto out;
	mli_mig_fill_round(m, r, res, &hot, dir);
	if (send_hot)
		snprintf(r->note, sizeof(r->note),
			 "the last pre-dump: its %zu hot range(s) sent too, so the final dump "
			 "carries only what is written after it (--keep-hot-out: left out)",
			 hot.n);
	if (nstopped)
		note_stopped(r, stopped, nstopped);
	m->res->total += r->bytes;
	m->res->nr++;
	if (m->o->on_round)
		m->o->on_round(r, m->o->arg);
out:
	ml_rangeset_free(&hot);
	free(res);
	return ret;
}

/* The final dump's images other than pages (those are at the destination). */
int mli_mig_send_images(struct mig *m, int k, uint64_t *bytes)
{
	char dir[PATH_MAX];
	struct dirent *de;
	struct stat st;
	int ret = 0;
	DIR *d;

	mli_mig_round_dir(m, k, dir, sizeof(dir));
	d = opendir(dir);
	if (!d)
		return -errno;
	while (!ret && (de = readdir(d)))
		if (shipped(d, de->d_name, &st)) {
			ret = mli_wire_send_file(&m->w, dir, de->d_name);
			if (bytes)
				*bytes += (uint64_t)st.st_size;
		}
	closedir(d);
	if (ret)
		snprintf(m->res->error, sizeof(m->res->error), "sending the images of %.900s: %s",
			 dir, strerror(-ret));
	return ret;
}

/* The dumped tree's pid must be free again before a restore on this machine. */
static void wait_pid_free(struct mig *m, pid_t pid)
{
	char p[64];

	snprintf(p, sizeof(p), "/proc/%d", (int)pid);
	for (int i = 0; i < 1000 && access(p, F_OK) == 0; i++)
		if (mig_pause_ms(m, 10))
			return;
}

/* @dir gone (or ML_MIGRATE_SETTLE_MS passed): the runtime is done with its exited container. */
static void wait_dirs_gone(struct mig *m, const char *const *dirs)
{
	int i = 0;

	/* ML_MIGRATE_SETTLE_MS for all of them */
	for (size_t k = 0; dirs && dirs[k]; k++)
		for (; i < ML_MIGRATE_SETTLE_MS / 10 && access(dirs[k], F_OK) == 0; i++)
			if (mig_pause_ms(m, 10))
				return;
}

static int final_round(struct mig *m, int k)
{
	struct ml_migrate_result *res = m->res;
	uint64_t t0 = ml_mono_ns();
	char ans[512];
	int ret, pid;
	unsigned long long ms;

	ret = do_round(m, k, false, false);
	if (ret)
		return ret;
	res->dump_ms = (ml_mono_ns() - t0) / 1000000;
	ret = mli_mig_send_images(m, k, NULL);
	if (ret)
		return ret;
	/* the same PID namespace at the destination (this machine, a
	 * container or network namespace of it) needs the pid free again */
	wait_pid_free(m, m->o->pid);
	wait_dirs_gone(m, m->o->settle_dirs);
	ret = mli_wire_send(&m->w, "RESTORE %d %d", k, m->o->shell_job);
	if (!ret)
		ret = mli_wire_recv(&m->w, ans, sizeof(ans));
	if (ret) {
		snprintf(res->error, sizeof(res->error), "the destination closed the connection");
		return ret;
	}
	if (sscanf(ans, "RESTORED %d %llu", &pid, &ms) != 2) {
		snprintf(res->error, sizeof(res->error), "the destination could not restore: %s",
			 strncmp(ans, "ERR ", 4) ? ans : ans + 4);
		return -EPROTO;
	}
	/* frozen: from the moment CRIU froze the tree (its own count of the
	 * frozen time, up to the end of the dump) until it runs at the
	 * destination; without that count, from the start of the final round */
	if (res->frozen_us >= 0)
		res->downtime_ms =
			(ml_mono_ns() - m->criu_end_ns) / 1000000 + (uint64_t)res->frozen_us / 1000;
	else
		res->downtime_ms = (ml_mono_ns() - t0) / 1000000;
	res->restored = pid;
	res->restore_ms = ms;
	return 0;
}

/* The profiler's latest interval number (0: none yet). */
static uint64_t latest_seq(struct ml_profiler *p)
{
	struct ml_profiler_sample smp;
	uint64_t seq;

	memset(&smp, 0, sizeof(smp));
	if (!p || ml_profiler_latest(p, &smp))
		return 0;
	seq = smp.seq;
	ml_profiler_sample_free(&smp);
	return seq;
}

static bool precopy_ended(const struct mig *m)
{
	return m->o->end_precopy && *m->o->end_precopy;
}

/*
 * Between rounds: at least round_s, and, when profiling, enough
 * intervals since the profiler took the target again for a VMA to turn hot
 * (a slow machine's intervals run late), up to 10 times longer. Before the
 * first round (@first), until the hot set has settled: a page is hot after
 * `consecutive` intervals written and stays hot over `cool` - 1 unwritten
 * ones, so after consecutive + cool intervals every page written at least
 * once per `cool` intervals is in it (a first round sooner would send the
 * hot pages not yet seen, and every later round again).
 */
static int wait_round(struct mig *m, bool first)
{
	uint64_t t0 = ml_mono_ns(), seq0 = latest_seq(m->p);
	double round_s = m->o->round_s, max_s = 10 * (round_s > 1 ? round_s : 1);
	uint64_t need = 0; /* intervals since seq0 */
	int r;

	/* the profiler's own -c and --cool, its defaults filled in */
	if (m->p) {
		const struct ml_profiler_opts *po = ml_profiler_options(m->p);

		need = (uint64_t)po->hot_consecutive + (first ? (uint64_t)po->hot_cool : 1);
	}

	for (;;) {
		double el = (ml_mono_ns() - t0) / 1e9;
		uint64_t seq = latest_seq(m->p);

		if (seq < seq0) /* re-initialised after the last round: counting from 1 */
			seq0 = 0;
		if (el >= round_s && (!m->p || seq >= seq0 + need || el >= max_s))
			return 0;
		if (precopy_ended(m))
			return 0;
		r = mig_pause_ms(m, 50);
		if (r) {
			snprintf(m->res->error, sizeof(m->res->error), "stopped between rounds: %s",
				 strerror(-r));
			return r;
		}
	}
}

static int start_profiling(struct mig *m)
{
	ML_OPTS(ml_profiler_opts, po, .interval_ms = m->o->interval_ms,
		.hot_threshold = m->o->hot_threshold, .hot_consecutive = m->o->hot_consecutive,
		.hot_cool = m->o->hot_cool,
		.hot_ranges_max =
			m->o->hot_ranges_max ? m->o->hot_ranges_max : ML_HOTRANGE_EXCLUDE_MAX,
		.sample_k = m->o->sample_k, .max_overhead = m->o->max_overhead,
		.max_error = m->o->max_error, .tree = true /* CRIU dumps the whole tree */);
	struct ml_err err = { 0 };
	int r = ml_profiler_open(&m->p, m->o->pid, &po, &err);

	if (!r)
		r = ml_profiler_start(m->p, NULL, NULL, &err);
	if (r) {
		snprintf(m->res->error, sizeof(m->res->error), "profiling pid %d: %s",
			 (int)m->o->pid, err.msg);
		if (m->p)
			ml_profiler_close(m->p);
		m->p = NULL;
		return r;
	}
	m->own_p = true;
	return wait_round(m, true);
}

void mli_migrate_plan(const struct ml_migrate_opts *o, struct ml_migrate_result *res)
{
	char opts[128];

	res->precopy = o->caps->mem_dirty_track && o->max_rounds > 0;
	res->exclude = res->precopy && !o->no_exclude && ml_criu_can_exclude(o->caps);
	ml_criu_caps_options(o->caps, opts, sizeof(opts));
	res->why[0] = '\0';
	if (o->no_exclude)
		snprintf(res->why, sizeof(res->why), "%s",
			 o->off_note ? o->off_note : "exclusion switched off");
	else if (!ml_criu_can_exclude(o->caps))
		snprintf(res->why, sizeof(res->why),
			 "this CRIU cannot leave memory out of a pre-dump (%s)", opts);
}

/* The tree's processes, just before the final dump ends them here. */
static void snap_procs(struct mig *m)
{
	struct ml_migrate_result *res = m->res;
	struct ml_profiler_sample s;
	pid_t *tree;
	size_t n;

	res->nprocs = res->nprocs_total = 0;
	if (m->p && !ml_profiler_latest(m->p, &s)) {
		n = s.nprocs < ML_MIGRATE_MAX_PROCS ? s.nprocs : ML_MIGRATE_MAX_PROCS;
		if (n)
			memcpy(m->procs, s.procs, n * sizeof(*s.procs));
		res->nprocs = n;
		res->nprocs_total = s.nprocs;
		res->procs_hot_bytes = s.hot.hot_bytes;
		res->procs_dirty_bytes = s.dirty.cumulative_dirty_bytes;
		ml_profiler_sample_free(&s);
		if (n) {
			res->procs_profiled = true;
			return;
		}
	}
	tree = malloc(ML_PROC_TREE_MAX * sizeof(*tree));
	n = tree ? ml_proc_tree(m->o->pid, tree, ML_PROC_TREE_MAX) : 0;
	res->nprocs_total = n;
	for (size_t i = 0; i < n && res->nprocs < ML_MIGRATE_MAX_PROCS; i++) {
		struct ml_profiler_proc *q = &m->procs[res->nprocs];
		struct ml_proc_stat st;

		if (ml_proc_stat_read(tree[i], 0, &st))
			continue;
		memset(q, 0, sizeof(*q));
		q->pid = tree[i];
		q->ppid = st.ppid;
		snprintf(q->comm, sizeof(q->comm), "%.15s", st.comm);
		res->nprocs++;
	}
	free(tree);
}

void ml_migrate_abort(const char *to, const char *why)
{
	char host[256], ans[256], line[480];
	struct wire w;
	int port = 0, fd;

	if (!to || mli_mig_is_dir_dest(to, &port, host, sizeof(host)) || !port)
		return;
	fd = mli_wire_connect_timeout(host, port, 3000);
	if (fd < 0 || mli_wire_open(&w, fd))
		return;
	/* one line: the receiver's buffer holds 512 bytes */
	snprintf(line, sizeof(line), "%s", why);
	line[strcspn(line, "\n")] = '\0';
	if (!mli_wire_send(&w, MIGRATE_HELLO) && !mli_wire_recv(&w, ans, sizeof(ans)) &&
	    !strncmp(ans, "OK", 2))
		mli_wire_send(&w, "ABORT %s", line);
	mli_wire_close(&w);
}

static int rounds(struct mig *m)
{
	const struct ml_migrate_opts *o = m->o;
	struct ml_migrate_result *res = m->res;
	char ans[256];
	int ret, k = 1;

	ret = mli_wire_send(&m->w, MIGRATE_HELLO);
	if (!ret)
		ret = mli_wire_recv(&m->w, ans, sizeof(ans));
	if (ret || strncmp(ans, "OK", 2)) {
		snprintf(res->error, sizeof(res->error), "no memlens migrate receiver at %s: %s",
			 o->to, ret ? "no answer" : ans);
		return ret ? ret : -EPROTO;
	}
	res->connected = true;
	if (o->postcopy && (ret = mli_mig_postcopy_check(m)))
		return ret;
	if (res->exclude && !o->prof && (ret = start_profiling(m)))
		return ret;
	for (; res->precopy && k <= o->max_rounds; k++) {
		if (k > 1 && (ret = wait_round(m, false)))
			return ret;
		if (k > 1 && precopy_ended(m))
			break;
		ret = do_round(m, k, true,
			       k == o->max_rounds && res->exclude && !o->postcopy &&
				       !o->keep_hot_out);
		if (ret)
			return ret;
		if (m->r[res->nr - 1].bytes < o->threshold_mib * (1 << 20) || precopy_ended(m)) {
			k++;
			break;
		}
	}
	snap_procs(m);
	return o->postcopy ? mli_mig_postcopy_final(m, k) : final_round(m, k);
}

int mli_migrate_run(struct ml_migration *h)
{
	const struct ml_migrate_opts *o = &h->o;
	struct ml_migrate_result *res = &h->res;
	ML_OPTS(ml_criu_run_opts, ro, .timeout_ms = o->timeout_s * 1000);
	struct mig m = {
		.o = o, .res = res, .r = h->r, .procs = h->procs, .lfd = -1, .p = o->prof
	};
	struct ml_err err = { 0 };
	int ret;

	memset(res, 0, sizeof(*res));
	memset(h->r, 0, sizeof(h->r));
	memset(h->procs, 0, sizeof(h->procs));
	res->frozen_us = -1;
	mli_migrate_plan(o, res);
	if (o->postcopy &&
	    (ret = mli_migrate_postcopy_precheck(o, res->error, sizeof(res->error)))) {
		ml_migrate_abort(o->to, res->error);
		return ret;
	}
	m.t0_ns = ml_mono_ns();
	/* before the first round: what the final dump would refuse, frozen */
	ret = ml_criu_tcp_check(o->pid, o->tcp, o->extra_args, &err);
	if (!ret)
		ret = ml_criu_sysv_check(o->pid, &err);
	if (!ret)
		ret = ml_criu_session_open(&m.sess, o->caps, &ro, &err);
	if (ret) {
		snprintf(res->error, sizeof(res->error), "%s", err.msg);
		ml_migrate_abort(o->to, res->error);
		return ret;
	}
	ret = connect_dest(&m);
	if (ret)
		snprintf(res->error, sizeof(res->error),
			 "cannot reach the destination %.900s: %s (give a directory, or HOST:PORT "
			 "where `memlens migrate --receive` listens)",
			 o->to, strerror(-ret));
	else
		ret = rounds(&m);
	if (m.own_p)
		ml_profiler_close(m.p);
	ml_criu_session_close(m.sess);
	end_receiver(&m);
	return ret;
}
