// SPDX-License-Identifier: GPL-2.0
/*
 * reload DIR - six times: dlopen DIR/libreload_a.so or DIR/libreload_b.so
 * (reload_plug.S: the same layout, a different frame size at the same pc),
 * three sampled mallocs through its plug(), dlclose.  Prints where each
 * plug() was loaded (the test needs the two at one address).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) static void *callit(void *(*f)(size_t), size_t n)
{
	void *p = f(n);

	__asm__ volatile("" ::: "memory");	/* not a tail call */
	return p;
}

int main(int argc, char **argv)
{
	const char *names[] = { "libreload_a.so", "libreload_b.so" };
	char path[4096];

	if (argc != 2)
		return 2;
	for (int r = 0; r < 6; r++) {
		void *h, *(*f)(size_t);

		snprintf(path, sizeof(path), "%s/%s", argv[1], names[r & 1]);
		h = dlopen(path, RTLD_NOW);
		if (!h) {
			fprintf(stderr, "%s\n", dlerror());
			return 1;
		}
		*(void **)&f = dlsym(h, "plug");
		printf("%s %p\n", names[r & 1], (void *)f);
		for (int i = 0; i < 3; i++)
			free(callit(f, 1000 + r));
		dlclose(h);
	}
	return 0;
}
