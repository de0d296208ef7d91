#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
extern void *loclib_handle;
int main(int argc, char **argv)
{
	void (*fs)(void *, size_t) = (void (*)(void *, size_t))dlsym(RTLD_DEFAULT, "free_sized");
	if (!fs) { puts("no free_sized"); return 0; }
	if (argc > 1) { dlclose(loclib_handle); fputs("dlclosed\n", stderr); }
	fs(malloc(10), 10);
	puts("done");
	return 0;
}
