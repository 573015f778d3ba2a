/* SPDX-License-Identifier: MIT */
/* Shared by `memlens checkpoint` and `memlens restore`: choose and probe CRIU. */
#ifndef MEMLENS_CRIU_CLI_H
#define MEMLENS_CRIU_CLI_H

#include <stdio.h>

#include "jsonw.h"
#include "memlens/criu.h"

/*
 * Locate CRIU (criu_locate(): --criu PATH, $MEMLENS_CRIU, the one
 * scripts/ensure-criu.sh built, `criu` on PATH), probe it and require
 * `criu check` to pass. Prints the error; returns an exit code.
 */
int criu_cli_setup(const char *cmd, const char *explicit_path, struct criu_caps *caps);

/* "criu": {"path":..,"version":..,"exclude_options":bool,"mem_dirty_track":bool} */
void criu_cli_json_caps(struct jw *w, const struct criu_caps *caps);

#endif
