// SPDX-License-Identifier: MIT
/*
 * memlens agent: runs memlens-agent (built beside memlens when the gRPC
 * packages are there), which keeps the gRPC runtime out of this binary.
 *
 * memlens-agent is looked for, in this order: beside memlens (the build
 * tree), in ../libexec/memlens from memlens's directory (an installed tree,
 * wherever it was moved or staged), in the libexec directory `make install`
 * put it in (MEMLENS_LIBEXECDIR), then on PATH.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cliutil.h"
#include "command.h"
#include "install_paths.h"

static int cmd_agent_exec(int argc, char **argv)
{
	char self[PATH_MAX], path[PATH_MAX + 64];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	int err = ENOENT;

	(void)argc;
	argv[0] = "memlens-agent";
	if (n > 0) {
		self[n] = '\0';
		char *slash = strrchr(self, '/');

		if (slash) {
			*slash = '\0';
			snprintf(path, sizeof(path), "%s/memlens-agent", self);
			execv(path, argv);
			snprintf(path, sizeof(path), "%s/../libexec/memlens/memlens-agent", self);
			execv(path, argv);
		}
	}
	execv(MEMLENS_LIBEXECDIR "/memlens-agent", argv);
	if (errno != ENOENT)
		err = errno;
	execvp("memlens-agent", argv);
	if (errno != ENOENT)
		err = errno;
	cli_error("agent",
		  "cannot run memlens-agent (%s): it was looked for beside memlens, "
		  "in " MEMLENS_LIBEXECDIR " and on PATH; it is built with memlens when gRPC, "
		  "protobuf-c and libmicrohttpd are installed (the packages of "
		  "scripts/packages/agent.txt): install them and rebuild",
		  strerror(err));
	return EXIT_NOFEATURE;
}

MEMLENS_COMMAND(agent, "agent", 60, "gRPC service for orchestrators: profiling and checkpoints",
		cmd_agent_exec);
