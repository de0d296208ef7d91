// SPDX-License-Identifier: GPL-2.0
/*
 * Processes, the loader and the shim's sampling paths (issue 15; review
 * §1.2, §1.5, §1.8, §1.13, §11).  Each mode prints one line and exits 0
 * when it went through, non-zero (or hangs, for the caller's timeout) when
 * it did not.  Run under the shim in test mode at rate 1, every allocation
 * is a sample.
 *
 *   abba SECS PLUGIN  a thread walks the objects with a dl_iterate_phdr
 *                     callback that allocates while another dlopen()s and
 *                     dlclose()s PLUGIN and allocates; "HANG" if neither
 *                     made progress for a second.
 *   ctorfork PLUGIN   PLUGIN's constructor forks while another thread takes
 *                     its first samples.
 *   stale fork|clone N  N children made by _Fork() or clone() while another
 *                     thread samples; each forks again; counts the children
 *                     that did not end within 5 s.
 *   child fork|clone  the parent samples, then a child (fork() or clone())
 *                     allocates 3 blocks of 1000 bytes.
 *   vfork_close N     a vfork child closes descriptors 3..1023 and execs
 *                     /bin/true; then the parent allocates N blocks of
 *                     100000 bytes.
 *   vfork_exit N      the parent samples, then a vfork child calls exit()
 *                     (not _exit()); then the parent allocates N blocks
 *                     of 100000 bytes and execs /bin/true.
 *   cancel N          N times: a thread that samples in a loop is cancelled
 *                     (deferred), then the main thread forks; counts hung
 *                     forks.
 *   exit              threads sample while main returns from main().
 *   loop N            N malloc+free pairs of 1000 bytes.
 */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

atomic_int fs_in_ctor;		/* set by fork_safety_ctor.c */
static atomic_ulong nx, ny;
static const char *plugin;

static void churn(size_t n)
{
	void *p = malloc(n);

	/* The pointer escapes, so the pair is not optimized away. */
	__asm__ volatile("" : : "r"(p) : "memory");
	free(p);
}

static int walk_cb(struct dl_phdr_info *i, size_t s, void *d)
{
	(void)i; (void)s; (void)d;
	churn(32);	/* as libbacktrace or Rust's backtrace do */
	return 0;
}

static void *walker(void *a)
{
	(void)a;
	for (;;) {
		dl_iterate_phdr(walk_cb, NULL);
		nx++;
	}
	return NULL;
}

static void *loader(void *a)
{
	(void)a;
	for (;;) {
		void *h = dlopen(plugin, RTLD_NOW);

		churn(32);
		if (h)
			dlclose(h);
		churn(32);
		ny++;
	}
	return NULL;
}

static int abba(int secs)
{
	unsigned long lx = 0, ly = 0;
	pthread_t x, y;

	pthread_create(&x, NULL, walker, NULL);
	pthread_create(&y, NULL, loader, NULL);
	for (int s = 0; s < secs; s++) {
		sleep(1);
		if (nx == lx && ny == ly) {
			printf("HANG\n");
			fflush(stdout);
			pause();	/* the caller's SIGTERM must end us */
		}
		lx = nx;
		ly = ny;
	}
	printf("abba: ok\n");
	fflush(stdout);
	_exit(0);
}

static void *until_ctor(void *a)
{
	(void)a;
	while (!atomic_load(&fs_in_ctor))
		;
	for (int i = 0; i < 1000; i++)
		churn(64);
	return NULL;
}

static int ctorfork(void)
{
	pthread_t t;
	void *h;

	pthread_create(&t, NULL, until_ctor, NULL);
	h = dlopen(plugin, RTLD_NOW);
	pthread_join(t, NULL);
	printf(h ? "ctorfork: ok\n" : "ctorfork: dlopen failed\n");
	return !h;
}

static void *spin(void *a)
{
	(void)a;
	for (;;)
		churn(64);
	return NULL;
}

static int fork_again(void *a)
{
	pid_t g = fork();

	(void)a;
	if (g == 0)
		_exit(0);
	waitpid(g, NULL, 0);
	return 0;
}

static char clone_stack[256 * 1024] __attribute__((aligned(16)));

static pid_t new_child(const char *how, int (*fn)(void *))
{
	pid_t pid;

	if (!strcmp(how, "clone"))
		return clone(fn, clone_stack + sizeof(clone_stack), SIGCHLD, NULL);
	pid = strcmp(how, "fork") ? _Fork() : fork();
	if (pid == 0)
		_exit(fn(NULL));
	return pid;
}

