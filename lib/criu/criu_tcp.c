// SPDX-License-Identifier: MIT
/*
 * The established TCP connections of a process tree, read from /proc
 * before anything is frozen: CRIU refuses to dump them unless told what to
 * do (--tcp-established or --tcp-close), and memlens asks first.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "memlens/criu.h"
#include "memlens/proc.h"

#define NETNS_MAX 16

static const char *const tcp_names[] = { "unset", "refuse", "established", "close" };

int ml_criu_tcp_parse(const char *s, enum ml_criu_tcp *out)
{
	for (int i = ML_CRIU_TCP_REFUSE; i <= ML_CRIU_TCP_CLOSE; i++)
		if (s && !strcmp(s, tcp_names[i])) {
			*out = (enum ml_criu_tcp)i;
			return 0;
		}
	return -EINVAL;
}

const char *ml_criu_tcp_name(enum ml_criu_tcp t)
{
	return (unsigned int)t <= ML_CRIU_TCP_CLOSE ? tcp_names[t] : "unknown";
}

/* /proc/net/tcp's st column (include/net/tcp_states.h) */
static const char *state_name(int st)
{
	static const char *const n[] = { "?",	       "established", "syn-sent",  "syn-recv",
					 "fin-wait1",  "fin-wait2",   "time-wait", "close",
					 "close-wait", "last-ack",    "listen",	   "closing" };

	return st > 0 && st < (int)(sizeof(n) / sizeof(n[0])) ? n[st] : "?";
}

/* "0100007F:1F90" (tcp) or 32 hex digits and a port (tcp6) into @buf. */
static void format_addr(const char *hex, char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN] = "?";
	const char *colon = strchr(hex, ':');
	unsigned int port = colon ? (unsigned int)strtoul(colon + 1, NULL, 16) : 0;
	size_t digits = colon ? (size_t)(colon - hex) : 0;
	uint32_t w[4];

	for (size_t i = 0; i < digits / 8 && i < 4; i++) {
		char part[9];

		memcpy(part, hex + i * 8, 8);
		part[8] = '\0';
		/* each word as the kernel printed it: the address's bytes in
		 * memory order, read back as a host-endian word */
		w[i] = (uint32_t)strtoul(part, NULL, 16);
	}
	if (digits == 8)
		inet_ntop(AF_INET, w, ip, sizeof(ip));
	else if (digits == 32)
		inet_ntop(AF_INET6, w, ip, sizeof(ip));
	snprintf(buf, len, digits == 32 ? "[%s]:%u" : "%s:%u", ip, port);
}

struct sock_fd {
	pid_t pid;
	int fd;
	unsigned long ino;
};

/* The socket fds of @pid into @s (grown), returns how many were added. */
static size_t socket_fds(pid_t pid, struct sock_fd **s, size_t *n, size_t *cap)
{
	char path[64], link[64];
	struct dirent *de;
	size_t added = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	d = opendir(path);
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		ssize_t k = readlinkat(dirfd(d), de->d_name, link, sizeof(link) - 1);
		unsigned long ino;

		if (k <= 0)
			continue;
		link[k] = '\0';
		if (sscanf(link, "socket:[%lu]", &ino) != 1)
			continue;
		if (*n == *cap) {
			size_t nc = *cap ? *cap * 2 : 64;
			struct sock_fd *g = realloc(*s, nc * sizeof(**s));

			if (!g)
				break;
			*s = g;
			*cap = nc;
		}
		(*s)[(*n)++] = (struct sock_fd){ pid, atoi(de->d_name), ino };
		added++;
	}
	closedir(d);
	return added;
}

/* One /proc/PID/net/tcp{,6}: its connections owned by @s into @out. */
static void scan_table(const char *path, const struct sock_fd *s, size_t n,
		       struct ml_criu_tcp_conns *out)
{
	char line[512], local[64], remote[64];
	FILE *f = fopen(path, "re");
	unsigned long ino;
	unsigned int st;

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		/* sl local rem st tx:rx tr:when retrnsmt uid timeout inode */
		if (sscanf(line, " %*s %63s %63s %x %*s %*s %*s %*s %*s %lu", local, remote, &st,
			   &ino) != 4 ||
		    st == 7 || st == 10 || !ino) /* close, listen; time-wait has no inode */
			continue;
		for (size_t i = 0; i < n; i++) {
			struct ml_criu_tcp_conn *c;

			if (s[i].ino != ino)
				continue;
			if (out->n < ML_CRIU_TCP_CONN_MAX) {
				c = &out->c[out->n];
				c->pid = s[i].pid;
				c->fd = s[i].fd;
				c->state = (int)st;
				format_addr(local, c->local, sizeof(c->local));
				format_addr(remote, c->remote, sizeof(c->remote));
			}
			out->n++;
		}
	}
	fclose(f);
}

