// SPDX-License-Identifier: MIT
/*
 * memlens agent: runs memlens-agent (built beside memlens when the gRPC
 * packages are there), which keeps the gRPC runtime out of this binary.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cliutil.h"
#include "command.h"

static int cmd_agent_exec(int argc, char **argv)
{
	char self[PATH_MAX], path[PATH_MAX + 32];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	(void)argc;
	argv[0] = "memlens-agent";
	if (n > 0) {
		self[n] = '\0';
		char *slash = strrchr(self, '/');

		if (slash) {
			*slash = '\0';
			snprintf(path, sizeof(path), "%s/memlens-agent", self);
			execv(path, argv);
		}
	}
	execvp("memlens-agent", argv);
	cli_error("agent",
		  "cannot run memlens-agent (%s): it is built with memlens when the "
		  "packages of scripts/packages/agent.txt (gRPC, protobuf-c, libmicrohttpd) "
		  "are installed; install them and rebuild",
		  strerror(errno));
	return EXIT_NOFEATURE;
}

MEMLENS_COMMAND(agent, "agent", 60, "gRPC service for orchestrators: profiling and checkpoints",
		cmd_agent_exec);
