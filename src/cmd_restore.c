// SPDX-License-Identifier: MIT
/* memlens restore: `criu restore -d` from an images directory; reports the new pid. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cliutil.h"
#include "command.h"
#include "criu_cli.h"
#include "opts.h"
#include "output.h"
#include "memlens/criu.h"
#include "memlens/format_restore.h"

static const char about[] =
	"Restore a process tree checkpointed with `memlens checkpoint` (criu restore\n"
	"--restore-detached) and report the pid of the restored process.\n";

static const char footer[] =
	"Exit status: 0 restored, 1 CRIU failed (see its log, restore.log in DIR),\n"
	"2 usage, 5 no working CRIU.\n";

struct restore_cli {
	struct ml_criu_restore_req req;
	const char *criu;
	struct criu_cli_opts extra;
	unsigned int timeout_s;
	bool json;
};

static int parse_args(int argc, char **argv, struct restore_cli *c)
{
	const char *out = NULL;
	struct cli_opt opts[] = {
		CLI_OPT_IMAGES_DIR(&c->req.images_dir, "CRIU images directory (required)"),
		CLI_OPT_CRIU(&c->criu, "the CRIU binary (default: $MEMLENS_CRIU, then criu on "
				       "PATH, then the one scripts/ensure-criu.sh built)"),
		CLI_OPT_TIMEOUT(&c->timeout_s, "kill CRIU after SEC seconds (default 120)"),
		CLI_OPT_SHELL_JOB(&c->req.shell_job,
				  "pass --shell-job (it was dumped with --shell-job)"),
		CLI_OPT_TCP(&c->req.tcp, criu_cli_tcp_fn,
			    "established TCP connections in the images: established or close "
			    "(default: as the checkpoint chose)"),
		CLI_OPT_CRIU_OPT(&c->extra, criu_cli_opt_fn,
				 "pass one more option to criu restore, e.g. --ext-unix-sk "
				 "(repeatable; those the checkpoint recorded are repeated anyway)"),
		CLI_OPT_JSON(&c->json, "one JSON object on one line"),
		CLI_OPT_OUTPUT(&out,
			       "write what would go to stdout (text, or JSON with --json) to FILE"),
		CLI_OPT_END,
	};
	struct cli_spec spec = { .cmd = "restore",
				 .synopsis = "-D DIR",
				 .about = about,
				 .footer = footer,
				 .opts = opts };
	int r, first;

	r = cli_parse(&spec, argc, argv, &first);
	if (r)
		return r;
	if (c->extra.n)
		c->req.extra_args = c->extra.v;
	if (!c->req.images_dir)
		return cli_usage_error("restore", "give -D DIR");
	return out_option("restore", out);
}

static void print_json(const struct restore_cli *c, const struct ml_criu_caps *caps,
		       const struct ml_criu_result *r, int rc, const char *error)
{
	struct ml_restore_rec rec = { .images_dir = c->req.images_dir,
				      .ok = rc == EXIT_OK,
				      .exit_code = rc,
				      .pid = r->restored_pid,
				      .command = r->cmdline,
				      .criu_exit_status = r->exit_status,
				      .timed_out = r->timed_out,
				      .duration_ms = r->duration_ms,
				      .repeated = r->repeated,
				      .log = r->log_path,
				      .hint = r->hint,
				      .error = error };
	struct ml_jw w;

	ml_fmt_criu_caps_of(&rec.criu, caps);
	ml_jw_init(&w, stdout);
	ml_fmt_restore(&w, &rec);
}

static int cmd_restore(int argc, char **argv)
{
	struct restore_cli c = { 0 };
	struct ml_err err = { 0 };
	ML_OPTS(ml_criu_run_opts, ro);
	struct ml_criu_result res;
	struct ml_criu_caps caps;
	int rc, r;

	rc = parse_args(argc, argv, &c);
	if (rc)
		return rc < 0 ? EXIT_OK : rc;
	if (access(c.req.images_dir, R_OK) < 0) {
		int e = errno;

		cli_error("restore",
			  "images directory %s: %s; give the -D DIR memlens checkpoint wrote",
			  c.req.images_dir, strerror(e));
		return e == ENOENT ? EXIT_USAGE : exit_code_for(-e);
	}
	rc = criu_cli_setup("restore", c.criu,
			    c.timeout_s ? c.timeout_s * 1000 : ML_CRIU_DEFAULT_TIMEOUT_MS, &caps);
	if (rc)
		return rc;
	ro.timeout_ms = c.timeout_s * 1000;
	r = ml_criu_restore(&caps, &c.req, &ro, &res, &err);
	if (res.repeated[0] && !c.json)
		fprintf(stderr,
			"memlens restore: repeated the checkpoint's %s (recorded in %s/%s)\n",
			res.repeated, c.req.images_dir, ML_CRIU_RESTORE_OPTS_NAME);
	rc = r ? (r == -ESRCH ? EXIT_FAIL : exit_code_for(r)) : EXIT_OK;
	if (r)
		cli_error("restore", "%s", err.msg);
	if (c.json)
		print_json(&c, &caps, &res, rc, r ? err.msg : NULL);
	else if (!r)
		printf("restored from %s: pid %d (%.2f s)\n", c.req.images_dir,
		       (int)res.restored_pid, res.duration_ms / 1000.0);
	return rc;
}

MEMLENS_COMMAND(restore, "restore", 16, "restore a process checkpointed with memlens checkpoint",
		cmd_restore);