static int tcp_inspect(pid_t pid, struct ml_criu_tcp_conns *out, struct ml_err *err)
{
	pid_t *procs;
	unsigned long netns[NETNS_MAX];
	struct sock_fd *s = NULL;
	size_t n = 0, cap = 0, nns = 0, np;
	char path[64];
	struct stat st;

	memset(out, 0, sizeof(*out));
	if (kill(pid, 0) < 0 && errno == ESRCH)
		return ml_err_set(err, ESRCH, "no process with pid %d (it may have exited)",
				  (int)pid);
	procs = malloc(ML_PROC_TREE_MAX * sizeof(*procs));
	np = procs ? ml_proc_tree(pid, procs, ML_PROC_TREE_MAX) : 0;
	if (!np)
		return ml_err_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < np; i++)
		socket_fds(procs[i], &s, &n, &cap);
	/* each network namespace of the tree once, read through one of its processes */
	for (size_t i = 0; i < np && n; i++) {
		bool seen = false;

		snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)procs[i]);
		if (stat(path, &st) < 0)
			continue;
		for (size_t j = 0; j < nns; j++)
			seen |= netns[j] == (unsigned long)st.st_ino;
		if (seen || nns == NETNS_MAX)
			continue;
		netns[nns++] = (unsigned long)st.st_ino;
		snprintf(path, sizeof(path), "/proc/%d/net/tcp", (int)procs[i]);
		scan_table(path, s, n, out);
		snprintf(path, sizeof(path), "/proc/%d/net/tcp6", (int)procs[i]);
		scan_table(path, s, n, out);
	}
	free(s);
	free(procs);
	return 0;
}

/* the fields every caller's struct ml_criu_tcp_conns has: up to n */
#define TCP_CONNS_MIN (offsetof(struct ml_criu_tcp_conns, n) + sizeof(size_t))

int ml_criu_tcp_inspect(pid_t pid, struct ml_criu_tcp_conns *out, struct ml_err *err)
{
	struct ml_criu_tcp_conns *v = calloc(1, sizeof(*v));
	int ret;

	if (!v)
		return ml_err_set(err, ENOMEM, "out of memory");
	/* the caller's struct as large as its sz says (memlens/opts.h): cleared, or refused */
	ret = ml_result_store(out, v, sizeof(*v), TCP_CONNS_MIN, "ml_criu_tcp_conns", err);
	if (!ret) {
		ret = tcp_inspect(pid, v, err);
		ml_result_store(out, v, sizeof(*v), TCP_CONNS_MIN, "ml_criu_tcp_conns", NULL);
	}
	free(v);
	return ret;
}

void ml_criu_tcp_describe(const struct ml_criu_tcp_conns *c, size_t max, char *buf, size_t len)
{
	size_t pos = 0, kept = c->n < ML_CRIU_TCP_CONN_MAX ? c->n : ML_CRIU_TCP_CONN_MAX;

	if (!len)
		return;
	buf[0] = '\0';
	for (size_t i = 0; i < kept && i < max && pos < len; i++) {
		const struct ml_criu_tcp_conn *x = &c->c[i];

		pos += (size_t)snprintf(buf + pos, len - pos, "%sfd %d of pid %d: %s <-> %s (%s)",
					i ? "; " : "", x->fd, (int)x->pid, x->local, x->remote,
					state_name(x->state));
	}
	if (c->n > max && pos < len)
		snprintf(buf + pos, len - pos, "; and %zu more", c->n - max);
}

/* --tcp-established or --tcp-close among the caller's own CRIU options */
static bool chosen_in(const char *const *extra)
{
	for (; extra && *extra; extra++)
		if (!strcmp(*extra, "--tcp-established") || !strcmp(*extra, "--tcp-close"))
			return true;
	return false;
}

int ml_criu_tcp_check(pid_t pid, enum ml_criu_tcp tcp, const char *const *extra_args,
		      struct ml_err *err)
{
	struct ml_criu_tcp_conns *c;
	char list[384];
	int ret = 0;

	if ((tcp != ML_CRIU_TCP_UNSET && tcp != ML_CRIU_TCP_REFUSE) || chosen_in(extra_args))
		return 0;
	c = malloc(sizeof(*c));
	if (!c)
		return ml_err_set(err, ENOMEM, "out of memory");
	c->sz = sizeof(*c);
	if (!ml_criu_tcp_inspect(pid, c, err) && c->n) {
		ml_criu_tcp_describe(c, 3, list, sizeof(list));
		ret = ml_err_set(
			err, EINVAL,
			"the process tree of pid %d has %zu established TCP connection%s (%s); "
			"CRIU was not run and nothing was frozen. Choose what becomes of them: "
			"--tcp established keeps them (the restored tree must get the same IP "
			"addresses: restore in the same network namespace, or one that moves "
			"with it), --tcp close restores them closed (the peers see them reset "
			"and must reconnect)",
			(int)pid, c->n, c->n == 1 ? "" : "s", list);
	}
	free(c);
	return ret;
}
