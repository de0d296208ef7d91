// SPDX-License-Identifier: GPL-2.0
/*
 * torture: many of the things a program does to the shim at once, for a
 * bounded time (issue 15, "Proof").  Run under the shim in test mode at
 * rate 1 (every allocation and contended lock sampled):
 *
 *   - worker threads start, allocate, contend on a mutex, and exit;
 *   - a spawner makes children in turn with fork() (the child allocates
 *     and _exit()s), _Fork() and clone() (the child execs /bin/true: no
 *     malloc, which would be unsafe after those in a threaded parent),
 *     vfork() (the child closes every descriptor above 2 and execs
 *     /bin/true, as Python's subprocess does) and posix_spawn(/bin/true);
 *   - a thread that never allocates gets SIGUSR1 on a sigaltstack; its
 *     handler allocates, locks the mutex and fork()s (the child _exit()s);
 *   - a thread dlopen()s and dlclose()s a plugin in a loop and allocates;
 *   - a thread walks the objects with a dl_iterate_phdr callback that
 *     allocates.
 *
 * usage: torture SECS PLUGIN
 * Prints the children made by each way and the number that did not end
 * within 10 s (killed) or ended abnormally, then "torture: ok" if none;
 * exit status 0 only then; each bad child is named on stderr
 * (TORTURE_HOLD=1: a hung one is left for a debugger, the spawner waits).
 * The caller checks the records against the counts (torture_host_test.sh).
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

enum { FORK, UFORK, CLONE, VFORK, SPAWN, SIGFORK, NWAYS };
static const char *const way_name[NWAYS] = {
	"fork", "_Fork", "clone", "vfork", "posix_spawn", "handler fork",
};
static atomic_int made[NWAYS], bad[NWAYS];
static atomic_int stop;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static const char *plugin;

static void churn(size_t n)
{
	void *p = malloc(n);

	/* The pointer escapes, so the pair is not optimized away. */
	__asm__ volatile("" : : "r"(p) : "memory");
	free(p);
}

/* reap - wait up to 10 s for @pid; count it bad if it hung or died. */
static void reap(int way, pid_t pid)
{
	int st;

	if (pid < 0) {
		atomic_fetch_add(&bad[way], 1);
		return;
	}
	atomic_fetch_add(&made[way], 1);
	for (int i = 0; i < 10000; i++) {
		if (waitpid(pid, &st, WNOHANG) == pid) {
			if (!WIFEXITED(st) || WEXITSTATUS(st)) {
				atomic_fetch_add(&bad[way], 1);
				fprintf(stderr, "%s child %d: status %#x\n", way_name[way], pid, st);
			}
			return;
		}
		usleep(1000);
	}
	fprintf(stderr, "%s child %d: hung\n", way_name[way], pid);
	if (getenv("TORTURE_HOLD"))
		pause();
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	atomic_fetch_add(&bad[way], 1);
}

static void *worker(void *a)
{
	(void)a;
	for (int i = 0; i < 200; i++) {
		churn(16 + (size_t)i * 40);
		pthread_mutex_lock(&mu);
		churn(64);
		pthread_mutex_unlock(&mu);
	}
	return NULL;
}

static void *workers(void *a)
{
	(void)a;
	while (!atomic_load(&stop)) {
		pthread_t t[4];

		for (int i = 0; i < 4; i++)
			pthread_create(&t[i], NULL, worker, NULL);
		for (int i = 0; i < 4; i++)
			pthread_join(t[i], NULL);
	}
	return NULL;
}

static int exec_true(void *a)
{
	(void)a;
	execl("/bin/true", "true", (char *)NULL);
	_exit(127);
}

static char clone_stack[256 * 1024] __attribute__((aligned(16)));

/* The vfork child never returns from here: it execs or _exit()s. */
__attribute__((noinline)) static pid_t spawn_vfork(void)
{
	pid_t pid = vfork();

	if (pid == 0) {
		for (int fd = 3; fd < 1024; fd++)
			close(fd);
		execl("/bin/true", "true", (char *)NULL);
		_exit(127);
	}
	return pid;
}

static void *spawner(void *a)
{
	(void)a;
	for (int n = 0; !atomic_load(&stop); n++) {
		int way = n % 5;
		pid_t pid = -1;

		switch (way) {
		case FORK:
			pid = fork();
			if (pid == 0) {
				churn(1000);
				_exit(0);
			}
			break;
		case UFORK:
			pid = _Fork();
			if (pid == 0)
				exec_true(NULL);
			break;
		case CLONE:
			pid = clone(exec_true, clone_stack + sizeof(clone_stack), SIGCHLD, NULL);
			break;
		case VFORK:
			pid = spawn_vfork();
			break;
		case SPAWN: {
			char *argv[] = { "true", NULL };

			if (posix_spawn(&pid, "/bin/true", NULL, NULL, argv, environ))
				pid = -1;
			break;
		}
		}
		reap(way, pid);
	}
	return NULL;
}

static void on_usr1(int sig)
{
	pid_t pid;

	(void)sig;
	churn(200);
	pthread_mutex_lock(&mu);
	churn(300);
	pthread_mutex_unlock(&mu);
	pid = fork();
	if (pid == 0)
		_exit(0);
	reap(SIGFORK, pid);
}

static atomic_ulong spins;

/* The signal target: never allocates, so its handler may. */
static void *victim(void *a)
{
	static char alt[64 * 1024];
	stack_t ss = { .ss_sp = alt, .ss_size = sizeof(alt) };

	(void)a;
	sigaltstack(&ss, NULL);
	while (!atomic_load(&stop))
		atomic_fetch_add(&spins, 1);
	return NULL;
}

static void *loader(void *a)
{
	(void)a;
	while (!atomic_load(&stop)) {
		void *h = dlopen(plugin, RTLD_NOW);

		churn(32);
		if (h)
			dlclose(h);
	}
	return NULL;
}

static int walk_cb(struct dl_phdr_info *i, size_t s, void *d)
{
	(void)i; (void)s; (void)d;
	churn(48);
	return 0;
}

static void *walker(void *a)
{
	(void)a;
	while (!atomic_load(&stop))
		dl_iterate_phdr(walk_cb, NULL);
	return NULL;
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	pthread_t t[5];
	int secs, fails = 0;
	struct timespec end, now;

	if (argc != 3) {
		fprintf(stderr, "usage: torture SECS PLUGIN\n");
		return 2;
	}
	secs = atoi(argv[1]);
	plugin = argv[2];
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_ONSTACK | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	pthread_create(&t[0], NULL, workers, NULL);
	pthread_create(&t[1], NULL, spawner, NULL);
	pthread_create(&t[2], NULL, victim, NULL);
	pthread_create(&t[3], NULL, loader, NULL);
	pthread_create(&t[4], NULL, walker, NULL);
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += secs;
	do {
		usleep(50000);
		pthread_kill(t[2], SIGUSR1);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (now.tv_sec < end.tv_sec ||
		 (now.tv_sec == end.tv_sec && now.tv_nsec < end.tv_nsec));
	atomic_store(&stop, 1);
	for (int i = 0; i < 5; i++)
		pthread_join(t[i], NULL);
	for (int w = 0; w < NWAYS; w++) {
		printf("%s %d bad %d\n", way_name[w], made[w], bad[w]);
		fails += bad[w] + !made[w];
	}
	printf(fails ? "torture: FAILED\n" : "torture: ok\n");
	return fails != 0;
}
