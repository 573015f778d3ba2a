// SPDX-License-Identifier: MIT
/* criu dump / pre-dump / restore / page-server, with the result read back. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "criu_dump.h"
#include "criu_exec.h"
#include "criu_restore_opts.h"
#include "memlens/criu.h"
#include "memlens/proc.h"

static int prepare_dir(const char *dir, char *abs, size_t len, struct ml_err *err)
{
	char buf[PATH_MAX];

	if (!dir || !*dir)
		return ml_err_set(err, EINVAL, "no images directory given (-D DIR)");
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return ml_err_set(err, errno, "cannot create the images directory %s: %s", dir,
				  strerror(errno));
	if (!realpath(dir, buf))
		return ml_err_set(err, errno, "images directory %s: %s", dir, strerror(errno));
	if ((size_t)snprintf(abs, len, "%s", buf) >= len)
		return ml_err_set(err, ENAMETOOLONG, "images directory path too long: %s", buf);
	return 0;
}

/* Path of directory @to relative to directory @from (both absolute, canonical). */
static void relpath(const char *from, const char *to, char *out, size_t len)
{
	size_t i = 0, common, pos = 0;

	while (from[i] && from[i] == to[i])
		i++;
	if ((!from[i] || from[i] == '/') && (!to[i] || to[i] == '/')) {
		common = i;
	} else {
		while (i > 0 && from[i - 1] != '/')
			i--;
		common = i ? i - 1 : 0;
	}
	out[0] = '\0';
	for (i = common; from[i]; i++)
		if (from[i] == '/' && pos + 4 < len)
			pos += (size_t)snprintf(out + pos, len - pos, "../");
	if (to[common] == '/' && to[common + 1])
		snprintf(out + pos, len - pos, "%s", to + common + 1);
	else if (pos)
		out[pos - 1] = '\0';
	else
		snprintf(out, len, ".");
}

/* CRIU's logs and pidfiles: not images */
static bool not_image(const char *name)
{
	size_t n = strlen(name);

	return strstr(name, ".log") || (n > 4 && !strcmp(name + n - 4, ".pid"));
}

uint64_t ml_criu_dir_bytes(const char *dir, const char *prefix)
{
	uint64_t sum = 0;
	struct dirent *de;
	struct stat st;
	DIR *d = opendir(dir);

	if (!d)
		return 0;
	while ((de = readdir(d)))
		if ((!prefix || !strncmp(de->d_name, prefix, strlen(prefix))) &&
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(st.st_mode) && !not_image(de->d_name))
			sum += (uint64_t)st.st_size;
	closedir(d);
	return sum;
}

void mli_criu_result_init(struct ml_criu_result *res)
{
	memset(res, 0, sizeof(*res));
	res->exit_status = -1;
	res->pages_written = res->pages_scanned = res->pages_skipped_parent = -1;
	res->shpages_written = -1;
	res->pages_lazy = -1;
}

/* The last 256 KiB of CRIU's log (malloc'ed), or NULL. */
static char *read_log(const char *path)
{
	size_t cap = 262144;
	char *text = malloc(cap);
	ssize_t n;
	off_t size;
	int fd = text ? open(path, O_RDONLY | O_CLOEXEC) : -1;

	if (fd < 0) {
		free(text);
		return NULL;
	}
	size = lseek(fd, 0, SEEK_END);
	n = pread(fd, text, cap - 1, size > (off_t)cap - 1 ? size - (off_t)cap + 1 : 0);
	close(fd);
	text[n > 0 ? n : 0] = '\0';
	return text;
}

/* CRIU failed: its last error lines, and what to do about a refusal memlens knows. */
static void read_failure(const char *output, struct ml_criu_result *res)
{
	char *log = read_log(res->log_path);

	if (log)
		mli_criu_error_tail(log, res->log_tail, sizeof(res->log_tail));
	if (!res->log_tail[0])
		mli_criu_error_tail(output, res->log_tail, sizeof(res->log_tail));
	if (!ml_criu_explain(log, res->hint, sizeof(res->hint)))
		ml_criu_explain(output, res->hint, sizeof(res->hint));
	free(log);
}

/* The length of @s without the trailing @c characters. */
static size_t len_trimmed(const char *s, char c)
{
	size_t n = strlen(s);

	while (n && s[n - 1] == c)
		n--;
	return n ? n : strlen(s);
}

