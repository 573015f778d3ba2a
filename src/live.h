/* SPDX-License-Identifier: MIT */
/*
 * The refreshing view of a command whose stdout is a terminal (as top,
 * slabtop and biotop have): the alternate screen, the cursor hidden, each
 * frame drawn whole and cut to the terminal's width and height; q (or
 * Ctrl-C) stops the command as Ctrl-C does, and the terminal is restored,
 * at the end and at any exit.
 *
 * Use: live_wanted() -> live_start() (after cli_block_signals(): q is
 * delivered as a SIGINT to this process, which the command's wait for
 * signals sees) -> per frame live_frame() + fprintf(...) + live_show() ->
 * live_stop().
 */
#ifndef MEMLENS_LIVE_H
#define MEMLENS_LIVE_H

#include <stdbool.h>
#include <stdio.h>

/* stdout is a terminal (and TERM is not "dumb"), and not @batch. */
bool live_wanted(bool batch);

/* Enter the live view (idempotent); 0, or -errno (then print as without it). */
int live_start(void);
bool live_on(void);

/* The terminal's size now: what one frame may hold. */
int live_rows(void);
int live_cols(void);

/* A new frame to print into (NULL when the live view is not on). */
FILE *live_frame(void);
/* Draw the frame: clear, home, its lines cut to the screen (at most 10 frames a second). */
void live_show(void);

/* Leave: the terminal as it was (cursor shown, the normal screen). */
void live_stop(void);

#endif
