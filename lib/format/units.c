// SPDX-License-Identifier: MIT
/* Sizes for people: one byte formatter, and the unit of a column of sizes. */
#include <stdio.h>

#include "memlens/units.h"

const char *ml_fmt_bytes(uint64_t b, char *buf, size_t len)
{
	static const char *const u[] = { "B", "K", "M", "G", "T", "P", "E" };
	double v = (double)b;
	int i = 0;

	while (v >= 1024 && i < 6) {
		v /= 1024;
		i++;
	}
	/* what is printed may round up to 1024: the next unit then */
	if (i > 0 && i < 6 && (v >= 10 ? v + 0.5 : v + 0.05) >= 1024) {
		v /= 1024;
		i++;
	}
	if (i == 0)
		snprintf(buf, len, "%lluB", (unsigned long long)b);
	else if (v < 9.95 && (unsigned long long)(v * 10 + 0.5) % 10)
		snprintf(buf, len, "%.1f%s", v, u[i]);
	else
		snprintf(buf, len, "%.0f%s", v, u[i]);
	return buf;
}

uint64_t ml_size_unit(uint64_t max_bytes, int digits, const char **name)
{
	static const char *const names[] = { "KiB", "MiB", "GiB" };
	uint64_t div = 1024, lim = 1;
	int i = 0;

	for (int d = 0; d < digits && d < 18; d++)
		lim *= 10;
	while (i < 2 && ml_in_unit(max_bytes, div) >= lim) {
		div *= 1024;
		i++;
	}
	if (name)
		*name = names[i];
	return div;
}

uint64_t ml_in_unit(uint64_t bytes, uint64_t div)
{
	return div ? (bytes + div - 1) / div : bytes;
}
