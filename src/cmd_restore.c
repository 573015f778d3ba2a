// SPDX-License-Identifier: MIT
/* memlens restore: `criu restore -d` from an images directory; reports the new pid. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cliutil.h"
#include "command.h"
#include "criu_cli.h"
#include "memlens/jsonw.h"
#include "memlens/criu.h"

static const char usage_text[] =
	"usage: memlens restore -D DIR [options]\n"
	"\n"
	"Restore a process tree checkpointed with `memlens checkpoint` (criu restore\n"
	"--restore-detached) and report the pid of the restored process.\n"
	"\n"
	"  -D, --images-dir DIR     CRIU images directory (required)\n"
	"      --criu PATH          the CRIU binary (default: $MEMLENS_CRIU, then the one\n"
	"                           scripts/ensure-criu.sh built, then criu on PATH)\n"
	"      --timeout SEC        kill CRIU after SEC seconds (default 120)\n"
	"      --shell-job          pass --shell-job (it was dumped with --shell-job)\n"
	"      --criu-opt OPT       pass one more option to criu restore, e.g.\n"
	"                           --tcp-established (repeatable)\n"
	"      --json               one JSON object on one line\n"
	"  -h, --help               this text\n"
	"\n"
	"Exit status: 0 restored, 1 CRIU failed (see its log, restore.log in DIR),\n"
	"2 usage, 5 no working CRIU.\n";

enum { OPT_JSON = 1000, OPT_CRIU, OPT_TIMEOUT, OPT_SHELL, OPT_CRIUOPT };

struct restore_cli {
	struct criu_restore_req req;
	const char *criu;
	struct criu_cli_opts extra;
	unsigned int timeout_s;
	bool json;
};

static int parse_args(int argc, char **argv, struct restore_cli *c)
{
	static const struct option opts[] = {
		{ "images-dir", required_argument, NULL, 'D' },
		{ "criu", required_argument, NULL, OPT_CRIU },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "shell-job", no_argument, NULL, OPT_SHELL },
		{ "criu-opt", required_argument, NULL, OPT_CRIUOPT },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	long v;
	int opt;

	while ((opt = getopt_long(argc, argv, "D:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'D':
			c->req.images_dir = optarg;
			break;
		case OPT_CRIU:
			c->criu = optarg;
			break;
		case OPT_TIMEOUT:
			if (parse_long(optarg, 1, 86400, &v)) {
				cli_error("restore", "--timeout must be 1..86400 seconds, not '%s'",
					  optarg);
				return EXIT_USAGE;
			}
			c->timeout_s = (unsigned int)v;
			break;
		case OPT_SHELL:
			c->req.shell_job = true;
			break;
		case OPT_CRIUOPT:
			if (criu_cli_add_opt("restore", &c->extra, optarg))
				return EXIT_USAGE;
			c->req.extra_args = c->extra.v;
			break;
		case OPT_JSON:
			c->json = true;
			break;
		case 'h':
			return cli_usage(usage_text, true);
		default:
			return cli_usage(usage_text, false);
		}
	}
	if (optind != argc || !c->req.images_dir) {
		cli_error("restore", "give -D DIR and nothing else (see --help)");
		return EXIT_USAGE;
	}
	return 0;
}

static void print_json(const struct restore_cli *c, const struct criu_caps *caps,
		       const struct criu_result *r, int rc, const char *error)
{
	struct jw w;

	ml_jw_init(&w, stdout);
	ml_jw_obj(&w);
	ml_jw_kstr(&w, "type", "restore");
	ml_jw_kstr(&w, "images_dir", c->req.images_dir);
	ml_jw_kbool(&w, "ok", rc == EXIT_OK);
	ml_jw_kint(&w, "exit_code", rc);
	ml_jw_kint(&w, "pid", r->restored_pid);
	criu_cli_json_caps(&w, caps);
	ml_jw_kstr(&w, "command", r->cmdline);
	ml_jw_kint(&w, "criu_exit_status", r->exit_status);
	ml_jw_kbool(&w, "timed_out", r->timed_out);
	ml_jw_kuint(&w, "duration_ms", r->duration_ms);
	ml_jw_kstr(&w, "log", r->log_path);
	if (error)
		ml_jw_kstr(&w, "error", error);
	ml_jw_obj_end(&w);
}

static int cmd_restore(int argc, char **argv)
{
	struct restore_cli c = { 0 };
	struct ml_err err = { 0 };
	struct criu_run_opts ro = { 0 };
	struct criu_result res;
	struct criu_caps caps;
	int rc, r;

	rc = parse_args(argc, argv, &c);
	if (rc)
		return rc < 0 ? EXIT_OK : rc;
	if (access(c.req.images_dir, R_OK) < 0) {
		cli_error("restore", "images directory %s: %s", c.req.images_dir, strerror(errno));
		return errno == ENOENT ? EXIT_USAGE : exit_code_for(-errno);
	}
	rc = criu_cli_setup("restore", c.criu, &caps);
	if (rc)
		return rc;
	ro.timeout_ms = c.timeout_s * 1000;
	r = ml_criu_restore(&caps, &c.req, &ro, &res, &err);
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
