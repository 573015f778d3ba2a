// SPDX-License-Identifier: MIT
/* memlens agent: serve the CRIUAgent gRPC service until SIGTERM. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <grpc/grpc.h>

#include "cli_target.h"
#include "cliutil.h"
#include "criu_cli.h"
#include "opts.h"
#include "command.h"
#include "agent.h"

#define DEFAULT_SOCKET "/run/memlens/agent.sock"
#define DEFAULT_IMAGES "/var/lib/memlens/images"
#define DEFAULT_GRACE_S 10

static const char about[] =
	"Serve the gRPC service agent.CRIUAgent:\n"
	"StartProfiling, StopProfiling, GetHotRegions, GetDirtyVolume, GetStatus,\n"
	"PreCheckpoint, FinalDump, Restore, StartPageServer. One agent serves one\n"
	"target process; run it as a sidecar sharing the application's PID namespace.\n";

static const char footer[] =
	"SIGTERM, SIGINT or SIGHUP: refuse new calls, finish in-flight ones, stop\n"
	"profiling (the target is left as it was), remove the socket and lock, exit 0.\n"
	"Exit status: 0 stopped by a signal, 1 cannot serve (socket held by another\n"
	"agent, address in use), 2 bad usage, 3 --pid names no process,\n"
	"4 permission denied (a socket directory others could write).\n"
	"The RPCs, metrics and deployment: memlens-agent(8).\n";

struct agent_args {
	struct listen_opts lo;
	struct agent_config cfg;
	const char *metrics;
	unsigned int grace_ms;
	int threads;
	bool socket_given;
	bool insecure_tcp; /* --insecure-tcp: plain TCP beyond loopback, knowingly */
};

/*
 * HOST:PORT ([IPv6]:PORT): PORT 1..65535; @host gets HOST (brackets removed).
 * A message and -EINVAL otherwise.
 */
static int check_hostport(const char *opt, const char *hp, bool need_host, char *host, size_t hl)
{
	const char *colon = strrchr(hp, ':');
	const char *h = hp;
	size_t n;
	long port;

	if (!colon || parse_long(colon + 1, 1, 65535, &port)) {
		cli_usage_error("agent", "%s wants HOST:PORT with a port in 1..65535, not '%s'",
				opt, hp);
		return -EINVAL;
	}
	n = (size_t)(colon - hp);
	if (n >= 2 && hp[0] == '[' && hp[n - 1] == ']') {
		h++;
		n -= 2;
	}
	if ((need_host && !n) || n >= hl) {
		cli_usage_error("agent", "%s wants HOST:PORT (e.g. 127.0.0.1:50051), not '%s'", opt,
				hp);
		return -EINVAL;
	}
	memcpy(host, h, n);
	host[n] = '\0';
	return 0;
}

/* Every address @host names is a loopback one (127.0.0.0/8, ::1). */
static bool loopback_only(const char *host)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai = NULL, *p;
	bool yes = true;

	if (getaddrinfo(host, NULL, &hints, &ai) || !ai)
		return false;
	for (p = ai; p && yes; p = p->ai_next) {
		if (p->ai_family == AF_INET) {
			const struct sockaddr_in *in = (const void *)p->ai_addr;

			yes = (ntohl(in->sin_addr.s_addr) >> 24) == 127;
		} else if (p->ai_family == AF_INET6) {
			const struct sockaddr_in6 *in6 = (const void *)p->ai_addr;

			yes = IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
		} else {
			yes = false;
		}
	}
	freeaddrinfo(ai);
	return yes;
}

static int check_addresses(struct agent_args *a)
{
	char host[256];

	if (a->metrics && check_hostport("--metrics", a->metrics, false, host, sizeof(host)))
		return -EINVAL;
	if (!a->lo.tcp)
		return 0;
	if (check_hostport("-l/--listen", a->lo.tcp, true, host, sizeof(host)))
		return -EINVAL;
	if (!a->lo.tls_cert && !a->insecure_tcp && !loopback_only(host)) {
		cli_usage_error(
			"agent",
			"-l/--listen %s without TLS: anyone who can reach it could checkpoint the "
			"target. Give --tls-cert, --tls-key and --tls-client-ca (mutual TLS), "
			"listen on a loopback address (127.0.0.1), or accept the risk with "
			"--insecure-tcp",
			a->lo.tcp);
		return -EINVAL;
	}
	return 0;
}

