// SPDX-License-Identifier: GPL-2.0
/*
 * sites - allocations kept in use from two call sites, for the naming
 * tests: built with each linker, PIE and not, into a chroot, and at -O2
 * where make_node() is inlined into fill_sites().  Usage: sites [N]
 * `sites pause` prints the addresses of fill_sites and other_sites and
 * waits for its stdin to close (symbolize_test reads its maps meanwhile).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *keep[1 << 16];

/* Small and static: at -O2 the compiler inlines it into fill_sites. */
static inline void *make_node(size_t n)
{
	void *p = malloc(n);

	if (p)
		memset(p, 1, 16);
	return p;
}

__attribute__((noinline)) void fill_sites(int n)
{
	for (int i = 0; i < n; i++)
		keep[i % (1 << 16)] = make_node(1024);
}

__attribute__((noinline)) void other_sites(int n)
{
	for (int i = 0; i < n; i++)
		keep[(i + 32768) % (1 << 16)] = malloc(512);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 20000;
	char c;

	if (argc > 1 && !strcmp(argv[1], "pause")) {
		printf("%p %p\n", (void *)fill_sites, (void *)other_sites);
		fflush(stdout);
		while (read(0, &c, 1) > 0)
			;
		return 0;
	}

	fill_sites(n);
	other_sites(n / 2);
	/* "N hold": alive until stdin ends, for a test to release it */
	if (argc > 2 && !strcmp(argv[2], "hold"))
		while (read(0, &c, 1) > 0)
			;
	return keep[0] == NULL;
}
