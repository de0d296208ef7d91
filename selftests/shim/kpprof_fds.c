// SPDX-License-Identifier: GPL-2.0
/*
 * Review shim.md section 9: the program must see no descriptor of the
 * shim's.  Allocates (sampled at rate 1: the shim's first records go out),
 * optionally forks a child that does the same, then counts its
 * /proc/self/fd links to /dev/kpprof and prints the count: 0 expected.
 * usage: kpprof_fds [--fork]
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

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
		if (!strcmp(link, "/dev/kpprof")) {
			fprintf(stderr, "fd %s -> /dev/kpprof\n", e->d_name);
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
	int n = sample(), status;
	pid_t pid;

	printf("%d\n", n);
	if (argc > 1 && !strcmp(argv[1], "--fork")) {
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
