// SPDX-License-Identifier: GPL-2.0
/*
 * lock_alloc_main THREADS N: THREADS threads each malloc and free N blocks
 * of 16 to 1015 bytes, contending the allocator's mutex (liblock_alloc.so
 * preloaded after the shim); prints "lock_alloc_main done".
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static long n;

static void *work(void *arg)
{
	(void)arg;
	for (long i = 0; i < n; i++) {
		void *volatile p = malloc(16 + i % 1000);

		free(p);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 4;
	pthread_t t[16];

	n = argc > 2 ? atol(argv[2]) : 500000;
	if (threads < 1 || threads > 16)
		return 2;
	for (int i = 0; i < threads; i++)
		if (pthread_create(&t[i], NULL, work, NULL))
			return 2;
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	puts("lock_alloc_main done");
	return 0;
}
