// SPDX-License-Identifier: GPL-2.0
/*
 * build_id.c - the GNU build-id of an object loaded in this process, read
 * from its PT_NOTE segments in memory: maps.c sends it in the object's
 * MMAP records, unwind_cache.c takes its first 8 bytes as part of the
 * object's identity.  No allocation, no lock, no call: safe on a sampling
 * path and in a signal handler.  Its own file because the sample_cost
 * selftest links unwind_cache.c without maps.c.
 */
#include <elf.h>
#include <string.h>
#include "shim.h"

const void *kpp_build_id_note(const ElfW(Phdr) *phdr, unsigned int phnum, uintptr_t bias,
			      uintptr_t lo, uintptr_t hi, size_t *len)
{
	for (unsigned int i = 0; i < phnum; i++) {
		const ElfW(Phdr) *ph = &phdr[i];
		uintptr_t p = bias + ph->p_vaddr, end;
		size_t align = ph->p_align == 8 ? 8 : 4;

		/* the whole segment within [lo, hi): its notes are mapped */
		if (ph->p_type != PT_NOTE || p < lo || p > hi || ph->p_memsz > hi - p)
			continue;
		end = p + ph->p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
			const char *name = (const char *)(n + 1);
			uintptr_t desc = (uintptr_t)name + ((n->n_namesz + align - 1) & ~(align - 1));

			if (desc > end || n->n_descsz > end - desc)
				break;
			if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 &&
			    !memcmp(name, "GNU", 4) && n->n_descsz > 0) {
				*len = n->n_descsz;
				return (const void *)desc;
			}
			p = desc + ((n->n_descsz + align - 1) & ~(align - 1));
		}
	}
	return NULL;
}
