/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the abandon_*.c programs share: where the shim's producer ring is
 * mapped (the memfd of test mode's emulated ring, or /dev/kpprof's), where
 * libkpprof.so is loaded, and the shim's count of threads inside an emit,
 * read from its kpp_shards (the offset nm prints: the tests pass it).
 */
#ifndef KPP_ABANDON_LIB_H
#define KPP_ABANDON_LIB_H

#include <link.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* the ring's mappings, lowest start to highest end (find_ring) */
static uintptr_t ring_lo __attribute__((unused)), ring_hi __attribute__((unused));

/* 0, or -1 if no ring is mapped (none before the first sample) */
static inline int find_ring(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;

		if ((strstr(line, "kpprof-test-ring") || strstr(line, " /dev/kpprof")) &&
		    sscanf(line, "%lx-%lx", &lo, &hi) == 2) {
			if (!ring_lo || lo < ring_lo)
				ring_lo = lo;
			if (hi > ring_hi)
				ring_hi = hi;
		}
	}
	fclose(f);
	return ring_hi ? 0 : -1;
}

/* whether @dst is inside the ring: a memcpy the shim's ring write makes */
static inline bool in_ring(const void *dst)
{
	return ring_lo && (uintptr_t)dst >= ring_lo && (uintptr_t)dst < ring_hi;
}

/*
 * The plain copy each program's own memcpy (which the shim's calls bind
 * to) ends with; not a loop GCC may turn back into a memcpy call.
 */
__attribute__((optimize("no-tree-loop-distribute-patterns")))
static inline void *copy_bytes(void *dst, const void *src, size_t n)
{
	unsigned char *d = dst;
	const unsigned char *s = src;

	while (n--)
		*d++ = *s++;
	return dst;
}

static inline int shim_base_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	if (strstr(info->dlpi_name, "libkpprof"))
		*(uintptr_t *)arg = info->dlpi_addr;
	return 0;
}

/* libkpprof.so's load address, 0 if it is not loaded */
static inline uintptr_t shim_base(void)
{
	uintptr_t base = 0;

	dl_iterate_phdr(shim_base_cb, &base);
	return base;
}

/*
 * The sum of kpp_shards[].emitters at @shards (0 if NULL): KPP_SHARDS (16)
 * shards of a cache line each, emitters the second int (user/shim/shim.h).
 */
static inline int shim_emitters(const unsigned char *shards)
{
	int n = 0;

	if (!shards)
		return 0;
	for (int i = 0; i < 16; i++)
		n += *(volatile const int *)(shards + 64 * i + sizeof(int));
	return n;
}

#endif
