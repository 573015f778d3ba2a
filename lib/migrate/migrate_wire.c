// SPDX-License-Identifier: MIT
/* The control connection of `memlens migrate` (see migrate_wire.h). */
#include <errno.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "migrate_wire.h"

int mli_wire_open(struct wire *w, int fd)
{
	int fd2 = dup(fd);

	w->in = fdopen(fd, "r");
	w->out = fd2 >= 0 ? fdopen(fd2, "w") : NULL;
	if (!w->in || !w->out) {
		if (w->in)
			fclose(w->in);
		else
			close(fd);
		if (w->out)
			fclose(w->out);
		else if (fd2 >= 0)
			close(fd2);
		w->in = w->out = NULL;
		return -ENOMEM;
	}
	return 0;
}

void mli_wire_close(struct wire *w)
{
	if (w->in)
		fclose(w->in);
	if (w->out)
		fclose(w->out);
	w->in = w->out = NULL;
}

int mli_wire_send(struct wire *w, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vfprintf(w->out, fmt, ap);
	va_end(ap);
	if (n < 0 || fputc('\n', w->out) == EOF || fflush(w->out))
		return -EIO;
	return 0;
}

int mli_wire_recv(struct wire *w, char *buf, size_t len)
{
	size_t n;

	if (!fgets(buf, (int)len, w->in))
		return -EPIPE;
	n = strlen(buf);
	if (!n || buf[n - 1] != '\n')
		return n + 1 >= len ? -E2BIG : -EPIPE;
	buf[n - 1] = '\0';
	return 0;
}

bool mli_wire_name_ok(const char *name)
{
	return *name && *name != '.' && !strchr(name, '/') && strlen(name) < 200;
}

int mli_wire_send_file(struct wire *w, const char *dir, const char *name)
{
	char path[4096], buf[65536];
	struct stat st;
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	if (fstat(fileno(f), &st) < 0) {
		fclose(f);
		return -errno;
	}
	fprintf(w->out, "FILE %s %llu\n", name, (unsigned long long)st.st_size);
	for (off_t left = st.st_size; left > 0; left -= (off_t)n) {
		n = fread(buf, 1, sizeof(buf) < (size_t)left ? sizeof(buf) : (size_t)left, f);
		if (!n || fwrite(buf, 1, n, w->out) != n) {
			fclose(f);
			return -EIO;
		}
	}
	fclose(f);
	return fflush(w->out) ? -EIO : 0;
}

int mli_wire_recv_file(struct wire *w, const char *dir, const char *name, uint64_t size)
{
	char path[4096], buf[65536];
	int fd, ret = 0;

	if (!mli_wire_name_ok(name))
		return -EINVAL;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		ret = -errno;
	while (size) {
		size_t want = size < sizeof(buf) ? (size_t)size : sizeof(buf);
		size_t n = fread(buf, 1, want, w->in);

		if (!n) {
			ret = -EPIPE;
			break;
		}
		if (fd >= 0 && write(fd, buf, n) != (ssize_t)n && !ret)
			ret = -EIO;
		size -= n;
	}
	if (fd >= 0 && close(fd) < 0 && !ret)
		ret = -errno;
	return ret;
}

int mli_wire_parse_hostport(const char *s, char *host, size_t len, int *port)
{
	const char *colon = strrchr(s, ':');
	const char *h = s;
	size_t hn;
	char *end;
	long p;

	if (!colon || colon == s)
		return -EINVAL;
	hn = (size_t)(colon - s);
	if (*h == '[' && hn >= 2 && h[hn - 1] == ']') {
		h++;
		hn -= 2;
	}
	if (!hn || hn >= len)
		return -EINVAL;
	errno = 0;
	p = strtol(colon + 1, &end, 10);
	if (errno || *end || end == colon + 1 || p < 0 || p > 65535)
		return -EINVAL;
	memcpy(host, h, hn);
	host[hn] = '\0';
	*port = (int)p;
	return 0;
}

static int resolve(const char *host, int port, bool passive, struct addrinfo **res)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_family = AF_UNSPEC };
	char ps[16];

	if (passive)
		hints.ai_flags = AI_PASSIVE;
	hints.ai_flags |= AI_NUMERICSERV;
	snprintf(ps, sizeof(ps), "%d", port);
	return getaddrinfo(host, ps, &hints, res) ? -EADDRNOTAVAIL : 0;
}

static int bound_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0)
		return -errno;
	return ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
					: ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

int mli_wire_listen(const char *host, int port, int *bound)
{
	struct addrinfo *ai;
	int fd, one = 1, ret = resolve(host, port, true, &ai);

	if (ret)
		return ret;
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		ret = -errno;
		goto out;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 4) < 0) {
		ret = -errno;
		close(fd);
		goto out;
	}
	ret = bound_port(fd);
	if (ret < 0) {
		close(fd);
		goto out;
	}
	if (bound)
		*bound = ret;
	ret = fd;
out:
	freeaddrinfo(ai);
	return ret;
}

int mli_wire_connect_timeout(const char *host, int port, int timeout_ms)
{
	struct timeval tv = { timeout_ms / 1000, (timeout_ms % 1000) * 1000 };
	struct addrinfo *ai, *a;
	int fd = -EHOSTUNREACH, ret = resolve(host, port, false, &ai);

	if (ret)
		return ret;
	for (a = ai; a; a = a->ai_next) {
		fd = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			fd = -errno;
			continue;
		}
		/* on Linux SO_SNDTIMEO bounds a blocking connect() too */
		if (timeout_ms > 0 && (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) ||
				       setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)))) {
			ret = -errno;
			close(fd);
			fd = ret;
			continue;
		}
		if (connect(fd, a->ai_addr, a->ai_addrlen) == 0)
			break;
		ret = -errno;
		close(fd);
		fd = ret;
	}
	freeaddrinfo(ai);
	return fd;
}

int mli_wire_connect(const char *host, int port)
{
	return mli_wire_connect_timeout(host, port, 0);
}

int mli_wire_free_port(const char *host)
{
	int port = 0, fd = mli_wire_listen(host, 0, &port);

	if (fd < 0)
		return fd;
	close(fd);
	return port;
}
