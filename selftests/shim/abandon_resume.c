// SPDX-License-Identifier: GPL-2.0
/*
 * A user-level thread preempted inside the shim's ring write of a FREE, and
 * resumed later (test mode, KPPROF_TEST_RING=1, rate 1): the preemption
 * handler saves the interrupted context and siglongjmps to the scheduler
 * (main's frame, on the thread's own stack); later the scheduler resumes
 * the saved context with setcontext.  The FREE emit was suspended, not
 * left for good: its record must reach the sink, and the count of threads
 * inside kpp_emit() must come back to 0.
 *
 * As abandon_ring.c, this program exports its own memcpy, which the shim's
 * ring write calls between reserving an entry and committing it; the
 * coroutine's first FREE raises SIGUSR1 there.
 *
 * usage: abandon_resume SHARDS_OFFSET   (nm's value of kpp_shards in
 *                                        libkpprof.so, hex; 0: not read)
 * Prints the entry's len word and the sum of the shards' emitters after the
 * preemption, after a drain and after the resumption, and "freed ADDR"; the
 * caller may look for the FREE of ADDR in the sink (a known limit: glibc
 * ran the emit's cleanup, so the entry was given up and the FREE is lost).
 * Exit 0 if the count is back to 0 after the resumption.
 */
#include <dlfcn.h>
#include <link.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <ucontext.h>
#include "abandon_lib.h"
#include "kpprof.h"

static volatile int armed;
static volatile uint32_t *entry;
static volatile uint64_t freed;
static ucontext_t main_uc, co_uc, saved_uc;
static sigjmp_buf sched;
static volatile int resumed, co_done;
static const unsigned char *shards;	/* libkpprof.so's kpp_shards */

__attribute__((optimize("no-tree-loop-distribute-patterns")))
void *memcpy(void *dst, const void *src, size_t n)
{
	unsigned char *d = dst;

	if (armed && in_ring(dst) && n == sizeof(struct kpprof_rec_free)) {
		armed = 0;
		entry = (volatile uint32_t *)(d - sizeof(struct kpprof_ring_hdr));
		freed = ((const struct kpprof_rec_free *)src)->addr;
		raise(SIGUSR1);		/* preempted here */
	}
	return copy_bytes(dst, src, n);
}

static void preempt(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	saved_uc = *(ucontext_t *)uc;	/* fpregs: in the frame on co's stack */
	siglongjmp(sched, 1);
}

static void co_body(void)
{
	void *volatile p = malloc(64);

	armed = 1;
	free(p);
	armed = 0;
	co_done = 1;
	setcontext(&main_uc);
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_sigaction = preempt, .sa_flags = SA_SIGINFO };
	size_t stack_len = 256 * 1024;
	void *stack = mmap(NULL, stack_len, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	void *volatile warm = malloc(100);
	uintptr_t base = 0, off = argc > 1 ? strtoul(argv[1], NULL, 16) : 0;
	uint32_t w;

	free(warm);
	base = shim_base();
	if (base && off)
		shards = (const unsigned char *)(base + off);
	if (stack == MAP_FAILED || find_ring() || sigaction(SIGUSR1, &sa, NULL)) {
		fprintf(stderr, "abandon_resume: setup (KPPROF_TEST_RING=1?)\n");
		return 2;
	}
	getcontext(&co_uc);
	co_uc.uc_stack.ss_sp = stack;
	co_uc.uc_stack.ss_size = stack_len;
	co_uc.uc_link = NULL;
	makecontext(&co_uc, co_body, 0);
	if (!sigsetjmp(sched, 1))
		swapcontext(&main_uc, &co_uc);
	if (!entry) {
		fprintf(stderr, "abandon_resume: not preempted\n");
		return 2;
	}
	w = *entry;
	printf("preempted: entry len word 0x%08x, emitters %d\n", w, shim_emitters(shards));
	/* records of our own for up to 1 s: the emulated drain runs every 10 ms */
	for (int i = 0; i < 1000 && *entry == w; i++) {
		struct timespec ms = { 0, 1000000 };
		void *volatile p = malloc(32);

		free(p);
		nanosleep(&ms, NULL);
	}
	printf("after drains: entry len word 0x%08x\n", *entry);
	getcontext(&main_uc);
	if (!resumed) {
		resumed = 1;
		setcontext(&saved_uc);
	}
	printf("resumed: free done %d, entry len word 0x%08x, emitters %d\n", co_done, *entry,
	       shim_emitters(shards));
	printf("freed 0x%llx\n", (unsigned long long)freed);
	return co_done && !shim_emitters(shards) ? 0 : 1;
}
