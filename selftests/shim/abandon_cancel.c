// SPDX-License-Identifier: GPL-2.0
/*
 * Threads cancelled asynchronously while they allocate at rate 1 (test
 * mode, KPPROF_TEST_RING=1): SIGCANCEL is the one signal test mode's drain
 * leaves unblocked (sys.h, kpp_sigblock), so a cancellation can end a
 * thread inside test_drain(), with the drain marked busy and the sink
 * open.  Then the main thread allocates 1000 blocks of 12345 bytes; the
 * caller counts their ALLOC records in the sink.
 *
 * usage: abandon_cancel N [OFF]   (N threads, one after the other; OFF: nm's
 *                                 value of test_draining in libkpprof.so, hex)
 */
#include <link.h>
#include <pthread.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "abandon_lib.h"
#include "kpprof.h"

static void *worker(void *arg)
{
	(void)arg;
	pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL);
	for (;;) {
		void *volatile p = malloc(64);

		free(p);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 200, first = -1;
	uintptr_t base = 0, off = argc > 2 ? strtoul(argv[2], NULL, 16) : 0;
	volatile int *draining = NULL;

	base = shim_base();
	if (base && off)
		draining = (volatile int *)(base + off);

	for (int i = 0; i < n; i++) {
		struct timespec t = { 0, 2000000 };
		pthread_t th;

		if (pthread_create(&th, NULL, worker, NULL))
			return 1;
		nanosleep(&t, NULL);	/* let it allocate a while: any time will do */
		if (pthread_cancel(th) || pthread_join(th, NULL))
			return 1;
		if (draining && *draining && first < 0)
			first = i + 1;
	}
	if (draining)
		printf("test_draining %d, first left set by cancelled thread %d\n", *draining, first);
	{
		FILE *f = fopen("/proc/self/maps", "r");
		char line[512];
		unsigned long lo = 0, hi;

		while (f && fgets(line, sizeof(line), f))
			if (!lo && strstr(line, "kpprof-test-ring") && sscanf(line, "%lx-%lx", &lo, &hi) != 2)
				lo = 0;
		if (f)
			fclose(f);
		if (lo) {
			struct kpprof_pring_hdr *h = (void *)lo;
			unsigned char *data = (unsigned char *)lo + 4096;
			uint32_t w = *(volatile uint32_t *)(data + (h->tail & (64 * 1024 - 1)));

			printf("ring head %llu tail %llu, word at tail 0x%08x\n",
			       (unsigned long long)h->head, (unsigned long long)h->tail, w);
		}
	}
	for (int i = 0; i < 1000; i++) {
		void *volatile p = malloc(12345);

		free(p);
	}
	printf("ok: %d threads cancelled\n", n);
	return 0;
}
