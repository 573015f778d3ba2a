// SPDX-License-Identifier: MIT
/*
 * CRIU's stats-dump image, decoded with the C code protoc-c generates from
 * CRIU's own images/stats.proto (proto/criu/stats.proto). The file is laid
 * out as CRIU's criu/image.c and protobuf.c write it (and pycriu reads it):
 * a u32 head magic (IMG_SERVICE_MAGIC: stats are a service file; images of
 * format v1.0 have none), the image's magic (STATS_MAGIC), then one entry:
 * a u32 size and that many bytes of a packed stats_entry, whose dump field
 * is the dump_stats_entry. All words little-endian, as CRIU writes them on
 * the machines memlens runs on.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "memlens/criu.h"
#include "criu/stats.pb-c.h"

#define IMG_SERVICE_MAGIC 0x55105940u
#define STATS_MAGIC 0x57093306u

static uint32_t get_u32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void stats_unknown(struct ml_criu_dump_stats *s)
{
	int64_t *f = &s->freezing_time;

	for (size_t i = 0; i < sizeof(*s) / sizeof(*f); i++)
		f[i] = -1;
}

/* a uint64 field as int64_t, -1 when absent; false when beyond INT64_MAX */
static bool set_u64(int64_t *out, bool has, uint64_t v)
{
	if (!has)
		return true;
	if (v > (uint64_t)INT64_MAX)
		return false;
	*out = (int64_t)v;
	return true;
}

static int copy_dump(const MliCriu__DumpStatsEntry *d, struct ml_criu_dump_stats *s)
{
	/* proto2 required fields are there once unpacked */
	s->freezing_time = d->freezing_time;
	s->frozen_time = d->frozen_time;
	s->memdump_time = d->memdump_time;
	s->memwrite_time = d->memwrite_time;
	if (d->has_irmap_resolve)
		s->irmap_resolve = d->irmap_resolve;
	if (!set_u64(&s->pages_scanned, true, d->pages_scanned) ||
	    !set_u64(&s->pages_skipped_parent, true, d->pages_skipped_parent) ||
	    !set_u64(&s->pages_written, true, d->pages_written) ||
	    !set_u64(&s->pages_lazy, true, d->pages_lazy) ||
	    !set_u64(&s->page_pipes, d->has_page_pipes, d->page_pipes) ||
	    !set_u64(&s->page_pipe_bufs, d->has_page_pipe_bufs, d->page_pipe_bufs) ||
	    !set_u64(&s->shpages_scanned, d->has_shpages_scanned, d->shpages_scanned) ||
	    !set_u64(&s->shpages_skipped_parent, d->has_shpages_skipped_parent,
		     d->shpages_skipped_parent) ||
	    !set_u64(&s->shpages_written, d->has_shpages_written, d->shpages_written) ||
	    !set_u64(&s->pages_excluded, d->has_pages_excluded, d->pages_excluded)) {
		stats_unknown(s);
		return -EINVAL;
	}
	return 0;
}

int ml_criu_stats_parse(const uint8_t *buf, size_t len, struct ml_criu_dump_stats *out)
{
	MliCriu__StatsEntry *e;
	size_t pos = 0;
	uint32_t size;
	int ret;

	stats_unknown(out);
	if (len >= 4 && get_u32(buf) == IMG_SERVICE_MAGIC)
		pos = 4;
	if (len - pos < 8 || get_u32(buf + pos) != STATS_MAGIC)
		return -EINVAL;
	size = get_u32(buf + pos + 4);
	pos += 8;
	if (size > len - pos)
		return -EINVAL;
	e = mli_criu__stats_entry__unpack(NULL, size, buf + pos);
	if (!e)
		return -EINVAL; /* not a stats_entry, or one missing a required field */
	ret = e->dump ? copy_dump(e->dump, out) : -ENOENT;
	mli_criu__stats_entry__free_unpacked(e, NULL);
	return ret;
}

int ml_criu_parse_dump_stats(const uint8_t *buf, size_t len, int64_t *pages_scanned,
			     int64_t *pages_skipped_parent, int64_t *pages_written)
{
	struct ml_criu_dump_stats s;
	int ret = ml_criu_stats_parse(buf, len, &s);

	*pages_scanned = s.pages_scanned;
	*pages_skipped_parent = s.pages_skipped_parent;
	*pages_written = s.pages_written;
	return ret;
}

int ml_criu_parse_dump_frozen(const uint8_t *buf, size_t len, int64_t *frozen_us)
{
	struct ml_criu_dump_stats s;
	int ret = ml_criu_stats_parse(buf, len, &s);

	*frozen_us = s.frozen_time;
	return ret;
}

int ml_criu_stats_read(const char *images_dir, struct ml_criu_dump_stats *out, struct ml_err *err)
{
	char path[4096];
	uint8_t buf[4096];
	ssize_t n;
	int fd, ret;

	stats_unknown(out);
	snprintf(path, sizeof(path), "%s/stats-dump", images_dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return ml_err_set(err, errno, "cannot open CRIU's %s: %s", path, strerror(errno));
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n < 0)
		return ml_err_set(err, errno, "cannot read %s: %s", path, strerror(errno));
	ret = ml_criu_stats_parse(buf, (size_t)n, out);
	if (ret == -ENOENT)
		return ml_err_set(err, ENOENT, "%s holds no dump statistics (a restore's?)", path);
	if (ret)
		return ml_err_set(err, -ret,
				  "%s is not a CRIU stats image memlens can decode (CRIU's "
				  "images/stats.proto): was it written by CRIU?",
				  path);
	return 0;
}

int ml_criu_read_dump_stats(const char *images_dir, int64_t *pages_scanned,
			    int64_t *pages_skipped_parent, int64_t *pages_written,
			    struct ml_err *err)
{
	struct ml_criu_dump_stats s;
	int ret = ml_criu_stats_read(images_dir, &s, err);

	*pages_scanned = s.pages_scanned;
	*pages_skipped_parent = s.pages_skipped_parent;
	*pages_written = s.pages_written;
	return ret;
}

int ml_criu_read_dump_frozen(const char *images_dir, int64_t *frozen_us, struct ml_err *err)
{
	struct ml_criu_dump_stats s;
	int ret = ml_criu_stats_read(images_dir, &s, err);

	*frozen_us = s.frozen_time;
	return ret;
}
