// SPDX-License-Identifier: GPL-2.0
/*
 * reload DIR [A B [libc]] - six times: dlopen DIR/A or DIR/B in turn
 * (default libreload_a.so and libreload_b.so, reload_plug.S: the same
 * layout, a different frame size at the same pc), three sampled mallocs
 * through its plug(), dlclose.  Prints where each plug() was loaded (the
 * test needs the two at one address).  "libc": the dlclose is libc's own,
 * found by a dlsym in libc's handle (the shim's wrapper never sees it), as
 * glibc's own unloads (iconv modules: __libc_dlclose) are not seen.
 */
#include <dlfcn.h>
#include <string.h>
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
	int (*unload)(void *) = dlclose;
	char path[4096];

	if (argc != 2 && argc != 4 && argc != 5)
		return 2;
	if (argc >= 4) {
		names[0] = argv[2];
		names[1] = argv[3];
	}
	if (argc == 5 && !strcmp(argv[4], "libc")) {
		void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);

		*(void **)&unload = libc ? dlsym(libc, "dlclose") : NULL;
		if (!unload)
			return 2;
	}
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
		fflush(stdout);
		for (int i = 0; i < 3; i++)
			free(callit(f, 1000 + r));
		unload(h);
	}
	return 0;
}
