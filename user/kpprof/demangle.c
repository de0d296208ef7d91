// SPDX-License-Identifier: GPL-2.0
/*
 * demangle.c - C++ demangling through libstdc++'s __cxa_demangle, loaded
 * with dlopen so the collector neither links nor needs libstdc++: on a
 * machine without it, C++ names simply stay mangled.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>

#include "symbolize.h"

typedef char *(*cxa_demangle_fn)(const char *mangled, char *buf, size_t *len, int *status);

static cxa_demangle_fn demangler;
static pthread_once_t demangler_once = PTHREAD_ONCE_INIT;

static void load_demangler(void)
{
	void *h = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);

	if (h)
		demangler = (cxa_demangle_fn)dlsym(h, "__cxa_demangle");
}

char *kpp_demangle(const char *name)
{
	int status = -1;
	char *out;

	/* Itanium ABI names start with _Z; nothing else is mangled. */
	if (name[0] != '_' || name[1] != 'Z')
		return NULL;
	pthread_once(&demangler_once, load_demangler);
	if (!demangler)
		return NULL;
	out = demangler(name, NULL, NULL, &status);
	if (status != 0) {
		free(out);
		return NULL;
	}
	return out;
}
