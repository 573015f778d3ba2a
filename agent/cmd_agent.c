// SPDX-License-Identifier: MIT
/* memlens agent: serve the CRIUAgent gRPC service until SIGTERM. */
#include <errno.h>
#include <getopt.h>
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

#include "cliutil.h"
#include "command.h"
#include "agent.h"

#define DEFAULT_SOCKET "/run/memlens/agent.sock"
#define DEFAULT_IMAGES "/var/lib/memlens/images"
#define DEFAULT_GRACE_S 10

static const char usage_text[] =
	"usage: memlens agent [options]\n"
	"\n"
	"Serve the gRPC service agent.CRIUAgent:\n"
	"StartProfiling, StopProfiling, GetHotRegions, GetDirtyVolume, GetStatus,\n"
	"PreCheckpoint, FinalDump, Restore, StartPageServer. One agent serves one\n"
	"target process; run it as a sidecar sharing the application's PID namespace.\n"
	"\n"
	"Listening (default: the unix socket " DEFAULT_SOCKET ", mode 0600):\n"
	"  -s, --socket PATH        unix socket path; PATH.lock keeps a second agent out\n"
	"  -l, --listen HOST:PORT   listen on TCP instead (give --socket too to serve both);\n"
	"                           without TLS only on a loopback address\n"
	"      --tls-cert FILE      PEM certificate chain: serve TLS (needs --tls-key)\n"
	"      --tls-key FILE       PEM private key\n"
	"      --tls-client-ca FILE require client certificates signed by this CA (mTLS)\n"
	"      --insecure-tcp       allow --listen without TLS on a non-loopback address\n"
	"                           (anyone who reaches it may checkpoint the target)\n"
	"Target (default: the oldest process that is not the agent, its ancestors or\n"
	"descendants, a kernel thread or the pod's pause process):\n"
	"  -p, --target-pid PID     profile this process\n"
	"  -c, --target-comm NAME   profile the oldest process with this /proc/PID/comm\n"
	"                           (1..15 characters)\n"
	"Other:\n"
	"  -m, --metrics HOST:PORT  serve Prometheus metrics on http://HOST:PORT/metrics\n"
	"  -g, --grace SEC          on SIGTERM, let in-flight calls finish for SEC seconds\n"
	"                           (default 10), then cancel them\n"
	"      --images-root DIR    images_dir of checkpoint calls must lie under DIR\n"
	"                           (default " DEFAULT_IMAGES ")\n"
	"      --criu PATH          the CRIU binary (default: $MEMLENS_CRIU, then criu on PATH)\n"
	"      --criu-timeout SEC   time limit of every CRIU command (default 120)\n"
	"      --criu-opt OPT       one more option for every criu dump/restore, e.g.\n"
	"                           --tcp-established (repeatable)\n"
	"  -t, --threads N          server threads (default 4, 1..32)\n"
	"  -h, --help               this text\n"
	"\n"
	"SIGTERM, SIGINT or SIGHUP: refuse new calls, finish in-flight ones, stop\n"
	"profiling (the target is left as it was), remove the socket and lock, exit 0.\n"
	"Exit status: 0 stopped by a signal, 1 cannot serve (socket held by another\n"
	"agent, address in use), 2 bad usage, 3 --target-pid names no process,\n"
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

enum {
	OPT_CERT = 1000,
	OPT_KEY,
	OPT_CA,
	OPT_IMAGES,
	OPT_CRIU,
	OPT_CRIU_TIMEOUT,
	OPT_CRIU_OPT,
	OPT_INSECURE_TCP
};

static int parse_num(const char *opt, const char *s, long min, long max, long *v)
{
	if (!parse_long(s, min, max, v))
		return 0;
	cli_error("agent", "%s must be a number in %ld..%ld, not '%s'", opt, min, max, s);
	return -EINVAL;
}

