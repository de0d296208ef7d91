// SPDX-License-Identifier: GPL-2.0
/*
 * Micro and macro benchmarks, run by bench.sh with and without the shim:
 *
 *   bench-malloc THREADS ITERS   ns per malloc(64)+free pair per thread
 *   bench-lock ITERS             ns per uncontended lock+unlock pair
 *   bench-sampled DEPTH ITERS    us per allocation at DEPTH frames (run it
 *                                at mem rate 1: every allocation sampled)
 *   bench-heavy ITERS [THREADS]  one or two (default) threads: mixed
 *                                sizes, a live set of 4096 blocks per
 *                                thread; prints wall and CPU seconds
 *   bench-churn ITERS [THREADS]  the churn loop: two (default)
 *                                threads, sizes 16 B..8 KiB, 1024 live
 *                                blocks per thread; wall and CPU seconds
 *   bench-live LIVE ITERS        ns per unsampled malloc+free pair while
 *                                LIVE sampled blocks are live: under
 *                                KPPROF_TEST_CONFIG it first sets the
 *                                file's heap rate to 1 (every block
 *                                sampled), allocates LIVE 64-byte blocks,
 *                                then sets the rate to 2^40 (none sampled)
 *                                and times pairs over a window of 4096
 *                                slots, so each free is of a different,
 *                                recently allocated address
 * Each prints one line "name value unit".
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include "kpprof.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/*
 * The micro loops are timed in the thread's CPU time: on a shared machine
 * a time slice given to another process would otherwise land in the
 * figure of whichever side ran then.
 */
static double thread_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

static long iters;
static void *volatile sink;

static void *malloc_loop(void *arg)
{
	double *ns = arg, t0 = thread_s();

	for (long i = 0; i < iters; i++) {
		void *p = malloc(64);

		sink = p;
		free(p);
	}
	*ns = (thread_s() - t0) * 1e9 / (double)iters;
	return NULL;
}

static int bench_malloc(int threads)
{
	pthread_t t[16];
	double ns[16], sum = 0;

	if (threads < 1 || threads > 16)
		return 2;
	for (int i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, malloc_loop, &ns[i]);
	for (int i = 0; i < threads; i++) {
		pthread_join(t[i], NULL);
		sum += ns[i];
	}
	printf("malloc_free_pair_%dthr %.2f ns\n", threads, sum / threads);
	return 0;
}

static int bench_lock(void)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	double t0 = thread_s();

	for (long i = 0; i < iters; i++) {
		pthread_mutex_lock(&m);
		__asm__ volatile("" ::: "memory");
		pthread_mutex_unlock(&m);
	}
	printf("lock_unlock_pair %.2f ns\n", (thread_s() - t0) * 1e9 / (double)iters);
	return 0;
}

__attribute__((noinline)) static void *deep(int depth)
{
	void *p;

	if (depth > 1) {
		p = deep(depth - 1);
		__asm__ volatile("" ::: "memory");
		return p;
	}
	return malloc(48);
}

static int bench_sampled(int depth)
{
	double t0 = thread_s();

	for (long i = 0; i < iters; i++)
		free(deep(depth));
	printf("alloc_at_depth_%d %.3f us\n", depth, (thread_s() - t0) * 1e6 / (double)iters);
	return 0;
}

struct heavy {
	unsigned int seed;
};

static void *heavy_loop(void *arg)
{
	struct heavy *h = arg;
	void **live = calloc(4096, sizeof(*live));

	for (long i = 0; i < iters; i++) {
		unsigned int r = rand_r(&h->seed);
		size_t k = r % 4096, size = 16 + (r >> 12) % 2048;

		free(live[k]);
		live[k] = malloc(size);
		memset(live[k], (int)r, size < 64 ? size : 64);
	}
	for (int k = 0; k < 4096; k++)
		free(live[k]);
	free(live);
	return NULL;
}

static int bench_heavy(int threads)
{
	pthread_t t[2];
	struct heavy h[2] = { { 1 }, { 2 } };
	double w0 = now_s(), c0 = cpu_s();

	for (int i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, heavy_loop, &h[i]);
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	printf("heavy_wall %.4f s\nheavy_cpu %.4f s\n", now_s() - w0, cpu_s() - c0);
	return 0;
}