static int check_args(struct agent_args *a)
{
	if (a->cfg.target.comm && (!*a->cfg.target.comm || strlen(a->cfg.target.comm) > 15)) {
		cli_usage_error("agent",
				"--comm '%s': a process name (/proc/PID/comm) has 1 to 15 "
				"characters; give the first 15 of a longer one",
				a->cfg.target.comm);
		return -EINVAL;
	}
	if (check_addresses(a))
		return -EINVAL;
	if (!!a->lo.tls_cert != !!a->lo.tls_key) {
		cli_usage_error("agent", "--tls-cert and --tls-key go together");
		return -EINVAL;
	}
	if (a->lo.tls_client_ca && !a->lo.tls_cert) {
		cli_usage_error("agent", "--tls-client-ca needs --tls-cert and --tls-key");
		return -EINVAL;
	}
	if (a->cfg.target.pid && a->cfg.target.comm) {
		cli_usage_error("agent", "give -p/--pid or --comm, not both");
		return -EINVAL;
	}
	if (a->cfg.images_root[0] != '/') {
		cli_usage_error("agent", "--images-root must be an absolute path");
		return -EINVAL;
	}
	if (!a->lo.tcp || a->socket_given) {
		if (!a->lo.socket_path)
			a->lo.socket_path = DEFAULT_SOCKET;
	}
	return 0;
}

static int parse_args(int argc, char **argv, struct agent_args *a)
{
	long grace = DEFAULT_GRACE_S, criu_timeout = ML_CRIU_DEFAULT_TIMEOUT_MS / 1000, threads = 4;
	struct cli_opt opts[] = {
		{ .section = "Listening (default: the unix socket " DEFAULT_SOCKET ", mode 0600):",
		  .name = "socket",
		  .arg = "PATH",
		  .kind = CLI_STR,
		  .target = &a->lo.socket_path,
		  .help = "unix socket path; PATH.lock keeps a second agent out" },
		CLI_OPT_LISTEN(&a->lo.tcp, "listen on TCP instead (give --socket too to serve "
					   "both); without TLS only on a loopback address"),
		{ .name = "tls-cert",
		  .arg = "FILE",
		  .kind = CLI_STR,
		  .target = &a->lo.tls_cert,
		  .help = "PEM certificate chain: serve TLS (needs --tls-key)" },
		{ .name = "tls-key",
		  .arg = "FILE",
		  .kind = CLI_STR,
		  .target = &a->lo.tls_key,
		  .help = "PEM private key" },
		{ .name = "tls-client-ca",
		  .arg = "FILE",
		  .kind = CLI_STR,
		  .target = &a->lo.tls_client_ca,
		  .help = "require client certificates signed by this CA (mTLS)" },
		{ .name = "insecure-tcp",
		  .kind = CLI_FLAG,
		  .target = &a->insecure_tcp,
		  .help = "allow --listen without TLS on a non-loopback address (anyone who "
			  "reaches it may checkpoint the target)" },
		{ .section = "Target (default: the oldest process that is not the agent, its "
			     "ancestors or descendants, a kernel thread or the pod's pause "
			     "process):",
		  .letter = 'p',
		  .name = "pid",
		  .arg = "PID",
		  .kind = CLI_PID,
		  .target = &a->cfg.target.pid,
		  .help = "profile this process" },
		{ .name = "comm",
		  .arg = "NAME",
		  .kind = CLI_STR,
		  .target = &a->cfg.target.comm,
		  .help = "profile the oldest process with this /proc/PID/comm (1..15 "
			  "characters)" },
		{ .section = "Other:",
		  .name = "metrics",
		  .arg = "HOST:PORT",
		  .kind = CLI_STR,
		  .target = &a->metrics,
		  .help = "serve Prometheus metrics on http://HOST:PORT/metrics" },
		{ .letter = 'g',
		  .name = "grace",
		  .arg = "SEC",
		  .kind = CLI_LONG,
		  .target = &grace,
		  .min = 0,
		  .max = 3600,
		  .help = "on SIGTERM, let in-flight calls finish for SEC seconds (default 10), "
			  "then cancel them" },
		{ .name = "images-root",
		  .arg = "DIR",
		  .kind = CLI_STR,
		  .target = &a->cfg.images_root,
		  .help = "images_dir of checkpoint calls must lie under DIR "
			  "(default " DEFAULT_IMAGES ")" },
		CLI_OPT_CRIU(&a->cfg.criu_path,
			     "the CRIU binary (default: $MEMLENS_CRIU, then criu on PATH)"),
		{ .name = "criu-timeout",
		  .arg = "SEC",
		  .kind = CLI_LONG,
		  .target = &criu_timeout,
		  .min = 1,
		  .max = 86400,
		  .help = "time limit of every CRIU command (default 120)" },
		CLI_OPT_TCP(&a->cfg.tcp, criu_cli_tcp_fn, CRIU_CLI_TCP_HELP),
		CLI_OPT_CRIU_OPT(&a->cfg.criu_opts, criu_cli_opt_fn,
				 "one more option for every criu dump/restore, e.g. "
				 "--ext-unix-sk (repeatable)"),
		CLI_OPT_THREADS(&threads, 32, "server threads (default 4)"),
		CLI_OPT_END,
	};
	struct cli_spec spec = { .cmd = "agent", .about = about, .footer = footer, .opts = opts };
	int r, first;

	memset(a, 0, sizeof(*a));
	a->cfg.images_root = DEFAULT_IMAGES;
	r = cli_parse(&spec, argc, argv, &first);
	if (r)
		return r;
	a->socket_given = opts[0].given > 0;
	a->grace_ms = (unsigned int)grace * 1000;
	a->cfg.criu_timeout_ms = (unsigned int)criu_timeout * 1000;
	a->threads = (int)threads;
	return check_args(a) ? EXIT_USAGE : 0;
}

