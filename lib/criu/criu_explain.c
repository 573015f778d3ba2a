// SPDX-License-Identifier: MIT
/*
 * CRIU's refusals that memlens knows, turned into what to do: a table of
 * the lines CRIU 4.x logs (criu/sockets.c, sk-inet.c, sk-unix.c, cr-dump.c,
 * cr-restore.c) and, for each, a sentence naming the socket, pid or
 * address found in the log and the option or set-up that fixes it.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memlens/criu.h"

struct hint_ctx {
	const char *log; /* the whole text */
	const char *line; /* the start of the matching line */
	const char *at; /* the match, inside the line */
	const char *sentence; /* the table's, for hint_socket() */
};

/* The last @needle in the log before @ctx->line, or NULL. */
static const char *find_before(const struct hint_ctx *c, const char *needle)
{
	const char *p = c->log, *found = NULL;

	while ((p = strstr(p, needle)) && p < c->line) {
		found = p;
		p += strlen(needle);
	}
	return found;
}

/* The number after the last @needle in the log before @ctx->line; -1: none. */
static long last_before(const struct hint_ctx *c, const char *needle)
{
	const char *found = find_before(c, needle);

	return found ? strtol(found + strlen(needle), NULL, 10) : -1;
}

/* The start of the line holding @p. */
static const char *line_start(const char *log, const char *p)
{
	while (p > log && p[-1] != '\n')
		p--;
	return p;
}

/* The task whose files CRIU was dumping: "pid N" or "" */
static void dumped_task(const struct hint_ctx *c, char *buf, size_t len)
{
	long pid = last_before(c, "Dumping task (pid: ");

	if (pid > 0)
		snprintf(buf, len, " of pid %ld", pid);
	else
		buf[0] = '\0';
}

static const char *family_name(int family)
{
	return family == 2 ? "IPv4 " : family == 10 ? "IPv6 " : family == 1 ? "unix " : "";
}

/*
 * "the IPv4 socket (inode 58626) at fd 3 of pid 42", from the last file
 * CRIU looked at ("PID fdinfo FD: ...") and socket it searched for
 * ("Searching for socket 0xINO family F"), or "a socket of pid 42".
 */
static void which_socket(const struct hint_ctx *c, char *buf, size_t len)
{
	const char *fdi = find_before(c, " fdinfo "),
		   *sk = find_before(c, "Searching for socket 0x");
	const char *p = fdi ? line_start(c->log, fdi) : NULL;
	unsigned int ino = 0;
	int pid = 0, fd = -1, family = 0;
	char task[32], inode[32] = "";

	if (p && (p = strchr(p, ')')) && p < fdi)
		sscanf(p + 1, " %d fdinfo %d:", &pid, &fd);
	if (sk && sscanf(sk, "Searching for socket 0x%x family %d", &ino, &family) == 2)
		snprintf(inode, sizeof(inode), " (inode %u)", ino);
	if (fd >= 0 && pid > 0)
		snprintf(buf, len, "the %ssocket%s at fd %d of pid %d", family_name(family), inode,
			 fd, pid);
	else {
		dumped_task(c, task, sizeof(task));
		snprintf(buf, len, "a %ssocket%s%s", family_name(family), inode, task);
	}
}

static const char *sockopt_name(int level, int opt)
{
	if (level != 1) /* SOL_SOCKET */
		return NULL;
	return opt == 16 ? "SO_PASSCRED" : opt == 34 ? "SO_PASSSEC" : NULL;
}

static void hint_sockopt(const struct hint_ctx *c, char *buf, size_t len)
{
	char sk[96];
	int level = 0, opt = 0;
	const char *name;

	sscanf(c->at, "Can't get %d:%d", &level, &opt);
	name = sockopt_name(level, opt);
	which_socket(c, sk, sizeof(sk));
	if (name)
		snprintf(buf, len,
			 "this kernel does not report socket option %s (%d:%d) for %s: since "
			 "Linux 6.16 it exists only on unix and netlink sockets, and CRIU before "
			 "4.2 asks every socket for it. Use CRIU 4.2 or newer (--criu PATH), or "
			 "checkpoint on a kernel before 6.16, or have the target close that "
			 "socket first",
			 name, level, opt, sk);
	else
		snprintf(buf, len,
			 "this kernel does not report socket option %d:%d (level:option) for "
			 "%s, which this CRIU reads: try a newer CRIU (--criu PATH), or have the "
			 "target close that socket first",
			 level, opt, sk);
}

