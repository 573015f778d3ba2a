/* SPDX-License-Identifier: MIT */
/*
 * Sizes for people: the one byte formatter of memlens (the command, the
 * report, the agent), and the unit a table column of sizes is shown in.
 */
#ifndef MEMLENS_UNITS_H
#define MEMLENS_UNITS_H

/* the interface libmemlens.so exports (built with -fvisibility=hidden) */
#pragma GCC visibility push(default)

#include <stddef.h>
#include <stdint.h>

/*
 * @bytes in binary units, two or three significant digits: "512B", "4.0K",
 * "1.5M", "132K", "64M". Into @buf (16 bytes are enough); returns @buf.
 */
const char *ml_fmt_bytes(uint64_t bytes, char *buf, size_t len);
/* The same in words, for sentences: "512 B", "4.0 KiB", "1.5 MiB", "132 KiB". */
const char *ml_fmt_bytes_words(uint64_t bytes, char *buf, size_t len);

/*
 * The unit of a column of sizes whose largest value is @max_bytes, as
 * `pmap -x` shows sizes: KiB, or MiB once KiB would need more than
 * @digits digits (GiB beyond that). Returns the divisor (1024, 1048576,
 * 1073741824) and sets *@name ("KiB", "MiB", "GiB").
 */
uint64_t ml_size_unit(uint64_t max_bytes, int digits, const char **name);

/* @bytes in the unit @div of ml_size_unit(), rounded up ("4 KiB" for 1 byte). */
uint64_t ml_in_unit(uint64_t bytes, uint64_t div);

#pragma GCC visibility pop

#endif
