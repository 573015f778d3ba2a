// SPDX-License-Identifier: MIT
/*
 * The options a restore must repeat from its dump (CRIU refuses a restore
 * of established TCP connections without --tcp-established, of external
 * unix sockets without --ext-unix-sk, ...): the dump leaves a record of
 * them beside the images, and the restore reads it, so a checkpoint and
 * its restore, or the two ends of a migration, agree.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "criu_restore_opts.h"

static const char *const restore_needs[] = {
	"--tcp-established",
	"--tcp-close",
	"--ext-unix-sk",
	"--file-locks",
	"--network-lock",
	"--manage-cgroups",
	"--cgroup-root",
	"--enable-external-sharing",
	"--enable-external-masters",
	NULL,
};

bool ml_criu_restore_needs(const char *opt)
{
	size_t n = strcspn(opt, "=");

	if (strncmp(opt, "--", 2) || strpbrk(opt, " \t\n"))
		return false;
	for (int i = 0; restore_needs[i]; i++)
		if (strlen(restore_needs[i]) == n && !strncmp(opt, restore_needs[i], n))
			return true;
	return false;
}

static const char *tcp_opt(enum ml_criu_tcp tcp)
{
	return tcp == ML_CRIU_TCP_ESTABLISHED ? "--tcp-established"
	       : tcp == ML_CRIU_TCP_CLOSE     ? "--tcp-close"
					      : NULL;
}

static bool is_tcp_opt(const char *opt)
{
	return !strcmp(opt, "--tcp-established") || !strcmp(opt, "--tcp-close");
}

/* What a dump does not take but a restore of a container does: its root
 * filesystem, where the external mounts the dump named go */
static bool restore_only(const char *opt)
{
	return !strncmp(opt, "--root=/", 8) || !strncmp(opt, "--external=mnt[", 15);
}

int mli_criu_restore_opts_write(const char *dir, enum ml_criu_tcp tcp, const char *const *extra,
				const char *const *restore, struct ml_err *err)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, ML_CRIU_RESTORE_OPTS_NAME);
	unlink(path);
	f = fopen(path, "wxe");
	if (!f)
		return ml_err_set(err, errno, "cannot write %s: %s", path, strerror(errno));
	fprintf(f, "# memlens: the CRIU options a restore of these images repeats\n");
	if (tcp_opt(tcp))
		fprintf(f, "%s\n", tcp_opt(tcp));
	for (; extra && *extra; extra++)
		if (ml_criu_restore_needs(*extra) && !(tcp_opt(tcp) && is_tcp_opt(*extra)))
			fprintf(f, "%s\n", *extra);
	for (; restore && *restore; restore++)
		if (restore_only(*restore) && !strchr(*restore, '\n'))
			fprintf(f, "%s\n", *restore);
	if (fclose(f))
		return ml_err_set(err, EIO, "cannot write %s", path);
	return 0;
}

static bool in_list(const char *const *v, const char *opt)
{
	for (; v && *v; v++)
		if (!strcmp(*v, opt))
			return true;
	return false;
}

static bool tcp_in_list(const char *const *v)
{
	for (; v && *v; v++)
		if (is_tcp_opt(*v))
			return true;
	return false;
}

/* One recorded line: repeat it unless @r decides otherwise. */
static int take(struct ml_criu_argv *a, const struct ml_criu_restore_req *r, const char *opt,
		char *repeated, size_t len)
{
	size_t pos = strlen(repeated);

	if ((!ml_criu_restore_needs(opt) && !restore_only(opt)) || in_list(r->extra_args, opt) ||
	    (is_tcp_opt(opt) && (r->tcp != ML_CRIU_TCP_UNSET || tcp_in_list(r->extra_args))))
		return 0;
	if (ml_criu_argv_add(a, opt))
		return -ENOMEM;
	snprintf(repeated + pos, len - pos, "%s%s", pos ? " " : "", opt);
	return 0;
}

int mli_criu_restore_opts_add(struct ml_criu_argv *a, const char *dir,
			      const struct ml_criu_restore_req *r, char *repeated, size_t len)
{
	char path[4096], line[256];
	int ret = 0;
	FILE *f;

	repeated[0] = '\0';
	snprintf(path, sizeof(path), "%s/%s", dir, ML_CRIU_RESTORE_OPTS_NAME);
	f = fopen(path, "re");
	while (f && !ret && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (line[0] && line[0] != '#')
			ret = take(a, r, line, repeated, len);
	}
	if (f)
		fclose(f);
	if (!ret && tcp_opt(r->tcp) && !in_list(r->extra_args, tcp_opt(r->tcp)))
		ret = ml_criu_argv_add(a, tcp_opt(r->tcp)) ? -ENOMEM : 0;
	return ret;
}
