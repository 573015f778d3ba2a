// SPDX-License-Identifier: MIT
/*
 * pagewriter: a test target that touches exactly the pages it is told to.
 * Reads commands on stdin, one per line, answers each with a line:
 *   map NAME PAGES          mmap PAGES anonymous rw pages between two PROT_NONE guard
 *                           pages (so the VMA is exactly PAGES) -> "mapped NAME 0xS 0xE"
 *   write NAME STEP [OFF] [COUNT]   write pages i = OFF, OFF+STEP, ... -> "wrote N"
 *   read NAME               read every page -> "read N" (an untouched one maps the
 *                           zero page, or a fresh page: read_untouched.h)
 *   ro NAME                 mprotect read-only -> "ok"
 *   unmap NAME              munmap -> "ok"
 *   remap NAME              munmap + mmap at the same address, same size -> "mapped ..."
 *   threads N               start N threads that each write their own 16-page buffer
 *                           in a loop -> "ok"
 *   pid                     -> "pid N"
 *   exit                    exit(0)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "read_untouched.h"

#define MAXR 256
#define PG 4096UL

static struct {
	char name[32];
	unsigned char *p;
	unsigned long pages;
} regs[MAXR];

static int find(const char *name)
{
	for (int i = 0; i < MAXR; i++)
		if (regs[i].p && !strcmp(regs[i].name, name))
			return i;
	return -1;
}

static void *spin(void *arg)
{
	unsigned char *b = arg;

	for (unsigned long n = 0;; n++) {
		for (unsigned long i = 0; i < 16; i++)
			b[i * PG] = (unsigned char)n;
		usleep(1000);
	}
	return NULL;
}

int main(void)
{
	char line[256], cmd[32], name[32];
	unsigned long a, b, c;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while (fgets(line, sizeof(line), stdin)) {
		int n = sscanf(line, "%31s %31s %lu %lu %lu", cmd, name, &a, &b, &c);
		int i;

		if (n < 1)
			continue;
		if (!strcmp(cmd, "exit"))
			return 0;
		if (!strcmp(cmd, "pid")) {
			printf("pid %d\n", getpid());
			continue;
		}
		if (!strcmp(cmd, "threads") && n >= 2) {
			int t = atoi(name);

			for (int k = 0; k < t; k++) {
				pthread_t th;
				void *buf = mmap(NULL, 16 * PG, PROT_READ | PROT_WRITE,
						 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

				pthread_create(&th, NULL, spin, buf);
			}
			printf("ok\n");
			continue;
		}
		if (n < 2) {
			printf("error\n");
			continue;
		}
		i = find(name);
		if (!strcmp(cmd, "map") && n >= 3) {
			for (i = 0; i < MAXR && regs[i].p; i++)
				;
			if (i == MAXR) {
				printf("error\n");
				continue;
			}
			/* guard pages on both sides: the VMA never merges with a neighbour */
			regs[i].p = mmap(NULL, (a + 2) * PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
					 -1, 0);
			if (regs[i].p == MAP_FAILED) {
				regs[i].p = NULL;
				printf("error\n");
				continue;
			}
			regs[i].p += PG;
			mprotect(regs[i].p, a * PG, PROT_READ | PROT_WRITE);
			snprintf(regs[i].name, sizeof(regs[i].name), "%s", name);
			regs[i].pages = a;
			printf("mapped %s %p %p\n", name, (void *)regs[i].p,
			       (void *)(regs[i].p + a * PG));
		} else if (i < 0) {
			printf("error\n");
		} else if (!strcmp(cmd, "write") && n >= 3) {
			unsigned long off = n >= 4 ? b : 0, count = n >= 5 ? c : ~0UL, w = 0;

			for (unsigned long pg = off; pg < regs[i].pages && w < count; pg += a, w++)
				regs[i].p[pg * PG] = (unsigned char)(pg + 1);
			printf("wrote %lu\n", w);
		} else if (!strcmp(cmd, "read")) {
			ru_read_pages(regs[i].p, regs[i].pages);
			printf("read %lu\n", regs[i].pages);
		} else if (!strcmp(cmd, "ro")) {
			mprotect(regs[i].p, regs[i].pages * PG, PROT_READ);
			printf("ok\n");
		} else if (!strcmp(cmd, "unmap")) {
			munmap(regs[i].p, regs[i].pages * PG);
			regs[i].p = NULL;
			printf("ok\n");
		} else if (!strcmp(cmd, "remap")) {
			void *want = regs[i].p;

			munmap(want, regs[i].pages * PG);
			regs[i].p = mmap(want, regs[i].pages * PG, PROT_READ | PROT_WRITE,
					 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
			if (regs[i].p == MAP_FAILED) {
				regs[i].p = NULL;
				printf("error\n");
				continue;
			}
			printf("mapped %s %p %p\n", name, (void *)regs[i].p,
			       (void *)(regs[i].p + regs[i].pages * PG));
		} else {
			printf("error\n");
		}
	}
	return 0;
}
