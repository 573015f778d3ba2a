// SPDX-License-Identifier: MIT
/*
 * What CRIU would refuse in a process tree, found before anything is
 * frozen: /proc/PID/{fd,stat,status,maps}, /proc/locks, the tree's
 * /proc/PID/net tables and the kernel's unix socket diagnostics
 * (NETLINK_SOCK_DIAG, as CRIU reads them). The rules follow CRIU 4.x:
 * files.c (the anonymous inodes and devices it has a dumper for), sk-unix.c
 * (external peers), pstree.c and tty.c (sessions and terminals),
 * file-lock.c, sockets.c (SO_PASSCRED / SO_PASSSEC), ipc_ns.c and
 * namespaces.c (nested namespaces).
 */
#include <dirent.h>
#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/inet_diag.h>
#include <linux/unix_diag.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "criu_exec.h"
#include "memlens/criu_preflight.h"
#include "memlens/opts.h"
#include "memlens/proc.h"

static const char *const kind_names[] = {
	"criu_kernel", "tcp",	    "unix_peer", "sock_diag", "session",   "tty",
	"traced",      "file_lock", "fd",	 "sysv_ipc",  "namespace",
};

const char *ml_criu_finding_name(enum ml_criu_finding_kind k)
{
	return (unsigned int)k < sizeof(kind_names) / sizeof(kind_names[0]) ? kind_names[k] : "?";
}

/* ---- pure parts -------------------------------------------------------------- */

bool ml_criu_sockets_dumpable(const char *criu_version, const char *kernel_release)
{
	int kmaj, kmin, cmaj, cmin;

	if (!criu_version || !kernel_release ||
	    sscanf(kernel_release, "%d.%d", &kmaj, &kmin) != 2 ||
	    sscanf(criu_version, "%d.%d", &cmaj, &cmin) != 2)
		return true;
	return kmaj * 1000 + kmin < 6016 || cmaj * 1000 + cmin >= 4002;
}

int ml_criu_anon_inode_unsupported(const char *link, char *what, size_t len)
{
	/* what CRIU's files.c dumps (bpf-map only when built with libbpf) */
	static const char *const ok[] = { "[eventfd]",	"[eventpoll]", "inotify", "[fanotify]",
					  "[signalfd]", "[timerfd]",   "[pidfd]" };
	static const struct {
		const char *name, *what;
	} known[] = {
		{ "[io_uring]", "an io_uring instance" },
		{ "[userfaultfd]", "a userfaultfd" },
		{ "[perf_event]", "a perf_event file descriptor" },
		{ "bpf-prog", "a BPF program" },
		{ "bpf-map", "a BPF map" },
		{ "bpf_link", "a BPF link" },
		{ "[fscontext]", "a filesystem context (fsopen)" },
		{ "kvm-vm", "a KVM virtual machine" },
		{ "kvm-vcpu", "a KVM virtual CPU" },
		{ "[pidfd]", "a pidfd" },
	};
	const char *t;

	if (strncmp(link, "anon_inode:", 11))
		return 0;
	t = link + 11;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		if (!strcmp(t, ok[i]))
			return 0;
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (!strncmp(t, known[i].name, strlen(known[i].name))) {
			snprintf(what, len, "%s", known[i].what);
			return 1;
		}
	snprintf(what, len, "an anonymous inode %.64s", t);
	return 1;
}

bool ml_criu_chrdev_pts(unsigned int major, unsigned int minor)
{
	(void)minor;
	return major >= 136 && major <= 143; /* UNIX98_PTY_SLAVE_MAJOR */
}

bool ml_criu_chrdev_ptmx(unsigned int major, unsigned int minor)
{
	return (major == 5 && minor == 2) || (major >= 128 && major <= 135);
}

bool ml_criu_chrdev_dumpable(unsigned int major, unsigned int minor)
{
	switch (major) {
	case 1: /* /dev/null, zero, random, ... */
		return true;
	case 4: /* virtual consoles; the other minors are serial ports */
		return minor >= 1 && minor <= 63;
	case 5: /* /dev/tty, console, ptmx */
		return minor <= 2;
	case 10: /* misc: tun, autofs */
		return minor == 200 || minor == 235;
	case 188: /* USB serial */
	case 204: /* low-density serial */
		return true;
	default:
		return ml_criu_chrdev_pts(major, minor) || ml_criu_chrdev_ptmx(major, minor);
	}
}

int ml_criu_parse_lock(const char *line, struct ml_criu_lock *out)
{
	char dev[64];

	memset(out, 0, sizeof(*out));
	/* "1: POSIX  ADVISORY  WRITE 1234 08:02:131 0 EOF"; waiters: "1: -> POSIX ..." */
	if (strstr(line, "->") ||
	    sscanf(line, "%*d: %7s %*s %7s %d %63s", out->type, out->access, &out->pid, dev) != 4 ||
	    sscanf(dev, "%x:%x:%lu", &out->dev_major, &out->dev_minor, &out->ino) != 3)
		return -EINVAL;
	return 0;
}