static void hint_sysv(const struct hint_ctx *c, char *buf, size_t len)
{
	int pid = 0;
	char addr[32] = "?";
	const char *t = strstr(c->line, "Task ");

	if (t && t < c->at)
		sscanf(t, "Task %d with SysVIPC shmem map @%31s", &pid, addr);
	snprintf(buf, len,
		 "pid %d has SysV shared memory (mapped at 0x%s) of the host's IPC namespace, "
		 "shared with every process outside the tree, so CRIU cannot dump it: start "
		 "the target in an IPC namespace of its own (`unshare --ipc CMD`, as a "
		 "container does) and checkpoint it there",
		 pid, addr);
}

/* Is @pid a zombie? Its parent's pid into @ppid when it is. */
static bool is_zombie(int pid, int *ppid)
{
	char path[64], line[512], *p;
	char st = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	p = fgets(line, sizeof(line), f) ? strrchr(line, ')') : NULL;
	fclose(f);
	return p && sscanf(p + 1, " %c %d", &st, ppid) == 2 && st == 'Z';
}

static void hint_fork(const struct hint_ctx *c, char *buf, size_t len)
{
	int pid = 0, ppid = 0;

	sscanf(c->at, "Can't fork for %d", &pid);
	if (pid > 0 && is_zombie(pid, &ppid)) {
		snprintf(buf, len,
			 "pid %d has exited (the dump without --leave-running ended it) but its "
			 "parent, pid %d, has not collected it yet, so the pid is still taken and "
			 "CRIU restores a process under the pid it had: restore again once pid %d "
			 "is gone (its parent waits for it, or exits)",
			 pid, ppid, pid);
		return;
	}
	snprintf(buf, len,
		 "pid %d is still running on this machine (the checkpointed process, left "
		 "running, or another that got its pid), and CRIU restores a process under "
		 "the pid it had: stop pid %d before the restore, or restore into a new PID "
		 "namespace (checkpoint a target started in one of its own, `unshare --pid "
		 "--fork CMD`)",
		 pid, pid);
}

/* The table's sentence about the socket CRIU was looking at (its one %s). */
static void hint_socket(const struct hint_ctx *c, char *buf, size_t len)
{
	char sk[96];

	which_socket(c, sk, sizeof(sk));
	snprintf(buf, len, c->sentence, sk);
}

static void hint_tcp_image(const struct hint_ctx *c, char *buf, size_t len)
{
	(void)c;
	snprintf(buf, len,
		 "the images hold established TCP connections (dumped with --tcp-established): "
		 "restore with --tcp established, as the checkpoint was taken");
}

static void hint_ext_unix(const struct hint_ctx *c, char *buf, size_t len)
{
	const char *run = find_before(c, "Runaway socket: "), *name;
	char sk[96], peer[160] = "a unix socket";

	which_socket(c, sk, sizeof(sk));
	name = run ? strstr(run, " name ") : NULL;
	if (name && name < strchrnul(run, '\n'))
		snprintf(peer, sizeof(peer), "the unix socket %.*s", (int)strcspn(name + 6, "\n"),
			 name + 6);
	snprintf(buf, len,
		 "%s is connected to %s, outside the process tree: pass --criu-opt "
		 "--ext-unix-sk (a datagram socket whose peer has a name; the restore "
		 "repeats it) or checkpoint the peer's tree with it",
		 sk, peer);
}

static void hint_diag(const struct hint_ctx *c, char *buf, size_t len)
{
	int family = 0, proto = 0;
	const char *mods = "inet_diag, tcp_diag, udp_diag and unix_diag";

	sscanf(c->at, "Sockets (family %d proto %d)", &family, &proto);
	if ((family == 2 || family == 10) && proto == 6)
		mods = "inet_diag and tcp_diag";
	else if ((family == 2 || family == 10) && proto == 17)
		mods = "inet_diag and udp_diag";
	else if (family == 1)
		mods = "unix_diag";
	else if (family == 16)
		mods = "netlink_diag";
	else if (family == 17)
		mods = "packet_diag";
	snprintf(buf, len,
		 "this kernel cannot list sockets of family %d protocol %d to CRIU (the "
		 "socket diagnostics modules are not loaded): load %s (`modprobe` them, "
		 "from the running kernel's modules) and try again",
		 family, proto, mods);
}

