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
 *
 * libunwind is not linked in: loading it (and liblzma beneath it) into
 * every process at start cost more than everything else the shim does in
 * a process that never samples (issue 11).  It is dlopen'ed at the first
 * stack, but only from a context where a dlopen can neither recurse into
 * the loader nor wait for it (load_libunwind()); a stack taken before that
 * -- the first sample fell inside the loader, say -- is a frame-pointer
 * stack, and the load is tried again at the next sample.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/single_threaded.h>
#include <unistd.h>
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
 * cost the first stack of every process paid (libunwind is loaded only
 * from a sample on the thread's own stack, which this tells).  A walk
 * only reads between its own frame and the top, all mapped, so a lower
 * bound below the stack's real extent is harmless.
 */
static void stack_bounds(struct kpp_thread *t)
{
	uintptr_t here = (uintptr_t)__builtin_frame_address(0);
	uintptr_t top = ((uintptr_t)__libc_stack_end + 4095) & ~(uintptr_t)4095;
	size_t main_size = (size_t)1 << 30;
	pthread_attr_t attr;
	struct rlimit rl;
	void *addr;
	size_t size;

	t->stack_known = 1;
	t->stack_lo = t->stack_hi = 0;
	if (!getrlimit(RLIMIT_STACK, &rl) && rl.rlim_cur < main_size)
		main_size = rl.rlim_cur;
	if (__libc_stack_end && here < top && here >= top - main_size) {
		t->stack_lo = top - main_size;
		t->stack_hi = top;
		return;
	}
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
typedef int (*backtrace_fn)(void **, int);

__attribute__((noinline))
static int first_backtrace(backtrace_fn bt, void **buf, int size)
{
	int low[2], got;

	low[0] = fcntl(kpp.fd, F_DUPFD_CLOEXEC, 0);
	low[1] = fcntl(kpp.fd, F_DUPFD_CLOEXEC, 0);
	got = bt(buf, size);
	for (int i = 1; i >= 0; i--)
		if (low[i] >= 0)
			close(low[i]);
	return got;
}

/*
 * Loading libunwind.  States: not loaded; loading (one thread is inside
 * dlopen, the others take fp stacks meanwhile); loaded; failed for good
 * (no libunwind.so.8: fp from then on, said once under KPPROF_DEBUG).
 */
enum { UNW_NONE, UNW_LOADING, UNW_LOADED, UNW_FAILED };
static _Atomic int unw_state;
static _Atomic(backtrace_fn) unw_bt;

#define LIBUNWIND	"libunwind.so.8"

/*
 * may_dlopen - can this thread call dlopen now without recursing into the
 * loader or waiting on it in a way that can deadlock?  Not when
 *  - the caller of the wrapper (@leaf, exact: the shim keeps frame
 *    pointers, so the fp walker's first pc is right) is the dynamic loader
 *    itself: its own malloc calls (dlopen/dlclose in progress on this
 *    thread, TLS blocks of __tls_get_addr, lazy binding), with the
 *    loader's locks held;
 *  - this thread is inside dl_iterate_phdr (a callback that allocates);
 *  - any thread is half-way through mapping or unmapping objects
 *    (r_debug.r_state is not RT_CONSISTENT);
 *  - the sample is not on the thread's own stack (@leaf 0: the fp walker
 *    refuses a sigaltstack or a coroutine stack), most likely a signal
 *    handler on an alternate stack;
 *  - this is a child forked from a multi-threaded process that had not
 *    loaded libunwind yet: another thread of the parent may have held the
 *    loader's lock at the fork, held for ever in the child.  Such a child
 *    keeps fp stacks.
 * What it cannot see, and accepts as glibc does for its own lazy loads
 * (backtrace(), NSS, iconv): a handler on the normal stack that
 * interrupted the loader, and a lock the program holds while it
 * allocates that a library constructor running in another thread's
 * dlopen waits for.
 */
static bool may_dlopen(uintptr_t leaf)
{
	if (!leaf || kpp.fork_no_dlopen || kpp_loader_walking())
		return false;
	if (leaf >= kpp.ldso_lo && leaf < kpp.ldso_hi)
		return false;
	return !kpp.r_debug ||
	       ((const volatile struct r_debug *)kpp.r_debug)->r_state == RT_CONSISTENT;
}

/* load_libunwind - unw_backtrace, or NULL: take an fp stack this time. */
static backtrace_fn load_libunwind(struct kpp_thread *t)
{
	backtrace_fn bt = atomic_load_explicit(&unw_bt, memory_order_acquire);
	__u64 leaf = 0;
	int none = UNW_NONE;
	void *h;

	if (likely(bt) || atomic_load(&unw_state) != UNW_NONE)
		return bt;
	if (!kpp_stack_fp(t, &leaf, 1) || !may_dlopen((uintptr_t)leaf))
		return NULL;
	if (!atomic_compare_exchange_strong(&unw_state, &none, UNW_LOADING))
		return NULL;
	h = dlopen(LIBUNWIND, RTLD_NOW | RTLD_LOCAL);
	if (h)
		*(void **)&bt = dlsym(h, "unw_backtrace");
	if (!bt) {
		kpp_debug("cannot load %s (%s): frame-pointer stacks", LIBUNWIND,
			  h ? "no unw_backtrace" : dlerror());
		atomic_store(&unw_state, UNW_FAILED);
		return NULL;
	}
	atomic_store_explicit(&unw_bt, bt, memory_order_release);
	atomic_store(&unw_state, UNW_LOADED);
	return bt;
}

/* kpp_unwind_loaded - libunwind is in: a forked child may use it. */
bool kpp_unwind_loaded(void)
{
	return atomic_load(&unw_state) == UNW_LOADED;
}

/* kpp_unwind_fork_child - the child of a fork, with the loader's state
 * of the moment; @parent_threaded: other threads ran in the parent. */
void kpp_unwind_fork_child(bool parent_threaded)
{
	if (atomic_load(&unw_state) == UNW_LOADING)
		atomic_store(&unw_state, UNW_NONE);	/* cannot happen: fork_prepare waited */
	kpp.fork_no_dlopen = kpp.fork_no_dlopen ||
			     (parent_threaded && atomic_load(&unw_state) != UNW_LOADED);
}

__attribute__((noinline))
static unsigned int stack_unwind(backtrace_fn bt, __u64 *pcs, unsigned int max)
{
	void **buf = unwind_buf;
	int got, first = 0, i;
	unsigned int n = 0;

	if (max > KPPROF_STACK_DEPTH_MAX)
		max = KPPROF_STACK_DEPTH_MAX;
	if (unlikely(!atomic_load_explicit(&unwind_used, memory_order_relaxed)) &&
	    !atomic_exchange(&unwind_used, 1))
		got = first_backtrace(bt, buf, (int)max + UNWIND_SLACK);
	else
		got = bt(buf, (int)max + UNWIND_SLACK);
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

/* kpp_stack_unwind - the libunwind stack, loading it if need be (sample_cost). */
unsigned int kpp_stack_unwind(__u64 *pcs, unsigned int max)
{
	backtrace_fn bt = load_libunwind(&kpp_thread);

	return bt ? stack_unwind(bt, pcs, max) : 0;
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

	backtrace_fn bt = kpp.unwind_libunwind ? load_libunwind(t) : NULL;

	if (bt)
		n = stack_unwind(bt, pcs, max);
	else
		n = kpp_stack_fp(t, pcs, max);
	return cut_at_bad_pc(pcs, n);
}
