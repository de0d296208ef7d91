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
 *
 *   spawn_loop --rounds R [--base NAME] --variant NAME [--set VAR=VAL]... \
 *              [--variant NAME [--set VAR=VAL]...]... N CMD [ARGS...]
 *
 * Several variants of the same command (bench.sh startup): each variant's
 * environment is the driver's without LD_PRELOAD and KPPROF_*, plus its
 * --set assignments.  Each round runs N processes of every variant, the
 * first variant of round I being the I-th (rotated, so no variant always
 * runs first or after the same one), and prints
 *
 *   round I NAME wall U cpu C                    (us per process)
 *
 * then per variant the medians over the rounds and the median of the
 * per-round differences from the --base variant (default: the first):
 *
 *   median NAME wall U cpu C
 *   delta NAME BASE wall DU cpu DC
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

#define MAX_VARIANTS	8
#define MAX_SETS	8
#define MAX_ROUNDS	101

struct variant {
	const char *name;
	const char *set[MAX_SETS];
	int nset;
	char **env;
	double wall[MAX_ROUNDS], cpu[MAX_ROUNDS];
};

/* env_variant - environ without LD_PRELOAD and KPPROF_*, plus @v's sets. */
static char **env_variant(struct variant *v)
{
	size_t n = 0, k = 0;
	char **env;

	while (environ[n])
		n++;
	env = calloc(n + v->nset + 1, sizeof(*env));
	if (!env)
		exit(2);
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "LD_PRELOAD=", 11) &&
		    strncmp(environ[i], "KPPROF_", 7))
			env[k++] = environ[i];
	for (int i = 0; i < v->nset; i++)
		env[k++] = (char *)v->set[i];
	env[k] = NULL;
	return env;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(const double *v, long n)
{
	double s[MAX_ROUNDS];

	memcpy(s, v, n * sizeof(*v));
	qsort(s, n, sizeof(*s), cmp_double);
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

static int variants_main(struct variant *vs, int nv, int base, long rounds,
			 long n, char **argv)
{
	double ca;

	if (rounds > MAX_ROUNDS) {
		fprintf(stderr, "spawn_loop: at most %d rounds\n", MAX_ROUNDS);
		return 2;
	}
	for (int j = 0; j < nv; j++) {
		vs[j].env = env_variant(&vs[j]);
		run(n / 10 + 1, argv, vs[j].env, &ca);	/* warm the page cache */
	}
	for (long r = 0; r < rounds; r++) {
		for (int k = 0; k < nv; k++) {
			struct variant *v = &vs[(r + k) % nv];

			v->wall[r] = run(n, argv, v->env, &v->cpu[r]);
			printf("round %ld %s wall %.1f cpu %.1f\n", r + 1, v->name,
			       v->wall[r], v->cpu[r]);
		}
		fflush(stdout);
	}
	for (int j = 0; j < nv; j++)
		printf("median %s wall %.1f cpu %.1f\n", vs[j].name,
		       median(vs[j].wall, rounds), median(vs[j].cpu, rounds));
	for (int j = 0; j < nv; j++) {
		double dw[MAX_ROUNDS], dc[MAX_ROUNDS];

		if (j == base)
			continue;
		for (long r = 0; r < rounds; r++) {
			dw[r] = vs[j].wall[r] - vs[base].wall[r];
			dc[r] = vs[j].cpu[r] - vs[base].cpu[r];
		}
		printf("delta %s %s wall %+.1f cpu %+.1f\n", vs[j].name, vs[base].name,
		       median(dw, rounds), median(dc, rounds));
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct variant vs[MAX_VARIANTS];
	const char *base_name = NULL;
	int nv = 0, base = 0;
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
		} else if (!strcmp(argv[i], "--variant") && i + 1 < argc &&
			   nv < MAX_VARIANTS) {
			vs[nv++].name = argv[i + 1];
			i += 2;
		} else if (!strcmp(argv[i], "--set") && i + 1 < argc && nv &&
			   vs[nv - 1].nset < MAX_SETS && strchr(argv[i + 1], '=')) {
			vs[nv - 1].set[vs[nv - 1].nset++] = argv[i + 1];
			i += 2;
		} else if (!strcmp(argv[i], "--base") && i + 1 < argc) {
			base_name = argv[i + 1];
			i += 2;
		} else {
			break;
		}
	}
	if (argc - i < 2 || (n = atol(argv[i])) <= 0 || rounds <= 0) {
		fprintf(stderr, "usage: spawn_loop [--preload LIB] [--rounds R] N CMD [ARGS...]\n"
			"       spawn_loop --rounds R [--base NAME] --variant NAME [--set VAR=VAL]... ... N CMD [ARGS...]\n");
		return 2;
	}
	if (nv) {
		for (base = 0; base_name && base < nv; base++)
			if (!strcmp(vs[base].name, base_name))
				break;
		if (base == nv) {
			fprintf(stderr, "spawn_loop: --base %s names no variant\n", base_name);
			return 2;
		}
		if (lib) {
			fprintf(stderr, "spawn_loop: --preload and --variant exclude each other\n");
			return 2;
		}
		return variants_main(vs, nv, base, rounds, n, argv + i + 1);
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
