// SPDX-License-Identifier: GPL-2.0
/*
 * Capturing user stacks: absolute return addresses, leaf first, where the
 * leaf is the caller of malloc or pthread_mutex_* (the shim's own frames
 * are recognised by address and left out).  This runs on one of
 * stackpool.c's private stacks, reached through switch.S.  Two unwinders,
 * chosen by KPPROF_UNWIND (init.c): the DWARF one (the default; "libunwind",
 * its old name, is accepted for it) and fp.
 *
 *  - DWARF: libgcc's unwinder (_Unwind_Backtrace over .eh_frame), linked
 *    into libkpprof.so statically under private names (kpp_Unwind_*, see
 *    the Makefile), so the program's own C++ exceptions keep using
 *    libgcc_s and never meet this copy.  unwind_cache.c takes most stacks
 *    faster with the same tables; this is its fallback.  Exact through any code with
 *    unwind tables, which Debian's binaries have, frame pointers or not.
 *    GCC 12's copy finds an address's FDE with glibc's _dl_find_object
 *    (2.35+): lock-free and async-signal-safe, no dl_iterate_phdr, no
 *    loader lock, no allocation, no descriptor (it trusts the CFI and
 *    reads the stack without probing it first, as exception handling
 *    does).  It starts on the private stack and walks through switch.S's
 *    frame back onto the caller's; it needs about 2-3 KiB of stack, all of
 *    it on the private one.
 *  - fp: follows the rbp chain from the frame record switch.S left on the
 *    caller's stack.  Cheap, but only exact through code built with frame
 *    pointers, which Debian's libraries are not: through such code it
 *    stops early or records stale frames.  It never reads outside the
 *    thread's own stack: each frame pointer must lie between the current
 *    frame and the stack's top (from pthread_getattr_np, once per thread),
 *    be 8-aligned and grow strictly; so on a sigaltstack or a coroutine's
 *    stack it records nothing, nor inside pthread_getattr_np before the
 *    thread's bounds are known (getattr.c).
 */
#include <pthread.h>
#include <string.h>
#include <sys/resource.h>
#include <unwind.h>
#include "shim.h"

static bool in_self(uintptr_t pc)
{
	return pc >= kpp.self_lo && pc < kpp.self_hi;
}

/* The top of the main thread's stack (ld.so's, exported). */
extern void *__libc_stack_end;

/*
 * Learn this thread's stack bounds once; 0 if they cannot be known.  On
 * the main thread's stack, from __libc_stack_end and RLIMIT_STACK: for
 * the main thread pthread_getattr_np() reads all of /proc/self/maps, a
 * cost the first stack of every process paid.  A walk
 * only reads between its own frame and the top, all mapped, so a lower
 * bound below the stack's real extent is harmless.
 */
static void stack_bounds(struct kpp_thread *t, uintptr_t fp)
{
	uintptr_t here = fp;
	uintptr_t top = ((uintptr_t)__libc_stack_end + 4095) & ~(uintptr_t)4095;
	size_t main_size = (size_t)1 << 30;
	pthread_attr_t attr;
	struct rlimit rl;
	void *addr;
	size_t size;

	t->stack_lo = t->stack_hi = 0;
	if (!kpp_getrlimit(RLIMIT_STACK, &rl) && rl.rlim_cur < main_size)
		main_size = rl.rlim_cur;
	if (__libc_stack_end && here < top && here >= top - main_size) {
		t->stack_known = 1;
		t->stack_lo = top - main_size;
		t->stack_hi = top;
		return;
	}
	/*
	 * Inside pthread_getattr_np this thread may hold the lock it takes
	 * (getattr.c), and in a lock's sample the allocator's lock, which
	 * getattr's allocation would take again: no bounds, no stack, until
	 * a sample outside them.
	 */
	if (t->in_getattr || t->in_lock_sample)
		return;
	t->stack_known = 1;
	if (kpp_real_getattr(pthread_self(), &attr))
		return;
	if (!pthread_attr_getstack(&attr, &addr, &size)) {
		t->stack_lo = (uintptr_t)addr;
		t->stack_hi = (uintptr_t)addr + size;
	}
	pthread_attr_destroy(&attr);
}