int ml_criu_parse_tracer(const char *status)
{
	const char *t = status ? strstr(status, "TracerPid:") : NULL;

	return t ? atoi(t + 10) : -1;
}

/* ---- collecting --------------------------------------------------------------- */

struct pf_fd {
	pid_t pid;
	int fd;
	int fam; /* a socket's enum sk_family, -1 not known yet */
	char link[160];
	struct stat st;
};

struct pf_proc {
	pid_t pid;
	char comm[16];
	pid_t sid;
	int tty_nr;
	unsigned long netns, ipcns;
};

struct pf {
	const struct ml_criu_preflight_opts *o;
	struct ml_criu_preflight *out;
	pid_t root;
	struct pf_proc *procs;
	size_t nprocs;
	struct pf_fd *fds;
	size_t nfds, capfds;
};

static void add(struct pf *s, enum ml_criu_finding_kind k, bool absorbed, pid_t pid,
		const char *fix, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

static const char *comm_of(const struct pf *s, pid_t pid)
{
	for (size_t i = 0; i < s->nprocs; i++)
		if (s->procs[i].pid == pid)
			return s->procs[i].comm;
	return "?";
}

static void add(struct pf *s, enum ml_criu_finding_kind k, bool absorbed, pid_t pid,
		const char *fix, const char *fmt, ...)
{
	struct ml_criu_preflight *p = s->out;
	struct ml_criu_finding *f;
	va_list ap;

	p->nfound++;
	if (!absorbed)
		p->nrefused++;
	if (p->n == ML_CRIU_PREFLIGHT_MAX)
		return;
	f = &p->f[p->n++];
	f->kind = k;
	f->absorbed = absorbed;
	f->pid = pid;
	snprintf(f->comm, sizeof(f->comm), "%s", comm_of(s, pid));
	snprintf(f->fix, sizeof(f->fix), "%s", fix);
	va_start(ap, fmt);
	vsnprintf(f->resource, sizeof(f->resource), fmt, ap);
	va_end(ap);
}

static bool has_opt(const struct pf *s, const char *opt)
{
	size_t n = strlen(opt);

	for (const char *const *e = s->o->extra_args; e && *e; e++)
		if (!strncmp(*e, opt, n) && ((*e)[n] == '\0' || (*e)[n] == '='))
			return true;
	return false;
}

static bool in_tree(const struct pf *s, pid_t pid)
{
	for (size_t i = 0; i < s->nprocs; i++)
		if (s->procs[i].pid == pid)
			return true;
	return false;
}

static unsigned long ns_ino(pid_t pid, const char *ns)
{
	char path[64];
	struct stat st;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/ns/%s", (int)pid, ns);
	else
		snprintf(path, sizeof(path), "/proc/self/ns/%s", ns);
	return stat(path, &st) == 0 ? (unsigned long)st.st_ino : 0;
}

/* comm, session and controlling terminal from /proc/PID/stat */
static int read_proc(pid_t pid, struct pf_proc *p)
{
	char path[64], line[1024], *e;
	FILE *f;
	int ok;

	memset(p, 0, sizeof(*p));
	p->pid = pid;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -ESRCH;
	ok = fgets(line, sizeof(line), f) != NULL;
	fclose(f);
	e = ok ? strrchr(line, ')') : NULL;
	if (!e)
		return -ESRCH;
	*e = '\0';
	snprintf(p->comm, sizeof(p->comm), "%s", strchr(line, '(') ? strchr(line, '(') + 1 : "?");
	sscanf(e + 1, " %*c %*d %*d %d %d", &p->sid, &p->tty_nr);
	p->netns = ns_ino(pid, "net");
	p->ipcns = ns_ino(pid, "ipc");
	return 0;
}

static void read_fds(struct pf *s, pid_t pid)
{
	char path[64];
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	d = opendir(path);
	while (d && (de = readdir(d))) {
		struct pf_fd *x;
		ssize_t k;

		if (de->d_name[0] == '.')
			continue;
		if (s->nfds == s->capfds) {
			size_t nc = s->capfds ? s->capfds * 2 : 64;
			struct pf_fd *g = realloc(s->fds, nc * sizeof(*g));

			if (!g)
				break;
			s->fds = g;
			s->capfds = nc;
		}
		x = &s->fds[s->nfds];
		x->pid = pid;
		x->fd = atoi(de->d_name);
		x->fam = -1;
		k = readlinkat(dirfd(d), de->d_name, x->link, sizeof(x->link) - 1);
		if (k <= 0 || fstatat(dirfd(d), de->d_name, &x->st, 0) < 0)
			continue;
		x->link[k] = '\0';
		s->nfds++;
	}
	if (d)
		closedir(d);
}

/* ---- sockets ------------------------------------------------------------------ */

enum sk_family { SK_OTHER, SK_UNIX, SK_NETLINK, SK_TCP, SK_UDP, SK_RAW };

static const char *const sk_names[] = { "socket",     "unix socket", "netlink socket",
					"TCP socket", "UDP socket",  "raw IP socket" };

/* Is @ino in the /proc/PID/net table @name (its inode in column @col, from 1)? */
static bool in_table(pid_t pid, const char *name, int col, unsigned long ino)
{
	char path[64], line[512];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/net/%s", (int)pid, name);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		char *save = NULL, *t = strtok_r(line, " \t\n", &save);

		for (int c = 1; t && c < col; c++)
			t = strtok_r(NULL, " \t\n", &save);
		found = t && strtoul(t, NULL, 10) == ino;
	}
	fclose(f);
	return found;
}

