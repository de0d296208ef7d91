// SPDX-License-Identifier: GPL-2.0
/*
 * A thread that ends inside a FREE's ring write nested in an ALLOC's
 * (test mode, KPPROF_TEST_RING=1, rate 1): a handler interrupts the write
 * of a sampling path's ALLOC and frees a sampled block; the thread ends in
 * the write of that FREE (pthread_exit, as a second handler's would).  Both
 * entries are left reserved; each must be given up, or the drain stops at
 * the first (the module's for 2 s).
 *
 * As abandon_ring.c, this program exports its own memcpy, which the shim's
 * ring write calls between reserving an entry and committing it.
 *
 *   abandon_nested N   N threads, one after the other; then the main
 *                      thread allocates 1000 blocks of 12345 bytes (the
 *                      caller counts their ALLOC records in the sink)
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "abandon_lib.h"
#include "kpprof.h"

static __thread volatile int armed;	/* 1: the ALLOC's write, 2: the FREE's */
static __thread void *volatile inner;
static atomic_int ended;
static volatile uint32_t *outer_entry;	/* the last thread's ALLOC entry */

__attribute__((optimize("no-tree-loop-distribute-patterns")))
void *memcpy(void *dst, const void *src, size_t n)
{
	unsigned char *d = dst;
	int free_rec = n == sizeof(struct kpprof_rec_free);

	if (armed && in_ring(dst)) {
		if (armed == 1 && !free_rec) {
			armed = 2;
			outer_entry = (volatile uint32_t *)(d - sizeof(struct kpprof_ring_hdr));
			raise(SIGUSR1);
		} else if (armed == 2 && free_rec) {
			armed = 0;
			atomic_fetch_add(&ended, 1);
			pthread_exit(NULL);
		}
	}
	return copy_bytes(dst, src, n);
}

static void handler(int sig)
{
	(void)sig;
	free(inner);	/* sampled: a FREE record, inside the ALLOC's write */
}

static void *worker(void *arg)
{
	(void)arg;
	inner = malloc(48);
	armed = 1;
	for (;;) {
		void *volatile p = malloc(64);

		free(p);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 10;
	void *volatile warm = malloc(100);

	free(warm);
	if (find_ring() || signal(SIGUSR1, handler) == SIG_ERR) {
		fprintf(stderr, "abandon_nested: no kpprof-test-ring mapping (KPPROF_TEST_RING=1?)\n");
		return 1;
	}
	for (int i = 0; i < n; i++) {
		pthread_t th;

		if (pthread_create(&th, NULL, worker, NULL) || pthread_join(th, NULL))
			return 1;
	}
	if (outer_entry)
		printf("the last ALLOC entry's len word: 0x%08x\n", *outer_entry);
	for (int i = 0; i < 1000; i++) {
		void *volatile p = malloc(12345);

		free(p);
	}
	printf("ok: %d threads ended in a FREE's write inside an ALLOC's\n", atomic_load(&ended));
	return 0;
}
