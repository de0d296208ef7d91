// SPDX-License-Identifier: GPL-2.0
/*
 * The libraries of realfn_host_test.sh, between the shim and libc in the
 * search order:
 *  - built twice at one fixed address (-DREALFN_ID=1, 2): the loader
 *    cannot put the second there and places it lower, so its load bias
 *    wraps (a "negative" dlpi_addr) while its dynamic section holds
 *    absolute addresses;
 *  - -DREALFN_WEAK: a weak malloc, which the loader passes over for libc's
 *    global one under LD_DYNAMIC_WEAK.  It says so once and forwards to
 *    libc's malloc, so a wrong choice shows but does no harm.
 */
#include <stddef.h>
#include <unistd.h>

#ifdef REALFN_WEAK
extern void *__libc_malloc(size_t n);

__attribute__((weak)) void *malloc(size_t n)
{
	static int said;
	static const char msg[] = "realfn: the weak malloc\n";

	if (!said) {
		said = 1;
		(void)!write(2, msg, sizeof(msg) - 1);
	}
	return __libc_malloc(n);
}
#else
#define NAME_(id)	realfn_lib##id
#define NAME(id)	NAME_(id)

int NAME(REALFN_ID)(void)
{
	return REALFN_ID;
}
#endif