static int parse_one(int opt, struct agent_args *a)
{
	long v;

	switch (opt) {
	case 's':
		a->lo.socket_path = optarg;
		a->socket_given = true;
		return 0;
	case 'l':
		a->lo.tcp = optarg;
		return 0;
	case OPT_CERT:
		a->lo.tls_cert = optarg;
		return 0;
	case OPT_KEY:
		a->lo.tls_key = optarg;
		return 0;
	case OPT_CA:
		a->lo.tls_client_ca = optarg;
		return 0;
	case OPT_INSECURE_TCP:
		a->insecure_tcp = true;
		return 0;
	case 'p':
		if (parse_pid(optarg, &a->cfg.target.pid)) {
			cli_error("agent", "invalid --target-pid '%s'", optarg);
			return -EINVAL;
		}
		return 0;
	case 'c':
		a->cfg.target.comm = optarg;
		return 0;
	case 'm':
		a->metrics = optarg;
		return 0;
	case 'g':
		if (parse_num("--grace", optarg, 0, 3600, &v))
			return -EINVAL;
		a->grace_ms = (unsigned int)v * 1000;
		return 0;
	case OPT_IMAGES:
		a->cfg.images_root = optarg;
		return 0;
	case OPT_CRIU:
		a->cfg.criu_path = optarg;
		return 0;
	case OPT_CRIU_TIMEOUT:
		if (parse_num("--criu-timeout", optarg, 1, 86400, &v))
			return -EINVAL;
		a->cfg.criu_timeout_ms = (unsigned int)v * 1000;
		return 0;
	case OPT_CRIU_OPT:
		return criu_cli_add_opt("agent", &a->cfg.criu_opts, optarg) ? -EINVAL : 0;
	case 't':
		if (parse_num("--threads", optarg, 1, 32, &v))
			return -EINVAL;
		a->threads = (int)v;
		return 0;
	}
	return -EINVAL;
}

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
		cli_error("agent", "%s wants HOST:PORT with a port in 1..65535, not '%s'", opt, hp);
		return -EINVAL;
	}
	n = (size_t)(colon - hp);
	if (n >= 2 && hp[0] == '[' && hp[n - 1] == ']') {
		h++;
		n -= 2;
	}
	if ((need_host && !n) || n >= hl) {
		cli_error("agent", "%s wants HOST:PORT (e.g. 127.0.0.1:50051), not '%s'", opt, hp);
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
	if (check_hostport("--listen", a->lo.tcp, true, host, sizeof(host)))
		return -EINVAL;
	if (!a->lo.tls_cert && !a->insecure_tcp && !loopback_only(host)) {
		cli_error("agent",
			  "--listen %s without TLS: anyone who can reach it could checkpoint the "
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
		cli_error("agent",
			  "--target-comm '%s': a process name (/proc/PID/comm) has 1 to 15 "
			  "characters; give the first 15 of a longer one",
			  a->cfg.target.comm);
		return -EINVAL;
	}
	if (check_addresses(a))
		return -EINVAL;
	if (!!a->lo.tls_cert != !!a->lo.tls_key) {
		cli_error("agent", "--tls-cert and --tls-key go together");
		return -EINVAL;
	}
	if (a->lo.tls_client_ca && !a->lo.tls_cert) {
		cli_error("agent", "--tls-client-ca needs --tls-cert and --tls-key");
		return -EINVAL;
	}
	if (a->cfg.target.pid && a->cfg.target.comm) {
		cli_error("agent", "give --target-pid or --target-comm, not both");
		return -EINVAL;
	}
	if (a->cfg.images_root[0] != '/') {
		cli_error("agent", "--images-root must be an absolute path");
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
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "listen", required_argument, NULL, 'l' },
		{ "tls-cert", required_argument, NULL, OPT_CERT },
		{ "tls-key", required_argument, NULL, OPT_KEY },
		{ "tls-client-ca", required_argument, NULL, OPT_CA },
		{ "insecure-tcp", no_argument, NULL, OPT_INSECURE_TCP },
		{ "target-pid", required_argument, NULL, 'p' },
		{ "target-comm", required_argument, NULL, 'c' },
		{ "metrics", required_argument, NULL, 'm' },
		{ "grace", required_argument, NULL, 'g' },
		{ "images-root", required_argument, NULL, OPT_IMAGES },
		{ "criu", required_argument, NULL, OPT_CRIU },
		{ "criu-timeout", required_argument, NULL, OPT_CRIU_TIMEOUT },
		{ "criu-opt", required_argument, NULL, OPT_CRIU_OPT },
		{ "threads", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int opt;

	memset(a, 0, sizeof(*a));
	opterr = 0;
	a->grace_ms = DEFAULT_GRACE_S * 1000;
	a->threads = 4;
	a->cfg.images_root = DEFAULT_IMAGES;
	a->cfg.criu_timeout_ms = CRIU_DEFAULT_TIMEOUT_MS;
	while ((opt = getopt_long(argc, argv, "s:l:p:c:m:g:t:h", opts, NULL)) != -1) {
		if (opt == 'h') {
			fputs(usage_text, stdout);
			return 1;
		}
		if (opt == '?') {
			cli_error("agent",
				  "unknown option or missing argument '%s' (see memlens agent "
				  "--help)",
				  argv[optind - 1]);
			return -EINVAL;
		}
		if (parse_one(opt, a))
			return -EINVAL;
	}
	if (optind < argc) {
		cli_error("agent", "unexpected argument '%s' (see --help)", argv[optind]);
		return -EINVAL;
	}
	return check_args(a);
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
	do
		sig = cli_wait_signal(&sigs, 1000);
	while (!sig);
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
		return r > 0 ? EXIT_OK : EXIT_USAGE;
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

MEMLENS_COMMAND(agent, "agent", 60,
		"gRPC CRIUAgent service: profiling and checkpoints for orchestrators", cmd_agent);
