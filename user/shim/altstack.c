// SPDX-License-Identifier: GPL-2.0
/*
 * altstack.c - is a sample about to leave the thread's sigaltstack?
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
 * directly) is not, so a sample that is not on the stack its thread was
 * started with asks the kernel: one sigaltstack(NULL, &old) system call,
 * which says whether this stack pointer is on the armed altstack
 * (SS_ONSTACK) and where that is, remembered for the next samples.  A
 * sample on the thread's own stack never asks: that is nearly every
 * sample.  Nor does one in a 64 KiB region the kernel said is not the
 * altstack, the last KPP_NOT_ALT of them per thread (a coroutine's stack
 * asks once, not at each sample: 0.3 against 1.7 us a sample at rate 1
 * here), forgotten whenever the altstack is known to move.  A raw call
 * that later arms an altstack in such a region is not seen until the
 * region is forgotten (memory of a coroutine's stack reused for an
 * altstack).
 *
 * "The stack its thread was started with": glibc puts a thread's
 * descriptor, which the thread pointer (%fs) addresses, at the top of its
 * stack, the stack a caller gave pthread_attr_setstack() included; the
 * main thread's stack ends at __libc_stack_end.  Within KPP_HOME_STACK
 * below either counts as that stack.  A deeper stack pointer asks, which
 * costs a system call and is still right.  Not seen: an altstack placed
 * inside the thread's own stack (a local array) and set with a raw call.
 */
#include <signal.h>
#include "shim.h"
#include "sys.h"

/* glibc's default thread stack (RLIMIT_STACK's usual 8 MiB) */
#define KPP_HOME_STACK	((uintptr_t)8 << 20)
#define KPP_REGION_SHIFT	16

extern void *__libc_stack_end;

static _Atomic uint64_t questions;

static uintptr_t thread_pointer(void)
{
	uintptr_t tp;

	__asm__("mov %%fs:0, %0" : "=r"(tp));
	return tp;
}

void kpp_altstack_init(void)
{
	kpp.main_tp = thread_pointer();
}

/* On the stack this thread was started with (see above)? */
static bool on_own_stack(uintptr_t sp)
{
	uintptr_t tp = thread_pointer();
	uintptr_t top = tp == kpp.main_tp ? (uintptr_t)__libc_stack_end : tp;

	return top && top - sp < KPP_HOME_STACK;
}

void kpp_altstack_remember(struct kpp_thread *t, const stack_t *ss)
{
	for (unsigned int i = 0; i < KPP_NOT_ALT; i++)
		t->not_alt[i] = 0;
	/* a handler of this thread never sees half old, half new */
	t->alt_hi = 0;
	atomic_signal_fence(memory_order_seq_cst);
	if (ss->ss_flags & (SS_DISABLE | SS_AUTODISARM)) {
		t->alt_lo = 0;
		return;
	}
	t->alt_lo = (uintptr_t)ss->ss_sp;
	atomic_signal_fence(memory_order_seq_cst);
	t->alt_hi = (uintptr_t)ss->ss_sp + ss->ss_size;
}

bool kpp_altstack_ask(struct kpp_thread *t, uintptr_t sp)
{
	uintptr_t region = (sp >> KPP_REGION_SHIFT) + 1, lo, hi;
	stack_t old;

	if (on_own_stack(sp))
		return false;
	for (unsigned int i = 0; i < KPP_NOT_ALT; i++)
		if (t->not_alt[i] == region)
			return false;
	/* a filter the module's probe sees: the process stops sampling */
	if (kpp_filtered(true))
		return true;
	atomic_fetch_add_explicit(&questions, 1, memory_order_relaxed);
	if (KPP_SYS(SYS_sigaltstack, 0, &old, 0, 0, 0, 0))
		return true;	/* cannot tell (a filter's errno): skip */
	kpp_altstack_remember(t, &old);
	if (old.ss_flags & SS_ONSTACK)
		return true;
	/* this region, unless the armed altstack reaches into it */
	lo = (region - 1) << KPP_REGION_SHIFT;
	hi = lo + ((uintptr_t)1 << KPP_REGION_SHIFT);
	if ((old.ss_flags & SS_DISABLE) || (uintptr_t)old.ss_sp >= hi ||
	    (uintptr_t)old.ss_sp + old.ss_size <= lo)
		t->not_alt[t->not_alt_next++ % KPP_NOT_ALT] = region;
	return false;
}

uint64_t kpp_altstack_questions(void)
{
	return atomic_load_explicit(&questions, memory_order_relaxed);
}
