#include <dlfcn.h>
#include <stdio.h>
int main(void)
{
	void *h = dlopen("/tmp/rr/libcxxplug.so", RTLD_NOW | RTLD_LOCAL);
	if (!h) { puts(dlerror()); return 1; }
	((int (*)(void))dlsym(h, "plug_run"))();
	puts("done");
	return 0;
}
