// SPDX-License-Identifier: GPL-2.0
/*
 * Lock contention cases for lock_host_test.sh (issue 15), run under the
 * shim in test mode (KPPROF_TEST_CONFIG, records to KPPROF_TEST_SINK):
 *
 *   sigslot SECS     4 workers lock and unlock one mutex; every 1 ms one
 *                    of them gets SIGUSR1, whose handler takes the same
 *                    mutex with a 1 ms pthread_mutex_timedlock.  Plainly
 *                    this cannot hang (the timed lock gives up); a shim
 *                    whose wait bookkeeping takes a lock that the
 *                    interrupted frame holds spins for ever.  Exit 2 when
 *                    a worker made no progress for 3 s.
 *   errcheck N       N relocks of a held error-checking mutex (EDEADLK at
 *                    once: no wait); prints "ADDR ec 0x..." on stderr.
 *   clocklock R      two threads contend R rounds through
 *                    pthread_mutex_clocklock (std::timed_mutex's call);
 *                    prints "ADDR m 0x...".
 *   rwtimed R        the same through pthread_rwlock_timedwrlock and
 *                    pthread_rwlock_clockrdlock; "ADDR rw 0x...".
 *   manywaiters N    N threads wait at once on one held mutex (more than
 *                    the shim's wait table has room for one mutex); the
 *                    holder unlocks once all N sleep in futex(2).
 *   handoff R        R hand-offs of one mutex: the holder unlocks only once
 *                    glibc's lock word says the waiter sleeps in the
 *                    kernel (so every unlock hands off to a registered
 *                    waiter), after holding a random 20..300 us; the
 *                    waiter prints each wait it measured, "WAIT ns", on
 *                    stdout, and "ADDR m 0x..." on stderr.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static struct timespec in_ns(clockid_t c, long ns)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	ts.tv_nsec += ns;
	while (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	return ts;
}

/* ------------------------------------------------------------ sigslot */

#define NW 4
static volatile unsigned long progress[NW], handled;
static volatile int stop;
static __thread volatile int holding;

static void sig_handler(int sig)
{
	struct timespec ts = in_ns(CLOCK_REALTIME, 1000000);

	(void)sig;
	if (!holding && pthread_mutex_timedlock(&m, &ts) == 0)
		pthread_mutex_unlock(&m);
	handled++;
}

static void *sig_worker(void *arg)
{
	long i = (long)arg;

	while (!stop) {
		pthread_mutex_lock(&m);
		holding = 1;
		for (volatile int k = 0; k < 200; k++)
			;
		holding = 0;
		pthread_mutex_unlock(&m);
		progress[i]++;
	}
	return NULL;
}

static int do_sigslot(int secs)
{
	struct sigaction sa = { .sa_handler = sig_handler };
	unsigned long last[NW] = { 0 };
	pthread_t w[NW];

	sigaction(SIGUSR1, &sa, NULL);
	for (long i = 0; i < NW; i++)
		pthread_create(&w[i], NULL, sig_worker, (void *)i);
	for (int t = 0; t < secs * 1000; t++) {
		pthread_kill(w[t % NW], SIGUSR1);
		usleep(1000);
		if (t % 3000 != 2999)
			continue;
		for (int i = 0; i < NW; i++) {
			if (progress[i] == last[i]) {
				printf("HANG: worker %d made no progress for 3 s (signals handled %lu)\n",
				       i, handled);
				fflush(stdout);
				_exit(2);
			}
			last[i] = progress[i];
		}
	}
	stop = 1;
	for (int i = 0; i < NW; i++)
		pthread_join(w[i], NULL);
	printf("ok sigslot %d s, signals handled %lu\n", secs, handled);
	return 0;
}

/* ------------------------------------------------------------ errcheck */

static int do_errcheck(int n)
{
	pthread_mutexattr_t a;
	pthread_mutex_t ec;

	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
	pthread_mutex_init(&ec, &a);
	fprintf(stderr, "ADDR ec %p\n", (void *)&ec);
	pthread_mutex_lock(&ec);
	for (int i = 0; i < n; i++) {
		if (pthread_mutex_lock(&ec) != EDEADLK)
			return fprintf(stderr, "relock did not fail with EDEADLK\n"), 1;
	}
	pthread_mutex_unlock(&ec);
	printf("ok errcheck %d\n", n);
	return 0;
}

/* ------------------------------------------- clocklock, rwtimed: contention */

static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static int rounds;

static void *clock_thread(void *arg)
{
	(void)arg;
	for (int i = 0; i < rounds; i++) {
		struct timespec ts = in_ns(CLOCK_MONOTONIC, 1000000000);

		if (pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &ts))
			continue;
		usleep(200);
		pthread_mutex_unlock(&m);
	}
	return NULL;
}

