// SPDX-License-Identifier: MIT
/* The checks of a command's target, one for every command (cli_target.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_target.h"
#include "cliutil.h"
#include "exitcode.h"
#include "memlens/err.h"
#include "memlens/proc.h"

int cli_check_pid(const char *cmd, pid_t pid)
{
	struct ml_err err = { 0 };
	int r = ml_proc_check_target(pid, &err);

	if (!r)
		return 0;
	cli_error(cmd, "%s", err.msg);
	return exit_code_for(r);
}

/* 0 when @path is an executable regular file, else the errno */
static int runnable(const char *path)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return errno;
	if (S_ISDIR(st.st_mode))
		return EISDIR;
	return access(path, X_OK) < 0 ? errno : 0;
}

int cli_check_prog(const char *cmd, const char *prog)
{
	const char *path = getenv("PATH");
	char buf[4096];
	int e = ENOENT;

	if (!prog || !*prog) {
		cli_error(cmd, "cannot run '': the command after -- is empty; give a program");
		return EXIT_NOCMD;
	}
	if (strchr(prog, '/')) {
		e = runnable(prog);
		if (!e)
			return 0;
		if (e == ENOENT)
			cli_error(cmd, "cannot run '%s': no such file; check the path", prog);
		else
			cli_error(cmd, "cannot run '%s': %s; give an executable file (chmod +x?)",
				  prog, strerror(e));
		return EXIT_NOCMD;
	}
	/* as execvp() looks: each PATH entry ("" is the current directory) */
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (const char *p = path;; p++) {
		size_t n = strcspn(p, ":");
		int r;

		snprintf(buf, sizeof(buf), "%.*s%s%s", (int)n, p, n ? "/" : "", prog);
		r = runnable(buf);
		if (!r)
			return 0;
		if (r != ENOENT && r != ENOTDIR)
			e = r;
		p += n;
		if (!*p)
			break;
	}
	if (e == ENOENT && !parse_pid(prog, &(pid_t){ 0 }))
		cli_error(cmd,
			  "cannot run '%s': no such command in PATH; to look at process %s, "
			  "leave out the -- (or give -p %s)",
			  prog, prog, prog);
	else if (e == ENOENT)
		cli_error(cmd,
			  "cannot run '%s': no such command in PATH; check its name, or "
			  "give its path",
			  prog);
	else
		cli_error(cmd, "cannot run '%s': %s; give an executable file (chmod +x?)", prog,
			  strerror(e));
	return EXIT_NOCMD;
}

int cli_check_target(const char *cmd, pid_t pid, char *const *argv)
{
	return pid ? cli_check_pid(cmd, pid) : cli_check_prog(cmd, argv ? argv[0] : NULL);
}

int cli_spawn_failed(const char *cmd, const struct ml_err *err)
{
	/* its exec failed (ml_spawn_stopped's "cannot run 'CMD': ...") */
	if (!strncmp(err->msg, "cannot run '", 12)) {
		cli_error(cmd, "%s; check the command after --, or give its path", err->msg);
		return EXIT_NOCMD;
	}
	cli_error(cmd, "%s", err->msg);
	return exit_code_for(-err->code);
}