static enum sk_family sk_family_read(pid_t pid, unsigned long ino)
{
	if (in_table(pid, "unix", 7, ino))
		return SK_UNIX;
	if (in_table(pid, "tcp", 10, ino) || in_table(pid, "tcp6", 10, ino))
		return SK_TCP;
	if (in_table(pid, "udp", 10, ino) || in_table(pid, "udp6", 10, ino))
		return SK_UDP;
	if (in_table(pid, "raw", 10, ino) || in_table(pid, "raw6", 10, ino))
		return SK_RAW;
	if (in_table(pid, "netlink", 10, ino))
		return SK_NETLINK;
	return SK_OTHER;
}

/* A socket fd's family, read once from its process's /proc/PID/net tables. */
static enum sk_family sk_family(struct pf_fd *x)
{
	if (x->fam < 0)
		x->fam = (int)sk_family_read(x->pid, (unsigned long)x->st.st_ino);
	return (enum sk_family)x->fam;
}

struct usk {
	unsigned int ino, peer;
	unsigned char type, state;
	char name[112]; /* "" unnamed; abstract names start with '@' */
};

/*
 * Send the sock_diag dump request @req (@len bytes) on @fd and hand each
 * answer to @fn (non-zero stops and is returned) until the dump is done:
 * 0, the kernel's error (negative), or -errno.
 */
static int sock_diag_dump(int fd, const void *req, size_t len,
			  int (*fn)(const struct nlmsghdr *h, void *arg), void *arg)
{
	const size_t size = 32768;
	char *buf = malloc(size);
	bool done = false;
	int ret = 0;

	if (!buf)
		return -ENOMEM;
	if (send(fd, req, len, 0) < 0)
		ret = -errno;
	while (!ret && !done) {
		ssize_t k = recv(fd, buf, size, 0);
		struct nlmsghdr *h = (struct nlmsghdr *)buf;

		if (k <= 0) {
			ret = k < 0 ? -errno : -EIO;
			break;
		}
		for (; !ret && !done && NLMSG_OK(h, (size_t)k); h = NLMSG_NEXT(h, k)) {
			if (h->nlmsg_type == NLMSG_DONE) {
				done = true;
			} else if (h->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = NLMSG_DATA(h);

				ret = e->error ? e->error : -EIO;
			} else {
				ret = fn(h, arg);
			}
		}
	}
	free(buf);
	return ret;
}

struct usk_list {
	struct usk *v;
	size_t n, cap;
};

/* One unix_diag answer: the socket, its peer and its name. */
static int usk_add(const struct nlmsghdr *h, void *arg)
{
	const struct unix_diag_msg *m = NLMSG_DATA(h);
	const struct rtattr *a = (const struct rtattr *)(m + 1);
	int alen = (int)(h->nlmsg_len - NLMSG_LENGTH(sizeof(*m)));
	struct usk_list *l = arg;
	struct usk *u;

	if (l->n == l->cap) {
		size_t nc = l->cap ? l->cap * 2 : 256;
		struct usk *g = realloc(l->v, nc * sizeof(*g));

		if (!g)
			return -ENOMEM;
		l->v = g;
		l->cap = nc;
	}
	u = &l->v[l->n++];
	memset(u, 0, sizeof(*u));
	u->ino = m->udiag_ino;
	u->type = m->udiag_type;
	u->state = m->udiag_state;
	for (; RTA_OK(a, alen); a = RTA_NEXT(a, alen)) {
		size_t len = RTA_PAYLOAD(a);
		const char *d = RTA_DATA(a);

		if (a->rta_type == UNIX_DIAG_PEER && len >= 4)
			memcpy(&u->peer, d, 4);
		if (a->rta_type == UNIX_DIAG_NAME && len) {
			len = len < sizeof(u->name) - 1 ? len : sizeof(u->name) - 1;
			memcpy(u->name, d, len);
			u->name[len] = '\0';
			if (!d[0]) /* abstract */
				u->name[0] = '@';
		}
	}
	return 0;
}

