// SPDX-License-Identifier: GPL-2.0
/*
 * wl_heap - an "unrelated program" for the system-wide test: keeps N MiB
 * allocated through two functions whose names the test looks for in the
 * profile, then sleeps S seconds so that it is alive when profiles are
 * fetched.  Started without LD_PRELOAD: only /etc/ld.so.preload brings the
 * shim in.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void **kept;
int nkept;

__attribute__((noinline)) void install_wl_leaf(void)
{
	kept[nkept] = malloc(1 << 20);
	memset(kept[nkept], 1, 64);
	nkept++;
}

__attribute__((noinline)) void install_wl_outer(void)
{
	install_wl_leaf();
	asm volatile("" ::: "memory");	/* not a tail call: outer stays on the stack */
}

int main(int argc, char *argv[])
{
	int n = argc > 1 ? atoi(argv[1]) : 64;
	int s = argc > 2 ? atoi(argv[2]) : 0;

	kept = calloc(n, sizeof(*kept));
	for (int i = 0; i < n; i++)
		install_wl_outer();
	if (s > 0)
		sleep(s);
	return 0;
}
