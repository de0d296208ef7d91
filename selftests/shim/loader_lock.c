// SPDX-License-Identifier: GPL-2.0
/*
 * A wrapper's first call must not wait for the loader's lock
 * (loader_lock_host_test.sh).  Thread "opener" dlopen()s a plugin whose
 * constructor, run with the loader's lock held, takes the program's lock
 * `app`; main holds `app` and, while the constructor waits for it, makes
 * its process's first call of one wrapped function (argv[2]), then lets
 * `app` go.  Plainly that cannot deadlock: the call needs nothing the
 * opener holds.  A wrapper that looks up its next definition with dlsym()
 * at its first call waits for the loader's lock, held by the opener,
 * which waits for `app`, held by main: both hang for good.
 *
 * usage: loader_lock PLUGIN.so CASE; prints "done CASE" and exits 0.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

pthread_mutex_t loader_lock_app = PTHREAD_MUTEX_INITIALIZER;
volatile int loader_lock_in_ctor;

/* libstdc++'s, by their mangled names: this program is C */
void *_Znwm(unsigned long n);
void _ZdlPv(void *p);
void free_sized(void *p, size_t n) __attribute__((weak));

static void *opener(void *path)
{
	if (!dlopen(path, RTLD_NOW)) {
		printf("dlopen: %s\n", dlerror());
		exit(2);
	}
	return NULL;
}

static struct timespec soon(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	ts.tv_nsec += 20 * 1000 * 1000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	return ts;
}

/* The first call of the wrapped function @what; `app` is held. */
static int first_call(const char *what)
{
	static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
	static pthread_mutex_t other = PTHREAD_MUTEX_INITIALIZER;
	static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
	struct timespec ts;

	if (!strcmp(what, "cond_timedwait")) {
		/* releases `app` while it waits: the constructor gets it */
		ts = soon(CLOCK_REALTIME);
		pthread_cond_timedwait(&cv, &loader_lock_app, &ts);
	} else if (!strcmp(what, "mutex_timedlock")) {
		ts = soon(CLOCK_REALTIME);
		if (pthread_mutex_timedlock(&other, &ts))
			return 1;
		pthread_mutex_unlock(&other);
	} else if (!strcmp(what, "mutex_clocklock")) {
		ts = soon(CLOCK_MONOTONIC);
		if (pthread_mutex_clocklock(&other, CLOCK_MONOTONIC, &ts))
			return 1;
		pthread_mutex_unlock(&other);
	} else if (!strcmp(what, "rwlock_rdlock")) {
		if (pthread_rwlock_rdlock(&rw))
			return 1;
		pthread_rwlock_unlock(&rw);
	} else if (!strcmp(what, "rwlock_timedwrlock")) {
		ts = soon(CLOCK_REALTIME);
		if (pthread_rwlock_timedwrlock(&rw, &ts))
			return 1;
		pthread_rwlock_unlock(&rw);
	} else if (!strcmp(what, "memalign")) {
		void *p = aligned_alloc(64, 64);

		if (!p)
			return 1;
		free(p);
	} else if (!strcmp(what, "operator_new")) {
		_ZdlPv(_Znwm(24));
	} else if (!strcmp(what, "free_sized")) {
		void *p = malloc(24);

		if (free_sized)
			free_sized(p, 24);
		else
			free(p);
	} else {
		printf("unknown case %s\n", what);
		return 2;
	}
	return 0;
}

int main(int argc, char **argv)
{
	pthread_t t;
	int r;

	if (argc != 3)
		return 2;
	pthread_mutex_lock(&loader_lock_app);
	if (pthread_create(&t, NULL, opener, argv[1]))
		return 2;
	while (!loader_lock_in_ctor)
		;
	r = first_call(argv[2]);
	pthread_mutex_unlock(&loader_lock_app);
	pthread_join(t, NULL);
	if (!r)
		printf("done %s\n", argv[2]);
	return r;
}
