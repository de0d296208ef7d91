// SPDX-License-Identifier: GPL-2.0
/*
 * Built -no-pie -fno-pic: taking malloc's address in code gives the
 * executable a canonical PLT entry (malloc stays undefined in its dynamic
 * symbol table, with a non-zero value), and every reference to malloc,
 * dlsym's included, resolves to that stub, which jumps to the shim's
 * malloc.  python3 is built this way.
 */
#include <stdio.h>
#include <stdlib.h>

void *(*volatile take)(size_t);
static void *volatile keep;

int main(void)
{
	take = malloc;
	for (int i = 0; i < 100; i++) {
		keep = take(4096);
		free(keep);
	}
	puts("done");
	return 0;
}
