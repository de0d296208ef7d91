// SPDX-License-Identifier: GPL-2.0
/*
 * ctor_race LIB: dlopen LIB (libshim_ctor.so) while another thread waits
 * for its constructor to start and then allocates, under a lock the
 * constructor may take; prints "ok" once both are done.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

atomic_int ctor_running;
pthread_mutex_t ctor_registry = PTHREAD_MUTEX_INITIALIZER;

static void *worker(void *a)
{
	while (!atomic_load(&ctor_running))
		;
	pthread_mutex_lock(&ctor_registry);
	for (int i = 0; i < 1000; i++) {
		void *volatile p = malloc(64);

		free(p);
	}
	pthread_mutex_unlock(&ctor_registry);
	return a;
}

int main(int argc, char **argv)
{
	pthread_t t;
	void *h;

	if (argc < 2)
		return 2;
	pthread_create(&t, NULL, worker, NULL);
	h = dlopen(argv[1], RTLD_NOW);
	pthread_join(t, NULL);
	if (!h) {
		printf("dlopen: %s\n", dlerror());
		return 1;
	}
	printf("ok\n");
	return 0;
}
