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

/* Probed once per run: every later call with the same CRIU reuses it. */
static struct criu_caps probed;
static bool have_probed;

int criu_cli_setup(const char *cmd, const char *explicit_path, struct criu_caps *caps)
{
	struct ml_err err = { 0 };
	char path[PATH_MAX];
	int r;

	r = criu_locate(explicit_path, path, sizeof(path), &err);
	if (!r && have_probed && !strcmp(path, probed.path)) {
		*caps = probed;
	} else if (!r) {
		r = criu_probe(path, caps, &err);
		if (!r) {
			probed = *caps;
			have_probed = true;
		}
	}
	if (r) {
		cli_error(cmd, "%s", err.msg);
		return r == -ENOENT || r == -EACCES ? EXIT_NOFEATURE : exit_code_for(r);
	}
	if (!caps->works) {
		cli_error(cmd,
			  "the CRIU at %s (version %s) fails `criu check` on this kernel%s%s; "
			  "run scripts/ensure-criu.sh to build CRIU 4.1.1, or pass a working CRIU "
			  "with --criu PATH / MEMLENS_CRIU",
			  caps->path, caps->version[0] ? caps->version : "unknown",
			  caps->check_msg[0] ? ": " : "", caps->check_msg);
		return EXIT_NOFEATURE;
	}
	return EXIT_OK;
}

void criu_cli_json_caps(struct jw *w, const struct criu_caps *caps)
{
	jw_key(w, "criu");
	jw_obj(w);
	jw_kstr(w, "path", caps->path);
	jw_kstr(w, "version", caps->version);
	jw_kbool(w, "exclude_options", criu_can_exclude(caps));
	jw_kbool(w, "exclude_range", caps->exclude_range);
	jw_kbool(w, "exclude_file", caps->exclude_file);
	jw_kbool(w, "no_parent_range", caps->no_parent_range);
	jw_kbool(w, "mem_dirty_track", caps->mem_dirty_track);
	jw_obj_end(w);
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

int criu_cli_add_opt(const char *cmd, struct criu_cli_opts *o, const char *arg)
{
	size_t len = strcspn(arg, "=");

	if (strncmp(arg, "--", 2) || len < 3 || strpbrk(arg, " \t\n")) {
		cli_error(cmd,
			  "--criu-opt takes one long CRIU option like --tcp-established or "
			  "--ext-unix-sk, not '%s'",
			  arg);
		return EXIT_USAGE;
	}
	for (int i = 0; owned_opts[i]; i++) {
		if (strlen(owned_opts[i]) == len && !strncmp(arg, owned_opts[i], len)) {
			cli_error(cmd,
				  "--criu-opt %s: memlens sets %.*s itself; use memlens's own "
				  "option for it (see --help)",
				  arg, (int)len, arg);
			return EXIT_USAGE;
		}
	}
	if (o->n >= CRIU_CLI_MAX_OPTS) {
		cli_error(cmd, "at most %d --criu-opt options", CRIU_CLI_MAX_OPTS);
		return EXIT_USAGE;
	}
	o->v[o->n++] = arg;
	o->v[o->n] = NULL;
	return 0;
}
