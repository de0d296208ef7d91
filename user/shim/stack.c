// SPDX-License-Identifier: GPL-2.0
/*
 * Capturing user stacks: absolute return addresses, leaf first, where the
 * leaf is the caller of malloc or pthread_mutex_* (the shim's own frames
 * are recognised by address and left out).  Two unwinders, chosen by
 * KPPROF_UNWIND=fp|libunwind (default libunwind, see init.c):
 *
 *  - fp: follows the rbp chain.  Cheap, but only exact through code built
 *    with frame pointers, which Debian's libraries are not: through such
 *    code it stops early or records stale frames.  It never reads outside
 *    the thread's own stack: each frame pointer must lie between the
 *    current frame and the stack's top (from pthread_getattr_np, once per
 *    thread), be 8-aligned and grow strictly.
 *  - libunwind: unw_backtrace() with DWARF CFI (.eh_frame); exact through
 *    any code with unwind tables, slower.  It may allocate: the caller
 *    holds the per-thread guard, so that passes straight through.
 */
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>
#include <libunwind.h>
#include "shim.h"

static bool in_self(uintptr_t pc)
{
	return pc >= kpp.self_lo && pc < kpp.self_hi;
}

/* Learn this thread's stack bounds once; 0 if they cannot be known. */
static void stack_bounds(struct kpp_thread *t)
{
	pthread_attr_t attr;
	void *addr;
	size_t size;

	t->stack_known = 1;
	t->stack_lo = t->stack_hi = 0;
	if (pthread_getattr_np(pthread_self(), &attr))
		return;
	if (!pthread_attr_getstack(&attr, &addr, &size)) {
		t->stack_lo = (uintptr_t)addr;
		t->stack_hi = (uintptr_t)addr + size;
	}
	pthread_attr_destroy(&attr);
}

__attribute__((noinline))
unsigned int kpp_stack_fp(struct kpp_thread *t, __u64 *pcs, unsigned int max)
{
	uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
	uintptr_t hi;
	unsigned int n = 0, guard = 0;
	bool leading = true;

	if (!t->stack_known)
		stack_bounds(t);
	/* On a signal stack or a coroutine's: no bounds to trust. */
	if (fp < t->stack_lo || fp >= t->stack_hi)
		return 0;
	hi = t->stack_hi;
	while (n < max && guard++ < KPPROF_STACK_DEPTH_MAX + 64) {
		const uintptr_t *frame = (const uintptr_t *)fp;
		uintptr_t next, ret;

		if ((fp & 7) || fp + 2 * sizeof(uintptr_t) > hi)
			break;
		next = frame[0];
		ret = frame[1];
		if (!ret)
			break;
		if (!(leading && in_self(ret))) {
			leading = false;
			pcs[n++] = ret;
		}
		if (next <= fp)
			break;
		fp = next;
	}
	return n;
}

/* Frames of libunwind and of the shim itself above the user's leaf. */
#define UNWIND_SLACK	16

/* Per thread, not on a possibly small stack (see emit.c's rec_buf). */
static KPP_TLS void *unwind_buf[KPPROF_STACK_DEPTH_MAX + UNWIND_SLACK];

static _Atomic int unwind_used;

/*
 * first_backtrace - the process's first unw_backtrace(), during which
 * libunwind makes a pipe for itself (to test addresses before reading
 * them).  The pipe would take the two lowest free descriptors, so the
 * program's next open() would return 5 where it gets 3 without us:
 * occupy those two while libunwind makes it, then free them again.
 * Inherited by a forked child; a new image makes its own.
 */
__attribute__((noinline))
static int first_backtrace(void **buf, int size)
{
	int low[2], got;

	low[0] = fcntl(kpp.fd, F_DUPFD_CLOEXEC, 0);
	low[1] = fcntl(kpp.fd, F_DUPFD_CLOEXEC, 0);
	got = unw_backtrace(buf, size);
	for (int i = 1; i >= 0; i--)
		if (low[i] >= 0)
			close(low[i]);
	return got;
}

__attribute__((noinline))
unsigned int kpp_stack_unwind(__u64 *pcs, unsigned int max)
{
	void **buf = unwind_buf;
	int got, first = 0, i;
	unsigned int n = 0;

	if (max > KPPROF_STACK_DEPTH_MAX)
		max = KPPROF_STACK_DEPTH_MAX;
	if (unlikely(!atomic_load_explicit(&unwind_used, memory_order_relaxed)) &&
	    !atomic_exchange(&unwind_used, 1))
		got = first_backtrace(buf, (int)max + UNWIND_SLACK);
	else
		got = unw_backtrace(buf, (int)max + UNWIND_SLACK);
	/* Skip what precedes the first shim frame, then the shim's run. */
	for (i = 0; i < got && !in_self((uintptr_t)buf[i]); i++)
		;
	if (i < got) {
		while (i < got && in_self((uintptr_t)buf[i]))
			i++;
		first = i;
	}
	for (i = first; i < got && n < max; i++)
		pcs[n++] = (uintptr_t)buf[i];
	return n;
}

/*
 * A return address must lie in user space (the module rejects a record
 * with any other): through code without frame pointers the fp walker can
 * read a saved rbp that is just data, so the stack is cut at the first
 * implausible pc.
 */
static unsigned int cut_at_bad_pc(const __u64 *pcs, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		if (pcs[i] < 4096 || pcs[i] >= (1ULL << 47) - 4096)
			return i;
	return n;
}

unsigned int kpp_stack(struct kpp_thread *t, __u64 *pcs, unsigned int max)
{
	unsigned int n;

	if (kpp.unwind_libunwind)
		n = kpp_stack_unwind(pcs, max);
	else
		n = kpp_stack_fp(t, pcs, max);
	return cut_at_bad_pc(pcs, n);
}
