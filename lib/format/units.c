// SPDX-License-Identifier: MIT
/* Sizes for people: one byte formatter, and the unit of a column of sizes. */
#include <stdbool.h>
#include <stdio.h>

#include "memlens/units.h"

/* @b in binary units: "132K" (short), or "132 KiB" (@words, for sentences) */
static const char *fmt(uint64_t b, char *buf, size_t len, bool words)
{
	static const char *const u[] = { "B", "K", "M", "G", "T", "P", "E" };
	const char *sep = words ? " " : "", *iec = words ? "iB" : "";
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
		snprintf(buf, len, "%llu%sB", (unsigned long long)b, sep);
	else if (v < 9.95) /* "4.0K", "1.5M": two significant digits at least */
		snprintf(buf, len, "%.1f%s%s%s", v, sep, u[i], iec);
	else
		snprintf(buf, len, "%.0f%s%s%s", v, sep, u[i], iec);
	return buf;
}

const char *ml_fmt_bytes(uint64_t b, char *buf, size_t len)
{
	return fmt(b, buf, len, false);
}

const char *ml_fmt_bytes_words(uint64_t b, char *buf, size_t len)
{
	return fmt(b, buf, len, true);
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