/* wait_bounded - 1 if @pid did not end within @ms (then killed). */
static int wait_bounded(pid_t pid, int ms)
{
	for (int i = 0; i < ms; i++) {
		if (waitpid(pid, NULL, WNOHANG) == pid)
			return 0;
		usleep(1000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return 1;
}

static int stale(const char *how, int n)
{
	pthread_t t;
	int hung = 0;

	pthread_create(&t, NULL, spin, NULL);
	usleep(100000);
	for (int i = 0; i < n; i++)
		hung += wait_bounded(new_child(how, fork_again), 5000);
	printf("stale %s: %d of %d children hung\n", how, hung, n);
	return hung != 0;
}

static int child_allocs(void *a)
{
	(void)a;
	for (int i = 0; i < 3; i++)
		churn(1000);
	return 0;
}

static int child(const char *how)
{
	pid_t pid;

	churn(1000);	/* the parent has sampled: its mappings are sent */
	pid = new_child(how, child_allocs);
	waitpid(pid, NULL, 0);
	printf("child %s: ok\n", how);
	return 0;
}

static int vfork_close(int n)
{
	pid_t pid = vfork();

	if (pid == 0) {
		for (int fd = 3; fd < 1024; fd++)
			close(fd);
		execl("/bin/true", "true", (char *)NULL);
		_exit(127);
	}
	waitpid(pid, NULL, 0);
	for (int i = 0; i < n; i++)
		churn(100000);
	printf("vfork_close: ok\n");
	return 0;
}

/* vfork_exit: exit(), not _exit(): the child runs its destructors (the
 * shim's too) in our memory, which must go on sampling */
static int vfork_exit(int n)
{
	pid_t pid;

	churn(1000);	/* the parent has sampled: it has a ring */
	pid = vfork();

	if (pid == 0)
		exit(0);
	waitpid(pid, NULL, 0);
	for (int i = 0; i < n; i++)
		churn(100000);
	printf("vfork_exit: ok\n");
	fflush(stdout);
	/* our exit would drain no emulated ring: the child's exit() ran the
	 * destructors (glibc marks them run); exec drains it (exec.c) */
	execl("/bin/true", "true", (char *)NULL);
	return 1;
}

static void *sampler(void *a)
{
	(void)a;
	pthread_setcanceltype(PTHREAD_CANCEL_DEFERRED, NULL);
	/* malloc is no cancellation point, with the shim or without (its
	 * test-mode write is syscall(2)): the thread is cancelled between
	 * samples, or by unwinding out of one from a handler. */
	for (;;) {
		churn(1000);
		pthread_testcancel();
	}
	return NULL;
}

static int cancel(int n)
{
	int hung = 0;

	for (int i = 0; i < n; i++) {
		pthread_t t;
		pid_t pid;

		pthread_create(&t, NULL, sampler, NULL);
		usleep(20000);
		pthread_cancel(t);
		pthread_join(t, NULL);
		/* A fork that would wait for the cancelled thread hangs here:
		 * so the fork runs in a child we can bound. */
		pid = fork();
		if (pid == 0) {
			pid_t g = fork();

			if (g == 0)
				_exit(0);
			_exit(g < 0);
		}
		hung += wait_bounded(pid, 5000);
	}
	printf("cancel: %d of %d forks hung\n", hung, n);
	return hung != 0;
}

static int exit_race(void)
{
	pthread_t t[2];

	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, spin, NULL);
	usleep(20000);
	printf("exit: ok\n");
	return 0;	/* exit() runs the shim's destructor beside the spinners */
}

/*
 * exit_free: a thread frees sampled blocks one after another while main
 * returns: its FREEs go on while exit() runs the shim's destructor.
 */
#define EXIT_FREE_BLOCKS 20000
static void *exit_blocks[EXIT_FREE_BLOCKS];
static atomic_int exit_freed;

static void *free_all(void *a)
{
	(void)a;
	for (int i = 0; i < EXIT_FREE_BLOCKS; i++) {
		free(exit_blocks[i]);
		atomic_store(&exit_freed, i + 1);
	}
	return NULL;
}

static int exit_free(void)
{
	pthread_t t;

	for (int i = 0; i < EXIT_FREE_BLOCKS; i++)
		exit_blocks[i] = malloc(64);
	pthread_create(&t, NULL, free_all, NULL);
	while (atomic_load(&exit_freed) < 100)
		sched_yield();
	printf("exit_free: ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "";
	const char *a = argc > 2 ? argv[2] : "";
	const char *b = argc > 3 ? argv[3] : "";

	if (!strcmp(m, "abba") && argc == 4) {
		plugin = b;
		return abba(atoi(a));
	}
	if (!strcmp(m, "ctorfork") && argc == 3) {
		plugin = a;
		return ctorfork();
	}
	if (!strcmp(m, "stale") && argc == 4)
		return stale(a, atoi(b));
	if (!strcmp(m, "child") && argc == 3)
		return child(a);
	if (!strcmp(m, "vfork_close") && argc == 3)
		return vfork_close(atoi(a));
	if (!strcmp(m, "vfork_exit") && argc == 3)
		return vfork_exit(atoi(a));
	if (!strcmp(m, "cancel") && argc == 3)
		return cancel(atoi(a));
	if (!strcmp(m, "exit"))
		return exit_race();
	if (!strcmp(m, "exit_free"))
		return exit_free();
	if (!strcmp(m, "loop") && argc == 3) {
		for (int i = atoi(a); i > 0; i--)
			churn(1000);
		return 0;
	}
	fprintf(stderr, "usage: see fork_safety.c\n");
	return 2;
}