int mli_criu_exec_report(struct criu_exec *x, const struct ml_criu_run_opts *o, const char *what,
			 struct ml_criu_result *res, struct ml_err *err)
{
	unsigned int tmo = x->timeout_ms	? x->timeout_ms
			   : o && o->timeout_ms ? o->timeout_ms
						: ML_CRIU_DEFAULT_TIMEOUT_MS;
	const char *tail;

	res->ran = true;
	res->exit_status = x->status;
	res->timed_out = x->timed_out;
	res->duration_ms = x->duration_ms;
	if (!x->timed_out && x->status == 0) {
		free(x->output);
		x->output = NULL;
		return 0;
	}
	read_failure(x->output, res);
	free(x->output);
	x->output = NULL;
	if (x->timed_out)
		return ml_err_set(
			err, ETIMEDOUT,
			"criu %s did not finish within %u s and was killed; see its log "
			"%s (on some VMs CRIU hangs on the parasite's hardware breakpoint: "
			"keep CRIU_FAULT=130, the default) or raise the time limit",
			what, tmo / 1000, res->log_path);
	tail = res->log_tail[0] ? res->log_tail : "no error message";
	return ml_err_set(err, EIO, "criu %s failed (exit status %d): %.*s%s%s; see its log %s",
			  what, x->status, (int)len_trimmed(tail, '.'), tail,
			  res->hint[0] ? ". What to do: " : "", res->hint, res->log_path);
}

/*
 * Run argv; fill @res; turn CRIU's failure into an error with a sentence.
 * @what: "dump", "restore"...
 */
static int run_and_report(struct ml_criu_argv *a, const struct ml_criu_run_opts *o,
			  const char *what, struct ml_criu_result *res, struct ml_err *err)
{
	struct criu_exec x = { .argv = a->v, .o = o };
	int ret;

	ml_criu_argv_format(a, res->cmdline, sizeof(res->cmdline));
	ret = mli_criu_exec_run(&x, err);
	return ret ? ret : mli_criu_exec_report(&x, o, what, res, err);
}

/* Does the last 4 KiB of CRIU's log end while waiting for a task to trap? */
static bool hung_on_trap(const char *log)
{
	return mli_criu_log_tail_has(log, "to trap", 4095);
}

/* Task state letter of @pid, or 0. */
static char task_state(pid_t pid)
{
	struct ml_proc_stat st;

	return ml_proc_stat_read(pid, 0, &st) ? 0 : st.state;
}

/*
 * CRIU was killed mid-dump: a task it left stopped is resumed, and a hang
 * on the parasite's breakpoint is named as such.
 */
static int after_timeout(const struct ml_criu_dump_req *r, const struct ml_criu_result *res,
			 struct ml_err *err)
{
	bool resumed = false;

	if (task_state(r->pid) == 'T' && kill(r->pid, SIGCONT) == 0)
		resumed = true;
	if (hung_on_trap(res->log_path))
		ml_err_wrap(err,
			    "CRIU hung waiting for pid %d to trap (the hardware-breakpoint "
			    "hang of some VMs; it happens without CRIU_FAULT=130)",
			    (int)r->pid);
	if (resumed)
		ml_err_wrap(err, "CRIU left pid %d stopped; memlens resumed it (SIGCONT)",
			    (int)r->pid);
	return -ETIMEDOUT;
}

static int target_alive(pid_t pid, struct ml_err *err)
{
	if (pid <= 0)
		return ml_err_set(err, EINVAL, "invalid pid %d", (int)pid);
	if (kill(pid, 0) < 0 && errno == ESRCH)
		return ml_err_set(err, ESRCH, "no process with pid %d (it may have exited)",
				  (int)pid);
	return 0;
}

static int session_visible(pid_t pid, struct ml_err *err)
{
	struct ml_proc_stat st;

	/* the session id reads 0 for a process in the kernel's own session
	 * (children of an init that never called setsid, e.g. a CI runner's) and
	 * when the session leader is in an ancestor PID namespace */
	if (ml_proc_stat_read(pid, 0, &st) || st.session != 0)
		return 0;
	return ml_err_set(
		err, EINVAL,
		"pid %d has no session leader that CRIU can see: its session id reads 0 "
		"(it was started, without setsid, by an init that never called setsid, or "
		"its session leader is outside this PID namespace), and CRIU refuses to "
		"dump such a process; CRIU was not run. Start the target in its own session "
		"(`setsid CMD`)",
		(int)pid);
}

