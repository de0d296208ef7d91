// SPDX-License-Identifier: GPL-2.0
/*
 * Issue 8, finding 1: a fork while another thread holds the dynamic
 * loader's lock (a thread looping in dl_iterate_phdr, as unwinders,
 * exception handling and backtrace() do).  In the child that lock stays
 * held for ever, so a shim whose atfork child handler walks the loaded
 * objects hangs the child before fork() even returns.
 *
 * usage: fork_loader N [malloc]
 *   forks N children while a thread walks the objects; each child
 *   _exit(0)s at once (or, with "malloc", first allocates and frees a
 *   few blocks).  Prints how many did not exit within 20 s (killed then);
 *   exit status 1 if any.
 */
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static atomic_int stop;

static int count_objects(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)info;
	(void)size;
	++*(volatile int *)data;
	return 0;
}

static void *walker(void *arg)
{
	volatile int n = 0;

	(void)arg;
	while (!atomic_load(&stop))
		dl_iterate_phdr(count_objects, (void *)&n);
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 20, hung = 0;
	int use_malloc = argc > 2 && argv[2][0] == 'm';
	pid_t *pids = calloc((size_t)n, sizeof(*pids));
	pthread_t th;

	if (!pids || pthread_create(&th, NULL, walker, NULL))
		return 2;
	for (int i = 0; i < n; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			if (use_malloc) {
				for (int j = 0; j < 64; j++) {
					void *volatile p = malloc(4096);

					free(p);
				}
			}
			_exit(0);
		}
		if (pids[i] < 0)
			return 2;
	}
	atomic_store(&stop, 1);
	pthread_join(th, NULL);
	/* 20 s for all of them, from the first wait. */
	for (int i = 0, waited = 0; i < n; i++) {
		int st;

		while (waitpid(pids[i], &st, WNOHANG) == 0) {
			struct timespec ts = { 0, 10 * 1000 * 1000 };

			if (waited++ >= 2000) {
				kill(pids[i], SIGKILL);
				waitpid(pids[i], &st, 0);
				hung++;
				break;
			}
			nanosleep(&ts, NULL);
		}
	}
	printf("children %d, hung %d\n", n, hung);
	return hung ? 1 : 0;
}
