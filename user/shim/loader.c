// SPDX-License-Identifier: GPL-2.0
/*
 * Forks while another thread walks the loaded objects (issue 8, finding 1).
 *
 * dl_iterate_phdr() holds the loader's lock while it walks; a fork at that
 * moment leaves the child with that lock held by a thread that does not
 * exist there, so the child's first dl_iterate_phdr() -- ours, before a
 * stack record (maps.c), or libunwind's -- blocks for ever.  A child that
 * only allocates and exits would hang because of the shim.
 *
 * So dl_iterate_phdr is wrapped: the wrapper counts the threads inside it.
 * fork_prepare (init.c) stops new walks from other threads and waits for
 * those under way to end, but only for a while (a walk's callback might
 * wait for the very thread that forks): if one is still inside, the child
 * is marked and never samples (kpp_loader_unsafe), a pass-through like a
 * process without the module.  Not covered: a dlopen/dlclose in another
 * thread, which takes the same lock inside the loader, at the fork.
 */
#include <dlfcn.h>
#include <link.h>
#include <sched.h>
#include "shim.h"

typedef int (*walk_fn)(int (*)(struct dl_phdr_info *, size_t, void *), void *);

static _Atomic int walkers;		/* threads inside dl_iterate_phdr */
static _Atomic int gate;		/* a fork is being prepared */
static KPP_TLS int walking;		/* this thread's nesting depth */
static KPP_TLS int forking;		/* this thread closed the gate */
static _Atomic(walk_fn) real_walk;

KPP_EXPORT int dl_iterate_phdr(int (*cb)(struct dl_phdr_info *, size_t, void *),
			       void *data)
{
	walk_fn real = atomic_load_explicit(&real_walk, memory_order_acquire);
	int ret;

	if (!real) {
		*(void **)&real = dlsym(RTLD_NEXT, "dl_iterate_phdr");
		if (!real)
			return 0;
		atomic_store_explicit(&real_walk, real, memory_order_release);
	}
	if (!walking++) {
		atomic_fetch_add(&walkers, 1);
		/* Pairs with kpp_loader_quiesce: announce, then check. */
		while (atomic_load(&gate) && !forking) {
			atomic_fetch_sub(&walkers, 1);
			while (atomic_load(&gate))
				sched_yield();
			atomic_fetch_add(&walkers, 1);
		}
	}
	ret = real(cb, data);
	if (!--walking)
		atomic_fetch_sub(&walkers, 1);
	return ret;
}

bool kpp_loader_quiesce(void)
{
	int self = walking ? 1 : 0;

	forking = 1;
	atomic_store(&gate, 1);
	/* About 10 ms of yields under load; a walk takes microseconds. */
	for (int i = 0; i < 10000; i++) {
		if (atomic_load(&walkers) <= self)
			return true;
		sched_yield();
	}
	return atomic_load(&walkers) <= self;
}

bool kpp_loader_walking(void)
{
	return walking != 0;
}

void kpp_loader_release(bool child)
{
	forking = 0;
	if (child)
		atomic_store(&walkers, walking ? 1 : 0);
	atomic_store(&gate, 0);
}
