// SPDX-License-Identifier: GPL-2.0
/*
 * Is our malloc the one the program calls?  Not when the program links an
 * allocator statically (tcmalloc or jemalloc built in, a custom malloc) or
 * preloads one ahead of libkpprof.so: the dynamic linker binds every
 * malloc reference to the first definition in the global scope, and the
 * main program (then the preloads, in order) comes first.  Then the
 * program's allocations never reach a wrapper of ours, and the process
 * would silently have no heap profile while KPPROF_DEBUG says "sampling".
 *
 * So after start-up we ask which object defines the malloc the program's
 * references resolve to (dlsym RTLD_DEFAULT, dladdr): ours, done.  Else
 * we ask the question directly: a call through that pointer, with the
 * thread's countdown set to UINT64_MAX.  Our malloc's fast path takes
 * the size off the countdown; anything else leaves it untouched.  Comparing
 * the object dladdr() names with ours is not enough: a non-PIE program that
 * takes malloc's address in code (python3) has a canonical PLT entry, an
 * undefined symbol with a value that every reference, dlsym's included,
 * resolves to, and that stub jumps to our malloc.  If the call does not
 * reach us: a KPPROF_DEBUG line, a KPPROF_REC_NOTE (KPPROF_NOTE_NO_HEAP)
 * so the collector can say "no heap profile for pid N", and no heap
 * sampling in the other entry points either (kpp.no_heap: operator new and
 * jemalloc's names, heap.c), so the collector gets no half profile.  Lock
 * profiling is unaffected.
 *
 * Not seen: an allocator linked in with its malloc not exported (hidden
 * visibility).  Then no shared library's malloc reference binds to it
 * either, so libc's and libstdc++'s allocations still reach us and are
 * profiled; the program's own are not.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "shim.h"

static void emit_no_heap_note(void)
{
	struct kpprof_rec_note r;

	memset(&r, 0, sizeof(r));
	r.hdr.kind = KPPROF_REC_NOTE;
	r.hdr.size = sizeof(r);
	r.what = KPPROF_NOTE_NO_HEAP;
	kpp_emit(&r, sizeof(r));
}

void kpp_check_interposed(void)
{
	struct kpp_thread *t = &kpp_thread;
	void *m = dlsym(RTLD_DEFAULT, "malloc"), *p;
	void *(*first)(size_t);
	uint64_t saved;
	int saved_errno;
	bool ours;
	Dl_info info, self;

	if (!m) {
		dlerror();
		return;
	}
	/* Ours, named by the loader: no call needed (most programs). */
	if (dladdr(m, &info) && dladdr((void *)kpp_check_interposed, &self) &&
	    info.dli_fbase == self.dli_fbase)
		return;
	memcpy(&first, &m, sizeof(first));
	saved = t->countdown;
	saved_errno = errno;
	t->countdown = UINT64_MAX;
	/*
	 * A size no allocator can serve: ours takes it off the countdown and
	 * forwards; glibc fails it before setting anything up (no arena, no
	 * brk in a process that never allocates otherwise).
	 */
	p = first((size_t)PTRDIFF_MAX + 1);
	ours = t->countdown != UINT64_MAX;
	t->countdown = saved;
	/* free binds to the first definition too: the one that pairs with it */
	if (p)
		free(p);
	errno = saved_errno;
	if (ours)
		return;
	atomic_store(&kpp.no_heap, 1);
	kpp_debug("no heap profile: malloc is not interposed: %s defines it ahead of libkpprof.so (an allocator linked statically or preloaded first)",
		  dladdr(m, &info) && info.dli_fname && *info.dli_fname ?
		  info.dli_fname : "the program");
	emit_no_heap_note();
}