/* Every unix socket of this network namespace, with its peer and name: 0 or -errno. */
static int unix_diag(struct usk **out, size_t *n)
{
	struct {
		struct nlmsghdr nlh;
		struct unix_diag_req r;
	} req = {
		.nlh = { .nlmsg_len = sizeof(req),
			 .nlmsg_type = SOCK_DIAG_BY_FAMILY,
			 .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP },
		.r = { .sdiag_family = AF_UNIX,
		       .udiag_states = ~0U,
		       .udiag_show = UDIAG_SHOW_NAME | UDIAG_SHOW_PEER },
	};
	struct usk_list l = { 0 };
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_SOCK_DIAG), ret;

	*out = NULL;
	*n = 0;
	if (fd < 0)
		return -errno;
	ret = sock_diag_dump(fd, &req, sizeof(req), usk_add, &l);
	close(fd);
	if (ret) {
		free(l.v);
		return ret;
	}
	*out = l.v;
	*n = l.n;
	return 0;
}

static int stop_at_first(const struct nlmsghdr *h, void *arg)
{
	(void)h;
	(void)arg;
	return 1;
}

/* Does the kernel list sockets of @family/@proto (its diag module is there)? */
static bool inet_diag_works(int family, int proto)
{
	struct {
		struct nlmsghdr nlh;
		struct inet_diag_req_v2 r;
	} req = {
		.nlh = { .nlmsg_len = sizeof(req),
			 .nlmsg_type = SOCK_DIAG_BY_FAMILY,
			 .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP },
		.r = { .sdiag_family = (unsigned char)family,
		       .sdiag_protocol = (unsigned char)proto,
		       .idiag_states = 0 /* none: only whether it answers */ },
	};
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_SOCK_DIAG), ret;

	if (fd < 0)
		return true; /* cannot tell */
	ret = sock_diag_dump(fd, &req, sizeof(req), stop_at_first, NULL);
	close(fd);
	return ret != -ENOENT && ret != -EPROTONOSUPPORT;
}

static const struct usk *usk_find(const struct usk *u, size_t n, unsigned int ino)
{
	for (size_t i = 0; i < n; i++)
		if (u[i].ino == ino)
			return &u[i];
	return NULL;
}

/* The first process (outside the tree) holding socket @ino: its pid, or 0. */
static pid_t sock_owner(const struct pf *s, unsigned int ino)
{
	char want[48], path[300], link[64];
	struct dirent *de, *fe;
	pid_t found = 0;
	DIR *d = opendir("/proc"), *fd;

	snprintf(want, sizeof(want), "socket:[%u]", ino);
	while (d && !found && (de = readdir(d))) {
		pid_t pid = (pid_t)atoi(de->d_name);

		if (pid <= 0 || in_tree(s, pid))
			continue;
		snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
		fd = opendir(path);
		while (fd && !found && (fe = readdir(fd))) {
			ssize_t k = readlinkat(dirfd(fd), fe->d_name, link, sizeof(link) - 1);

			if (k > 0) {
				link[k] = '\0';
				if (!strcmp(link, want))
					found = pid;
			}
		}
		if (fd)
			closedir(fd);
	}
	if (d)
		closedir(d);
	return found;
}

static const char *usk_type(unsigned char t)
{
	return t == SOCK_STREAM ? "stream" : t == SOCK_DGRAM ? "datagram" : "seqpacket";
}

static void check_unix(struct pf *s, const struct pf_fd *x, const struct usk *all, size_t nall)
{
	const struct usk *u = usk_find(all, nall, (unsigned int)x->st.st_ino), *peer;
	char who[96] = "a process outside the tree", comm[32] = "";
	bool ext = has_opt(s, "--ext-unix-sk") || has_opt(s, "-x");
	pid_t owner;

	if (!u || !u->peer)
		return;
	for (size_t i = 0; i < s->nfds; i++) /* the peer in the tree: dumped with it */
		if (S_ISSOCK(s->fds[i].st.st_mode) && s->fds[i].st.st_ino == u->peer)
			return;
	peer = usk_find(all, nall, u->peer);
	owner = sock_owner(s, u->peer);
	if (owner) {
		char path[64];
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/comm", (int)owner);
		f = fopen(path, "re");
		if (f && fgets(comm, sizeof(comm), f))
			comm[strcspn(comm, "\n")] = '\0';
		if (f)
			fclose(f);
		snprintf(who, sizeof(who), "pid %d (%s), outside the tree", (int)owner, comm);
	}
	if (u->type == SOCK_DGRAM && peer && peer->name[0])
		add(s, ML_CRIU_FINDING_UNIX_PEER, ext, x->pid,
		    ext ? "absorbed by --criu-opt --ext-unix-sk: the restored socket is connected "
			  "again to the peer's name"
			: "pass --criu-opt --ext-unix-sk (the restore repeats it and connects the "
			  "socket again to the peer's name)",
		    "fd %d: a unix datagram socket (inode %u) connected to %s (inode %u) of %s",
		    x->fd, u->ino, peer->name, u->peer, who);
	else
		add(s, ML_CRIU_FINDING_UNIX_PEER, false, x->pid,
		    "CRIU cannot dump one end of a unix connection: start the peer in the same "
		    "process tree (one parent), or have the target close the connection first",
		    "fd %d: a unix %s socket (inode %u) connected to %s%s (inode %u) of %s", x->fd,
		    usk_type(u->type), u->ino, peer && peer->name[0] ? "the socket " : "",
		    peer && peer->name[0] ? peer->name : "a socket", u->peer, who);
}

