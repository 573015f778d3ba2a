// SPDX-License-Identifier: MIT
/* The agent's state: the profiler of the one target, CRIU, image paths. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>

#include "agent.h"
#include "memlens/clock.h"
#include "memlens/features.h"

/* Can the write profiler run here (GetStatus's "profile_writes")? */
static bool probe_profile(void)
{
	struct ml_feature_list *l = calloc(1, sizeof(*l));
	int ok = 0;

	if (!l)
		return false;
	ml_features_probe_memory(l);
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->items[i].name, "pagemap_scan") ||
		    !strcmp(l->items[i].name, "uffd_wp_async"))
			ok += l->items[i].state == ML_FEATURE_OK;
	free(l);
	return ok == 2;
}

int agent_init(struct agent *a, const struct agent_config *cfg, struct ml_err *err)
{
	(void)err;
	memset(a, 0, sizeof(*a));
	a->cfg = *cfg;
	a->start_ns = ml_mono_ns();
	pthread_rwlock_init(&a->lock, NULL);
	pthread_mutex_init(&a->criu_lock, NULL);
	pthread_mutex_init(&a->found_lock, NULL);
	pthread_mutex_init(&a->tick_lock, NULL);
	a->can_profile = probe_profile();
	return 0;
}

void agent_fini(struct agent *a)
{
	pthread_rwlock_wrlock(&a->lock);
	if (a->prof) {
		ml_profiler_close(a->prof); /* unregisters everything: the target is untouched */
		a->prof = NULL;
		metrics_profiling(false, 0);
	}
	pthread_rwlock_unlock(&a->lock);
	pthread_mutex_lock(&a->criu_lock);
	if (a->session)
		ml_criu_session_close(a->session);
	a->session = NULL;
	pthread_mutex_unlock(&a->criu_lock);
	pthread_rwlock_destroy(&a->lock);
	pthread_mutex_destroy(&a->criu_lock);
	pthread_mutex_destroy(&a->found_lock);
	pthread_mutex_destroy(&a->tick_lock);
}

/* Called on the profiler's thread after every interval. */
void agent_tick(const struct ml_profiler_sample *s, void *arg)
{
	struct agent *a = arg;

	if (s->target_exited) {
		metrics_error("target_exited");
		metrics_profiling(false, 0);
		return;
	}
	pthread_mutex_lock(&a->tick_lock);
	a->ticks_over += s->tick_over_interval;
	a->tick_ns_last = s->tick_ns;
	if (s->tick_ns > a->tick_ns_max)
		a->tick_ns_max = s->tick_ns;
	pthread_mutex_unlock(&a->tick_lock);
	metrics_sample(s);
}

int agent_criu(struct agent *a, struct ml_err *err)
{
	int r;

	pthread_mutex_lock(&a->criu_lock);
	if (!a->criu_probed) {
		ML_OPTS(ml_criu_run_opts, o, .timeout_ms = a->cfg.criu_timeout_ms);
		char path[PATH_MAX], dir[PATH_MAX];
		ML_OPTS(ml_criu_probe_opts, po,
			.timeout_ms = a->cfg.criu_timeout_ms ? a->cfg.criu_timeout_ms
							     : ML_CRIU_DEFAULT_TIMEOUT_MS,
			.cache_dir = criu_cli_cache_dir(dir, sizeof(dir)), );

		a->criu_probed = true;
		a->criu_rc = criu_cli_locate(a->cfg.criu_path, path, sizeof(path), &a->criu_err);
		if (!a->criu_rc) {
			a->caps.sz = sizeof(a->caps);
			a->criu_rc = ml_criu_probe_opts(path, &a->caps, &po, &a->criu_err);
		}
		/* slow is not broken: CRIU's runs say what fails (see criu_cli_setup()) */
		if (!a->criu_rc && a->caps.timed_out)
			a->caps.works = true;
		if (!a->criu_rc && !a->caps.works)
			a->criu_rc = ml_err_set(&a->criu_err, ENOTSUP,
						"CRIU at %s does not work on this kernel: %s", path,
						a->caps.check_msg);
		if (!a->criu_rc)
			a->criu_rc = ml_criu_session_open(&a->session, &a->caps, &o, &a->criu_err);
	}
	r = a->criu_rc;
	if (r && err)
		*err = a->criu_err;
	if (r)
		a->criu_probed = false; /* CRIU may be installed later: probe again */
	pthread_mutex_unlock(&a->criu_lock);
	return r;
}

static int mkdir_p(const char *path, mode_t mode)
{
	char tmp[PATH_MAX];
	size_t n = strlen(path);

	if (n >= sizeof(tmp))
		return -ENAMETOOLONG;
	memcpy(tmp, path, n + 1);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, mode) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(tmp, mode) && errno != EEXIST)
		return -errno;
	return 0;
}

static bool has_dotdot(const char *p)
{
	const char *s = p;

	while ((s = strstr(s, "..")) != NULL) {
		bool start = s == p || s[-1] == '/';
		bool end = s[2] == '\0' || s[2] == '/';

		if (start && end)
			return true;
		s += 2;
	}
	return false;
}

