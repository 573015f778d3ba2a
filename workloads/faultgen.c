// SPDX-License-Identifier: MIT
/*
 * faultgen: cause a known number of page faults and count them with
 * getrusage(), for memlens faults to be checked against.
 *
 *   faultgen [-w] anon MIB    write one byte per page of MIB MiB of fresh
 *                             anonymous memory (minor faults, THP off)
 *   faultgen [-w] file PATH   read one byte per page of PATH after evicting
 *                             it from the page cache (major faults)
 *   faultgen [-w] gup MIB     process_vm_readv() MIB MiB of a child's
 *                             untouched anonymous memory into a buffer
 *                             touched before: every page is faulted in by
 *                             the kernel (get_user_pages) and charged to
 *                             faultgen, not the child: minor faults without
 *                             user registers, one per page
 *   faultgen [-w] populate MIB  madvise(MADV_POPULATE_WRITE) MIB MiB of fresh
 *                             anonymous memory: the same, in its own memory
 *   faultgen [-w] odirect PATH  read PATH with O_DIRECT into fresh anonymous
 *                             memory: the kernel pins (and so faults in) each
 *                             page of the buffer with get_user_pages
 *   faultgen [-w] threads MIB  four threads write one byte per page of a
 *                             quarter each: one started before the (first)
 *                             wait that stays alive to the end, one started
 *                             before it that exits, two started after it
 *                             that exit (getrusage adds up all four)
 *
 * -w: wait for a line on stdin before touching and again after, so that a
 * tracer sees nothing but the touching; "ready" on stderr says it waits for
 * the first line (all set up), "touched" on stderr says the pages
 * are done (written from memory touched before, so it faults nothing). Prints the getrusage()
 * deltas of the touching loop and its duration: "pages=N minflt=N majflt=N cached_before=N ns=N",
 * then, as the very last thing before exiting (nothing faults after it), the
 * process's totals since its fork: "total_minflt=N total_majflt=N".
 */
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static void wait_line(void)
{
	char c;

	while (read(0, &c, 1) == 1 && c != '\n')
		;
}

static char *map_file(const char *path, size_t *len, size_t *cached)
{
	unsigned char *vec;
	struct stat st;
	char *p;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || fstat(fd, &st)) {
		perror(path);
		exit(1);
	}
	*len = (size_t)st.st_size;
	/* evict only this file: cleaner than dropping every cache on the machine */
	fdatasync(fd);
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	p = mmap(NULL, *len, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	madvise(p, *len, MADV_RANDOM); /* no readahead: one major fault per page */
	vec = calloc((*len + 4095) / 4096, 1);
	*cached = 0;
	if (vec && !mincore(p, *len, vec))
		for (size_t i = 0; i < (*len + 4095) / 4096; i++)
			*cached += vec[i] & 1;
	free(vec);
	close(fd);
	return p;
}

/*
 * A child holding MIB MiB of untouched anonymous memory (THP off: one fault
 * per 4 KiB page), until faultgen closes the pipe. Its address comes back
 * through another pipe.
 */
static pid_t untouched_child(size_t len, char **addr, int *hold)
{
	int up[2], down[2];
	pid_t pid;

	if (pipe(up) || pipe(down)) {
		perror("pipe");
		exit(1);
	}
	pid = fork();
	if (pid < 0) {
		perror("fork");
		exit(1);
	}
	if (pid == 0) {
		char *p =
			mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		char c;

		if (p == MAP_FAILED)
			_exit(1);
		madvise(p, len, MADV_NOHUGEPAGE);
		if (write(up[1], &p, sizeof(p)) != sizeof(p))
			_exit(1);
		close(down[1]);
		while (read(down[0], &c, 1) > 0)
			;
		_exit(0);
	}
	close(up[1]);
	close(down[0]);
	if (read(up[0], addr, sizeof(*addr)) != sizeof(*addr)) {
		fprintf(stderr, "faultgen: the child did not start\n");
		exit(1);
	}
	close(up[0]);
	*hold = down[1];
	return pid;
}

