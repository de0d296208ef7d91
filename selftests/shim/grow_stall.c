// SPDX-License-Identifier: GPL-2.0
/*
 * grow_stall: THREADS threads keep BLOCKS blocks live each (rate 1), while
 * main stalls them at random points with a signal whose handler sleeps
 * (a stop-the-world GC, a profiler's SIGPROF that blocks): a filter grow
 * stalled inside its scan while other threads add a table (the two grow
 * locks, sampled_set.c), an insert stalled between its slot and its
 * filter count.  Then every block is freed: the set's live count at exit
 * (KPPROF_DEBUG's "sampled set: live N") must be what it is without the
 * signals (blocks the program never frees), else a FREE was not found.
 *
 *   grow_stall THREADS BLOCKS [SLEEP_US]
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_barrier_t go;
static atomic_int finished;
static int blocks, sleep_us;

static void on_usr1(int sig)
{
	struct timespec ts = { .tv_nsec = sleep_us * 1000L };

	(void)sig;
	nanosleep(&ts, NULL);
}

static void *worker(void *arg)
{
	void **p = arg;

	pthread_barrier_wait(&go);
	for (int i = 0; i < blocks; i++) {
		p[i] = malloc(16 + (size_t)(i & 63));
		__asm__ volatile("" : : "r"(p[i]) : "memory");
	}
	pthread_barrier_wait(&go);
	for (int i = 0; i < blocks; i++)
		free(p[i]);
	atomic_fetch_add(&finished, 1);
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 6;
	struct timespec gap = { .tv_nsec = 300000 };
	struct sigaction sa;
	pthread_t th[32];
	unsigned int seed = 1;
	long sent = 0;
	void **p;

	blocks = argc > 2 ? atoi(argv[2]) : 60000;
	sleep_us = argc > 3 ? atoi(argv[3]) : 2000;
	if (n < 1 || n > 32)
		return 2;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);
	p = calloc((size_t)n * (size_t)blocks, sizeof(*p));
	if (!p || pthread_barrier_init(&go, NULL, (unsigned int)n + 1))
		return 2;
	for (int i = 0; i < n; i++)
		pthread_create(&th[i], NULL, worker, p + (size_t)i * (size_t)blocks);
	pthread_barrier_wait(&go);
	/* the allocation phase: stall random threads */
	for (int k = 0; k < 400 && sleep_us; k++) {
		pthread_kill(th[rand_r(&seed) % n], SIGUSR1);
		sent++;
		nanosleep(&gap, NULL);
	}
	pthread_barrier_wait(&go);
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	printf("signals %ld done\n", sent);
	return 0;
}
