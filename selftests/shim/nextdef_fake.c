// SPDX-License-Identifier: GPL-2.0
/* A free_sized loaded RTLD_LOCAL (nextdef_host_test.sh): never the shim's next. */
#include <stdio.h>
#include <stdlib.h>

void free_sized(void *p, size_t n)
{
	(void)n;
	fputs("fake free_sized\n", stderr);
	free(p);
}
