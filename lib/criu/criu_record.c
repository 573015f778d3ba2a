// SPDX-License-Identifier: MIT
/*
 * What a pre-dump left out, kept beside its images: memlens's own record
 * (memlens-excluded.txt) and the fork's hot-iovs.json. The next (pre-)dump
 * of the chain reads them to pass --no-parent-range for every range it
 * does not exclude again.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memlens/criu.h"

#define RECORD_MAX (4u << 20)

int ml_criu_parse_record(const char *buf, size_t len, struct ml_rangeset *out)
{
	const char *p = buf, *end = buf + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		unsigned long long s, e;
		char line[96], extra;

		if (n && *p != '#') {
			if (n >= sizeof(line))
				return -EINVAL;
			memcpy(line, p, n);
			line[n] = '\0';
			if (sscanf(line, "%llx %llx %c", &s, &e, &extra) != 2 || s >= e)
				return -EINVAL;
			if (ml_rangeset_add(out, s, e))
				return -ENOMEM;
		}
		p += n + 1;
	}
	return 0;
}

/* The hex string value after "@key": at @p, or NULL. */
static const char *hex_value(const char *p, const char *end, const char *key, unsigned long long *v)
{
	size_t kn = strlen(key);
	char *stop;

	while (p < end && (size_t)(end - p) > kn && strncmp(p, key, kn))
		p++;
	if (p >= end || (size_t)(end - p) <= kn)
		return NULL;
	p += kn;
	while (p < end && (*p == ' ' || *p == ':' || *p == '"' || *p == '\t'))
		p++;
	if (p >= end)
		return NULL;
	errno = 0;
	*v = strtoull(p, &stop, 16);
	if (stop == p || errno || stop >= end || *stop != '"')
		return NULL;
	return stop;
}

/*
 * The fork writes {"excluded": [{"start": "0x..", "end": "0x.."}, ...],
 * "no_parent": [...]}: the ranges of "excluded" only.
 */
int ml_criu_parse_hot_iovs(const char *buf, size_t len, struct ml_rangeset *out)
{
	const char *p, *close;
	char *copy;
	int ret = 0;

	copy = malloc(len + 1); /* NUL-terminated for strstr */
	if (!copy)
		return -ENOMEM;
	memcpy(copy, buf, len);
	copy[len] = '\0';
	p = strstr(copy, "\"excluded\"");
	if (!p || !(p = strchr(p, '[')) || !(close = strchr(p, ']'))) {
		ret = -EINVAL;
		goto out;
	}
	while (p < close) {
		unsigned long long s, e;
		const char *obj = memchr(p, '{', (size_t)(close - p));

		if (!obj)
			break;
		p = hex_value(obj, close, "\"start\"", &s);
		if (p)
			p = hex_value(p, close, "\"end\"", &e);
		if (!p || s >= e) {
			ret = -EINVAL;
			goto out;
		}
		if (ml_rangeset_add(out, s, e)) {
			ret = -ENOMEM;
			goto out;
		}
	}
out:
	free(copy);
	return ret;
}

/* Read @dir/@name (at most RECORD_MAX bytes): 0, -ENOENT, or an error. */
static int slurp(const char *dir, const char *name, char **buf, size_t *len)
{
	char path[PATH_MAX];
	size_t cap = 4096;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	*len = 0;
	*buf = malloc(cap);
	while (*buf) {
		if (*len == cap) {
			char *b = cap < RECORD_MAX ? realloc(*buf, cap * 2) : NULL;

			if (!b) {
				free(*buf);
				*buf = NULL;
				break;
			}
			*buf = b;
			cap *= 2;
		}
		n = read(fd, *buf + *len, cap - *len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		*len += (size_t)n;
	}
	close(fd);
	return *buf ? 0 : -EFBIG;
}

int ml_criu_record_read(const char *dir, struct ml_rangeset *out, int *found, struct ml_err *err)
{
	static const char *const names[] = { ML_CRIU_RECORD_NAME, ML_CRIU_HOT_IOVS_NAME };
	int ret = 0;

	ml_rangeset_clear(out);
	*found = 0;
	for (int i = 0; i < 2 && !ret; i++) {
		char *buf = NULL;
		size_t len = 0;
		int r = slurp(dir, names[i], &buf, &len);

		if (r == -ENOENT)
			continue;
		if (r)
			return ml_err_set(err, -r, "cannot read %s/%s: %s", dir, names[i],
					  strerror(-r));
		r = i ? ml_criu_parse_hot_iovs(buf, len, out) : ml_criu_parse_record(buf, len, out);
		free(buf);
		if (r == -ENOMEM)
			return ml_err_set(err, ENOMEM, "out of memory");
		if (r)
			return ml_err_set(err, EINVAL,
					  "%s/%s is malformed: it cannot say which memory the "
					  "parent images left out; use another parent or none",
					  dir, names[i]);
		*found |= 1 << i;
	}
	return ret;
}

int ml_criu_record_write(const char *dir, const struct ml_rangeset *excluded, struct ml_err *err)
{
	char path[PATH_MAX], tmp[PATH_MAX + 8];
	FILE *f;
	int bad;

	snprintf(path, sizeof(path), "%s/%s", dir, ML_CRIU_RECORD_NAME);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	unlink(tmp);
	f = fopen(tmp, "wxe");
	if (!f)
		return ml_err_set(err, errno, "cannot write %s: %s", tmp, strerror(errno));
	fprintf(f, "# memory these images left out (start end, hex); written by memlens\n");
	for (size_t i = 0; excluded && i < excluded->n; i++)
		fprintf(f, "%llx %llx\n", (unsigned long long)excluded->r[i].start,
			(unsigned long long)excluded->r[i].end);
	bad = ferror(f);
	if (fclose(f) || bad || rename(tmp, path)) {
		int e = errno ? errno : EIO;

		unlink(tmp);
		return ml_err_set(err, e, "cannot write %s: %s", path, strerror(e));
	}
	return 0;
}
