// SPDX-License-Identifier: GPL-2.0
/*
 * libshim_early.so: linked into shim_workload, so its constructor runs
 * before the preloaded shim's (the loader initialises the objects loaded
 * last first).  The blocks it allocates predate the shim's init; the
 * "early" scenario frees and reallocs them.
 */
#include <stdlib.h>
#include <string.h>

void *early_blocks[4];

__attribute__((constructor)) static void early_init(void)
{
	early_blocks[0] = malloc(100);
	early_blocks[1] = calloc(1, 5000);
	early_blocks[2] = realloc(NULL, 300);
	early_blocks[3] = aligned_alloc(64, 640);
	for (int i = 0; i < 4; i++)
		if (early_blocks[i])
			memset(early_blocks[i], 'e', 64);
}