int ml_criu_dump_target_check(pid_t pid, struct ml_err *err)
{
	int ret = target_alive(pid, err);

	return ret ? ret : session_visible(pid, err);
}

static int pre_dump_supported(const struct ml_criu_caps *caps, struct ml_err *err)
{
	if (caps->mem_dirty_track)
		return 0;
	return ml_err_set(err, EOPNOTSUPP,
			  "pre-dump needs soft-dirty page tracking, which this kernel lacks "
			  "(CONFIG_MEM_SOFT_DIRTY is not set: `%s check --feature mem_dirty_track` "
			  "fails); CRIU was not run. Take a full dump instead (a dump, not a "
			  "pre-dump), or model the pre-copy rounds with `memlens migrate-model`",
			  caps->path);
}

int ml_criu_dump_precheck(const struct ml_criu_caps *caps, const struct ml_criu_dump_req *r,
			  struct ml_err *err)
{
	int ret = target_alive(r->pid, err);

	if (!ret && r->pre_dump)
		ret = pre_dump_supported(caps, err);
	if (!ret)
		ret = session_visible(r->pid, err);
	/* a pre-dump leaves sockets and SysV IPC alone; a dump needs a TCP
	 * policy, and an IPC namespace of its own for SysV shared memory */
	if (!ret && !r->pre_dump)
		ret = ml_criu_tcp_check(r->pid, r->tcp, r->extra_args, err);
	if (!ret && !r->pre_dump)
		ret = ml_criu_sysv_check(r->pid, err);
	return ret;
}

static int add_common(struct ml_criu_argv *a, const struct ml_criu_caps *caps, const char *cmd,
		      const char *dir, const char *log, const struct ml_criu_run_opts *o)
{
	int ret = ml_criu_argv_add(a, caps->path);

	if (!ret)
		ret = ml_criu_argv_add(a, cmd);
	if (!ret)
		ret = ml_criu_argv_addf(a, "--images-dir=%s", dir);
	if (!ret)
		ret = ml_criu_argv_addf(a, "--log-file=%s", log);
	if (!ret)
		ret = ml_criu_argv_addf(a, "-v%d", o && o->log_level ? o->log_level : 4);
	return ret;
}

static int criu_add_extra(struct ml_criu_argv *a, const char *const *extra)
{
	int ret = 0;

	while (!ret && extra && *extra)
		ret = ml_criu_argv_add(a, *extra++);
	return ret;
}

static int add_dump_opts(struct ml_criu_argv *a, const struct ml_criu_caps *caps,
			 const struct ml_criu_dump_req *r, const char *dir, bool use_parent)
{
	char abs[PATH_MAX], rel[PATH_MAX];
	int ret;

	ret = ml_criu_argv_addf(a, "--tree=%d", (int)r->pid);
	if (!ret && r->leave_running && !r->pre_dump)
		ret = ml_criu_argv_add(a, "--leave-running");
	if (!ret && r->leave_stopped && !r->pre_dump)
		ret = ml_criu_argv_add(a, "--leave-stopped");
	if (!ret && r->shell_job)
		ret = ml_criu_argv_add(a, "--shell-job");
	if (!ret && !r->pre_dump && r->tcp == ML_CRIU_TCP_ESTABLISHED)
		ret = ml_criu_argv_add(a, "--tcp-established");
	if (!ret && !r->pre_dump && r->tcp == ML_CRIU_TCP_CLOSE)
		ret = ml_criu_argv_add(a, "--tcp-close");
	if (!ret && use_parent) {
		if (!realpath(r->parent_dir, abs))
			return -errno;
		relpath(dir, abs, rel, sizeof(rel));
		ret = ml_criu_argv_addf(a, "--prev-images-dir=%s", rel);
	}
	/* a dump skips the pages already in its parent only with --track-mem */
	if (!ret && (r->pre_dump || (use_parent && caps->mem_dirty_track)))
		ret = ml_criu_argv_add(a, "--track-mem");
	if (!ret && r->lazy_port > 0 && !r->pre_dump) {
		ret = ml_criu_argv_add(a, "--lazy-pages");
		if (!ret && r->lazy_addr)
			ret = ml_criu_argv_addf(a, "--address=%s", r->lazy_addr);
		if (!ret)
			ret = ml_criu_argv_addf(a, "--port=%d", r->lazy_port);
	} else if (!ret && r->page_server_port > 0) {
		ret = ml_criu_argv_add(a, "--page-server");
		if (!ret && r->page_server_addr)
			ret = ml_criu_argv_addf(a, "--address=%s", r->page_server_addr);
		if (!ret)
			ret = ml_criu_argv_addf(a, "--port=%d", r->page_server_port);
	}
	return ret;
}

