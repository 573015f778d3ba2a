// SPDX-License-Identifier: MIT
/*
 * matmul: C = A x B for 1024x1024 doubles, over and over.
 *   matmul [-n N] [-s SECONDS] [-t THREADS]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int n = 1024, nthreads = 1;
static double *A, *B, *C;

static void *worker(void *arg)
{
	long id = (long)arg;

	for (int i = (int)id; i < n; i += nthreads)
		for (int k = 0; k < n; k++) {
			double a = A[(size_t)i * n + k];

			for (int j = 0; j < n; j++)
				C[(size_t)i * n + j] += a * B[(size_t)k * n + j];
		}
	return NULL;
}

int main(int argc, char **argv)
{
	double secs = 0;
	int opt;
	time_t t0 = time(NULL);

	while ((opt = getopt(argc, argv, "n:s:t:")) != -1) {
		if (opt == 'n')
			n = atoi(optarg);
		else if (opt == 's')
			secs = atof(optarg);
		else if (opt == 't')
			nthreads = atoi(optarg);
		else {
			fprintf(stderr, "usage: matmul [-n N] [-s SECONDS] [-t THREADS]\n");
			return 2;
		}
	}
	if (n < 1 || nthreads < 1 || nthreads > 64)
		return 2;
	size_t bytes = (size_t)n * n * sizeof(double);
	A = malloc(bytes);
	B = malloc(bytes);
	C = malloc(bytes);
	if (!A || !B || !C)
		return 1;
	for (size_t i = 0; i < (size_t)n * n; i++) {
		A[i] = (double)(i % 7);
		B[i] = (double)(i % 5);
	}
	printf("matmul pid %d: A %p-%p B %p-%p C %p-%p\n", getpid(), (void *)A,
	       (void *)((char *)A + bytes), (void *)B, (void *)((char *)B + bytes), (void *)C,
	       (void *)((char *)C + bytes));
	fflush(stdout);
	for (int round = 0;; round++) {
		pthread_t th[64];

		for (size_t i = 0; i < (size_t)n * n; i++)
			C[i] = 0;
		for (long t = 0; t < nthreads; t++)
			pthread_create(&th[t], NULL, worker, (void *)t);
		for (int t = 0; t < nthreads; t++)
			pthread_join(th[t], NULL);
		if (secs > 0 && difftime(time(NULL), t0) >= secs)
			break;
	}
	printf("matmul: C[0] = %g\n", C[0]);
	return 0;
}
