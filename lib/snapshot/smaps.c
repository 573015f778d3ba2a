// SPDX-License-Identifier: MIT
/* PSS, USS and Dirty per VMA from /proc/PID/smaps (see ml_snapshot_add_smaps()). */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memlens/clock.h"
#include "memlens/snapshot.h"

struct fields {
	uint64_t rss, pss, pss_dirty, shared_dirty, private_clean, private_dirty;
};

static void put(struct ml_snapshot *s, long i, const struct fields *f)
{
	struct ml_snap_counts *c[3];

	if (i < 0) {
		s->smaps_unmatched++;
		return;
	}
	c[0] = &s->c[i];
	c[1] = &s->kinds[s->vmas.v[i].kind];
	c[2] = &s->totals;
	for (int k = 0; k < 3; k++) {
		c[k]->smaps_rss_kb += f->rss;
		c[k]->pss_kb += f->pss;
		c[k]->pss_dirty_kb += f->pss_dirty;
		c[k]->uss_kb += f->private_clean + f->private_dirty;
		c[k]->dirty_kb += f->shared_dirty + f->private_dirty;
	}
}

/* "Pss:  123 kB" -> 123 into the field it names; other lines are left alone */
static void field(struct fields *f, const char *line)
{
	static const struct {
		const char *key;
		size_t off;
	} keys[] = {
		{ "Rss:", offsetof(struct fields, rss) },
		{ "Pss:", offsetof(struct fields, pss) },
		{ "Pss_Dirty:", offsetof(struct fields, pss_dirty) },
		{ "Shared_Dirty:", offsetof(struct fields, shared_dirty) },
		{ "Private_Clean:", offsetof(struct fields, private_clean) },
		{ "Private_Dirty:", offsetof(struct fields, private_dirty) },
	};

	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		size_t n = strlen(keys[k].key);

		if (!strncmp(line, keys[k].key, n)) {
			*(uint64_t *)((char *)f + keys[k].off) = strtoull(line + n, NULL, 10);
			return;
		}
	}
}

/* A VMA's first line: "start-end perms ..."; its start, or false. */
static bool vma_line(const char *line, uint64_t *start)
{
	char *end;

	*start = strtoull(line, &end, 16);
	return end != line && *end == '-';
}

int ml_snapshot_add_smaps(struct ml_snapshot *s, struct ml_err *err)
{
	uint64_t t0 = ml_mono_ns(), start;
	struct fields f = { 0 };
	char path[64], *line = NULL;
	size_t cap = 0;
	long cur = -2; /* -2: before the first VMA */
	FILE *fp;

	for (size_t i = 0; i < s->vmas.n; i++)
		s->c[i].smaps_rss_kb = s->c[i].pss_kb = s->c[i].pss_dirty_kb = s->c[i].uss_kb =
			s->c[i].dirty_kb = 0;
	for (int k = 0; k <= ML_VMA_KIND_COUNT; k++) {
		struct ml_snap_counts *c = k < ML_VMA_KIND_COUNT ? &s->kinds[k] : &s->totals;

		c->smaps_rss_kb = c->pss_kb = c->pss_dirty_kb = c->uss_kb = c->dirty_kb = 0;
	}
	s->smaps_unmatched = 0;
	snprintf(path, sizeof(path), "/proc/%d/smaps", (int)s->pid);
	fp = fopen(path, "re");
	if (!fp)
		return ml_err_set(err, errno == ENOENT ? ESRCH : errno, "cannot read %s: %s", path,
				  strerror(errno));
	while (getline(&line, &cap, fp) > 0) {
		if (vma_line(line, &start)) {
			long i = ml_vma_find(&s->vmas, start);

			if (cur != -2)
				put(s, cur, &f);
			memset(&f, 0, sizeof(f));
			cur = i >= 0 && s->vmas.v[i].start == start ? i : -1;
			continue;
		}
		field(&f, line);
	}
	if (cur != -2)
		put(s, cur, &f);
	free(line);
	if (ferror(fp)) {
		int e = errno;

		fclose(fp);
		return ml_err_set(err, e == ENOENT ? ESRCH : e, "reading %s: %s", path,
				  strerror(e));
	}
	fclose(fp);
	s->flags |= ML_SNAP_HAVE_SMAPS;
	s->smaps_ns = ml_mono_ns() - t0;
	return 0;
}
