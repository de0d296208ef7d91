// SPDX-License-Identifier: GPL-2.0
/* fork_safety's plugin: a constructor that forks a helper at load (a
 * plugin that starts a daemon), after letting another thread sample. */
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

extern atomic_int fs_in_ctor;

__attribute__((constructor)) static void plugin_init(void)
{
	pid_t c;

	atomic_store(&fs_in_ctor, 1);	/* the other thread allocates now */
	usleep(300000);
	c = fork();
	if (c == 0)
		_exit(0);
	waitpid(c, NULL, 0);
}