static void check_sockets(struct pf *s)
{
	bool dumpable = true, unix_seen = false;
	struct usk *all = NULL;
	size_t nall = 0;
	int diag = 1; /* not asked yet */
	unsigned long selfnet = ns_ino(0, "net");
	char krel[128] = "";
	struct utsname un;
	pid_t kpid = 0;

	if (s->o->kernel_release)
		snprintf(krel, sizeof(krel), "%s", s->o->kernel_release);
	else if (!uname(&un))
		snprintf(krel, sizeof(krel), "%s", un.release);
	if (s->o->criu_version && s->o->criu_version[0])
		dumpable = ml_criu_sockets_dumpable(s->o->criu_version, krel);

	for (size_t i = 0; i < s->nfds; i++) {
		struct pf_fd *x = &s->fds[i];
		enum sk_family fam;

		if (!S_ISSOCK(x->st.st_mode))
			continue;
		fam = sk_family(x);
		if (fam == SK_UNIX) {
			bool same = false;

			for (size_t j = 0; j < s->nprocs; j++)
				if (s->procs[j].pid == x->pid)
					same = s->procs[j].netns == selfnet;
			unix_seen = true;
			if (!same) /* another network namespace: CRIU checks */
				continue;
			if (diag == 1)
				diag = unix_diag(&all, &nall);
			if (!diag)
				check_unix(s, x, all, nall);
			continue;
		}
		if (fam == SK_NETLINK || dumpable || kpid == x->pid)
			continue;
		kpid = x->pid; /* one finding per process */
		add(s, ML_CRIU_FINDING_CRIU_KERNEL, false, x->pid,
		    "use CRIU 4.2 or newer (--criu PATH or MEMLENS_CRIU), or checkpoint on a "
		    "kernel "
		    "before 6.16, or have the target close that socket first",
		    "fd %d: a %s (inode %lu), which CRIU %s cannot dump on Linux %s: since 6.16 "
		    "only unix and netlink sockets have SO_PASSCRED and SO_PASSSEC, and CRIU "
		    "before 4.2 asks every socket for them",
		    x->fd, sk_names[fam], (unsigned long)x->st.st_ino, s->o->criu_version, krel);
	}
	if (unix_seen && (diag == -ENOENT || diag == -EPROTONOSUPPORT))
		add(s, ML_CRIU_FINDING_SOCK_DIAG, false, s->root,
		    "load unix_diag (`modprobe unix_diag`, from the running kernel's modules)",
		    "the tree's unix sockets, which this kernel cannot list to CRIU (its unix "
		    "socket "
		    "diagnostics, unix_diag, are not loaded)");
	free(all);
}

/* the inet sockets the kernel cannot list (tcp_diag, udp_diag missing) */
static void check_inet_diag(struct pf *s)
{
	bool tcp = false, udp = false;
	pid_t tp = 0, up = 0;

	for (size_t i = 0; i < s->nfds; i++) {
		struct pf_fd *x = &s->fds[i];
		enum sk_family fam;

		if (!S_ISSOCK(x->st.st_mode))
			continue;
		fam = sk_family(x);
		if (fam == SK_TCP && !tcp) {
			tcp = true;
			tp = x->pid;
		}
		if (fam == SK_UDP && !udp) {
			udp = true;
			up = x->pid;
		}
	}
	if (tcp && !inet_diag_works(AF_INET, IPPROTO_TCP))
		add(s, ML_CRIU_FINDING_SOCK_DIAG, false, tp,
		    "load inet_diag and tcp_diag (`modprobe tcp_diag`, from the running kernel's "
		    "modules)",
		    "TCP sockets, which this kernel cannot list to CRIU (inet_diag and tcp_diag "
		    "are "
		    "not loaded)");
	if (udp && !inet_diag_works(AF_INET, IPPROTO_UDP))
		add(s, ML_CRIU_FINDING_SOCK_DIAG, false, up,
		    "load inet_diag and udp_diag (`modprobe udp_diag`, from the running kernel's "
		    "modules)",
		    "UDP sockets, which this kernel cannot list to CRIU (inet_diag and udp_diag "
		    "are "
		    "not loaded)");
}

