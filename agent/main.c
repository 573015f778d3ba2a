// SPDX-License-Identifier: MIT
/*
 * memlens-agent: the gRPC agent as a binary of its own, so that the gRPC
 * and C++ runtime libraries load only here and every other memlens command
 * starts in a millisecond. `memlens agent ARGS` runs this.
 */
#include "agent.h"

int cmd_agent(int argc, char **argv);

int main(int argc, char **argv)
{
	return cmd_agent(argc, argv);
}