/* What the parent images left out, plus the caller's own no-parent ranges. */
static int parent_excluded(const struct ml_criu_dump_req *r, struct ml_rangeset *out,
			   struct ml_err *err)
{
	int found, ret;

	ml_rangeset_clear(out);
	if (r->parent_dir) {
		ret = ml_criu_record_read(r->parent_dir, out, &found, err);
		if (ret)
			return ret;
	}
	for (size_t i = 0; r->no_parent && i < r->no_parent->n; i++)
		if (ml_rangeset_add(out, r->no_parent->r[i].start, r->no_parent->r[i].end))
			return ml_err_set(err, ENOMEM, "out of memory");
	return 0;
}

/* Hot ranges known but not excluded (exclusion off, or a dump): say so. */
static void note_not_excluded(struct ml_criu_exclude_report *x, const struct ml_criu_dump_req *r)
{
	size_t pos;

	if (!x->nno_parent && !x->parent_unusable)
		x->note[0] = '\0'; /* "nothing to exclude" would mislead */
	pos = strlen(x->note);
	snprintf(x->note + pos, sizeof(x->note) - pos,
		 r->no_exclude ? "%sexclusion off: nothing left out (%zu hot range(s) sent anyway)"
			       : "%sa dump writes every VMA: its %zu hot range(s) are sent",
		 pos ? "; " : "", r->exclude ? r->exclude->n : 0);
}

/*
 * The exclusion arguments into @ex; the exclude file goes into a private
 * temporary directory, removed afterwards.
 */
static int add_exclusion(struct ml_criu_argv *ex, const struct ml_criu_caps *caps,
			 const struct ml_criu_dump_req *r, const struct ml_rangeset *pexcl,
			 char *tmpdir, struct ml_criu_result *res, struct ml_err *err)
{
	const struct ml_rangeset *excl = r->pre_dump && !r->no_exclude ? r->exclude : NULL;
	const char *base = getenv("TMPDIR");
	size_t n = excl ? excl->n : 0;
	int ret;

	for (size_t i = 0; excl && caps->page_granular && i < r->nexclude_procs; i++)
		n += r->exclude_procs[i].ranges->n; /* more than the union: an upper bound */

	if (n > ML_CRIU_EXCLUDE_RANGE_MAX && caps->exclude_file) {
		snprintf(tmpdir, PATH_MAX, "%s/memlens-criu-XXXXXX", base && *base ? base : "/tmp");
		if (!mkdtemp(tmpdir))
			return ml_err_set(err, errno,
					  "cannot create a private directory for the "
					  "exclude file (%s): %s",
					  tmpdir, strerror(errno));
	}
	if (excl && r->exclude_procs && caps->page_granular)
		ret = ml_criu_exclude_args_procs(ex, r->pid, r->exclude_procs, r->nexclude_procs,
						 pexcl, caps, tmpdir[0] ? tmpdir : NULL,
						 &res->exclude, err);
	else
		ret = ml_criu_exclude_args(ex, r->pid, excl, pexcl, caps, tmpdir[0] ? tmpdir : NULL,
					   &res->exclude, err);
	if (ret)
		return ret;
	res->exclude.nparent_excluded = pexcl->n;
	if ((r->no_exclude && r->pre_dump) || (!r->pre_dump && r->exclude && r->exclude->n))
		note_not_excluded(&res->exclude, r);
	return 0;
}

static void remove_tmpdir(const char *tmpdir, const struct ml_criu_result *res)
{
	if (!tmpdir[0])
		return;
	if (res->exclude.used_file)
		unlink(res->exclude.file);
	rmdir(tmpdir);
}