static void hint_netlock(const struct hint_ctx *c, char *buf, size_t len)
{
	unsigned int ino = 0;
	char which[48] = "";

	if (sscanf(c->at, "Failed to lock TCP connection %x", &ino) == 1)
		snprintf(which, sizeof(which), " (socket inode %u)", ino);
	snprintf(buf, len,
		 "CRIU could not lock the established TCP connection%s with iptables, which "
		 "it needs to keep a connection: install iptables, or pass --criu-opt "
		 "--network-lock=nftables with a CRIU built with libnftables, or use --tcp "
		 "close",
		 which);
}

static void hint_file_locks(const struct hint_ctx *c, char *buf, size_t len)
{
	char task[32];

	dumped_task(c, task, sizeof(task));
	snprintf(buf, len,
		 "the process tree%s holds file locks (flock, POSIX or OFD locks), which CRIU "
		 "dumps only when asked: pass --criu-opt --file-locks (the restore repeats it "
		 "and takes the locks again)",
		 task);
}

/* "Can't dump nested ipc namespace for 4243" */
static void hint_nested_ns(const struct hint_ctx *c, char *buf, size_t len)
{
	char kind[16] = "";
	int pid = 0;

	if (sscanf(c->at, "Can't dump nested %15s namespace for %d", kind, &pid) != 2)
		snprintf(kind, sizeof(kind), "such a");
	snprintf(buf, len,
		 "pid %d of the tree is in a %s namespace of its own, which CRIU dumps only for "
		 "the tree's root: checkpoint the process that made the namespace as the root "
		 "(-p PID), or start the whole tree in it (`unshare` before the root, as a "
		 "container does)",
		 pid, kind);
}

static const struct {
	const char *needle;
	void (*fn)(const struct hint_ctx *c, char *buf, size_t len);
	const char *sentence; /* hint_socket(): %s is the socket */
} table[] = {
	{ "Can't get ", hint_sockopt, NULL }, /* "Can't get 1:34 opt: Operation not supported" */
	{ "with SysVIPC shmem map @", hint_sysv, NULL },
	{ "Can't fork for ", hint_fork, NULL },
	{ "Connected TCP socket, consider using", hint_socket,
	  "%s is an established TCP connection, which CRIU dumps only when told what "
	  "becomes of it: --tcp established keeps it (the restored tree must get the "
	  "same IP addresses), --tcp close restores it closed (the peer must reconnect)" },
	{ "Connected TCP socket in image", hint_tcp_image, NULL },
	{ "External socket is used", hint_ext_unix, NULL },
	{ "Can't dump half of stream unix connection", hint_socket,
	  "%s is a stream connection to a unix socket outside the process tree, "
	  "which CRIU cannot dump even with --ext-unix-sk: checkpoint the peer's "
	  "process in the same tree, or close the connection first" },
	{ "In-flight connection", hint_socket,
	  "%s has connections not yet accepted: let the server accept them, or pass "
	  "--criu-opt --skip-in-flight (those clients see their connection reset)" },
	{ "Sockets (family ", hint_diag, NULL },
	{ "Locking network failed: iptables-restore", hint_netlock, NULL },
	{ "Failed to lock TCP connection ", hint_netlock, NULL },
	{ "Some file locks are hold by dumping tasks", hint_file_locks, NULL },
	{ "Can't dump nested ", hint_nested_ns, NULL },
};

/* Does the match at @at qualify: for the socket option, the kernel refused it. */
static bool qualifies(size_t i, const char *at)
{
	const char *eol = strchrnul(at, '\n');
	const char *op = strstr(at, " opt: "), *why;

	if (table[i].fn == hint_fork) { /* only a pid taken */
		why = strstr(at, "File exists");
		return why && why < eol;
	}
	if (table[i].fn != hint_sockopt)
		return true;
	why = op && op < eol ? strstr(op, "Operation not supported") : NULL;
	return why && why < eol;
}

size_t ml_criu_explain(const char *log, char *buf, size_t len)
{
	size_t found = 0, pos = 0;

	if (!len)
		return 0;
	buf[0] = '\0';
	if (!log)
		return 0;
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		const char *at = log;
		char one[640];

		/* the first qualifying line of each kind: it names the first culprit */
		while ((at = strstr(at, table[i].needle)) && !qualifies(i, at))
			at += strlen(table[i].needle);
		if (!at)
			continue;
		struct hint_ctx c = { .log = log,
				      .line = line_start(log, at),
				      .at = at,
				      .sentence = table[i].sentence };

		table[i].fn(&c, one, sizeof(one));
		if (pos < len)
			pos += (size_t)snprintf(buf + pos, len - pos, "%s%s", found ? "; " : "",
						one);
		found++;
	}
	return found;
}
