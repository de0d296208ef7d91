// SPDX-License-Identifier: GPL-2.0
/*
 * altstack.c - may a sample leave the stack it was taken on?
 *
 * A sample's body runs on a private stack (stackpool.c).  If the sample
 * was taken in a SA_ONSTACK handler running on the thread's sigaltstack,
 * a second SA_ONSTACK signal arriving during the body finds a stack
 * pointer off the altstack, and the kernel puts its frame at the
 * altstack's top: over the frames of the handler that is running there
 * (altstack_nest.c: SIGSEGV).  Such a sample is skipped, counted.
 *
 * An altstack set with sigaltstack() is known from the wrapper
 * (sigwrap.c: kpp_thread.alt_lo/alt_hi).  One set with a raw system call
 * (Go's runtime sets its threads' so; any code that calls the kernel
 * directly) is not, so the kernel is asked: one sigaltstack(NULL, &old)
 * system call, which says whether this stack pointer is on the armed
 * altstack (SS_ONSTACK) and where that is, remembered for the next
 * samples.  Not asked (kpp_altstack_must_stay, inline):
 *
 *  - a sample on the stack its thread was started with, outside a
 *    handler the shim wrapped: nearly every sample.  glibc puts a
 *    thread's descriptor, which the thread pointer (%fs) addresses, at the
 *    top of its stack (one given to pthread_attr_setstack() too): within
 *    KPP_THREAD_STACK (8 MiB, glibc's default) below it; the main thread's
 *    stack ends at __libc_stack_end, and mmap leaves KPP_MAIN_STACK (128
 *    MiB) below it free.  A thread with a smaller stack may have an
 *    altstack mapped within that window, just below its stack: only a
 *    handler can run there, and in a wrapped one the window is not
 *    trusted (below).  No system call for it: a thread's real bounds
 *    (pthread_getattr_np) cost two, and a thread born under a raw seccomp
 *    filter would die of them (torture.c's sandboxed children);
 *  - a sample in a 64 KiB region the kernel said is not the altstack,
 *    the last KPP_NOT_ALT of them per thread, outside a wrapped handler:
 *    a coroutine's stack asks once, not at each sample (1.7 against 0.3
 *    us a sample at rate 1 here).  Forgotten when the altstack is seen
 *    to move (a region it now reaches into).
 *
 * In a handler the shim wrapped (sigwrap.c marks the frame of each one
 * running, the outermost KPP_SIG_MARKS) every sample
 * off a remembered altstack asks: only a sample in a handler can be on an
 * altstack, and what is known may be wrong there (an altstack just below
 * a small thread stack; memory a coroutine used, armed since as an
 * altstack with a raw call; an altstack in a local array of the thread's
 * stack: review helper-24 F1, F2).  What stays unseen: a handler
 * installed past the wrappers (a raw rt_sigaction, as Go's) running on an
 * altstack set with a raw call within its thread's window, or on memory
 * one of that thread's last KPP_NOT_ALT "not the altstack" regions was
 * (a coroutine's; an SS_AUTODISARM altstack, reported disabled while a
 * handler ran on it, re-armed without it since).
 */
#include <signal.h>
#include "shim.h"
#include "sys.h"

#define KPP_REGION_SHIFT	16

static _Atomic uint64_t questions;

static uintptr_t region_lo(uintptr_t region)
{
	return (region - 1) << KPP_REGION_SHIFT;
}

static bool overlaps(uintptr_t region, uintptr_t lo, uintptr_t hi)
{
	return lo < region_lo(region) + ((uintptr_t)1 << KPP_REGION_SHIFT) &&
	       hi > region_lo(region);
}

void kpp_altstack_remember(struct kpp_thread *t, const stack_t *ss)
{
	bool armed = !(ss->ss_flags & (SS_DISABLE | SS_AUTODISARM));
	uintptr_t lo = armed ? (uintptr_t)ss->ss_sp : 0;
	uintptr_t hi = armed ? lo + ss->ss_size : 0;

	/* an answer a question got before this call is stale (ask) */
	t->alt_gen++;
	if (lo == t->alt_lo && hi == t->alt_hi)
		return;
	/* a region the altstack now reaches into is no longer "not it" */
	for (unsigned int i = 0; i < KPP_NOT_ALT; i++)
		if (t->not_alt[i] && overlaps(t->not_alt[i], lo, hi))
			t->not_alt[i] = 0;
	/* a handler of this thread never sees half old, half new */
	t->alt_hi = 0;
	atomic_signal_fence(memory_order_seq_cst);
	t->alt_lo = lo;
	atomic_signal_fence(memory_order_seq_cst);
	t->alt_hi = hi;
}

/*
 * In a handler the shim wrapped: below the frame of one that runs (each
 * live handler's frame is marked, on whatever stack it runs; a stale
 * mark, left by a longjmp out, only adds questions).  Nested deeper than
 * KPP_SIG_MARKS, the outer handlers' marks still cover their own stacks.
 */
static bool in_handler(const struct kpp_thread *t, uintptr_t sp)
{
	uint32_t n = t->sig_depth < KPP_SIG_MARKS ? t->sig_depth : KPP_SIG_MARKS;

	for (uint32_t i = 0; i < n; i++)
		if (sp < t->sig_marks[i])
			return true;
	return false;
}

__attribute__((noinline))
bool kpp_altstack_ask(struct kpp_thread *t, uintptr_t sp)
{
	uintptr_t region = (sp >> KPP_REGION_SHIFT) + 1;
	bool handler = in_handler(t, sp);
	uint32_t gen;
	stack_t old;

	if (!handler) {
		if (kpp_altstack_own(sp))
			return false;	/* a stale handler mark: on its own stack */
		for (unsigned int i = 0; i < KPP_NOT_ALT; i++)
			if (t->not_alt[i] == region)
				return false;
	}
	/* a filter the module's probe sees: the process stops sampling */
	if (kpp_filtered(true))
		return true;
	atomic_fetch_add_explicit(&questions, 1, memory_order_relaxed);
	gen = t->alt_gen;
	atomic_signal_fence(memory_order_seq_cst);
	if (KPP_SYS(SYS_sigaltstack, 0, &old, 0, 0, 0, 0))
		return true;	/* cannot tell (a filter's errno): skip */
	atomic_signal_fence(memory_order_seq_cst);
	/* a handler's sigaltstack() in between: its answer, not this one */
	if (t->alt_gen != gen)
		return old.ss_flags & SS_ONSTACK;
	kpp_altstack_remember(t, &old);
	if (old.ss_flags & SS_ONSTACK)
		return true;
	/* this region, unless the armed altstack reaches into it */
	if ((old.ss_flags & SS_DISABLE) ||
	    !overlaps(region, (uintptr_t)old.ss_sp, (uintptr_t)old.ss_sp + old.ss_size)) {
		for (unsigned int i = 0; i < KPP_NOT_ALT; i++)
			if (t->not_alt[i] == region)
				return false;
		t->not_alt[t->not_alt_next++ % KPP_NOT_ALT] = region;
	}
	return false;
}

void kpp_altstack_init(void)
{
	kpp.main_tp = kpp_thread_pointer();
}

uint64_t kpp_altstack_questions(void)
{
	return atomic_load_explicit(&questions, memory_order_relaxed);
}