int agent_images_path(const struct agent *a, const char *dir, char *out, size_t len,
		      struct ml_err *err)
{
	const char *root = a->cfg.images_root;
	size_t rl = strlen(root);
	int n, r;

	if (!dir || !*dir)
		return ml_err_set(err, EINVAL, "images_dir is required (a directory under %s)",
				  root);
	if (has_dotdot(dir))
		return ml_err_set(err, EINVAL, "images_dir '%s' must not contain '..'", dir);
	if (dir[0] == '/') {
		if (strncmp(dir, root, rl) || (dir[rl] != '/' && dir[rl] != '\0'))
			return ml_err_set(
				err, EINVAL,
				"images_dir '%s' is outside the agent's images root %s: give a "
				"directory under it, or one relative to it",
				dir, root);
		n = snprintf(out, len, "%s", dir);
	} else {
		n = snprintf(out, len, "%s/%s", root, dir);
	}
	if (n < 0 || (size_t)n >= len)
		return ml_err_set(err, ENAMETOOLONG, "images_dir '%s' is too long", dir);
	r = mkdir_p(root, 0700);
	if (r)
		return ml_err_set(err, -r, "cannot create the images root %s: %s", root,
				  strerror(-r));
	return 0;
}

int agent_target(struct agent *a, pid_t *pid, struct ml_err *err)
{
	if (a->prof) {
		*pid = ml_profiler_pid(a->prof);
		return 0;
	}
	if (a->restored_pid) {
		if (kill(a->restored_pid, 0) == 0 || errno == EPERM) {
			*pid = a->restored_pid;
			return 0;
		}
		a->restored_pid = 0;
	}
	return target_find(&a->cfg.target, pid, err);
}

/* How the target was chosen, in words the operator used (start-up line, GetStatus). */
static void target_how(const struct agent *a, pid_t pid, char *how, size_t len)
{
	if (a->prof && ml_profiler_pid(a->prof) == pid)
		snprintf(how, len, "profiled (StartProfiling)");
	else if (a->restored_pid == pid)
		snprintf(how, len, "restored (Restore)");
	else if (a->cfg.target.pid)
		snprintf(how, len, "-p %d", (int)a->cfg.target.pid);
	else if (a->cfg.target.comm)
		snprintf(how, len, "--comm %s: the oldest process of that name",
			 a->cfg.target.comm);
	else
		snprintf(how, len, "the oldest process outside the agent's own family");
}

static void read_comm(pid_t pid, char *comm, size_t len)
{
	char path[64];
	FILE *f;

	snprintf(comm, len, "?");
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(comm, (int)len, f))
		comm[strcspn(comm, "\n")] = 0;
	fclose(f);
}

void agent_discover(struct agent *a)
{
	struct ml_err e = { 0 };
	char comm[16], how[96];
	pid_t pid = 0, was;
	int r;

	/* a checkpoint holds the write lock for as long as CRIU runs: look later */
	if (pthread_rwlock_tryrdlock(&a->lock))
		return;
	if (a->prof)
		pid = ml_profiler_pid(a->prof);
	else if (a->restored_pid && (kill(a->restored_pid, 0) == 0 || errno == EPERM))
		pid = a->restored_pid;
	r = pid ? 0 : target_find(&a->cfg.target, &pid, &e);
	if (!r)
		target_how(a, pid, how, sizeof(how));
	pthread_rwlock_unlock(&a->lock);
	if (!r)
		read_comm(pid, comm, sizeof(comm));

	pthread_mutex_lock(&a->found_lock);
	was = a->found_pid;
	if (!r && pid != was) {
		a->found_pid = pid;
		snprintf(a->found_comm, sizeof(a->found_comm), "%s", comm);
		snprintf(a->found_how, sizeof(a->found_how), "%s", how);
		fprintf(stderr, "memlens agent: target: pid %d (%s), chosen by %s\n", (int)pid,
			comm, how);
	} else if (r && was) {
		fprintf(stderr,
			"memlens agent: the target pid %d (%s) is gone; looking for a new one "
			"every "
			"second\n",
			(int)was, a->found_comm);
		a->found_pid = 0;
		a->found_comm[0] = a->found_how[0] = 0;
	} else if (r && !a->missing_said) {
		fprintf(stderr,
			"memlens agent: warning: %s; the agent serves calls and looks again every "
			"second (GetStatus says target_pid 0 until then)\n",
			e.msg);
		a->missing_said = true;
	}
	pid = a->found_pid;
	pthread_mutex_unlock(&a->found_lock);
	metrics_target(pid);
}

pid_t agent_found(struct agent *a, char *comm, size_t clen, char *how, size_t hlen)
{
	pid_t pid;

	pthread_mutex_lock(&a->found_lock);
	pid = a->found_pid;
	snprintf(comm, clen, "%s", a->found_comm);
	snprintf(how, hlen, "%s", a->found_how);
	pthread_mutex_unlock(&a->found_lock);
	return pid;
}
