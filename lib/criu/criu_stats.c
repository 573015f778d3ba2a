// SPDX-License-Identifier: MIT
/*
 * CRIU's stats-dump image without crit: two magics (IMG_SERVICE_MAGIC,
 * STATS_MAGIC), a u32 length, then a protobuf stats_entry whose field 1 is
 * dump_stats_entry (images/stats.proto): pages_scanned = 5,
 * pages_skipped_parent = 6, pages_written = 7.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "memlens/criu.h"

#define IMG_SERVICE_MAGIC 0x55105940u
#define STATS_MAGIC 0x57093306u

static uint32_t get_u32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* 0 and *pos advanced, or -EINVAL. */
static int varint(const uint8_t *b, size_t len, size_t *pos, uint64_t *out)
{
	uint64_t v = 0;

	for (int shift = 0; shift < 64 && *pos < len; shift += 7) {
		uint8_t c = b[(*pos)++];

		v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80)) {
			*out = v;
			return 0;
		}
	}
	return -EINVAL;
}

/* Skip a field of wire type @wt. */
static int skip_field(const uint8_t *b, size_t len, size_t *pos, unsigned int wt)
{
	uint64_t v;

	switch (wt) {
	case 0:
		return varint(b, len, pos, &v);
	case 1:
		v = 8;
		break;
	case 2:
		if (varint(b, len, pos, &v))
			return -EINVAL;
		break;
	case 5:
		v = 4;
		break;
	default:
		return -EINVAL;
	}
	if (v > len - *pos)
		return -EINVAL;
	*pos += v;
	return 0;
}

/* The varint fields 1..7 of dump_stats_entry into f[1..7] (-1: absent). */
static int parse_dump_entry(const uint8_t *b, size_t len, int64_t f[8])
{
	size_t pos = 0;
	uint64_t key, v;

	while (pos < len) {
		if (varint(b, len, &pos, &key))
			return -EINVAL;
		if ((key & 7) != 0) {
			if (skip_field(b, len, &pos, key & 7))
				return -EINVAL;
			continue;
		}
		if (varint(b, len, &pos, &v))
			return -EINVAL;
		if (key >> 3 >= 1 && key >> 3 <= 7)
			f[key >> 3] = (int64_t)v;
	}
	return 0;
}

static int parse_stats(const uint8_t *buf, size_t len, int64_t f[8])
{
	size_t pos = 12, end;
	uint64_t key, n;

	for (int i = 0; i < 8; i++)
		f[i] = -1;
	if (len < 12 || get_u32(buf) != IMG_SERVICE_MAGIC || get_u32(buf + 4) != STATS_MAGIC)
		return -EINVAL;
	if (get_u32(buf + 8) > len - 12)
		return -EINVAL;
	end = 12 + get_u32(buf + 8);
	while (pos < end) {
		if (varint(buf, end, &pos, &key))
			return -EINVAL;
		if (key != (1 << 3 | 2)) {
			if (skip_field(buf, end, &pos, key & 7))
				return -EINVAL;
			continue;
		}
		if (varint(buf, end, &pos, &n) || n > end - pos)
			return -EINVAL;
		return parse_dump_entry(buf + pos, (size_t)n, f);
	}
	return -ENOENT;
}

int ml_criu_parse_dump_stats(const uint8_t *buf, size_t len, int64_t *pages_scanned,
			     int64_t *pages_skipped_parent, int64_t *pages_written)
{
	int64_t f[8];
	int ret = parse_stats(buf, len, f);

	*pages_scanned = f[5];
	*pages_skipped_parent = f[6];
	*pages_written = f[7];
	return ret;
}

int ml_criu_parse_dump_frozen(const uint8_t *buf, size_t len, int64_t *frozen_us)
{
	int64_t f[8];
	int ret = parse_stats(buf, len, f);

	*frozen_us = f[2];
	return ret;
}

static int read_stats(const char *images_dir, int64_t *pages_scanned, int64_t *pages_skipped_parent,
		      int64_t *pages_written, int64_t *frozen_us, struct ml_err *err)
{
	char path[4096];
	uint8_t buf[4096];
	ssize_t n;
	int fd, ret;

	*pages_scanned = *pages_skipped_parent = *pages_written = -1;
	snprintf(path, sizeof(path), "%s/stats-dump", images_dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return ml_err_set(err, errno, "cannot open CRIU's %s: %s", path, strerror(errno));
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n < 0)
		return ml_err_set(err, errno, "cannot read %s: %s", path, strerror(errno));
	ret = ml_criu_parse_dump_stats(buf, (size_t)n, pages_scanned, pages_skipped_parent,
				       pages_written);
	if (frozen_us)
		ml_criu_parse_dump_frozen(buf, (size_t)n, frozen_us);
	if (ret)
		return ml_err_set(err, -ret, "%s is not a CRIU stats image memlens can decode",
				  path);
	return 0;
}

int ml_criu_read_dump_stats(const char *images_dir, int64_t *pages_scanned,
			    int64_t *pages_skipped_parent, int64_t *pages_written,
			    struct ml_err *err)
{
	return read_stats(images_dir, pages_scanned, pages_skipped_parent, pages_written, NULL,
			  err);
}

int ml_criu_read_dump_frozen(const char *images_dir, int64_t *frozen_us, struct ml_err *err)
{
	int64_t a, b, c;

	*frozen_us = -1;
	return read_stats(images_dir, &a, &b, &c, frozen_us, err);
}
