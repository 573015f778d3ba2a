// SPDX-License-Identifier: MIT
/* The one byte formatter and the unit of a column of sizes (lib/format/units.c). */
#include <stdint.h>

#include "harness.h"
#include "memlens/units.h"

static void test_fmt_bytes(void)
{
	char b[16];

	CHECK_STR(ml_fmt_bytes(0, b, sizeof(b)), "0B");
	CHECK_STR(ml_fmt_bytes(512, b, sizeof(b)), "512B");
	CHECK_STR(ml_fmt_bytes(1023, b, sizeof(b)), "1023B");
	CHECK_STR(ml_fmt_bytes(1024, b, sizeof(b)), "1.0K");
	CHECK_STR(ml_fmt_bytes(4096, b, sizeof(b)), "4.0K");
	CHECK_STR(ml_fmt_bytes(1536, b, sizeof(b)), "1.5K");
	/* the two formatters disagreed on this one: "132.0K" and "132K" */
	CHECK_STR(ml_fmt_bytes(132 * 1024, b, sizeof(b)), "132K");
	CHECK_STR(ml_fmt_bytes(64ULL << 20, b, sizeof(b)), "64M");
	CHECK_STR(ml_fmt_bytes(3ULL << 29, b, sizeof(b)), "1.5G");
	CHECK_STR(ml_fmt_bytes(2ULL << 30, b, sizeof(b)), "2.0G");
	CHECK_STR(ml_fmt_bytes_words(4096, b, sizeof(b)), "4.0 KiB");
	CHECK_STR(ml_fmt_bytes_words(100, b, sizeof(b)), "100 B");
	CHECK_STR(ml_fmt_bytes_words(64ULL << 20, b, sizeof(b)), "64 MiB");
	/* rounds up into the next unit, never "1024K" */
	CHECK_STR(ml_fmt_bytes(1024 * 1024 - 1, b, sizeof(b)), "1.0M");
	CHECK_STR(ml_fmt_bytes(UINT64_MAX, b, sizeof(b)), "16E");
}

static void test_size_unit(void)
{
	const char *u = NULL;

	CHECK_EQ(ml_size_unit(0, 7, &u), 1024);
	CHECK_STR(u, "KiB");
	CHECK_EQ(ml_size_unit(9999999ULL * 1024, 7, &u), 1024);
	CHECK_STR(u, "KiB");
	CHECK_EQ(ml_size_unit(10000000ULL * 1024, 7, &u), 1048576);
	CHECK_STR(u, "MiB");
	CHECK_EQ(ml_size_unit(UINT64_MAX / 2, 7, &u), 1073741824);
	CHECK_STR(u, "GiB");
	CHECK_EQ(ml_in_unit(1, 1024), 1);
	CHECK_EQ(ml_in_unit(4096, 1024), 4);
	CHECK_EQ(ml_in_unit(0, 1024), 0);
}

int main(void)
{
	RUN(test_fmt_bytes);
	RUN(test_size_unit);
	return T_DONE();
}