static void check_tcp(struct pf *s)
{
	struct ml_criu_tcp_conns *c = malloc(sizeof(*c));
	enum ml_criu_tcp t = s->o->tcp;
	struct ml_err e = { 0 };
	bool absorbed;
	const char *fix;

	if (has_opt(s, "--tcp-established"))
		t = ML_CRIU_TCP_ESTABLISHED;
	else if (has_opt(s, "--tcp-close"))
		t = ML_CRIU_TCP_CLOSE;
	absorbed = t == ML_CRIU_TCP_ESTABLISHED || t == ML_CRIU_TCP_CLOSE;
	fix = t == ML_CRIU_TCP_ESTABLISHED
		      ? "absorbed by --tcp established: kept open; the restored tree must get the "
			"same IP address (the same network namespace, or one that moves with it)"
	      : t == ML_CRIU_TCP_CLOSE
		      ? "absorbed by --tcp close: restored closed; the peer sees it reset and "
			"must reconnect"
		      : "choose --tcp established (kept open: the restored tree must get the same "
			"IP address) or --tcp close (restored closed: the peer must reconnect)";
	if (c)
		c->sz = sizeof(*c);
	if (c && !ml_criu_tcp_inspect(s->root, c, &e))
		for (size_t i = 0; i < c->n && i < ML_CRIU_TCP_CONN_MAX; i++)
			add(s, ML_CRIU_FINDING_TCP, absorbed, c->c[i].pid, fix,
			    "fd %d: an established TCP connection %s <-> %s", c->c[i].fd,
			    c->c[i].local, c->c[i].remote);
	free(c);
}

/* ---- the rest ------------------------------------------------------------------- */

static void check_session_tty(struct pf *s)
{
	const struct pf_proc *r = &s->procs[0];
	bool ptmx = false;
	const char *fix = "pass --shell-job (the restore then needs a terminal too), or start the "
			  "target in a session of its own, its standard streams on files or "
			  "/dev/null (`setsid CMD </dev/null >LOG 2>&1`)";

	if (r->sid > 0 && r->sid != r->pid && !in_tree(s, r->sid))
		add(s, ML_CRIU_FINDING_SESSION, s->o->shell_job, r->pid,
		    s->o->shell_job ? "absorbed by --shell-job" : fix,
		    "its session (sid %d) is led by a process outside the tree (a shell), and the "
		    "root of a dumped tree must lead its session",
		    (int)r->sid);
	for (size_t i = 0; i < s->nfds; i++)
		ptmx |= S_ISCHR(s->fds[i].st.st_mode) &&
			ml_criu_chrdev_ptmx(major(s->fds[i].st.st_rdev),
					    minor(s->fds[i].st.st_rdev));
	for (size_t i = 0; i < s->nfds; i++) {
		const struct pf_fd *x = &s->fds[i];

		if (!S_ISCHR(x->st.st_mode) ||
		    !ml_criu_chrdev_pts(major(x->st.st_rdev), minor(x->st.st_rdev)) || ptmx)
			continue;
		add(s, ML_CRIU_FINDING_TTY, s->o->shell_job, x->pid,
		    s->o->shell_job ? "absorbed by --shell-job" : fix,
		    "fd %d: the terminal %s, whose other side (the pty master) is outside the tree",
		    x->fd, x->link);
		break; /* one is enough */
	}
}

/* CRIU copies a deleted file a process holds into the images, up to this (--ghost-limit) */
#define GHOST_LIMIT (1 << 20)

static void check_fds(struct pf *s)
{
	bool limit_given = has_opt(s, "--ghost-limit");
	char what[96];

	for (size_t i = 0; i < s->nfds; i++) {
		const struct pf_fd *x = &s->fds[i];
		unsigned int ma = major(x->st.st_rdev), mi = minor(x->st.st_rdev);

		if (ml_criu_anon_inode_unsupported(x->link, what, sizeof(what)))
			add(s, ML_CRIU_FINDING_FD, false, x->pid,
			    "have the target close it before the checkpoint (CRIU has no way to "
			    "dump it)",
			    "fd %d: %s (%s)", x->fd, what, x->link);
		else if (S_ISCHR(x->st.st_mode) && !ml_criu_chrdev_dumpable(ma, mi))
			add(s, ML_CRIU_FINDING_FD, false, x->pid,
			    "have the target close it before the checkpoint, or give it to CRIU as "
			    "external (--criu-opt --external with its dev:ino, and the same at the "
			    "restore)",
			    "fd %d: the device %s (%u:%u), which CRIU cannot dump", x->fd, x->link,
			    ma, mi);
		else if (S_ISREG(x->st.st_mode) && !x->st.st_nlink && !limit_given &&
			 strncmp(x->link, "/memfd:", 7) && x->st.st_blocks * 512 > GHOST_LIMIT)
			add(s, ML_CRIU_FINDING_FD, false, x->pid,
			    "pass --criu-opt --ghost-limit=SIZE (at least its size: CRIU copies it "
			    "into the images), or have the target close it first",
			    "fd %d: the deleted file %s of %lld bytes, more than CRIU copies of a "
			    "deleted file by default (1 MiB)",
			    x->fd, x->link, (long long)x->st.st_blocks * 512);
	}
}

