// SPDX-License-Identifier: GPL-2.0
/*
 * dlopen_host_test.sh: the shim dlopen'ed (not preloaded) by a program that
 * then closes it and forks.  The shim's constructor registered fork
 * handlers (__register_atfork with its __dso_handle); the program's fork
 * must not call them in a library that is gone.
 * usage: dlopen_fork SHIM.so; stdout "ok" and status 0.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	void *h;
	pid_t pid;
	int st;

	if (argc != 2)
		return 2;
	h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		printf("dlopen: %s\n", dlerror());
		return 1;
	}
	if (dlclose(h)) {
		printf("dlclose: %s\n", dlerror());
		return 1;
	}
	fflush(stdout);
	pid = fork();
	if (pid == 0)
		_exit(0);
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
		printf("fork: child failed\n");
		return 1;
	}
	puts("ok");
	return 0;
}
