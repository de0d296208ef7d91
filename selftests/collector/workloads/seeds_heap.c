// SPDX-License-Identifier: GPL-2.0
/*
 * seeds_heap - the seed article's example: main loops N times calling
 * func1, which allocates 1 MiB and calls func2, which allocates 1 MiB;
 * everything stays allocated.  Truth: func1 and func2 hold N MiB each.
 */
#include <stdlib.h>
#include <string.h>

/* Globals: the compiler must keep the allocations. */
void **keep;
int nkeep;

__attribute__((noinline)) void func2(void)
{
	keep[nkeep++] = malloc(1 << 20);
}

__attribute__((noinline)) void func1(void)
{
	keep[nkeep++] = malloc(1 << 20);
	func2();
}

int main(int argc, char *argv[])
{
	int n = argc > 1 ? atoi(argv[1]) : 200;

	keep = calloc(2 * n, sizeof(*keep));
	for (int i = 0; i < n; i++)
		func1();
	return keep[0] ? 0 : 1;
}