static int build_dump(struct ml_criu_argv *a, const struct ml_criu_caps *caps,
		      const struct ml_criu_dump_req *r, const struct ml_criu_run_opts *o,
		      const char *dir, char *tmpdir, struct ml_criu_result *res, struct ml_err *err)
{
	const char *cmd = r->pre_dump ? "pre-dump" : "dump";
	struct ml_criu_argv ex;
	struct ml_rangeset pexcl;
	char log[32];
	int ret;

	snprintf(log, sizeof(log), "%s.log", cmd);
	snprintf(res->log_path, sizeof(res->log_path), "%.4000s/%s", dir, log);
	ml_criu_argv_init(&ex);
	ml_rangeset_init(&pexcl);
	ret = parent_excluded(r, &pexcl, err);
	if (!ret)
		ret = add_exclusion(&ex, caps, r, &pexcl, tmpdir, res, err);
	if (ret)
		goto out;
	res->parent_used = r->parent_dir && !res->exclude.parent_unusable;
	ret = add_common(a, caps, cmd, dir, log, o);
	if (!ret)
		ret = add_dump_opts(a, caps, r, dir, res->parent_used);
	if (ret) {
		ret = ret == -ENOMEM ? ml_err_set(err, ENOMEM, "out of memory")
				     : ml_err_set(err, -ret, "parent images directory %s: %s",
						  r->parent_dir, strerror(-ret));
		goto out;
	}
	for (size_t i = 0; i < ex.n && !ret; i++)
		ret = ml_criu_argv_add(a, ex.v[i]);
	if (!ret)
		ret = criu_add_extra(a, r->extra_args);
	if (ret)
		ret = ml_err_set(err, ENOMEM, "out of memory");
out:
	ml_rangeset_free(&pexcl);
	ml_criu_argv_free(&ex);
	return ret;
}

/* Stale records of an earlier run in the same directory would mislead a child. */
static void remove_records(const char *dir)
{
	char path[PATH_MAX + 32];

	snprintf(path, sizeof(path), "%s/%s", dir, ML_CRIU_RECORD_NAME);
	unlink(path);
	snprintf(path, sizeof(path), "%s/%s", dir, ML_CRIU_HOT_IOVS_NAME);
	unlink(path);
	snprintf(path, sizeof(path), "%s/%s", dir, ML_CRIU_RESTORE_OPTS_NAME);
	unlink(path);
}

/* After a successful (pre-)dump: what it left out, for the next one. */
static int write_record(const char *dir, const struct ml_criu_dump_req *r,
			const struct ml_criu_result *res, struct ml_err *err)
{
	bool left_out = r->pre_dump && res->exclude.nexclude && r->exclude;
	int ret = ml_criu_record_write(dir, left_out ? r->exclude : NULL, err);

	/* what its restore must repeat; a pre-dump is never restored */
	if (!ret && !r->pre_dump)
		ret = mli_criu_restore_opts_write(dir, r->tcp, r->extra_args, r->restore_args, err);
	return ret;
}

/*
 * What the dump wrote: the images here, and the pages (private and
 * shared) it sent to a page server, by CRIU's own count.
 */
static void read_stats(const char *dir, const struct ml_criu_dump_req *r,
		       struct ml_criu_result *res)
{
	struct ml_criu_dump_stats s;
	struct ml_err e;
	long page = sysconf(_SC_PAGESIZE);

	res->image_bytes = ml_criu_dir_bytes(dir, NULL);
	res->bytes_written = res->image_bytes;
	if (ml_criu_stats_read(dir, &s, &e))
		return;
	res->pages_scanned = s.pages_scanned;
	res->pages_skipped_parent = s.pages_skipped_parent;
	res->pages_written = s.pages_written;
	res->shpages_written = s.shpages_written;
	if (r->page_server_port > 0)
		res->bytes_written +=
			(uint64_t)(s.pages_written > 0 ? s.pages_written : 0) * (uint64_t)page +
			(uint64_t)(s.shpages_written > 0 ? s.shpages_written : 0) * (uint64_t)page;
}

int mli_criu_dump_prepare(const struct ml_criu_caps *caps, const struct ml_criu_dump_req *r,
			  const struct ml_criu_run_opts *o, struct ml_criu_argv *a, char *tmpdir,
			  struct ml_criu_result *res, struct ml_err *err)
{
	char dir[PATH_MAX];
	int ret;

