/* SPDX-License-Identifier: MIT */
/*
 * The target of a command, checked the same way by every command before
 * it does anything: a -p PID that cannot be looked at, a -- CMD that cannot
 * be started. Each prints "memlens CMD: <what and what to do>" and returns
 * the exit code of exitcode.h for that situation, or 0.
 */
#ifndef MEMLENS_CLI_TARGET_H
#define MEMLENS_CLI_TARGET_H

#include <sys/types.h>

struct ml_err;

/* No such process or a zombie: 3; a kernel thread: 2; no access: 4. */
int cli_check_pid(const char *cmd, pid_t pid);

/* @prog (argv[0] of -- CMD) not found in PATH, or not executable: 127. */
int cli_check_prog(const char *cmd, const char *prog);

/* cli_check_pid() when @pid, else cli_check_prog() of @argv[0] */
int cli_check_target(const char *cmd, pid_t pid, char *const *argv);

/* After ml_spawn_stopped() failed: its message and what to do; 127 when CMD's exec failed. */
int cli_spawn_failed(const char *cmd, const struct ml_err *err);

#endif
