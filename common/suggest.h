/* SPDX-License-Identifier: MIT */
/* "did you mean ...?": the nearest of some names to a mistyped one. */
#ifndef MEMLENS_SUGGEST_H
#define MEMLENS_SUGGEST_H

#include <stddef.h>

/*
 * The name of @names (@n of them) nearest to @word by edit distance
 * (insertions, deletions, substitutions and swaps of neighbours), or one
 * that @word begins (3 letters at least); NULL when none is close enough
 * to be a typo (more than 2 edits; more than 1 for a word of 3 letters).
 */
const char *cli_suggest(const char *word, const char *const *names, size_t n);

#endif
