// SPDX-License-Identifier: GPL-2.0
/*
 * A thread that leaves a ring write for good only after the drain gave its
 * entry up (test mode, KPPROF_TEST_RING=1, rate 1; the module's rule: an
 * entry uncommitted for 2 s is skipped and its space handed on).  Its
 * cleanup must not write into that space: by then it is another writer's.
 *
 * As abandon_ring.c, this program exports its own memcpy, which the shim's
 * ring write calls between reserving an entry and committing it:
 *   - thread X stops in the copy of its first FREE record (entry E) and
 *     waits there, as a handler that runs long would;
 *   - thread Y allocates and frees meanwhile: its drains give E up after
 *     2 s; once the ring wrapped, Y writes a record over E's place and
 *     commits it; in the copy of its next record (so no drain ran since)
 *     Y lets X pthread_exit (its cleanup gives E up) and, once X's
 *     thread-specific destructor ran, reads its committed record again.
 *
 * Prints "victim intact" or "victim overwritten" with the words before and
 * after; exit 0 if intact, 1 if overwritten, 2 if the setup failed.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "abandon_lib.h"
#include "kpprof.h"

enum { WAIT_X, WAIT_WRAP, VICTIM, DONE, FAILED };

static __thread volatile int role;	/* 1: X, 2: Y */
static atomic_int state = WAIT_X, go, x_done, stop;
static unsigned char *stale;		/* X's entry */
static unsigned char *victim;		/* Y's entry over it */
static uint32_t victim_len, before, after;
static size_t victim_off;

static bool wait_for(atomic_int *flag, int seconds)
{
	struct timespec ms = { 0, 1000000 };

	for (long i = 0; i < seconds * 1000L && !atomic_load(flag); i++)
		nanosleep(&ms, NULL);
	return atomic_load(flag);
}

static bool covers(const unsigned char *e, size_t total, const unsigned char *p, size_t size)
{
	return (p >= e && p < e + total) || (p + size >= e && p + size < e + total);
}

__attribute__((optimize("no-tree-loop-distribute-patterns")))
void *memcpy(void *dst, const void *src, size_t n)
{
	unsigned char *d = dst, *e = d - sizeof(struct kpprof_ring_hdr);
	size_t total = (sizeof(struct kpprof_ring_hdr) + n + 7) & ~(size_t)7;
	size_t size = (ring_hi - ring_lo - 4096) / 2;

	if (in_ring(dst) && role == 1 && n == sizeof(struct kpprof_rec_free) &&
	    atomic_load(&state) == WAIT_X) {
		role = 0;
		stale = e;
		atomic_store(&state, WAIT_WRAP);
		/* a handler that runs long; then it leaves for good */
		if (!wait_for(&go, 60))
			atomic_store(&state, FAILED);
		pthread_exit(NULL);
	}
	if (in_ring(dst) && role == 2) {
		int st = atomic_load(&state);

		if (st == WAIT_WRAP && covers(e, total, stale, size)) {
			victim = e;
			victim_len = (uint32_t)n;
			victim_off = (size_t)(stale - e) % size;
			atomic_store(&state, VICTIM);
		} else if (st == VICTIM) {
			/* our record over E: committed, no drain since? */
			if (__atomic_load_n((uint32_t *)victim, __ATOMIC_ACQUIRE) != victim_len) {
				atomic_store(&state, WAIT_WRAP);	/* drained: next wrap */
			} else {
				before = *(volatile uint32_t *)(victim + victim_off);
				atomic_store(&go, 1);
				if (!wait_for(&x_done, 30))
					atomic_store(&state, FAILED);
				after = *(volatile uint32_t *)(victim + victim_off);
				atomic_store(&state, DONE);
				atomic_store(&stop, 1);
			}
		}
	}
	return copy_bytes(dst, src, n);
}

static void x_gone(void *arg)
{
	(void)arg;
	atomic_store(&x_done, 1);
}

static void *thread_x(void *arg)
{
	pthread_key_t *key = arg;

	pthread_setspecific(*key, (void *)1);
	role = 1;
	for (;;) {
		void *volatile p = malloc(64);

		free(p);
	}
	return NULL;
}

static void *thread_y(void *arg)
{
	(void)arg;
	role = 2;
	while (!atomic_load(&stop) && atomic_load(&state) != FAILED) {
		void *volatile p = malloc(64 + (rand() & 255));

		free(p);
	}
	role = 0;
	return NULL;
}

int main(void)
{
	void *volatile warm = malloc(100);
	pthread_t x, y;
	pthread_key_t key;

	free(warm);
	if (find_ring() || pthread_key_create(&key, x_gone)) {
		fprintf(stderr, "abandon_stale: no kpprof-test-ring mapping (KPPROF_TEST_RING=1?)\n");
		return 2;
	}
	if (pthread_create(&x, NULL, thread_x, &key) || !wait_for(&state, 10) ||
	    pthread_create(&y, NULL, thread_y, NULL) || pthread_join(y, NULL) ||
	    pthread_join(x, NULL) || atomic_load(&state) != DONE) {
		fprintf(stderr, "abandon_stale: setup failed (state %d)\n", atomic_load(&state));
		return 2;
	}
	printf("stale entry at ring offset %zu; victim record len %u at offset %zu, word at +%zu: before 0x%08x after 0x%08x\n",
	       (size_t)(stale - (unsigned char *)ring_lo - 4096), victim_len,
	       (size_t)(victim - (unsigned char *)ring_lo - 4096), victim_off, before, after);
	if (before != after) {
		printf("victim overwritten\n");
		return 1;
	}
	printf("victim intact\n");
	return 0;
}
