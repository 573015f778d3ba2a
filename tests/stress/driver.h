/* SPDX-License-Identifier: MIT */
/*
 * The stress driver (tests/stress): runs memlens against the self-checking
 * targets of workloads/stress_*.c in many ways (attach/profile/detach
 * cycles, memlens or the agent killed at random instants or at its K-th
 * ptrace call) and checks the target after every try.
 */
#ifndef MEMLENS_STRESS_DRIVER_H
#define MEMLENS_STRESS_DRIVER_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "../../workloads/stress_result.h"

/* Where things are; set once by main(). */
struct env {
	const char *memlens, *workloads, *tmp, *root;
	bool full;
	uint64_t deadline_us; /* the whole run's (now_us()) */
	int max_tries; /* -n: fewer tries than the cases say */
};
extern struct env E;

/* Harm seen, by kind ("target killed by SIGSEGV": 3). */
#define TALLY_KINDS 12
struct tally {
	int n, other;
	char kind[TALLY_KINDS][160];
	char example[TALLY_KINDS][256]; /* the first one's details */
	int count[TALLY_KINDS];
};
/* Count one harm; a kind ends at its first " (" (details that vary). */
void tally_add(struct tally *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "kind x3; kind x1; ..." (or "-") into @buf. */
void tally_format(const struct tally *t, char *buf, size_t len);
/* One comment line per kind with its first details ("#   e.g. ..."). */
void tally_examples(const struct tally *t, FILE *f);

/* A running stress target. */
struct target {
	const char *label; /* as the case names it: busy, waiter-nanosleep, ... */
	char *argv[12];
	bool static_maps; /* its memory map never changes by itself */
	pid_t pid;
	struct stress_result *res;
	char res_path[PATH_MAX], log_path[PATH_MAX];
	char *maps0; /* the maps text after start-up, if static_maps */
	size_t maps0_len;
	int restarts;
	char summary[1100]; /* the last final summary */
};

/* Start @t (fills pid, res); 0 or -1 with a reason in @why. */
int target_start(struct target *t, char *why, size_t len);
/*
 * After a try: the target must be alive, running (not stopped), without a
 * userfaultfd, with its memory map as it was (static_maps), with no harm of
 * its own and making progress. Every harm found goes to @h; the target is
 * then started again, so that the next try begins clean. Returns the number
 * of harms found.
 */
int target_check(struct target *t, struct tally *h);
/* Stop it with SIGTERM and take its final verdict (harm goes to @h). */
int target_stop(struct target *t, struct tally *h);
void target_kill(struct target *t);

/* Processes. */
pid_t spawn(char *const argv[], const char *out_path, const char *err_path);
/* Wait for @pid at most @timeout_ms (then SIGKILL it); the wait status, or -1. */
int wait_for(pid_t pid, int timeout_ms, bool *timed_out);
/* Whether child @pid exits within @timeout_ms; it is neither reaped nor killed. */
bool exits_within(pid_t pid, int timeout_ms);
/* Child @pid's state and wait channel ("S in do_wait"), for a message. */
void proc_where(pid_t pid, char *buf, size_t len);
void sleep_us(uint64_t us);
uint64_t now_us(void);
/* The last non-empty line of a file (at most @len - 1 bytes). */
void last_line(const char *path, char *buf, size_t len);
/* "exit N" or "killed by SIGX". */
void describe_status(int status, char *buf, size_t len);
/* Uniform in [0, n). */
uint64_t rnd(uint64_t n);

/* One case's outcome. */
struct result {
	int tries, failures;
	struct tally harm;
	char note[1600]; /* counts, the targets' summaries: a comment line */
	/* memlens runs slower than SLOW_MS that still ended well: the slowest */
	int slow;
	double slow_max_s;
	char slow_where[64]; /* where the slowest one waited at SLOW_MS */
	char skip[256]; /* non-empty: the case was skipped, and why */
};

/* The case kinds (cases.c, agent.c). */
struct kase;
typedef void (*case_fn)(const struct kase *k, struct result *r);
struct kase {
	const char *name;
	const char *target; /* workload name */
	const char *targs[8]; /* its arguments after -r/-t */
	bool static_maps;
	case_fn fn;
	int tries_short, tries_full; /* at most this many tries... */
	int secs_short, secs_full; /* ...and for at most this long */
};

void case_cycles(const struct kase *k, struct result *r);
void case_sigint(const struct kase *k, struct result *r);
void case_snapshot(const struct kase *k, struct result *r);
void case_kill_random(const struct kase *k, struct result *r);
void case_kill_ptrace(const struct kase *k, struct result *r);
void case_kill_agent(const struct kase *k, struct result *r);
void case_agent_profiles(const struct kase *k, struct result *r);

/* Helpers of the case kinds. */
int case_tries(const struct kase *k);
uint64_t case_deadline_us(const struct kase *k);
int case_target(const struct kase *k, struct target *t, struct result *r);
void case_finish(struct target *t, struct result *r, int extra_tries);

#endif
