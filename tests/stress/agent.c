// SPDX-License-Identifier: MIT
/*
 * The agent's case kinds, through a real gRPC client (agent_client.py):
 * the agent SIGKILLed during StartProfiling, and an agent that must go on
 * profiling a target whose VMAs change all the time.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "driver.h"

struct client {
	pid_t pid;
	FILE *in, *out;
};

static int client_start(struct client *c, char *why, size_t len)
{
	int to[2], from[2];
	char script[PATH_MAX], line[512];

	snprintf(script, sizeof(script), "%s/tests/stress/agent_client.py", E.root);
	if (access("/usr/bin/python3", X_OK)) {
		snprintf(why, len, "/usr/bin/python3 is not installed");
		return -1;
	}
	if (pipe2(to, O_CLOEXEC) || pipe2(from, O_CLOEXEC)) {
		snprintf(why, len, "pipe: %s", strerror(errno));
		return -1;
	}
	c->pid = fork();
	if (c->pid == 0) {
		dup2(to[0], 0);
		dup2(from[1], 1);
		execl("/usr/bin/python3", "/usr/bin/python3", script, (char *)NULL);
		_exit(127);
	}
	close(to[0]);
	close(from[1]);
	c->in = fdopen(to[1], "w");
	c->out = fdopen(from[0], "r");
	if (c->pid < 0 || !c->in || !c->out || !fgets(line, sizeof(line), c->out)) {
		snprintf(why, len, "the gRPC client did not start");
		return -1;
	}
	if (strncmp(line, "ready", 5)) {
		line[strcspn(line, "\n")] = '\0';
		/* "fatal cannot load the gRPC stubs: ..." */
		snprintf(why, len, "%.200s (install python3-grpcio python3-grpc-tools)",
			 line + (strncmp(line, "fatal ", 6) ? 0 : 6));
		return -1;
	}
	return 0;
}

static void client_stop(struct client *c)
{
	if (c->in)
		fclose(c->in);
	if (c->out)
		fclose(c->out);
	if (c->pid > 0)
		wait_for(c->pid, 10000, NULL);
}