static void check_traced(struct pf *s)
{
	for (size_t i = 0; i < s->nprocs; i++) {
		char path[64], buf[4096];
		FILE *f;
		size_t k;
		int t;

		snprintf(path, sizeof(path), "/proc/%d/status", (int)s->procs[i].pid);
		f = fopen(path, "re");
		if (!f)
			continue;
		k = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[k] = '\0';
		t = ml_criu_parse_tracer(buf);
		if (t > 0) {
			char comm[32] = "?";

			snprintf(path, sizeof(path), "/proc/%d/comm", t);
			f = fopen(path, "re");
			if (f && fgets(comm, sizeof(comm), f))
				comm[strcspn(comm, "\n")] = '\0';
			if (f)
				fclose(f);
			add(s, ML_CRIU_FINDING_TRACED, false, s->procs[i].pid,
			    "detach the tracer first (quit strace, `detach` in gdb): CRIU must "
			    "trace every process it dumps itself",
			    "it is traced by pid %d (%s)", t, comm);
		}
	}
}

static void check_locks(struct pf *s)
{
	bool given = has_opt(s, "--file-locks") || has_opt(s, "-l");
	FILE *f = fopen("/proc/locks", "re");
	char line[256];
	struct ml_criu_lock l;

	while (f && fgets(line, sizeof(line), f)) {
		const struct pf_fd *x = NULL;

		if (ml_criu_parse_lock(line, &l))
			continue;
		for (size_t i = 0; i < s->nfds && !x; i++) {
			const struct pf_fd *y = &s->fds[i];

			if (y->st.st_ino == l.ino && major(y->st.st_dev) == l.dev_major &&
			    minor(y->st.st_dev) == l.dev_minor && !S_ISSOCK(y->st.st_mode) &&
			    (l.pid == y->pid || (l.pid <= 0 && in_tree(s, y->pid)) ||
			     (l.pid > 0 && in_tree(s, l.pid))))
				x = y;
		}
		if (!x)
			continue;
		add(s, ML_CRIU_FINDING_FILE_LOCK, given, x->pid,
		    given ? "absorbed by --criu-opt --file-locks: the restore takes the lock again"
			  : "pass --criu-opt --file-locks (the restore repeats it and takes the "
			    "lock "
			    "again; the file must be there)",
		    "fd %d: a %s %s lock on %s", x->fd, l.type, l.access, x->link);
	}
	if (f)
		fclose(f);
}

static void check_sysv(struct pf *s)
{
	unsigned long self = ns_ino(0, "ipc");

	for (size_t i = 0; i < s->nprocs; i++) {
		char path[64], line[512];
		unsigned long addr;
		unsigned int key;
		const char *p;
		FILE *f;

		if (!self || s->procs[i].ipcns != self)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/maps", (int)s->procs[i].pid);
		f = fopen(path, "re");
		while (f && fgets(line, sizeof(line), f)) {
			p = strstr(line, " /SYSV");
			if (!p || sscanf(line, "%lx-", &addr) != 1 ||
			    sscanf(p, " /SYSV%x", &key) != 1)
				continue;
			add(s, ML_CRIU_FINDING_SYSV, false, s->procs[i].pid,
			    "start the target in an IPC namespace of its own (`unshare --ipc CMD`, "
			    "as a container does) and checkpoint it there",
			    "it maps SysV shared memory (key 0x%x, at 0x%lx) of the host's IPC "
			    "namespace, shared with every process outside the tree",
			    key, addr);
			break;
		}
		if (f)
			fclose(f);
	}
}

/*
 * CRIU takes the namespaces of the tree's root into the images (or leaves
 * them to be those it runs in); below the root, a process may have a
 * network or mount namespace of its own, but no other kind: for a process
 * in an IPC, UTS, PID, user, cgroup or time namespace that is neither the
 * root's nor CRIU's, CRIU's dump fails ("Can't dump nested ... namespace").
 * A process that unshares one namespace is reported once, for its first.
 */
static void check_nested_ns(struct pf *s)
{
	static const char *const kinds[] = { "ipc", "uts", "pid", "user", "cgroup", "time" };
	unsigned long root[6], self[6];

	for (size_t k = 0; k < 6; k++) {
		root[k] = ns_ino(s->root, kinds[k]);
		self[k] = ns_ino(0, kinds[k]);
	}
	for (size_t i = 0; i < s->nprocs; i++) {
		if (s->procs[i].pid == s->root)
			continue;
		for (size_t k = 0; k < 6; k++) {
			unsigned long ino = ns_ino(s->procs[i].pid, kinds[k]);

			if (!ino || !root[k] || ino == root[k] || ino == self[k])
				continue;
			add(s, ML_CRIU_FINDING_NAMESPACE, false, s->procs[i].pid,
			    "CRIU dumps such a namespace only for the tree's root: checkpoint the "
			    "process that made it as the root (-p PID), or start the whole tree in "
			    "it (`unshare` before the root, as a container does)",
			    "it is in a %s namespace of its own (%s:[%lu]), not the root's",
			    kinds[k], kinds[k], ino);
			break;
		}
	}
}

/* ml_criu_preflight() into @out, the library's own struct (zeroed) */
static int preflight(pid_t pid, const struct ml_criu_preflight_opts *opts,
		     struct ml_criu_preflight *out, struct ml_err *err)
{
	struct ml_criu_preflight_opts o;
	struct pf s = { .o = &o, .out = out, .root = pid };
	pid_t *tree;
	size_t n;
	int ret;

