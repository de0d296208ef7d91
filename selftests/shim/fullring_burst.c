// SPDX-License-Identifier: GPL-2.0
/*
 * fullring_burst - THREADS threads each malloc BLOCKS blocks, then free
 * them, ROUNDS times, at rate 1 in test mode with the emulated ring
 * (KPPROF_TEST_RING=1): several producers fill the 64 KiB ring faster than
 * the one thread at a time that drains it, so many samples meet a full ring
 * (ring_write(), pring.c).  At exit (a destructor: the program's run
 * before the shim's) it prints the allocations it made and the ring's own
 * lost[] counters (struct kpprof_pring_hdr, found by the memfd's name):
 *   "allocs N lost_alloc A lost_free F"
 * usage: fullring_burst [THREADS [BLOCKS [ROUNDS]]]
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/types.h>
#include "kpprof.h"

static int threads = 4, blocks = 20000, rounds = 3;

static void *run(void *arg)
{
	void **b = arg;

	for (int r = 0; r < rounds; r++) {
		for (int i = 0; i < blocks; i++)
			b[i] = malloc(16 + (i & 63));
		for (int i = 0; i < blocks; i++)
			free(b[i]);
	}
	return NULL;
}

__attribute__((destructor))
static void report(void)
{
	char line[512];
	unsigned long lo = 0;
	FILE *f = fopen("/proc/self/maps", "r");
	const struct kpprof_pring_hdr *h;

	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, "kpprof-test-ring")) {
			sscanf(line, "%lx", &lo);
			break;
		}
	if (f)
		fclose(f);
	if (!lo) {
		dprintf(1, "no ring\n");
		return;
	}
	h = (const struct kpprof_pring_hdr *)lo;
	dprintf(1, "allocs %lld lost_alloc %llu lost_free %llu\n",
		(long long)threads * blocks * rounds,
		(unsigned long long)h->lost[KPPROF_REC_ALLOC],
		(unsigned long long)h->lost[KPPROF_REC_FREE]);
}

int main(int argc, char **argv)
{
	pthread_t t[16];
	void **b;

	if (argc > 1)
		threads = atoi(argv[1]);
	if (argc > 2)
		blocks = atoi(argv[2]);
	if (argc > 3)
		rounds = atoi(argv[3]);
	if (threads < 1 || threads > 16 || blocks < 1 || rounds < 1)
		return 2;
	b = calloc((size_t)threads * blocks, sizeof(*b));
	for (int i = 0; i < threads; i++)
		if (pthread_create(&t[i], NULL, run, b + (size_t)i * blocks))
			return 1;
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	free(b);
	return 0;
}
