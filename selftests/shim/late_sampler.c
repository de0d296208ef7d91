// SPDX-License-Identifier: GPL-2.0
/*
 * late_sampler: a process that starts sampling late (issue 11).  Run with
 * a heap rate of 16 MiB, so that nothing is sampled until it says so.
 *
 *   late_sampler late    allocate small for a while (a few KiB in all: a
 *                        sample there is a 1-in-3000 chance), dlopen
 *                        libshim_plugin.so (beside this program), then
 *                        allocate (and free) 64 x 16 MiB from
 *                        late_main_alloc() and 64 x 16 MiB from the
 *                        plugin's plugin_alloc(): about 40 samples each.
 *                        Prints "libunwind before: yes|no" (mapped before
 *                        the first big allocation) and "libunwind after:".
 *   late_sampler chain   a child that never samples (it only forks and
 *                        waits) with two grandchildren that sample late:
 *                        one forked ("late" in the same image), one
 *                        forked then exec'ed ("late" in a new image).
 *   late_sampler idle    allocate small only: a process that never samples.
 */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char self[PATH_MAX];

static int mapped(const char *what)
{
	char line[4096];
	FILE *f = fopen("/proc/self/maps", "r");
	int found = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		found |= strstr(line, what) != NULL;
	fclose(f);
	return found;
}

static void small_work(void)
{
	for (int i = 0; i < 100; i++) {
		char *volatile p = malloc(16 + i % 32);

		free(p);
	}
}

__attribute__((noinline, noclone)) static void *late_main_alloc(size_t n)
{
	void *p = malloc(n);

	__asm__ volatile("" ::: "memory");
	return p;
}

static int late(void)
{
	char path[PATH_MAX + 32], *slash;
	void *(*plugin_alloc)(size_t);
	void *h;
	int before;

	small_work();
	snprintf(path, sizeof(path), "%s", self);
	slash = strrchr(path, '/');
	snprintf(slash ? slash + 1 : path, sizeof(path) - (size_t)(slash ? slash + 1 - path : 0),
		 "libshim_plugin.so");
	h = dlopen(path, RTLD_NOW);
	if (!h) {
		fprintf(stderr, "late_sampler: %s\n", dlerror());
		return 1;
	}
	*(void **)&plugin_alloc = dlsym(h, "plugin_alloc");
	if (!plugin_alloc)
		return 1;
	small_work();
	before = mapped("libunwind");
	for (int i = 0; i < 64; i++)
		free(late_main_alloc(16 << 20));
	for (int i = 0; i < 64; i++)
		free(plugin_alloc(16 << 20));
	printf("libunwind before: %s\nlibunwind after: %s\n", before ? "yes" : "no",
	       mapped("libunwind") ? "yes" : "no");
	fflush(stdout);
	return 0;
}

/* The child that never samples: forks twice and waits, nothing else. */
static int chain(void)
{
	pid_t child = fork(), g1, g2;
	int st, ok = 1;

	if (child < 0)
		return 1;
	if (child) {
		if (waitpid(child, &st, 0) != child)
			return 1;
		return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
	}
	g1 = fork();
	if (g1 == 0)
		_exit(late());
	g2 = fork();
	if (g2 == 0) {
		execl(self, self, "late", (char *)NULL);
		_exit(127);
	}
	if (g1 < 0 || g2 < 0)
		_exit(1);
	ok &= waitpid(g1, &st, 0) == g1 && WIFEXITED(st) && !WEXITSTATUS(st);
	ok &= waitpid(g2, &st, 0) == g2 && WIFEXITED(st) && !WEXITSTATUS(st);
	_exit(ok ? 0 : 1);
}

int main(int argc, char **argv)
{
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n <= 0 || argc != 2)
		return 2;
	self[n] = 0;
	if (!strcmp(argv[1], "late"))
		return late();
	if (!strcmp(argv[1], "chain"))
		return chain();
	if (!strcmp(argv[1], "idle")) {
		small_work();
		printf("libunwind: %s\n", mapped("libunwind") ? "yes" : "no");
		return 0;
	}
	return 2;
}
