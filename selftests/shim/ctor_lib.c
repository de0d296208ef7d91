// SPDX-License-Identifier: GPL-2.0
/*
 * libshim_ctor.so: a library constructor that, while another thread of
 * ctor_race allocates for the first time, forks (CTOR_MODE=fork) or takes
 * a lock that thread holds while it allocates (CTOR_MODE=lock).  Before
 * issue 15 the other thread's first sample dlopen'ed libunwind and so
 * waited for the loader lock this constructor runs under: deadlock.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern atomic_int ctor_running;
extern pthread_mutex_t ctor_registry;

__attribute__((constructor)) static void ctor(void)
{
	const char *mode = getenv("CTOR_MODE");
	struct timespec ts = { 0, 300 * 1000 * 1000 };

	atomic_store(&ctor_running, 1);
	nanosleep(&ts, NULL);	/* the other thread is sampling by now */
	if (mode && !strcmp(mode, "fork")) {
		pid_t pid = fork();

		if (pid == 0)
			_exit(0);
		if (pid > 0)
			waitpid(pid, NULL, 0);
	} else {
		pthread_mutex_lock(&ctor_registry);
		pthread_mutex_unlock(&ctor_registry);
	}
}
