// SPDX-License-Identifier: GPL-2.0
/*
 * The program's semantics under the shim (semantics_host_test.sh):
 *
 *   semantics secure            malloc and free a large block; print AT_SECURE
 *   semantics usable SIZE N     N blocks of SIZE + 0..15 bytes: fill all
 *                               malloc_usable_size() bytes, realloc to 8x, check
 *                               every byte (systemd's greedy_realloc, redis);
 *                               exit 1 if one was lost
 *   semantics grow MIB          grow one buffer to MIB MiB in 4 MiB steps by
 *                               realloc, writing only the new part; check every
 *                               byte; print "grow S s maxrss K" (seconds, KiB)
 *   semantics fsz N             N malloc + free_sized (detected the usual way,
 *                               by a weak reference; glibc 2.36 has none);
 *                               print "fsz NS ns dlerror MSG dlsym CALLS":
 *                               CALLS counts dlsym() calls made during the
 *                               loop, after one warm-up call (the program
 *                               defines dlsym, exported, so the shim's calls
 *                               reach it first: a count, not a timing, that a
 *                               busy machine cannot change)
 */
#include <dlfcn.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

extern void free_sized(void *, size_t) __attribute__((weak));

/*
 * Every dlsym() in the process, the shim's included, comes here first
 * (linked with --export-dynamic-symbol=dlsym) and is counted.  The real one
 * is libc's default version, found once through dlvsym.
 */
static unsigned long dlsym_calls;

void *dlsym(void *handle, const char *name)
{
	static void *(*real)(void *, const char *);

	if (!real)
		real = (void *(*)(void *, const char *))dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
	__atomic_add_fetch(&dlsym_calls, 1, __ATOMIC_RELAXED);
	return real ? real(handle, name) : NULL;
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Keep the compiler from pairing away a malloc and a free. */
static void escape(void *p)
{
	__asm__ volatile("" : : "g"(p) : "memory");
}

static int secure(void)
{
	void *p = malloc(100000);

	escape(p);
	free(p);
	printf("ruid=%d euid=%d AT_SECURE=%lu\n", (int)getuid(), (int)geteuid(),
	       getauxval(AT_SECURE));
	return 0;
}

static int usable(size_t size, int n)
{
	int bad = 0;

	for (int i = 0; i < n; i++) {
		size_t req = size + (size_t)(i % 16);
		unsigned char *p = malloc(req), *q;
		size_t us;

		if (!p)
			return 2;
		us = malloc_usable_size(p);
		memset(p, 0xAB, us);
		q = realloc(p, us * 8);
		if (!q)
			return 2;
		for (size_t k = 0; k < us; k++) {
			if (q[k] != 0xAB) {
				bad++;
				break;
			}
		}
		free(q);
	}
	printf("blocks whose usable bytes realloc lost: %d of %d\n", bad, n);
	return bad != 0;
}

static int grow(size_t mib)
{
	size_t step = 4 << 20, max = mib << 20, n = 0, bad = 0;
	unsigned char *p = NULL, *q;
	struct rusage ru;
	double t0 = now(), t;

	while (n < max) {
		q = realloc(p, n + step);
		if (!q) {
			perror("realloc");
			return 2;
		}
		memset(q + n, (int)((n / step) & 0xff) | 1, step);
		p = q;
		n += step;
	}
	t = now() - t0;
	for (size_t i = 0; i < max; i++)
		bad += p[i] != (unsigned char)(((i / step) & 0xff) | 1);
	free(p);
	getrusage(RUSAGE_SELF, &ru);
	printf("grow %.3f s maxrss %ld lost %zu\n", t, ru.ru_maxrss, bad);
	return bad != 0;
}

static int fsz(long n)
{
	double t0, t;
	unsigned long calls;
	const char *e;
	void *w = malloc(64);

	/* Warm-up: the first call may look the next definition up. */
	escape(w);
	if (free_sized)
		free_sized(w, 64);
	else
		free(w);
	calls = __atomic_load_n(&dlsym_calls, __ATOMIC_RELAXED);
	t0 = now();
	for (long i = 0; i < n; i++) {
		void *p = malloc(64);

		escape(p);
		if (free_sized)
			free_sized(p, 64);
		else
			free(p);
	}
	t = (now() - t0) / (double)n * 1e9;
	calls = __atomic_load_n(&dlsym_calls, __ATOMIC_RELAXED) - calls;
	e = dlerror();
	printf("fsz %.1f ns dlerror %s dlsym %lu\n", t, e ? e : "(null)", calls);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "secure"))
		return secure();
	if (argc == 4 && !strcmp(argv[1], "usable"))
		return usable(strtoul(argv[2], NULL, 10), atoi(argv[3]));
	if (argc == 3 && !strcmp(argv[1], "grow"))
		return grow(strtoul(argv[2], NULL, 10));
	if (argc == 3 && !strcmp(argv[1], "fsz"))
		return fsz(atol(argv[2]));
	fprintf(stderr, "usage: semantics secure|usable SIZE N|grow MIB|fsz N\n");
	return 2;
}
