// SPDX-License-Identifier: GPL-2.0
/*
 * spawn_loop: the start-up cost of a short-lived process, with and without
 * the shim, measured in the same run (issue 11).
 *
 *   spawn_loop [--preload LIB] [--rounds R] N CMD [ARGS...]
 *
 * Runs CMD N times one after the other (posix_spawn + waitpid), first
 * without LD_PRELOAD, then with LD_PRELOAD=LIB, alternating R rounds of N
 * each (A B A B ...: a noisy neighbour hits both sides alike), and prints
 * per round and then the best round of each side:
 *
 *   round I none U us shim V us (CPU C / D us)   (mean per process: wall,
 *                                                 and the children's user +
 *                                                 system time, which a
 *                                                 loaded machine disturbs less)
 *   none_us U, shim_us V, added_us V-U, ratio V/U (best wall rounds)
 *   none_cpu_us, shim_cpu_us, added_cpu_us, cpu_ratio (best CPU rounds)
 *
 * The rest of the environment (KPPROF_TEST_CONFIG, ...) is passed to both
 * sides unchanged.  The driver itself never has the shim loaded: its own
 * LD_PRELOAD is dropped from the children's environment for the baseline.
 * Without --preload both sides run without the shim (a noise check).
 */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* env_with - environ without LD_PRELOAD, plus LD_PRELOAD=lib if lib. */
static char **env_with(const char *lib)
{
	size_t n = 0, k = 0;
	char **env;

	while (environ[n])
		n++;
	env = calloc(n + 2, sizeof(*env));
	if (!env)
		exit(2);
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "LD_PRELOAD=", 11))
			env[k++] = environ[i];
	if (lib) {
		size_t len = strlen(lib) + 12;

		env[k] = malloc(len);
		if (!env[k])
			exit(2);
		snprintf(env[k], len, "LD_PRELOAD=%s", lib);
		k++;
	}
	env[k] = NULL;
	return env;
}

/* CPU time (user + system) of the waited-for children so far, us. */
static double children_cpu_us(void)
{
	struct rusage ru;

	getrusage(RUSAGE_CHILDREN, &ru);
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

/* run - mean wall us per process; *cpu: mean CPU us per process. */
static double run(long n, char **argv, char **env, double *cpu)
{
	double t0 = now_us(), c0 = children_cpu_us();

	for (long i = 0; i < n; i++) {
		pid_t pid;
		int st;

		if (posix_spawn(&pid, argv[0], NULL, NULL, argv, env)) {
			perror("posix_spawn");
			exit(2);
		}
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "spawn_loop: %s failed (status %#x)\n", argv[0], st);
			exit(2);
		}
	}
	*cpu = (children_cpu_us() - c0) / (double)n;
	return (now_us() - t0) / (double)n;
}

int main(int argc, char **argv)
{
	const char *lib = NULL;
	long rounds = 5, n;
	double best_a = 1e30, best_b = 1e30, cpu_a = 1e30, cpu_b = 1e30, ca, cb;
	char **env_a, **env_b;
	int i = 1;

	while (i < argc && !strncmp(argv[i], "--", 2)) {
		if (!strcmp(argv[i], "--preload") && i + 1 < argc) {
			lib = argv[i + 1];
			i += 2;
		} else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) {
			rounds = atol(argv[i + 1]);
			i += 2;
		} else {
			break;
		}
	}
	if (argc - i < 2 || (n = atol(argv[i])) <= 0 || rounds <= 0) {
		fprintf(stderr, "usage: spawn_loop [--preload LIB] [--rounds R] N CMD [ARGS...]\n");
		return 2;
	}
	env_a = env_with(NULL);
	env_b = env_with(lib);
	run(n / 10 + 1, argv + i + 1, env_b, &ca);	/* warm the page cache */
	for (long r = 0; r < rounds; r++) {
		double a = run(n, argv + i + 1, env_a, &ca);
		double b = run(n, argv + i + 1, env_b, &cb);

		printf("round %ld none %.1f us shim %.1f us (CPU %.1f / %.1f us)\n",
		       r + 1, a, b, ca, cb);
		if (a < best_a)
			best_a = a;
		if (b < best_b)
			best_b = b;
		if (ca < cpu_a)
			cpu_a = ca;
		if (cb < cpu_b)
			cpu_b = cb;
	}
	printf("none_us %.1f\nshim_us %.1f\nadded_us %.1f\nratio %.3f\n",
	       best_a, best_b, best_b - best_a, best_b / best_a);
	printf("none_cpu_us %.1f\nshim_cpu_us %.1f\nadded_cpu_us %.1f\ncpu_ratio %.3f\n",
	       cpu_a, cpu_b, cpu_b - cpu_a, cpu_b / cpu_a);
	return 0;
}
