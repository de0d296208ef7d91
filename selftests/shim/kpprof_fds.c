// SPDX-License-Identifier: GPL-2.0
/*
 * Review shim.md section 9: the program must see no descriptor of the
 * shim's.  Allocates (sampled at rate 1: the shim's first records go out),
 * optionally forks a child that does the same, then counts its
 * /proc/self/fd links to /dev/kpprof (or to PATH: in test mode the sink,
 * fd_ring_host_test.sh) and prints the count: 0 expected.
 * usage: kpprof_fds [--fork] [PATH]
 */
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *target = "/dev/kpprof";

static int count_kpprof_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	char path[300], link[256];
	int n = 0;
	ssize_t len;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		len = readlink(path, link, sizeof(link) - 1);
		if (len < 0)
			continue;
		link[len] = '\0';
		if (!strcmp(link, target)) {
			fprintf(stderr, "fd %s -> %s\n", e->d_name, target);
			n++;
		}
	}
	closedir(d);
	return n;
}

static int sample(void)
{
	for (int i = 0; i < 100; i++) {
		void *volatile p = malloc(100 + i);

		free(p);
	}
	return count_kpprof_fds();
}

int main(int argc, char **argv)
{
	bool fork_too = argc > 1 && !strcmp(argv[1], "--fork");
	int n, status;
	pid_t pid;

	if (argc > 1 + fork_too)
		target = argv[1 + fork_too];
	n = sample();
	printf("%d\n", n);
	if (fork_too) {
		fflush(stdout);
		pid = fork();
		if (pid == 0) {
			n = sample();
			printf("child %d\n", n);
			exit(n != 0);
		}
		if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
			return 2;
		return n != 0 || WEXITSTATUS(status);
	}
	return n != 0;
}