/* Bind the unix socket with mode 0600 from the start (umask), then make sure. */
static int listen_unix(struct rpc_server *s, const struct agent_args *a, struct ml_err *err)
{
	char uri[600];
	mode_t old;
	int r;

	snprintf(uri, sizeof(uri), "unix:%s", a->lo.socket_path);
	old = umask(0177);
	r = server_listen(s, uri, &a->lo, err);
	umask(old);
	if (!r && chmod(a->lo.socket_path, 0600))
		r = ml_err_set(err, errno, "cannot chmod %s: %s", a->lo.socket_path,
			       strerror(errno));
	return r;
}

static int setup(struct rpc_server *s, const struct agent_args *a, struct ml_err *err)
{
	int r = 0;

	if (a->lo.socket_path)
		r = listen_unix(s, a, err);
	if (!r && a->lo.tcp)
		r = server_listen(s, a->lo.tcp, &a->lo, err);
	if (!r && a->metrics)
		r = metrics_serve(a->metrics, err);
	if (!r)
		r = server_start(s, err);
	return r;
}

static void announce(const struct agent_args *a)
{
	fprintf(stderr, "memlens agent: pid %d serving agent.CRIUAgent on", (int)getpid());
	if (a->lo.socket_path)
		fprintf(stderr, " unix:%s", a->lo.socket_path);
	if (a->lo.tcp)
		fprintf(stderr, " %s%s", a->lo.tcp,
			a->lo.tls_cert ? " (TLS)" : " (plain TCP, unauthenticated)");
	if (a->metrics)
		fprintf(stderr, "; metrics on http://%s/metrics", a->metrics);
	fprintf(stderr, "\n");
}

static int serve(struct agent_args *a, struct listener *l)
{
	struct rpc_server *s = NULL;
	struct server_opts so = { .threads = a->threads, .max_msg = 1 << 20 };
	struct ml_err err = { 0 };
	struct agent ag;
	sigset_t sigs;
	int r, sig, cancelled;

	cli_block_signals(&sigs);
	signal(SIGPIPE, SIG_IGN);
	grpc_init();
	agent_init(&ag, &a->cfg, &err);
	r = server_create(&s, &ag, &so, &err);
	if (!r)
		r = setup(s, a, &err);
	if (r) {
		cli_error("agent", "%s", err.msg);
		goto out;
	}
	listen_bound(l);
	announce(a);
	agent_discover(&ag); /* the target it picked, or that none runs yet */
	do {
		sig = cli_wait_signal(&sigs, 1000);
		if (!sig)
			agent_discover(&ag);
	} while (!sig);
	fprintf(stderr,
		"memlens agent: %s: refusing new calls, finishing in-flight ones (grace %u s)\n",
		strsignal(sig), a->grace_ms / 1000);
out:
	cancelled = server_shutdown(s, a->grace_ms);
	if (cancelled)
		fprintf(stderr,
			"memlens agent: grace period over: cancelled %d call(s) still under way "
			"(their clients get UNAVAILABLE; work already started, such as CRIU, was "
			"let finish)\n",
			cancelled);
	metrics_stop();
	agent_fini(&ag);
	listen_release(l);
	grpc_shutdown();
	if (!r)
		fprintf(stderr, "memlens agent: stopped; the target was left as it was\n");
	return r ? (r == -EADDRINUSE ? EXIT_FAIL : exit_code_for(r)) : EXIT_OK;
}

int cmd_agent(int argc, char **argv)
{
	struct agent_args a;
	struct listener l = { .lock_fd = -1, .dir_fd = -1 };
	struct ml_err err = { 0 };
	pid_t pid;
	int r;

	r = parse_args(argc, argv, &a);
	if (r)
		return r < 0 ? EXIT_OK : r;
	if (a.cfg.target.pid) {
		r = cli_check_pid("agent", a.cfg.target.pid);
		if (r)
			return r;
	}
	if (a.cfg.target.pid && target_find(&a.cfg.target, &pid, &err)) {
		cli_error("agent", "%s", err.msg);
		return EXIT_NOTARGET;
	}
	if (a.lo.socket_path) {
		r = listen_lock(&l, a.lo.socket_path, &err);
		if (r) {
			cli_error("agent", "%s", err.msg);
			listen_release(&l);
			return r == -EADDRINUSE ? EXIT_FAIL : exit_code_for(r);
		}
	}
	return serve(&a, &l);
}

MEMLENS_COMMAND(agent, "agent", 60, "gRPC service for orchestrators: profiling and checkpoints",
		cmd_agent);
