// SPDX-License-Identifier: GPL-2.0
/*
 * two_procs - two processes at once: the parent allocates in parent_work(),
 * a forked child in child_work(); both keep what they allocate.
 */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

/* Global: the compiler must keep the allocations. */
void *volatile keep[256];

__attribute__((noinline)) void parent_work(void)
{
	for (int i = 0; i < 64; i++)
		keep[i] = malloc(256 << 10);
}

__attribute__((noinline)) void child_work(void)
{
	for (int i = 0; i < 64; i++)
		keep[i] = malloc(512 << 10);
}

int main(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		child_work();
		usleep(100000);
		_exit(0);
	}
	parent_work();
	waitpid(pid, NULL, 0);
	return 0;
}
