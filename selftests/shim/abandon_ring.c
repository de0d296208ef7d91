// SPDX-License-Identifier: GPL-2.0
/*
 * A thread that ends in the middle of the shim's write into its producer
 * ring (test mode's emulated one, KPPROF_TEST_RING=1, or the module's),
 * at rate 1, deterministically: this program exports its own memcpy,
 * which the shim's ring write calls between reserving its entry and
 * committing it; in a thread that armed itself, a copy into the ring (a
 * mapping of the memfd "kpprof-test-ring" or of /dev/kpprof) calls
 * pthread_exit there, as a signal handler's pthread_exit or siglongjmp
 * would at any instruction: a random signal lands in that stretch too
 * rarely for a test (abandon_host_test.sh, abandon_ring_vm_test.sh).
 *
 *   abandon_ring N      N threads, each ending in the ring write of its
 *                       first FREE record (even threads: an emit outside
 *                       a sampling path) or of its first ALLOC record (odd
 *                       threads: inside one, on the private stack); then
 *                       the main thread allocates 1000 blocks of 12345
 *                       bytes and installs a seccomp filter (allow all).
 *
 * The tests count the ALLOC records of 12345 bytes: an entry
 * left reserved stops the drain (the module's for 2 s), and every record
 * after it is lost to the full ring.  Prints "ok: ..." lines; exit 0 if
 * the program's own checks pass.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "seccomp_allow.h"
#include "abandon_lib.h"
#include "kpprof.h"

/* volatile: GCC takes malloc and free for leaf calls, which cannot reach
 * this memcpy, and would drop the worker's store as dead */
static __thread volatile int armed;	/* 1: FREE record, 2: ALLOC record */
static atomic_int ended_free, ended_alloc;

/* The program's memcpy, which the shim's calls bind to: a plain copy. */
__attribute__((optimize("no-tree-loop-distribute-patterns")))
void *memcpy(void *dst, const void *src, size_t n)
{
	bool free_rec = n == sizeof(struct kpprof_rec_free);

	if (armed && in_ring(dst) && (armed == 1) == free_rec) {
		armed = 0;
		atomic_fetch_add(free_rec ? &ended_free : &ended_alloc, 1);
		pthread_exit(NULL);
	}
	return copy_bytes(dst, src, n);
}

static void *worker(void *arg)
{
	armed = (int)(intptr_t)arg;
	for (;;) {
		void *volatile p = malloc(64);

		free(p);
	}
	return NULL;
}

static int filter(void)
{
	if (seccomp_allow_all())
		return 1;
	printf("ok: seccomp filter installed\n");
	return 0;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 20;
	void *volatile warm = malloc(100);

	free(warm);
	if (find_ring()) {
		fprintf(stderr, "abandon_ring: no producer ring mapped (KPPROF_TEST_RING=1? kpprof.ko?)\n");
		return 1;
	}
	for (int i = 0; i < n; i++) {
		pthread_t th;

		if (pthread_create(&th, NULL, worker, (void *)(intptr_t)(i % 2 ? 2 : 1)) ||
		    pthread_join(th, NULL))
			return 1;
	}
	if (atomic_load(&ended_free) + atomic_load(&ended_alloc) != n) {
		fprintf(stderr, "abandon_ring: %d threads ended in a FREE's write, %d in an ALLOC's, of %d\n",
			atomic_load(&ended_free), atomic_load(&ended_alloc), n);
		return 1;
	}
	for (int i = 0; i < 1000; i++) {
		void *volatile p = malloc(12345);

		free(p);
	}
	printf("ok: %d threads ended in a FREE's ring write, %d in an ALLOC's\n",
	       atomic_load(&ended_free), atomic_load(&ended_alloc));
	fflush(stdout);
	return filter();
}