	mli_criu_result_init(res);
	ret = ml_criu_dump_precheck(caps, r, err);
	if (!ret)
		ret = prepare_dir(r->images_dir, dir, sizeof(dir), err);
	if (!ret)
		ret = build_dump(a, caps, r, o, dir, tmpdir, res, err);
	if (ret)
		return ret;
	unlink(res->log_path);
	remove_records(dir);
	ml_criu_argv_format(a, res->cmdline, sizeof(res->cmdline));
	return 0;
}

int mli_criu_dump_finish(const struct ml_criu_dump_req *r, int ret, char *tmpdir,
			 struct ml_criu_result *res, struct ml_err *err)
{
	if (!ret)
		ret = write_record(r->images_dir, r, res, err);
	if (ret == -ETIMEDOUT)
		ret = after_timeout(r, res, err);
	if (ret == -EIO && kill(r->pid, 0) < 0 && errno == ESRCH && r->leave_running)
		ret = ml_err_set(err, ESRCH, "the target %d exited during the dump; CRIU's log: %s",
				 (int)r->pid, res->log_path);
	read_stats(r->images_dir, r, res);
	remove_tmpdir(tmpdir, res);
	return ret;
}

int ml_criu_dump(const struct ml_criu_caps *caps, const struct ml_criu_dump_req *r,
		 const struct ml_criu_run_opts *o, struct ml_criu_result *res, struct ml_err *err)
{
	char tmpdir[PATH_MAX] = "";
	struct ml_criu_run_opts ro;
	struct ml_criu_argv a;
	int ret;

	mli_criu_result_init(res);
	ret = ml_opts_load(&ro, sizeof(ro), o, "ml_criu_run_opts", err);
	if (ret)
		return ret;
	if (r->timeout_ms) /* this request's own limit */
		ro.timeout_ms = r->timeout_ms;
	o = &ro;
	ml_criu_argv_init(&a);
	ret = mli_criu_dump_prepare(caps, r, o, &a, tmpdir, res, err);
	if (!ret) {
		ret = run_and_report(&a, o, r->pre_dump ? "pre-dump" : "dump", res, err);
		ret = mli_criu_dump_finish(r, ret, tmpdir, res, err);
	} else {
		remove_tmpdir(tmpdir, res);
	}
	ml_criu_argv_free(&a);
	return ret;
}

int mli_criu_read_pidfile(const char *path, pid_t *pid)
{
	char buf[32];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EINVAL;
	buf[n] = '\0';
	*pid = (pid_t)strtol(buf, NULL, 10);
	return *pid > 0 ? 0 : -EINVAL;
}

/* The arguments every detached CRIU command starts with (restore, the page
 * server): ACTION in the images directory DIR (resolved), its log
 * DIR/ACTION.log and its pidfile DIR/ACTION.pid, both removed first (CRIU
 * refuses a pidfile that exists), then DETACH and --pidfile. */
int mli_criu_detached_args(struct ml_criu_argv *a, const struct ml_criu_caps *caps,
			   const char *action, const char *detach, const char *images_dir,
			   const struct ml_criu_run_opts *o, char *dir, char *pidfile,
			   size_t pidfile_len, struct ml_criu_result *res, struct ml_err *err)
{
	char log[64];
	int ret = prepare_dir(images_dir, dir, PATH_MAX, err);

	if (ret)
		return ret;
	snprintf(log, sizeof(log), "%s.log", action);
	snprintf(res->log_path, sizeof(res->log_path), "%.4000s/%s", dir, log);
	snprintf(pidfile, pidfile_len, "%.4000s/%s.pid", dir, action);
	unlink(pidfile);
	unlink(res->log_path);
	ret = add_common(a, caps, action, dir, log, o);
	if (!ret)
		ret = ml_criu_argv_add(a, detach);
	if (!ret)
		ret = ml_criu_argv_addf(a, "--pidfile=%s", pidfile);
	return ret ? ml_err_set(err, ENOMEM, "out of memory") : 0;
}

