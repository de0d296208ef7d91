// SPDX-License-Identifier: GPL-2.0
/*
 * A handler on a sigaltstack that interrupts a FREE's ring write (test
 * mode, KPPROF_TEST_RING=1, rate 1), in a thread whose altstack was mapped
 * before it, so above its stack, or from the heap, below: glibc orders a
 * longjmp's cleanup buffers by address, adjusted to the thread's stack, so
 * (a) a jump that stays inside the handler must run none (the entry is
 * committed when the handler returns) and (b) a siglongjmp out of it must
 * run the emit's (the entry given up).  The count of threads inside
 * kpp_emit() is back to 0 after each.
 *
 * As abandon_ring.c, this program exports its own memcpy, which the shim's
 * ring write calls between reserving an entry and committing it.
 *
 * usage: abandon_altstack SHARDS_OFFSET [above]
 * Prints one line per case, "ok" if the entry and the count are right;
 * exit 0 if both are.
 */
#include <link.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "abandon_lib.h"
#include "kpprof.h"

static volatile int armed, leave;
static volatile uint32_t *entry;
static sigjmp_buf out;
static const unsigned char *shards;
static void *alt_above;
static int above;

__attribute__((optimize("no-tree-loop-distribute-patterns")))
void *memcpy(void *dst, const void *src, size_t n)
{
	unsigned char *d = dst;

	if (armed && in_ring(dst) && n == sizeof(struct kpprof_rec_free)) {
		armed = 0;
		entry = (volatile uint32_t *)(d - sizeof(struct kpprof_ring_hdr));
		raise(SIGUSR1);
	}
	return copy_bytes(dst, src, n);
}

static void handler(int sig)
{
	sigjmp_buf in;

	(void)sig;
	if (!sigsetjmp(in, 1))
		siglongjmp(in, 1);	/* stays inside the handler */
	if (leave)
		siglongjmp(out, 1);	/* leaves the emit for good */
}

static void *thread(void *arg)
{
	struct sigaction sa = { .sa_handler = handler, .sa_flags = SA_ONSTACK };
	stack_t ss = { .ss_sp = above ? alt_above : malloc(65536), .ss_size = 65536 };
	volatile int bad = 0;

	(void)arg;
	if (!ss.ss_sp || sigaltstack(&ss, NULL) || sigaction(SIGUSR1, &sa, NULL))
		return (void *)1;
	printf("altstack %p, %s the thread's stack %p\n", ss.ss_sp,
	       (uintptr_t)ss.ss_sp > (uintptr_t)&sa ? "above" : "below", (void *)&sa);
	for (leave = 0; leave < 2; leave++) {
		void *volatile p = malloc(64);
		uint32_t want = sizeof(struct kpprof_rec_free) | (leave ? KPPROF_RING_DISCARD : 0);
		int n;

		entry = NULL;
		if (!sigsetjmp(out, 1)) {
			armed = 1;
			free(p);
		}
		n = shim_emitters(shards);
		bad |= !entry || *entry != want || n;
		printf("%s %s: entry 0x%08x (want 0x%08x), emitters %d\n",
		       entry && *entry == want && !n ? "ok" : "not ok",
		       leave ? "siglongjmp out of the handler" : "jump inside the handler",
		       entry ? *entry : 0, want, n);
	}
	return (void *)(intptr_t)bad;
}

int main(int argc, char **argv)
{
	uintptr_t base = 0, off = argc > 1 ? strtoul(argv[1], NULL, 16) : 0;
	void *volatile warm = malloc(100);
	pthread_t t;
	void *r;

	free(warm);
	above = argc > 2 && !strcmp(argv[2], "above");
	base = shim_base();
	find_ring();
	if (!base || !off || !ring_hi) {
		fprintf(stderr, "abandon_altstack: setup (KPPROF_TEST_RING=1? offset?)\n");
		return 2;
	}
	shards = (const unsigned char *)(base + off);
	/* mapped before the thread's stack: above it */
	alt_above = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (alt_above == MAP_FAILED || pthread_create(&t, NULL, thread, NULL) ||
	    pthread_join(t, &r))
		return 2;
	return r ? 1 : 0;
}