static void *churn_loop(void *arg)
{
	struct heavy *h = arg;
	void *live[1024] = { 0 };

	for (long i = 0; i < iters; i++) {
		unsigned int r = rand_r(&h->seed);
		size_t k = r % 1024, size = 16 + (size_t)(r >> 10) % (8192 - 16 + 1);

		free(live[k]);
		live[k] = malloc(size);
		memset(live[k], (int)r, 16);
	}
	for (int k = 0; k < 1024; k++)
		free(live[k]);
	return NULL;
}

static int bench_churn(int threads)
{
	pthread_t t[2];
	struct heavy h[2] = { { 1 }, { 2 } };
	double w0 = now_s(), c0 = cpu_s();

	for (int i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, churn_loop, &h[i]);
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	printf("churn_wall %.4f s\nchurn_cpu %.4f s\n", now_s() - w0, cpu_s() - c0);
	return 0;
}

/* Set the heap rate in the KPPROF_TEST_CONFIG file, as the module would
 * (seqcount: odd while writing). */
static void set_file_rate(volatile struct kpprof_config_page *pg, uint64_t rate)
{
	if (!pg)
		return;
	__atomic_store_n(&pg->seq, pg->seq + 1, __ATOMIC_RELEASE);
	pg->config.mem_rate = rate;
	__atomic_store_n(&pg->seq, pg->seq + 1, __ATOMIC_RELEASE);
}

static int bench_live(long nlive)
{
	const char *cfg = getenv("KPPROF_TEST_CONFIG");
	volatile struct kpprof_config_page *pg = NULL;
	void **keep = NULL, *win[4096];
	double t0, ns;

	if (cfg) {
		int fd = open(cfg, O_RDWR);
		void *m = fd < 0 ? MAP_FAILED :
			mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

		if (m == MAP_FAILED)
			return fprintf(stderr, "bench-live: cannot map %s\n", cfg), 2;
		close(fd);
		pg = m;
	}
	if (nlive > 0) {
		keep = mmap(NULL, (size_t)nlive * sizeof(void *), PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (keep == MAP_FAILED)
			return 2;
	}
	set_file_rate(pg, 1);
	for (long i = 0; i < nlive; i++)
		keep[i] = malloc(64);
	set_file_rate(pg, 1ULL << 40);
	for (int k = 0; k < 4096; k++)
		win[k] = malloc(64);
	t0 = thread_s();
	for (long i = 0; i < iters; i++) {
		int k = (int)(i & 4095);

		free(win[k]);
		win[k] = malloc(64);
		sink = win[k];
	}
	ns = (thread_s() - t0) * 1e9 / (double)iters;
	printf("malloc_free_pair_live_%ld %.2f ns\n", nlive, ns);
	for (int k = 0; k < 4096; k++)
		free(win[k]);
	for (long i = 0; i < nlive; i++)
		free(keep[i]);
	return 0;
}

int bench_main(const char *what, int argc, char **argv);

int bench_main(const char *what, int argc, char **argv)
{
	int a = argc > 0 ? atoi(argv[0]) : 1;

	iters = argc > 1 ? atol(argv[1]) : 1000000;
	if (!strcmp(what, "malloc"))
		return bench_malloc(a);
	if (!strcmp(what, "lock")) {
		iters = a > 1 ? a : 1000000;
		return bench_lock();
	}
	if (!strcmp(what, "sampled"))
		return bench_sampled(a);
	if (!strcmp(what, "live"))
		return bench_live(a);
	if (!strcmp(what, "churn")) {
		iters = a > 1 ? a : 1000000;
		a = argc > 1 ? atoi(argv[1]) : 2;
		return bench_churn(a == 1 ? 1 : 2);
	}
	if (!strcmp(what, "heavy")) {
		iters = a > 1 ? a : 1000000;
		a = argc > 1 ? atoi(argv[1]) : 2;
		return bench_heavy(a == 1 ? 1 : 2);
	}
	fprintf(stderr, "bench: unknown %s\n", what);
	return 2;
}
