// SPDX-License-Identifier: GPL-2.0
/* A C program that dlopen()s C++ code (nextdef_host_test.sh). */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	void *h = argc > 1 ? dlopen(argv[1], RTLD_NOW | RTLD_LOCAL) : NULL;
	int (*run)(void);

	if (!h)
		return printf("dlopen: %s\n", dlerror()), 2;
	*(void **)&run = dlsym(h, "plug_run");
	if (!run)
		return 2;
	run();
	printf("done\n");
	return 0;
}