/* the remote pages, 1 MiB per call; the local buffer is already touched */
static void read_remote(pid_t pid, char *remote, char *local, size_t len)
{
	for (size_t off = 0; off < len; off += 1 << 20) {
		struct iovec l = { local, 1 << 20 }, r = { remote + off, 1 << 20 };

		if (process_vm_readv(pid, &l, 1, &r, 1, 0) != 1 << 20) {
			perror("process_vm_readv");
			exit(1);
		}
	}
}

/* threads mode: thread i writes one byte per page of quarter i */
static char *t_base;
static size_t t_part;
static int t_started[2], t_go[2], t_done[2], t_end[2];

static void *toucher(void *arg)
{
	long i = (long)arg;
	char c = 0;

	if (i < 2) { /* started before the wait: blocked until the touching */
		if (write(t_started[1], &c, 1) != 1 || read(t_go[0], &c, 1) != 1)
			return NULL;
	}
	for (size_t off = 0; off < t_part; off += 4096)
		t_base[(size_t)i * t_part + off] = 1;
	if (i == 0) { /* alive to the end */
		if (write(t_done[1], &c, 1) != 1 || read(t_end[0], &c, 1) != 1)
			return NULL;
	}
	return NULL;
}

static void threads_start(pthread_t *t, size_t len)
{
	char c[2];

	t_part = len / 4;
	if (pipe(t_started) || pipe(t_go) || pipe(t_done) || pipe(t_end)) {
		perror("pipe");
		exit(1);
	}
	for (long i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, toucher, (void *)i)) {
			fprintf(stderr, "faultgen: pthread_create failed\n");
			exit(1);
		}
	for (int n = 0; n < 2; n++) /* both blocked before the wait (one byte each) */
		if (read(t_started[0], c, 1) != 1)
			exit(1);
}

static void threads_touch(pthread_t *t)
{
	char c[2] = { 0, 0 };

	if (write(t_go[1], c, 2) != 2)
		exit(1);
	for (long i = 2; i < 4; i++)
		if (pthread_create(&t[i], NULL, toucher, (void *)i)) {
			fprintf(stderr, "faultgen: pthread_create failed\n");
			exit(1);
		}
	for (int i = 1; i < 4; i++)
		pthread_join(t[i], NULL);
	if (read(t_done[0], c, 1) != 1)
		exit(1);
}

static void threads_end(pthread_t *t)
{
	char c = 0;

	if (write(t_end[1], &c, 1) != 1)
		exit(1);
	pthread_join(t[0], NULL);
}

/* odirect mode: an O_DIRECT descriptor of @path and a fresh buffer of its size */
static char *odirect_setup(const char *path, size_t *len, int *fd)
{
	struct stat st;
	char *p;

	*fd = open(path, O_RDONLY | O_DIRECT);
	if (*fd < 0 || fstat(*fd, &st)) {
		perror(path);
		exit(1);
	}
	*len = (size_t)st.st_size & ~(size_t)4095;
	p = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	madvise(p, *len, MADV_NOHUGEPAGE);
	return p;
}

static void odirect_read(int fd, char *p, size_t len)
{
	for (size_t off = 0; off < len; off += 1 << 20) {
		size_t n = len - off < (1 << 20) ? len - off : 1 << 20;

		if (pread(fd, p + off, n, (off_t)off) != (ssize_t)n) {
			perror("pread(O_DIRECT)");
			exit(1);
		}
	}
}

/* "N" into @out (no stdio: nothing is allocated or touched for it) */
static size_t put_ulong(char *out, unsigned long v)
{
	char tmp[24];
	size_t n = 0, i = 0;

	do
		tmp[n++] = (char)('0' + v % 10);
	while ((v /= 10));
	while (n)
		out[i++] = tmp[--n];
	return i;
}

static char total_line[96]; /* written to before: no fault when it is filled */

/*
 * The totals line. @dry: only format it, at the start, so that nothing
 * (a lazily bound libc function, a page of this code) is met for the
 * first time, and faults, after the final getrusage().
 */
