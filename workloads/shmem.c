// SPDX-License-Identifier: MIT
/*
 * shmem: a process whose memory is mostly shared, as servers' often is.
 *   shmem [-m MIB] [-p MIB] [-V] [-w]
 * -m MIB of shared anonymous memory (MAP_SHARED|MAP_ANONYMOUS; default 64),
 * -p MIB of private anonymous memory (default 1), both filled with a
 * pattern; -V also attaches a 1 MiB SysV shared memory segment of the IPC
 * namespace it runs in (removed at once: it goes when the process goes);
 * -w keeps rewriting one page of each mapping every 100 ms. Prints
 * "ready PID" once everything is written, then waits to be killed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <unistd.h>

static void *map(size_t len, int flags)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, flags | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("shmem: mmap");
		exit(1);
	}
	return p;
}

static void fill(unsigned char *p, size_t len, unsigned char seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (unsigned char)(seed + i * 7);
}

int main(int argc, char **argv)
{
	size_t shared = 64, priv = 1;
	unsigned char *s, *q, *v = NULL;
	int c, sysv = 0, rewrite = 0;
	unsigned char k = 0;

	while ((c = getopt(argc, argv, "m:p:Vw")) != -1) {
		switch (c) {
		case 'm':
			shared = strtoul(optarg, NULL, 10);
			break;
		case 'p':
			priv = strtoul(optarg, NULL, 10);
			break;
		case 'V':
			sysv = 1;
			break;
		case 'w':
			rewrite = 1;
			break;
		default:
			fprintf(stderr, "usage: shmem [-m MIB] [-p MIB] [-V] [-w]\n");
			return 2;
		}
	}
	if (!shared || !priv) {
		fprintf(stderr, "shmem: -m and -p take a size of at least 1 MiB\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	s = map(shared << 20, MAP_SHARED);
	q = map(priv << 20, MAP_PRIVATE);
	fill(s, shared << 20, 1);
	fill(q, priv << 20, 2);
	if (sysv) {
		int id = shmget(IPC_PRIVATE, 1 << 20, IPC_CREAT | 0600);

		v = id < 0 ? (void *)-1 : shmat(id, NULL, 0);
		if (v == (void *)-1) {
			perror("shmem: SysV shared memory");
			return 1;
		}
		shmctl(id, IPC_RMID, NULL);
		fill(v, 1 << 20, 3);
	}
	printf("ready %d\n", getpid());
	for (;;) {
		usleep(100000);
		if (!rewrite)
			continue;
		k++;
		memset(s, k, 4096);
		memset(q, k, 4096);
		if (v)
			memset(v, k, 4096);
	}
}
