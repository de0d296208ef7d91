/* SPDX-License-Identifier: GPL-2.0 */
/* grow.h - amortised growth of a realloc'd array, shared by the pprof builder and the aggregator. */
#ifndef KPPROF_GROW_H
#define KPPROF_GROW_H

#include <errno.h>
#include <stdlib.h>

/*
 * grow - make *arr hold at least @need elements of @elem bytes.  Capacity
 * starts at 64 and doubles, so appends cost amortised O(1).  On failure
 * *arr and *cap are unchanged.  Returns 0 or -ENOMEM.
 */
static inline int grow(void **arr, size_t *cap, size_t need, size_t elem)
{
	size_t ncap;
	void *p;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 64;
	while (ncap < need)
		ncap *= 2;
	p = realloc(*arr, ncap * elem);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = ncap;
	return 0;
}

#endif /* KPPROF_GROW_H */
