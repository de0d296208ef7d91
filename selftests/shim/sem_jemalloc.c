// SPDX-License-Identifier: GPL-2.0
/*
 * rallocx keeps the usable slack (sallocx) of a block, like realloc: N
 * blocks of SIZE + 0..15 bytes from mallocx, every usable byte written,
 * rallocx to 8x, every byte checked.  Linked with jemalloc.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *mallocx(size_t size, int flags);
void *rallocx(void *ptr, size_t size, int flags);
size_t sallocx(const void *ptr, int flags);
void dallocx(void *ptr, int flags);

int main(int argc, char **argv)
{
	size_t size = argc > 1 ? strtoul(argv[1], NULL, 10) : 100;
	int n = argc > 2 ? atoi(argv[2]) : 1000, bad = 0;

	for (int i = 0; i < n; i++) {
		unsigned char *p = mallocx(size + (size_t)(i % 16), 0), *q;
		size_t us;

		if (!p)
			return 2;
		us = sallocx(p, 0);
		memset(p, 0xCD, us);
		q = rallocx(p, us * 8, 0);
		if (!q)
			return 2;
		for (size_t k = 0; k < us; k++) {
			if (q[k] != 0xCD) {
				bad++;
				break;
			}
		}
		dallocx(q, 0);
	}
	printf("blocks whose usable bytes rallocx lost: %d of %d\n", bad, n);
	return bad != 0;
}
