// SPDX-License-Identifier: MIT
/* The nearest name to a mistyped one (suggest.h). */
#include <string.h>

#include "suggest.h"

#define MAX_LEN 64

/* optimal string alignment distance: Levenshtein plus swapped neighbours */
static size_t distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	size_t d[MAX_LEN + 1][MAX_LEN + 1];

	if (la > MAX_LEN || lb > MAX_LEN)
		return (size_t)-1;
	for (size_t i = 0; i <= la; i++)
		d[i][0] = i;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = j;
	for (size_t i = 1; i <= la; i++) {
		for (size_t j = 1; j <= lb; j++) {
			size_t cost = a[i - 1] != b[j - 1];
			size_t v = d[i - 1][j] + 1;

			if (d[i][j - 1] + 1 < v)
				v = d[i][j - 1] + 1;
			if (d[i - 1][j - 1] + cost < v)
				v = d[i - 1][j - 1] + cost;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    d[i - 2][j - 2] + 1 < v)
				v = d[i - 2][j - 2] + 1;
			d[i][j] = v;
		}
	}
	return d[la][lb];
}

const char *cli_suggest(const char *word, const char *const *names, size_t n)
{
	size_t len = strlen(word), best = (size_t)-1, limit;
	const char *pick = NULL;

	if (!len)
		return NULL;
	/* a beginning of exactly one name: "snap" */
	for (size_t i = 0; i < n; i++) {
		if (len >= 3 && !strncmp(names[i], word, len)) {
			if (pick)
				return NULL; /* "mig": migrate or migrate-model */
			pick = names[i];
		}
	}
	if (pick)
		return pick;
	limit = len < 4 ? 1 : 2;
	for (size_t i = 0; i < n; i++) {
		size_t d = distance(word, names[i]);

		if (d < best) {
			best = d;
			pick = names[i];
		}
	}
	return best <= limit ? pick : NULL;
}
