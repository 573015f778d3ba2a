// SPDX-License-Identifier: MIT
/* The refreshing view on a terminal (see live.h). */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <stdint.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "live.h"

#define ALT_SCREEN_ON "\033[?1049h"
#define ALT_SCREEN_OFF "\033[?1049l"
#define CURSOR_HIDE "\033[?25l"
#define CURSOR_SHOW "\033[?25h"
#define HOME_CLEAR "\033[H\033[2J"

static struct {
	bool on, have_tio, have_thread;
	struct termios tio;
	pthread_t thread;
	int stop[2]; /* closing stop[1] ends the key thread */
	char *buf;
	size_t len;
	FILE *frame;
	int64_t last_ms; /* when the last frame was drawn */
} lv = { .stop = { -1, -1 } };

bool live_wanted(bool batch)
{
	const char *term = getenv("TERM");

	return !batch && isatty(STDOUT_FILENO) && !(term && !strcmp(term, "dumb"));
}

bool live_on(void)
{
	return lv.on;
}

static void size(int *rows, int *cols)
{
	struct winsize ws;

	*rows = 24;
	*cols = 80;
	if (!ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws)) {
		if (ws.ws_row >= 5)
			*rows = ws.ws_row;
		if (ws.ws_col >= 20)
			*cols = ws.ws_col;
	}
}

int live_rows(void)
{
	int r, c;

	size(&r, &c);
	return r;
}

int live_cols(void)
{
	int r, c;

	size(&r, &c);
	return c;
}

/* q: stop as Ctrl-C does (the command waits for SIGINT with the signal blocked). */
static void *keys(void *arg)
{
	struct pollfd p[2] = { { .fd = STDIN_FILENO, .events = POLLIN },
			       { .fd = lv.stop[0], .events = POLLIN } };
	char c;

	(void)arg;
	for (;;) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[1].revents)
			break;
		if (p[0].revents & (POLLHUP | POLLERR | POLLNVAL))
			break;
		if (read(STDIN_FILENO, &c, 1) != 1)
			break;
		if (c == 'q' || c == 'Q')
			kill(getpid(), SIGINT);
	}
	return NULL;
}

static void restore(void)
{
	if (lv.have_tio) {
		tcsetattr(STDIN_FILENO, TCSANOW, &lv.tio);
		lv.have_tio = false;
	}
	if (lv.on) {
		fflush(stdout);
		/* the terminal's own fd: stdout may have failed or be buffered */
		if (write(STDOUT_FILENO, CURSOR_SHOW ALT_SCREEN_OFF,
			  sizeof(CURSOR_SHOW ALT_SCREEN_OFF) - 1) < 0) {
			/* nothing more to do for a terminal that is gone */
		}
		lv.on = false;
	}
}

int live_start(void)
{
	static bool registered;
	struct termios t;

	if (lv.on)
		return 0;
	if (!registered) {
		atexit(restore);
		registered = true;
	}
	if (isatty(STDIN_FILENO) && !tcgetattr(STDIN_FILENO, &lv.tio)) {
		t = lv.tio;
		t.c_lflag &= ~(tcflag_t)(ICANON | ECHO); /* keys one by one; ISIG: Ctrl-C stays */
		t.c_cc[VMIN] = 1;
		t.c_cc[VTIME] = 0;
		lv.have_tio = !tcsetattr(STDIN_FILENO, TCSANOW, &t);
		if (!pipe(lv.stop))
			lv.have_thread = !pthread_create(&lv.thread, NULL, keys, NULL);
	}
	lv.on = true;
	fputs(ALT_SCREEN_ON CURSOR_HIDE, stdout);
	fflush(stdout);
	return 0;
}

FILE *live_frame(void)
{
	if (!lv.on)
		return NULL;
	if (lv.frame)
		fclose(lv.frame);
	free(lv.buf);
	lv.buf = NULL;
	lv.frame = open_memstream(&lv.buf, &lv.len);
	return lv.frame;
}

void live_show(void)
{
	int rows, cols, n = 0;
	struct timespec now;
	char *p, *nl;
	int64_t ms;

	if (!lv.on || !lv.frame)
		return;
	fclose(lv.frame);
	lv.frame = NULL;
	/* at most 10 frames a second (snapshot -i 10 takes 100 cycles a second) */
	clock_gettime(CLOCK_MONOTONIC, &now);
	ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
	if (lv.last_ms && ms - lv.last_ms < 100) {
		free(lv.buf);
		lv.buf = NULL;
		return;
	}
	lv.last_ms = ms;
	size(&rows, &cols);
	fputs(HOME_CLEAR, stdout);
	for (p = lv.buf; p && *p && n < rows; p = nl + 1, n++) {
		int l;

		nl = strchr(p, '\n');
		l = nl ? (int)(nl - p) : (int)strlen(p);
		/* the last row without its newline: a newline there would scroll */
		fprintf(stdout, "%.*s%s", l < cols ? l : cols, p, n < rows - 1 ? "\n" : "");
		if (!nl)
			break;
	}
	fflush(stdout);
	free(lv.buf);
	lv.buf = NULL;
}

void live_stop(void)
{
	if (lv.frame) {
		fclose(lv.frame);
		lv.frame = NULL;
	}
	free(lv.buf);
	lv.buf = NULL;
	if (lv.have_thread) {
		close(lv.stop[1]);
		pthread_join(lv.thread, NULL);
		close(lv.stop[0]);
		lv.have_thread = false;
	}
	restore();
}