/* stack_fp - walk the rbp chain from the frame record at @fp. */
static unsigned int stack_fp(struct kpp_thread *t, uintptr_t fp, __u64 *pcs,
			     unsigned int max)
{
	uintptr_t lo, hi;
	unsigned int n = 0, guard = 0;
	bool leading = true;

	if (!t->stack_known)
		stack_bounds(t, fp);
	lo = t->stack_lo;
	hi = t->stack_hi;
	if (!t->stack_known) {
		/*
		 * Not learnt yet (inside pthread_getattr_np, or a lock's
		 * sample, where it would allocate): glibc's thread descriptor,
		 * at the thread pointer, tops the thread's stack, and all
		 * between a frame of it and there is mapped (its static TLS,
		 * then the descriptor).  This walk only; review helper-27: a
		 * thread that only contended locks had no lock stack at all.
		 */
		hi = kpp_thread_pointer();
		lo = hi - ((uintptr_t)8 << 20);
	}
	/* On a signal stack or a coroutine's: no bounds to trust. */
	if (fp < lo || fp >= hi)
		return 0;
	while (n < max && guard++ < KPPROF_STACK_DEPTH_MAX + 64) {
		const uintptr_t *frame = (const uintptr_t *)fp;
		uintptr_t next, ret;

		/*
		 * Not fp + 16 > hi: a frame-pointer-less caller's rbp of -16
		 * (binutils' as) wraps it to 0 and the read faults.  hi is a
		 * stack's top, never below 16.
		 */
		if ((fp & 7) || fp > hi - 2 * sizeof(uintptr_t))
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

/* kpp_stack_fp - the fp stack from here, on the thread's own stack (tests). */
__attribute__((noinline))
unsigned int kpp_stack_fp(struct kpp_thread *t, __u64 *pcs, unsigned int max)
{
	return stack_fp(t, (uintptr_t)__builtin_frame_address(0), pcs, max);
}

/* libgcc's unwinder under private names (the Makefile renames them). */
_Unwind_Reason_Code kpp_Unwind_Backtrace(_Unwind_Trace_Fn fn, void *arg) KPP_HIDDEN;
_Unwind_Ptr kpp_Unwind_GetIP(struct _Unwind_Context *ctx) KPP_HIDDEN;

struct dwarf_walk {
	__u64 *pcs;
	unsigned int n, max, frames;
	int state;		/* WALK_* */
};
enum { WALK_BEFORE_SHIM, WALK_IN_SHIM, WALK_USER };

/*
 * One frame: skip what precedes the first shim frame (none when the shim
 * is a shared object: the walk starts in it), then the shim's run (the
 * private stack's frames, switch.S, the wrapper), then record.  Bounded:
 * a corrupt chain that never ends stops after max + 64 frames.
 */
static _Unwind_Reason_Code dwarf_frame(struct _Unwind_Context *ctx, void *arg)
{
	struct dwarf_walk *w = arg;
	uintptr_t pc = kpp_Unwind_GetIP(ctx);

	if (!pc || ++w->frames > w->max + 64)
		return _URC_END_OF_STACK;
	if (w->state == WALK_BEFORE_SHIM) {
		if (!in_self(pc))
			return _URC_NO_REASON;
		w->state = WALK_IN_SHIM;
	}
	if (w->state == WALK_IN_SHIM) {
		if (in_self(pc))
			return _URC_NO_REASON;
		w->state = WALK_USER;
	}
	w->pcs[w->n++] = pc;
	return w->n < w->max ? _URC_NO_REASON : _URC_END_OF_STACK;
}

__attribute__((noinline))
unsigned int kpp_stack_dwarf(__u64 *pcs, unsigned int max)
{
	struct dwarf_walk w = { .pcs = pcs, .max = max };

	if (max > KPPROF_STACK_DEPTH_MAX)
		w.max = KPPROF_STACK_DEPTH_MAX;
	if (!w.max)
		return 0;
	/* With no shim range known (tests linking stack.c), keep it all. */
	if (!kpp.self_hi)
		w.state = WALK_USER;
	kpp_Unwind_Backtrace(dwarf_frame, &w);
	return w.n;
}

void kpp_unwind_fork_child(bool parent_threaded)
{
	(void)parent_threaded;
	kpp_stackpool_fork_child(&kpp_thread);
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

#ifdef KPP_UNWIND_CROSSCHECK
/* A test build: every cached stack is compared with libgcc's. */
static _Atomic uint64_t crosscheck[2];	/* stacks by libgcc, cached */

__attribute__((destructor)) static void crosscheck_report(void)
{
	kpp_debug("stacks: %llu by libgcc, %llu cached (checked)",
		  (unsigned long long)crosscheck[0], (unsigned long long)crosscheck[1]);
}
#endif

unsigned int kpp_stack(struct kpp_thread *t, uintptr_t caller_fp, __u64 *pcs,
		       unsigned int max, struct kpp_objs *objs)
{
	struct kpp_objs none;
	unsigned int n, m;

	if (!objs)
		objs = &none;
	objs->complete = false;
	if (kpp.unwind_libunwind) {
		void *cache = kpp_stackpool_cache(t);
		int got = cache && caller_fp ?
			  kpp_stack_cached(cache, caller_fp, pcs, max, objs) : -1;

		if (got < 0)
			objs->complete = false;

		n = got >= 0 ? (unsigned int)got : kpp_stack_dwarf(pcs, max);
#ifdef KPP_UNWIND_CROSSCHECK
		atomic_fetch_add(&crosscheck[got >= 0], 1);
		if (got >= 0) {
			__u64 ref[KPPROF_STACK_DEPTH_MAX];
			unsigned int m = kpp_stack_dwarf(ref, max);

			if (m != n || memcmp(ref, pcs, n * sizeof(*pcs)))
				kpp_debug("cached stack differs: %u frames vs libgcc's %u; first %#llx / %#llx",
					  n, m, (unsigned long long)pcs[0],
					  (unsigned long long)ref[0]);
		}
#endif
	} else
		n = stack_fp(t, caller_fp, pcs, max);
	m = cut_at_bad_pc(pcs, n);
	if (m != n)
		objs->complete = false;
	return m;
}
