// SPDX-License-Identifier: GPL-2.0
/* libshim_plugin.so: dlopen'ed in a loop by "shim_workload dlopen". */
#include <stdlib.h>

__attribute__((noinline)) void *plugin_alloc(size_t n)
{
	void *p = malloc(n);

	__asm__ volatile("" ::: "memory");
	return p;
}
