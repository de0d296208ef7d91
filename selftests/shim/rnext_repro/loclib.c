#include <dlfcn.h>
#include <stdio.h>
void *loclib_handle;
__attribute__((constructor)) static void init(void)
{
	loclib_handle = dlopen("/tmp/rr/libfakeje.so", RTLD_NOW | RTLD_LOCAL);
}
