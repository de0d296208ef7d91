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
 * So after start-up we look for the definition every malloc reference
 * binds to: the loader searches the global scope in load order (the
 * program, then the preloads in order, then their dependencies), which
 * is dl_iterate_phdr()'s order, and the first object that defines malloc
 * wins.  If an object ahead of ours defines it, our malloc is not the
 * program's.  Read from each object's dynamic symbol table (dynsym.c),
 * never by calling that malloc: a call with a size no allocator serves
 * kills a process whose allocator treats a failed allocation as fatal
 * (Chromium's PartitionAlloc traps: SIGTRAP before main).  The program's own dynamic symbol for malloc may
 * be undefined with a value: a non-PIE program that takes malloc's
 * address in code (python3) has a canonical PLT entry, which dlsym and
 * dladdr name as the program's but which jumps to the next definition,
 * ours; the symbol table says it defines nothing.  If another object
 * comes first: a KPPROF_DEBUG line, a KPPROF_REC_NOTE (KPPROF_NOTE_NO_HEAP)
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
#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <string.h>
#include "shim.h"

struct malloc_scan {
	uintptr_t self;		/* an address in our text */
	bool self_seen;
	const char *first;	/* the object ahead of ours that defines malloc */
};

static bool object_holds(const struct dl_phdr_info *info, uintptr_t a)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD &&
		    a - (info->dlpi_addr + ph->p_vaddr) < ph->p_memsz)
			return true;
	}
	return false;
}

static int scan_object(struct dl_phdr_info *info, size_t size, void *data)
{
	struct malloc_scan *s = data;

	(void)size;
	if (object_holds(info, s->self)) {
		s->self_seen = true;
		return 1;
	}
	/* -1, no hash table: the loader cannot bind to it either */
	if (kpp_dynsym_defines(info, "malloc") == 1) {
		s->first = info->dlpi_name && *info->dlpi_name ?
			info->dlpi_name : "the program";
		return 1;
	}
	return 0;
}

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
	struct malloc_scan s = { (uintptr_t)kpp_check_interposed, false, NULL };

	dl_iterate_phdr(scan_object, &s);
	if (s.self_seen)
		return;
	atomic_store(&kpp.no_heap, 1);
	kpp_debug("no heap profile: malloc is not interposed: %s defines it ahead of libkpprof.so (an allocator linked statically or preloaded first)",
		  s.first ? s.first : "another object");
	emit_no_heap_note();
}
