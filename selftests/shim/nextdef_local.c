// SPDX-License-Identifier: GPL-2.0
/*
 * nextdef_host_test.sh: the shim's free_sized must forward to what
 * dlsym(RTLD_NEXT) would find (here: nothing, so its fallback), not to a
 * definition in an object loaded RTLD_LOCAL before the shim's constructor,
 * which dlclose() then unmaps (with "close": a call into it crashed).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern void *nextdef_handle;

int main(int argc, char **argv)
{
	void (*fs)(void *, size_t);

	if (!nextdef_handle)
		return printf("plugin not loaded\n"), 2;
	*(void **)&fs = dlsym(RTLD_DEFAULT, "free_sized");
	if (!fs)
		return printf("done\n"), 0;	/* as without the shim */
	if (argc > 1 && !strcmp(argv[1], "close"))
		dlclose(nextdef_handle);
	fs(malloc(10), 10);
	printf("done\n");
	return 0;
}
