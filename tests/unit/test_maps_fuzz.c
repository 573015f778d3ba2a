// SPDX-License-Identifier: MIT
/*
 * Bounded fuzzing of the maps parser in every test run (and under
 * ASan+UBSan): random mutations of real maps text and random bytes must
 * parse or fail cleanly, and whatever parses must be consistent.
 */
#include <unistd.h>

#include "harness.h"
#include "memlens/maps.h"

static void check_consistent(const struct ml_vma_set *s)
{
	for (size_t i = 0; i < s->n; i++) {
		REQUIRE(s->v[i].start < s->v[i].end);
		REQUIRE(!(s->v[i].start & 0xfff) && !(s->v[i].end & 0xfff));
		if (i)
			REQUIRE(s->v[i - 1].end <= s->v[i].start);
		REQUIRE(ml_vma_path(s, &s->v[i]) != NULL);
		REQUIRE(ml_vma_find(s, s->v[i].start) == (long)i);
	}
}

static void test_mutated_real_maps(void)
{
	char *seed = NULL, *buf;
	size_t len = 0;
	struct ml_vma_set s;
	struct ml_err err;
	unsigned int rnd = 4242;
	FILE *f = fopen("/proc/self/maps", "r");
	char tmp[4096];
	size_t n;

	REQUIRE(f);
	while ((n = fread(tmp, 1, sizeof(tmp), f)) > 0) {
		seed = realloc(seed, len + n);
		memcpy(seed + len, tmp, n);
		len += n;
	}
	fclose(f);
	buf = malloc(len + 64);
	ml_vma_set_init(&s);
	REQUIRE(ml_maps_parse(seed, len, &s, &err) == 0);
	check_consistent(&s);
	for (int it = 0; it < 20000; it++) {
		size_t l = len;

		memcpy(buf, seed, len);
		for (int k = rand_r(&rnd) % 8; k >= 0; k--) {
			size_t pos = (size_t)rand_r(&rnd) % l;

			switch (rand_r(&rnd) % 4) {
			case 0:
				buf[pos] = (char)rand_r(&rnd);
				break;
			case 1:
				buf[pos] = "0123456789abcdef-: \n[]/\0x"[rand_r(&rnd) % 26];
				break;
			case 2:
				l = pos; /* truncate */
				break;
			default:
				memmove(buf + pos, buf + pos + 1, l - pos - 1);
				l--;
			}
			if (!l)
				break;
		}
		if (ml_maps_parse(buf, l, &s, &err) == 0) {
			ml_maps_classify(&s, NULL);
			check_consistent(&s);
		} else {
			REQUIRE(err.code != 0 && err.msg[0]);
		}
	}
	ml_vma_set_free(&s);
	free(buf);
	free(seed);
}

static void test_random_bytes(void)
{
	unsigned char buf[512];
	struct ml_vma_set s;
	struct ml_err err;
	unsigned int rnd = 7;

	ml_vma_set_init(&s);
	for (int it = 0; it < 20000; it++) {
		size_t l = (size_t)rand_r(&rnd) % sizeof(buf);

		for (size_t i = 0; i < l; i++)
			buf[i] = (unsigned char)rand_r(&rnd);
		if (ml_maps_parse((char *)buf, l, &s, &err) == 0)
			check_consistent(&s);
	}
	ml_vma_set_free(&s);
}

int main(void)
{
	RUN(test_mutated_real_maps);
	RUN(test_random_bytes);
	return T_DONE();
}
