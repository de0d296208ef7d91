// SPDX-License-Identifier: GPL-2.0
/*
 * heap_stats SIZE N: N allocations of SIZE bytes, all kept live until the
 * end, in one thread that allocates nothing else meanwhile; then prints
 * "i address" for each, in allocation order, so that stats_host_test.sh
 * can tell which allocations the shim sampled (their ALLOC records) and
 * the gaps between them.  stdout has a static buffer: its own allocation
 * would be one more sample.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

static char outbuf[1 << 16];

int main(int argc, char **argv)
{
	size_t size = argc > 2 ? strtoul(argv[1], NULL, 0) : 0;
	long n = argc > 2 ? atol(argv[2]) : 0;
	void **p;

	if (!size || n <= 0)
		return fprintf(stderr, "usage: heap_stats SIZE N\n"), 2;
	setvbuf(stdout, outbuf, _IOFBF, sizeof(outbuf));
	p = mmap(NULL, n * sizeof(*p), PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return 2;
	for (long i = 0; i < n; i++)
		if (!(p[i] = malloc(size)))
			return fprintf(stderr, "malloc failed\n"), 1;
	for (long i = 0; i < n; i++)
		printf("%ld %p\n", i, p[i]);
	for (long i = 0; i < n; i++)
		free(p[i]);
	return 0;
}
