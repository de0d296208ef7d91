// SPDX-License-Identifier: GPL-2.0
/*
 * Linked into nextdef_local: its constructor, which runs before the
 * shim's, dlopen()s $NEXTDEF_FAKE RTLD_LOCAL, outside the global scope.
 */
#include <dlfcn.h>
#include <stdlib.h>

void *nextdef_handle;

__attribute__((constructor)) static void init(void)
{
	const char *path = getenv("NEXTDEF_FAKE");

	if (path)
		nextdef_handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
}
