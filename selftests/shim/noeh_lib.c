// SPDX-License-Identifier: GPL-2.0
/*
 * libnoeh.so: an object without unwind tables (no .eh_frame_hdr, so
 * _dl_find_object gives it no dlfo_eh_frame) that calls malloc: the
 * DWARF walk records the pc in it and ends there (noeh_maps_host_test.sh).
 */
#include <stdlib.h>

void *noeh_alloc(size_t n)
{
	void *p = malloc(n);

	__asm__ volatile("" ::: "memory");	/* a call, not a tail call */
	return p;
}