int ml_criu_restore(const struct ml_criu_caps *caps, const struct ml_criu_restore_req *r,
		    const struct ml_criu_run_opts *o, struct ml_criu_result *res,
		    struct ml_err *err)
{
	char dir[PATH_MAX], pidfile[PATH_MAX + 16];
	struct ml_criu_run_opts ov;
	struct ml_criu_argv a;
	int ret;

	mli_criu_result_init(res);
	ret = ml_opts_load(&ov, sizeof(ov), o, "ml_criu_run_opts", err);
	if (ret)
		return ret;
	o = &ov;
	ml_criu_argv_init(&a);
	ret = mli_criu_detached_args(&a, caps, "restore", "--restore-detached", r->images_dir, o,
				     dir, pidfile, sizeof(pidfile), res, err);
	if (ret)
		goto out;
	if (r->shell_job)
		ret = ml_criu_argv_add(&a, "--shell-job");
	if (!ret && r->lazy_pages)
		ret = ml_criu_argv_add(&a, "--lazy-pages");
	if (!ret)
		ret = mli_criu_restore_opts_add(&a, dir, r, res->repeated, sizeof(res->repeated));
	if (!ret)
		ret = criu_add_extra(&a, r->extra_args);
	if (ret) {
		ret = ml_err_set(err, ENOMEM, "out of memory");
		goto out;
	}
	ret = run_and_report(&a, o, "restore", res, err);
	if (!ret && mli_criu_read_pidfile(pidfile, &res->restored_pid))
		ret = ml_err_set(err, EIO, "criu restore succeeded but wrote no pid into %s",
				 pidfile);
out:
	ml_criu_argv_free(&a);
	return ret;
}

int ml_criu_page_server_start(const struct ml_criu_caps *caps,
			      const struct ml_criu_page_server_req *r,
			      const struct ml_criu_run_opts *o, pid_t *pid,
			      struct ml_criu_result *res, struct ml_err *err)
{
	char dir[PATH_MAX], pidfile[PATH_MAX + 24], abs[PATH_MAX], rel[PATH_MAX];
	struct ml_criu_run_opts ov;
	struct ml_criu_argv a;
	int ret;

	mli_criu_result_init(res);
	*pid = 0;
	ret = ml_opts_load(&ov, sizeof(ov), o, "ml_criu_run_opts", err);
	if (ret)
		return ret;
	o = &ov;
	ml_criu_argv_init(&a);
	ret = mli_criu_detached_args(&a, caps, "page-server", "--daemon", r->images_dir, o, dir,
				     pidfile, sizeof(pidfile), res, err);
	if (ret)
		goto out;
	if (r->addr)
		ret = ml_criu_argv_addf(&a, "--address=%s", r->addr);
	if (!ret && r->port > 0)
		ret = ml_criu_argv_addf(&a, "--port=%d", r->port);
	if (!ret && r->parent_dir) {
		if (!realpath(r->parent_dir, abs)) {
			ret = ml_err_set(err, errno, "parent images directory %s: %s",
					 r->parent_dir, strerror(errno));
			goto out;
		}
		relpath(dir, abs, rel, sizeof(rel));
		ret = ml_criu_argv_addf(&a, "--prev-images-dir=%s", rel);
	}
	if (ret) {
		ret = ml_err_set(err, ENOMEM, "out of memory");
		goto out;
	}
	ret = run_and_report(&a, o, "page-server", res, err);
	if (!ret && mli_criu_read_pidfile(pidfile, pid))
		ret = ml_err_set(err, EIO, "criu page-server started but wrote no pid into %s",
				 pidfile);
out:
	ml_criu_argv_free(&a);
	return ret;
}

int ml_criu_page_server_stop(pid_t pid, struct ml_err *err)
{
	if (pid <= 0)
		return ml_err_set(err, EINVAL, "invalid page-server pid %d", (int)pid);
	if (kill(pid, SIGTERM) < 0 && errno != ESRCH)
		return ml_err_set(err, errno, "cannot stop the CRIU page server %d: %s", (int)pid,
				  strerror(errno));
	/* a daemon is reparented to its reaper: when that is us (PID 1 of a
	 * container, or a subreaper) collect it rather than leave a zombie */
	for (int i = 0; i < 100; i++) {
		char st = task_state(pid);

		if (!st || st == 'Z')
			break;
		usleep(10000);
	}
	waitpid(pid, NULL, WNOHANG);
	return 0;
}
