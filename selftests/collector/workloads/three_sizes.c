// SPDX-License-Identifier: GPL-2.0
/*
 * three_sizes - a deterministic heap workload whose truth is known, for
 * comparing the profiles recorded on different kernels (xkernel_test.sh).
 *
 * Three functions allocate 64 MiB each in objects of one size apiece (64 B,
 * 2 KiB, 64 KiB) and keep one object in eight, so each holds 8 MiB at exit.
 * The sizes span the sampling rate the test uses (16 KiB): almost never,
 * sometimes and almost always sampled, so the three use different parts of
 * scaleHeapSample.  Prints the truth at the end, as "truth FUNC COUNT SIZE
 * KEPT".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOTAL (64UL << 20)
#define KEEP_ONE_IN 8

/* Global, so the compiler must keep the allocations. */
void **keep;
size_t nkeep;

static size_t kept[3];

static void alloc_loop(int which, size_t size)
{
	size_t count = TOTAL / size;

	for (size_t i = 0; i < count; i++) {
		char *p = malloc(size);

		if (!p)
			exit(2);
		p[0] = (char)i;
		if (i % KEEP_ONE_IN == 0) {
			keep[nkeep++] = p;
			kept[which]++;
		} else {
			free(p);
		}
	}
}

__attribute__((noinline)) void f_small(void)
{
	alloc_loop(0, 64);
}

__attribute__((noinline)) void f_mid(void)
{
	alloc_loop(1, 2048);
}

__attribute__((noinline)) void f_big(void)
{
	alloc_loop(2, 64 << 10);
}

int main(void)
{
	keep = calloc(TOTAL / 64 / KEEP_ONE_IN + TOTAL / 2048 / KEEP_ONE_IN +
		      TOTAL / (64 << 10) / KEEP_ONE_IN, sizeof(*keep));
	if (!keep)
		return 2;
	f_small();
	f_mid();
	f_big();
	/* Printed last: stdout's buffer is allocated outside the three. */
	printf("truth f_small %lu 64 %zu\n", TOTAL / 64, kept[0]);
	printf("truth f_mid %lu 2048 %zu\n", TOTAL / 2048, kept[1]);
	printf("truth f_big %lu %d %zu\n", TOTAL / (64 << 10), 64 << 10, kept[2]);
	return 0;
}
