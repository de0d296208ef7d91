// SPDX-License-Identifier: GPL-2.0
/* noeh: 100 allocations from libnoeh.so (noeh_lib.c), each freed. */
#include <stdlib.h>

void *noeh_alloc(size_t n);

int main(void)
{
	for (int i = 0; i < 100; i++)
		free(noeh_alloc(100 + (size_t)i));
	return 0;
}
