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
 * So after start-up we ask the dynamic linker which malloc a program's
 * reference resolves to (dlsym RTLD_DEFAULT) and compare its object with
 * ours.  If they differ: a KPPROF_DEBUG line, and a KPPROF_REC_NOTE
 * (KPPROF_NOTE_NO_HEAP) so the collector can say "no heap profile for pid
 * N".  Lock profiling is unaffected.
 *
 * Not seen: an allocator linked in with its malloc not exported (hidden
 * visibility).  Then no shared library's malloc reference binds to it
 * either, so libc's and libstdc++'s allocations still reach us and are
 * profiled; the program's own are not.
 */
#include <dlfcn.h>
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
	Dl_info self, first;
	void *m = dlsym(RTLD_DEFAULT, "malloc");

	if (!m || !dladdr((void *)kpp_check_interposed, &self) || !dladdr(m, &first) ||
	    first.dli_fbase == self.dli_fbase)
		return;
	kpp_debug("no heap profile: malloc is not interposed: %s defines it ahead of libkpprof.so (an allocator linked statically or preloaded first)",
		  first.dli_fname && *first.dli_fname ? first.dli_fname : "the program");
	emit_no_heap_note();
}