/* Send one command, read its one-line answer (without the newline). */
static int ask(struct client *c, char *ans, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int ask(struct client *c, char *ans, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(c->in, fmt, ap);
	va_end(ap);
	fputc('\n', c->in);
	fflush(c->in);
	if (!fgets(ans, (int)len, c->out)) {
		snprintf(ans, len, "err the gRPC client died");
		return -1;
	}
	ans[strcspn(ans, "\n")] = '\0';
	return strncmp(ans, "ok", 2) ? -1 : 0;
}

/* Start `memlens agent --socket SOCK -p PID`; wait until it accepts. */
static pid_t agent_start(const char *sock, pid_t target, const char *err, char *why, size_t len)
{
	char pid[16];
	char *argv[] = { (char *)E.memlens, "agent", "--socket", (char *)sock, "-p", pid, NULL };
	pid_t a;

	snprintf(pid, sizeof(pid), "%d", (int)target);
	unlink(sock);
	a = spawn(argv, NULL, err);
	for (int i = 0; i < 1000; i++) {
		struct sockaddr_un un = { .sun_family = AF_UNIX };
		int s, st;

		if (waitpid(a, &st, WNOHANG) == a) {
			char d[64], l[200];

			describe_status(st, d, sizeof(d));
			last_line(err, l, sizeof(l));
			snprintf(why, len, "the agent did not start (%s): %.150s", d, l);
			return -1;
		}
		snprintf(un.sun_path, sizeof(un.sun_path), "%s", sock);
		s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (s >= 0 && !connect(s, (struct sockaddr *)&un, sizeof(un))) {
			close(s);
			return a;
		}
		if (s >= 0)
			close(s);
		sleep_us(10000);
	}
	kill(a, SIGKILL);
	wait_for(a, 10000, NULL);
	snprintf(why, len, "the agent did not listen within 10 s");
	return -1;
}

static bool have_agent(struct result *r)
{
	char p[PATH_MAX];
	const char *slash = strrchr(E.memlens, '/');

	snprintf(p, sizeof(p), "%.*s/memlens-agent", slash ? (int)(slash - E.memlens) : 1,
		 slash ? E.memlens : ".");
	if (access(p, X_OK)) {
		snprintf(r->skip, sizeof(r->skip),
			 "%.120s is not built (the agent's build dependencies are missing: "
			 "scripts/packages/agent.txt)",
			 p);
		return false;
	}
	return true;
}

/*
 * What both agent cases start with: the agent binary, the gRPC client, the
 * target; the agent's socket (E.tmp/NAME.sock) and log paths. 0, or -1 with
 * r->skip set and nothing left running.
 */
static int agent_case_start(const struct kase *k, struct result *r, struct target *t,
			    struct client *c, const char *name, char sock[PATH_MAX],
			    char err[PATH_MAX + 32])
{
	char why[512];

	if (!have_agent(r))
		return -1;
	if (client_start(c, why, sizeof(why))) {
		snprintf(r->skip, sizeof(r->skip), "%.250s", why);
		client_stop(c);
		return -1;
	}
	if (case_target(k, t, r)) {
		client_stop(c);
		return -1;
	}
	snprintf(sock, PATH_MAX, "%s/%s.sock", E.tmp, name);
	snprintf(err, PATH_MAX + 32, "%s.agent.err", t->log_path);
	return 0;
}

/*
 * The agent SIGKILLed while it runs StartProfiling: at a random instant
 * between 0 and 1.5 times what a StartProfiling takes (measured first).
 */
void case_kill_agent(const struct kase *k, struct result *r)
{
	struct target t;
	struct client c = { 0 };
	uint64_t end = case_deadline_us(k);
	char sock[PATH_MAX], err[PATH_MAX + 32], why[512], ans[512];
	double ms = 0;
	pid_t a;

	if (agent_case_start(k, r, &t, &c, "kill-agent", sock, err))
		return;
	/* how long one StartProfiling takes here */
	a = agent_start(sock, t.pid, err, why, sizeof(why));
	if (a < 0 || ask(&c, ans, sizeof(ans), "start %s 10", sock) ||
	    sscanf(ans, "ok %lf", &ms) != 1) {
		snprintf(r->skip, sizeof(r->skip), "a first StartProfiling failed: %.200s",
			 a < 0 ? why : ans);
		if (a > 0) {
			kill(a, SIGKILL);
			wait_for(a, 10000, NULL);
		}
		target_kill(&t);
		client_stop(&c);
		return;
	}
	ask(&c, ans, sizeof(ans), "stop %s", sock);
	kill(a, SIGTERM);
	wait_for(a, 10000, NULL);
	if (target_check(&t, &r->harm)) {
		r->failures++;
		r->tries++;
	}
	while (r->tries < case_tries(k) && now_us() < end && t.pid > 0) {
		uint64_t delay = rnd((uint64_t)(ms * 1500) + 1);

		a = agent_start(sock, t.pid, err, why, sizeof(why));
		if (a < 0) {
			tally_add(&r->harm, "agent did not start: %.120s", why);
			r->failures++;
			r->tries++;
			continue;
		}
		if (ask(&c, ans, sizeof(ans), "killstart %s %d %llu", sock, (int)a,
			(unsigned long long)delay))
			fprintf(stderr, "# the client: %s\n", ans);
		kill(a, SIGKILL); /* if the client could not */
		wait_for(a, 10000, NULL);
		r->failures += target_check(&t, &r->harm) > 0;
		r->tries++;
	}
	client_stop(&c);
	case_finish(&t, r, 0);
	{
		size_t l = strlen(r->note);

		snprintf(r->note + l, sizeof(r->note) - l,
			 "; a StartProfiling took %.1f ms, killed within 0-%.1f ms", ms, ms * 1.5);
	}
}

/*
 * An agent profiling (10 ms intervals) a target whose VMAs change all the
 * time: GetStatus every 100 ms must say that it is profiling; every try is
 * one GetStatus.
 */
void case_agent_profiles(const struct kase *k, struct result *r)
{
	struct target t;
	struct client c = { 0 };
	uint64_t end = case_deadline_us(k);
	char sock[PATH_MAX], err[PATH_MAX + 32], why[512], ans[512];
	long long intervals = 0;
	pid_t a;

	if (agent_case_start(k, r, &t, &c, "agent-profiles", sock, err))
		return;
	a = agent_start(sock, t.pid, err, why, sizeof(why));
	if (a < 0) {
		snprintf(r->skip, sizeof(r->skip), "%.250s", why);
		target_kill(&t);
		client_stop(&c);
		return;
	}
	if (ask(&c, ans, sizeof(ans), "start %s 10", sock)) {
		tally_add(&r->harm, "StartProfiling failed: %.150s", ans);
		r->failures++;
	}
	end = case_deadline_us(k); /* from now: starting may take a while */
	while (r->tries < case_tries(k) && now_us() < end) {
		int prof = 0;
		char last[400] = "";

		sleep_us(100000);
		if (ask(&c, ans, sizeof(ans), "status %s", sock) ||
		    sscanf(ans, "ok %d %lld %399[^\n]", &prof, &intervals, last) < 2) {
			tally_add(&r->harm, "GetStatus failed: %.150s", ans);
			r->failures++;
		} else if (!prof) {
			tally_add(&r->harm, "the agent stopped profiling by itself: %.150s", last);
			r->failures++;
		}
		r->tries++;
		if (!prof)
			break;
	}
	ask(&c, ans, sizeof(ans), "stop %s", sock);
	kill(a, SIGTERM);
	wait_for(a, 10000, NULL);
	client_stop(&c);
	r->failures += target_check(&t, &r->harm) > 0;
	case_finish(&t, r, 0);
	{
		size_t l = strlen(r->note);

		snprintf(r->note + l, sizeof(r->note) - l, "; %lld intervals profiled", intervals);
	}
}
