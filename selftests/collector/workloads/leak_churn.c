// SPDX-License-Identifier: GPL-2.0
/*
 * leak_churn - a leak among churn: churn() allocates and frees 64 KiB
 * blocks many times; leak() keeps one 64 KiB block every 16 iterations.
 * inuse must point at leak(), alloc at churn().
 */
#include <stdlib.h>
#include <string.h>

/* Globals the compiler must assume are read: no malloc/free pair elided. */
void **leaked;
int nleaked;
char *volatile churn_last;

__attribute__((noinline)) void churn(void)
{
	char *p = malloc(64 << 10);

	memset(p, 1, 64);
	churn_last = p;
	free(churn_last);
}

__attribute__((noinline)) void leak(void)
{
	leaked[nleaked++] = malloc(64 << 10);
}

int main(int argc, char *argv[])
{
	int n = argc > 1 ? atoi(argv[1]) : 20000;

	leaked = calloc(n / 16 + 1, sizeof(*leaked));
	for (int i = 0; i < n; i++) {
		churn();
		if (i % 16 == 0)
			leak();
	}
	return 0;
}