static void say_totals(bool dry)
{
	struct rusage r;
	size_t n = 0;

	memset(total_line, 0, sizeof(total_line));
	getrusage(RUSAGE_SELF, &r);
	memcpy(total_line, "total_minflt=", 13);
	n = 13 + put_ulong(total_line + 13, (unsigned long)r.ru_minflt);
	memcpy(total_line + n, " total_majflt=", 14);
	n += 14;
	n += put_ulong(total_line + n, (unsigned long)r.ru_majflt);
	total_line[n++] = '\n';
	if (write(1, total_line, dry ? 0 : n) < 0 || !dry)
		syscall(SYS_exit_group, 0); /* bound by the dry run's getpid: no lazy binding now */
	syscall(SYS_getpid);
	if (read(0, total_line, 0) < 0) /* read() bound too (the threads' wait) */
		return;
}

int main(int argc, char **argv)
{
	volatile char sink = 0;
	char done[] = "touched\n", ready[] = "ready\n";
	struct rusage r0, r1;
	struct timespec t0, t1;
	size_t len, cached = 0;
	int wait = 0, a = 1, hold = -1, dfd = -1;
	pid_t child = 0;
	pthread_t th[4];
	const char *mode;
	char *p, *remote = NULL;

	say_totals(true);
	if (argc > 1 && !strcmp(argv[1], "-w")) {
		wait = 1;
		a++;
	}
	mode = argc == a + 2 ? argv[a] : "";
	if (strcmp(mode, "anon") && strcmp(mode, "file") && strcmp(mode, "gup") &&
	    strcmp(mode, "populate") && strcmp(mode, "threads") && strcmp(mode, "odirect")) {
		fprintf(stderr,
			"usage: faultgen [-w] anon MIB | file PATH | gup MIB | populate MIB | "
			"threads MIB | odirect PATH\n");
		return 2;
	}
	if (!strcmp(mode, "gup")) {
		len = (size_t)atol(argv[a + 1]) << 20;
		child = untouched_child(len, &remote, &hold);
		p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED) {
			perror("mmap");
			return 1;
		}
		memset(p, 1, 1 << 20);
	} else if (!strcmp(mode, "odirect")) {
		p = odirect_setup(argv[a + 1], &len, &dfd);
	} else if (strcmp(mode, "file")) {
		len = (size_t)atol(argv[a + 1]) << 20;
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED) {
			perror("mmap");
			return 1;
		}
		madvise(p, len, MADV_NOHUGEPAGE);
		if (!strcmp(mode, "threads")) {
			t_base = p;
			threads_start(th, len);
		}
	} else {
		p = map_file(argv[a + 1], &len, &cached);
	}
	if (wait) {
		if (write(2, ready, sizeof(ready) - 1) < 0)
			return 1;
		wait_line();
	}
	getrusage(RUSAGE_SELF, &r0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (!strcmp(mode, "gup")) {
		read_remote(child, remote, p, len);
	} else if (!strcmp(mode, "odirect")) {
		odirect_read(dfd, p, len);
	} else if (!strcmp(mode, "threads")) {
		threads_touch(th);
	} else if (!strcmp(mode, "populate")) {
		if (madvise(p, len, MADV_POPULATE_WRITE)) {
			perror("madvise(MADV_POPULATE_WRITE)");
			return 1;
		}
	} else {
		for (size_t off = 0; off < len; off += 4096) {
			if (!strcmp(mode, "anon"))
				p[off] = 1;
			else
				sink += p[off];
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	getrusage(RUSAGE_SELF, &r1);
	if (wait) {
		if (write(2, done, sizeof(done) - 1) < 0)
			return 1;
		wait_line();
	}
	printf("pages=%zu minflt=%ld majflt=%ld cached_before=%zu ns=%lld\n", len / 4096,
	       r1.ru_minflt - r0.ru_minflt, r1.ru_majflt - r0.ru_majflt, cached,
	       (long long)(t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec));
	fflush(stdout);
	if (!strcmp(mode, "threads"))
		threads_end(th);
	if (child) {
		close(hold);
		waitpid(child, NULL, 0);
	}
	say_totals(false);
}
