// SPDX-License-Identifier: GPL-2.0
/*
 * obj.c - the loaded object that holds an address, from glibc's
 * _dl_find_object (2.35+): lock-free, async-signal-safe, no allocation,
 * no loader lock, so safe on a sampling path.  maps.c (which objects a
 * stack's MMAP records name) and unwind_cache.c (which unwind tables a
 * frame's rule comes from) both ask; its own file because the sample_cost
 * selftest links unwind_cache.c without maps.c.
 */
#include <dlfcn.h>
#include "shim.h"

bool kpp_obj_at(uintptr_t pc, struct kpp_obj *o, struct dl_find_object *d)
{
	struct dl_find_object own;

	if (!d)
		d = &own;
	if (_dl_find_object((void *)pc, d))
		return false;
	o->lo = (uintptr_t)d->dlfo_map_start;
	o->hi = (uintptr_t)d->dlfo_map_end;
	o->eh = d->dlfo_eh_frame;
	o->map = d->dlfo_link_map;
	o->tag = 0;	/* unwind_cache.c's, for its cache only */
	o->used = false;
	return true;
}
