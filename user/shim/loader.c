// SPDX-License-Identifier: GPL-2.0
/*
 * dl_iterate_phdr is wrapped to count its callers, for libunwind's sake:
 *  - no sample is taken inside the program's own dl_iterate_phdr
 *    callback (kpp_sample_begin): the thread holds the loader's write
 *    lock, and libunwind takes its own lock, then that one (and stack.c
 *    would dlopen libunwind there: the loader's lock after the write
 *    lock, the opposite order of a dlopen in another thread);
 *  - a child forked while another thread was inside inherits that lock
 *    held for ever (glibc does not reset it), so libunwind's walk would
 *    hang there: the count the child inherits is exact at the fork (the
 *    memory is copied then), and such a child takes fp stacks.
 * The wrapper never waits and takes nothing.  Nothing of the shim calls
 * dl_iterate_phdr from a sampling path (maps.c uses _dl_find_object), so
 * a fork no longer needs to wait for walks: once stacks no longer load
 * libunwind, this file goes.
 */
#include <dlfcn.h>
#include <link.h>
#include "shim.h"

typedef int (*walk_fn)(int (*)(struct dl_phdr_info *, size_t, void *), void *);

static _Atomic int walkers;		/* threads inside dl_iterate_phdr */
static KPP_TLS int walking;		/* this thread's nesting depth */

KPP_EXPORT int dl_iterate_phdr(int (*cb)(struct dl_phdr_info *, size_t, void *),
			       void *data)
{
	static void *_Atomic real_slot;
	walk_fn real = (walk_fn)kpp_next_cached(&real_slot, "dl_iterate_phdr", NULL);
	int ret;

	if (!real)
		return 0;
	if (!walking++)
		atomic_fetch_add(&walkers, 1);
	ret = real(cb, data);
	if (!--walking)
		atomic_fetch_sub(&walkers, 1);
	return ret;
}

bool kpp_loader_walking(void)
{
	return walking != 0;
}

/* kpp_loader_fork_child - in a new child: was another thread of the
 * parent inside dl_iterate_phdr at the fork?  Resets the count. */
bool kpp_loader_fork_child(void)
{
	int self = walking ? 1 : 0;
	bool others = atomic_load(&walkers) > self;

	atomic_store(&walkers, self);
	return others;
}
