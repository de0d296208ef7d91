// SPDX-License-Identifier: GPL-2.0
/*
 * contention - a known culprit: holder() takes the lock and sleeps HOLD_MS
 * inside it, ROUNDS times; WAITERS threads in waiter() block on the lock
 * meanwhile.  The mutex profile's top must be holder() (the unlocker), the
 * block profile's top waiter().  Prints the measured total wait (ns) of the
 * waiters so the test can compare the profile's delay with the truth.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define WAITERS 3
#define HOLD_MS 20

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t start;
static int rounds;
static long long waited_ns[WAITERS];

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

__attribute__((noinline)) void holder(void)
{
	struct timespec hold = { 0, HOLD_MS * 1000000L };

	pthread_mutex_lock(&lock);
	nanosleep(&hold, NULL);
	pthread_mutex_unlock(&lock);
}

__attribute__((noinline)) void waiter(int id)
{
	long long t0 = now_ns();

	pthread_mutex_lock(&lock);
	waited_ns[id] += now_ns() - t0;
	pthread_mutex_unlock(&lock);
}

static void *waiter_thread(void *arg)
{
	int id = (int)(long)arg;

	for (int i = 0; i < rounds; i++) {
		pthread_barrier_wait(&start);
		usleep(2000);	/* let holder() take the lock first */
		waiter(id);
		pthread_barrier_wait(&start);
	}
	return NULL;
}

int main(int argc, char *argv[])
{
	pthread_t t[WAITERS];
	long long total = 0;

	rounds = argc > 1 ? atoi(argv[1]) : 20;
	pthread_barrier_init(&start, NULL, WAITERS + 1);
	for (long i = 0; i < WAITERS; i++)
		pthread_create(&t[i], NULL, waiter_thread, (void *)i);
	for (int i = 0; i < rounds; i++) {
		pthread_barrier_wait(&start);
		holder();
		pthread_barrier_wait(&start);
	}
	for (int i = 0; i < WAITERS; i++) {
		pthread_join(t[i], NULL);
		total += waited_ns[i];
	}
	printf("waited_ns %lld\n", total);
	return 0;
}
