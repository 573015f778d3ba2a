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

int agent_init(struct agent *a, const struct agent_config *cfg, struct ml_err *err)
{
	(void)err;
	memset(a, 0, sizeof(*a));
	a->cfg = *cfg;
	a->start_ns = ml_mono_ns();
	pthread_rwlock_init(&a->lock, NULL);
	pthread_mutex_init(&a->criu_lock, NULL);
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
}

/* Called on the profiler's thread after every interval. */
void agent_tick(const struct profiler_sample *s, void *arg)
{
	(void)arg;
	if (s->target_exited) {
		metrics_error("target_exited");
		metrics_profiling(false, 0);
		return;
	}
	metrics_sample(s);
}

int agent_criu(struct agent *a, struct ml_err *err)
{
	int r;

	pthread_mutex_lock(&a->criu_lock);
	if (!a->criu_probed) {
		struct criu_run_opts o = { .timeout_ms = a->cfg.criu_timeout_ms };
		char path[PATH_MAX], dir[PATH_MAX];
		struct criu_probe_opts po = {
			.timeout_ms = a->cfg.criu_timeout_ms ? a->cfg.criu_timeout_ms
							     : CRIU_DEFAULT_TIMEOUT_MS,
			.cache_dir = criu_cli_cache_dir(dir, sizeof(dir)),
		};

		a->criu_probed = true;
		a->criu_rc = criu_cli_locate(a->cfg.criu_path, path, sizeof(path), &a->criu_err);
		if (!a->criu_rc)
			a->criu_rc = ml_criu_probe_opts(path, &a->caps, &po, &a->criu_err);
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
				"images_dir '%s' is outside the images root %s (see --images-root)",
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