static void *rw_thread(void *arg)
{
	for (int i = 0; i < rounds; i++) {
		struct timespec ts = in_ns(CLOCK_REALTIME, 1000000000);
		struct timespec tm = in_ns(CLOCK_MONOTONIC, 1000000000);
		int r = arg ? pthread_rwlock_timedwrlock(&rw, &ts) :
			pthread_rwlock_clockwrlock(&rw, CLOCK_MONOTONIC, &tm);

		if (r)
			continue;
		usleep(200);
		pthread_rwlock_unlock(&rw);
		tm = in_ns(CLOCK_MONOTONIC, 1000000000);
		ts = in_ns(CLOCK_REALTIME, 1000000000);
		r = arg ? pthread_rwlock_clockrdlock(&rw, CLOCK_MONOTONIC, &tm) :
			pthread_rwlock_timedrdlock(&rw, &ts);
		if (!r)
			pthread_rwlock_unlock(&rw);
	}
	return NULL;
}

static int two_threads(void *(*fn)(void *), int r)
{
	pthread_t a, b;

	rounds = r;
	pthread_create(&a, NULL, fn, NULL);
	pthread_create(&b, NULL, fn, (void *)1);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	return 0;
}

/* ---------------------------------------------------------- manywaiters */

static void *many_thread(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&m);
	pthread_mutex_unlock(&m);
	return NULL;
}

/* How many of this process's threads sleep in futex(2) (syscall 202). */
static int in_futex(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d))) {
		char path[300], buf[32] = "";
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/syscall", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(buf, sizeof(buf), f) && !strncmp(buf, "202 ", 4))
			n++;
		fclose(f);
	}
	if (d)
		closedir(d);
	return n;
}

static int do_manywaiters(int n)
{
	pthread_t *t = calloc(n, sizeof(*t));
	unsigned long long t0;
	int asleep = 0;

	pthread_mutex_lock(&m);
	for (int i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, many_thread, NULL))
			return fprintf(stderr, "pthread_create failed\n"), 1;
	/* Every waiter asleep in the lock at once (each registered in the
	 * shim's table, or failed to, before it went to sleep); 30 s bound. */
	t0 = now_ns();
	while ((asleep = in_futex()) < n && now_ns() - t0 < 30000000000ULL)
		usleep(1000);
	pthread_mutex_unlock(&m);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	printf("%s manywaiters %d (%d asleep at once)\n", asleep >= n ? "ok" : "bad", n, asleep);
	return asleep >= n ? 0 : 1;
}

/* -------------------------------------------------------------- handoff */

static volatile int go, done;

static int lock_word(void)
{
	return __atomic_load_n(&m.__data.__lock, __ATOMIC_ACQUIRE);
}

static void *handoff_waiter(void *arg)
{
	unsigned long long t0, t1;

	(void)arg;
	for (int r = 1; r <= rounds; r++) {
		while (__atomic_load_n(&go, __ATOMIC_ACQUIRE) != r)
			sched_yield();
		t0 = now_ns();
		pthread_mutex_lock(&m);
		t1 = now_ns();
		pthread_mutex_unlock(&m);
		printf("WAIT %llu\n", t1 - t0);
		__atomic_store_n(&done, r, __ATOMIC_RELEASE);
	}
	return NULL;
}

static int do_handoff(int r)
{
	unsigned int seed = 12345;
	pthread_t w;

	rounds = r;
	fprintf(stderr, "ADDR m %p\n", (void *)&m);
	pthread_create(&w, NULL, handoff_waiter, NULL);
	for (int i = 1; i <= r; i++) {
		unsigned long long t0;

		pthread_mutex_lock(&m);
		__atomic_store_n(&go, i, __ATOMIC_RELEASE);
		/* 2: a waiter sleeps in the kernel (glibc's lowlevellock). */
		t0 = now_ns();
		while (lock_word() != 2) {
			if (now_ns() - t0 > 10000000000ULL)
				return fprintf(stderr, "waiter never slept\n"), 1;
			sched_yield();
		}
		usleep(20 + rand_r(&seed) % 281);
		pthread_mutex_unlock(&m);
		while (__atomic_load_n(&done, __ATOMIC_ACQUIRE) != i)
			sched_yield();
	}
	pthread_join(w, NULL);
	fprintf(stderr, "ok handoff %d\n", r);
	return 0;
}

int main(int argc, char **argv)
{
	int n = argc > 2 ? atoi(argv[2]) : 0;

	if (argc < 3)
		return fprintf(stderr, "usage: lock_workload CASE N\n"), 2;
	if (!strcmp(argv[1], "sigslot"))
		return do_sigslot(n);
	if (!strcmp(argv[1], "errcheck"))
		return do_errcheck(n);
	if (!strcmp(argv[1], "clocklock")) {
		fprintf(stderr, "ADDR m %p\n", (void *)&m);
		return two_threads(clock_thread, n);
	}
	if (!strcmp(argv[1], "rwtimed")) {
		fprintf(stderr, "ADDR rw %p\n", (void *)&rw);
		return two_threads(rw_thread, n);
	}
	if (!strcmp(argv[1], "manywaiters"))
		return do_manywaiters(n);
	if (!strcmp(argv[1], "handoff"))
		return do_handoff(n);
	return fprintf(stderr, "lock_workload: unknown case %s\n", argv[1]), 2;
}