	ret = ml_opts_load(&o, sizeof(o), opts, "ml_criu_preflight_opts", err);
	if (ret)
		return ret;
	if (pid <= 0 || (kill(pid, 0) < 0 && errno == ESRCH))
		return ml_err_set(err, ESRCH, "no process with pid %d (it may have exited)",
				  (int)pid);
	tree = malloc(ML_PROC_TREE_MAX * sizeof(*tree));
	s.procs = malloc(ML_PROC_TREE_MAX * sizeof(*s.procs));
	if (!tree || !s.procs) {
		free(tree);
		free(s.procs);
		return ml_err_set(err, ENOMEM, "out of memory");
	}
	n = ml_proc_tree(pid, tree, ML_PROC_TREE_MAX);
	for (size_t i = 0; i < n; i++)
		if (!read_proc(tree[i], &s.procs[s.nprocs]))
			s.nprocs++;
	free(tree);
	if (!s.nprocs || s.procs[0].pid != pid) {
		free(s.procs);
		return ml_err_set(err, ESRCH, "no process with pid %d (it may have exited)",
				  (int)pid);
	}
	out->nprocs = s.nprocs;
	check_traced(&s);
	if (!o.pre_dump) { /* a pre-dump dumps memory only */
		for (size_t i = 0; i < s.nprocs; i++)
			read_fds(&s, s.procs[i].pid);
		check_sockets(&s);
		check_inet_diag(&s);
		check_tcp(&s);
		check_session_tty(&s);
		check_fds(&s);
		check_locks(&s);
		check_sysv(&s);
		check_nested_ns(&s);
	}
	free(s.fds);
	free(s.procs);
	return 0;
}

/* the fields every caller's struct ml_criu_preflight has: up to nprocs */
#define PREFLIGHT_MIN (offsetof(struct ml_criu_preflight, nprocs) + sizeof(size_t))

int ml_criu_preflight(pid_t pid, const struct ml_criu_preflight_opts *opts,
		      struct ml_criu_preflight *out, struct ml_err *err)
{
	struct ml_criu_preflight *res = calloc(1, sizeof(*res));
	int ret;

	if (!res)
		return ml_err_set(err, ENOMEM, "out of memory");
	/* the caller's struct as large as its sz says (memlens/opts.h): cleared, or refused */
	ret = ml_result_store(out, res, sizeof(*res), PREFLIGHT_MIN, "ml_criu_preflight", err);
	if (!ret) {
		ret = preflight(pid, opts, res, err);
		ml_result_store(out, res, sizeof(*res), PREFLIGHT_MIN, "ml_criu_preflight", NULL);
	}
	free(res);
	return ret;
}

void ml_criu_preflight_describe(const struct ml_criu_preflight *p, char *buf, size_t len)
{
	size_t pos = 0;

	if (!len)
		return;
	buf[0] = '\0';
	for (size_t i = 0; i < p->n && pos < len; i++) {
		const struct ml_criu_finding *f = &p->f[i];
		int k = snprintf(buf + pos, len - pos, "%spid %d (%s): %s: %s%s", i ? "\n" : "",
				 (int)f->pid, f->comm, f->resource,
				 f->absorbed ? "" : "fix: ", f->fix);

		pos += k > 0 ? (size_t)k : 0;
	}
	if (p->nfound > p->n && pos < len)
		snprintf(buf + pos, len - pos, "\nand %zu more", p->nfound - p->n);
}

/* ---- CRIU's own check ------------------------------------------------------------ */

int ml_criu_dump_check_only(const struct ml_criu_caps *caps, const struct ml_criu_dump_req *req,
			    const struct ml_criu_run_opts *o, struct ml_criu_result *res,
			    struct ml_err *err)
{
	char *argv[] = { (char *)caps->path, "--check-only", "--version", NULL };
	const char *extra[ML_CRIU_PREFLIGHT_MAX + 2];
	struct ml_criu_dump_req r = *req;
	struct criu_exec x = { .argv = argv, .o = o, .timeout_ms = 30000 };
	size_t n = 0;
	int ret;

	/* CRIU parses every option before the command: an unknown one says so */
	ret = mli_criu_exec_run(&x, err);
	if (ret)
		return ret;
	ret = x.timed_out || x.status || (x.output && strstr(x.output, "unrecognized option"));
	free(x.output);
	if (ret)
		return ml_err_set(err, EOPNOTSUPP, "CRIU %s has no `dump --check-only`",
				  caps->version);
	for (const char *const *e = req->extra_args; e && *e && n < ML_CRIU_PREFLIGHT_MAX; e++)
		extra[n++] = *e;
	extra[n++] = "--check-only";
	extra[n] = NULL;
	r.extra_args = extra;
	r.pre_dump = false;
	r.leave_running = true;
	r.leave_stopped = false;
	r.page_server_port = 0;
	r.parent_dir = NULL;
	r.no_exclude = true;
	return ml_criu_dump(caps, &r, o, res, err);
}
