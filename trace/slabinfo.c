// SPDX-License-Identifier: MIT
/* /proc/slabinfo reader (see slabinfo.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "slabinfo.h"

int mlt_slabinfo_read(struct slabinfo *s)
{
	FILE *f = fopen("/proc/slabinfo", "re");
	char line[512];
	size_t cap = 0;

	memset(s, 0, sizeof(*s));
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		struct slabinfo_row r;

		if (line[0] == '#' || !strncmp(line, "slabinfo", 8))
			continue;
		if (sscanf(line, "%63s %lld %lld %*d %ld", r.name, &r.active_objs, &r.num_objs,
			   &r.objperslab) != 4)
			continue;
		if (s->n == cap) {
			size_t nc = cap ? cap * 2 : 256;
			struct slabinfo_row *v = realloc(s->v, nc * sizeof(*v));

			if (!v) {
				fclose(f);
				mlt_slabinfo_free(s);
				return -ENOMEM;
			}
			s->v = v;
			cap = nc;
		}
		s->v[s->n++] = r;
	}
	fclose(f);
	return 0;
}

const struct slabinfo_row *mlt_slabinfo_find(const struct slabinfo *s, const char *name)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->v[i].name, name))
			return &s->v[i];
	return NULL;
}

void mlt_slabinfo_free(struct slabinfo *s)
{
	free(s->v);
	s->v = NULL;
	s->n = 0;
}
